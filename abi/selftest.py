#!/usr/bin/python3
"""Proves that abi_check.py catches what it must, and lets pass what it may.

    selftest.py --build BUILD_DIR [--cxx c++]

Each case is a copy of include/ztensor.h with one deliberate change. The C
layer (capi/*.cpp, the only code that includes the C header) is compiled
against that copy in a temporary directory (once per distinct header) and
linked with the build's core (BUILD_DIR/libztensor_core.a, built with -g)
through the export map into a libztensor.so.1, and abi_check.py judges it
against the baseline:

  must fail: a member moved inside zt_open_options, a member's type changed,
             an enumerator's value changed, an exported function removed,
             the soname changed;
  must pass: the header unchanged; members appended to a struct, a function
             added and a status code added, all at once.

Exit status 0 when every case came out as it must.
"""

import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HEADER = os.path.join(ROOT, "include", "ztensor.h")

ADDED_FUNCTION = 'extern "C" ZT_API int zt_abi_selftest_added(void) { return 1; }\n'

MAX_DECODED_LINE = ("  uint64_t max_decoded_bytes; /* cap on one component's decoded size; 0 = the build's\n"
                    "                                 ZT_MAX_DECODED_BYTES (default 64 GiB) */\n")

OPEN_OPTIONS_END = "} zt_open_options;\n"  # a member appended goes before it

# (name, must pass, [(old, new)], extra capi source, version-script lines, soname)
CASES = [
    ("unchanged", True, [], None, None, "libztensor.so.1"),
    ("additions", True, [
        (OPEN_OPTIONS_END, "  uint32_t selftest_appended;\n" + OPEN_OPTIONS_END),
        ("  ZT_ERR_NOMEM = 10\n}", "  ZT_ERR_NOMEM = 10,\n  ZT_ERR_SELFTEST = 11\n}"),
        ("ZT_API unsigned zt_version_number(void);",
         "ZT_API unsigned zt_version_number(void);\nZT_API int zt_abi_selftest_added(void);"),
    ], ADDED_FUNCTION, None, "libztensor.so.1"),
    ("member_moved", False, [
        ("  uint32_t io_mode;           /* zt_io_mode */\n" + MAX_DECODED_LINE,
         MAX_DECODED_LINE + "  uint32_t io_mode;           /* zt_io_mode */\n"),
    ], None, None, "libztensor.so.1"),
    ("member_retyped", False, [
        ("  uint64_t max_decoded_bytes; /* cap", "  uint32_t max_decoded_bytes; /* cap"),
    ], None, None, "libztensor.so.1"),
    # (Not a zt_status: the C layer static_asserts those against the core,
    # so a changed status does not even compile.)
    ("enumerator_changed", False, [("ZT_DIGEST_SHA256 = 1,", "ZT_DIGEST_SHA256 = 17,")], None, None,
     "libztensor.so.1"),
    ("function_removed", False, [], None, ["zt_evict;"], "libztensor.so.1"),
    ("soname_changed", False, [], None, None, "libztensor.so.2"),
]


def pkg_libs():
    p = subprocess.run(["pkg-config", "--libs", "libzstd", "libcbor", "libxxhash", "libcrypto", "libutf8proc", "libisal", "libzip", "libcurl", "protobuf"],
                       capture_output=True, text=True, check=True)
    return p.stdout.split()


def compile_layer(out, edits, extra_source, cxx):
    """The C layer compiled against a copy of ztensor.h with `edits` (and
    `extra_source` beside it) in `out`: (its objects, the include folder)."""
    include = os.path.join(out, "include")
    os.makedirs(include)
    with open(HEADER) as f:
        header = f.read()
    for old, new in edits:
        if old not in header:
            raise SystemExit("selftest: the header no longer contains %r; update the case" % (old,))
        header = header.replace(old, new, 1)
    with open(os.path.join(include, "ztensor.h"), "w") as f:
        f.write(header)
    sources = sorted(os.path.join(ROOT, "capi", s) for s in os.listdir(os.path.join(ROOT, "capi"))
                     if s.endswith(".cpp"))
    if extra_source:
        path = os.path.join(out, "added.cpp")
        with open(path, "w") as f:
            f.write('#include "ztensor.h"\n' + extra_source)
        sources.append(path)
    flags = ["-std=c++20", "-g", "-O0", "-fPIC", "-fvisibility=hidden", "-fvisibility-inlines-hidden",
             "-I" + include, "-I" + os.path.join(ROOT, "src")]
    objects = [os.path.join(out, os.path.basename(s) + ".o") for s in sources]
    compiles = [subprocess.Popen([cxx] + flags + ["-c", s, "-o", o]) for s, o in zip(sources, objects)]
    if any(p.wait() != 0 for p in compiles):
        raise SystemExit("selftest: the C layer does not compile against the changed header")
    return objects, include


def link_variant(out, objects, hidden, soname, core, cxx):
    """libztensor.so.<soname> in `out` from the C layer's objects and the
    core, exporting what capi/ztensor.map does less the names in `hidden`."""
    os.makedirs(out)
    version_script = os.path.join(ROOT, "capi", "ztensor.map")
    if hidden:
        version_script = os.path.join(out, "ztensor.map")
        with open(version_script, "w") as f:
            f.write("ZTENSOR_1 {\n  global:\n    zt_*;\n  local:\n    %s\n    *;\n};\n" % "\n    ".join(hidden))
    lib = os.path.join(out, soname)
    subprocess.run([cxx, "-shared", "-o", lib, "-Wl,-soname," + soname, "-Wl,--version-script=" + version_script,
                    "-Wl,--no-undefined"] + objects + [core] + pkg_libs() + ["-pthread"], check=True)
    return lib


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="a build directory with libztensor_core.a built with -g")
    ap.add_argument("--cxx", default="c++")
    args = ap.parse_args()
    core = os.path.join(args.build, "libztensor_core.a")
    if not os.path.exists(core):
        raise SystemExit("selftest: %s does not exist" % core)

    wrong = []
    with tempfile.TemporaryDirectory(prefix="zt-abi-selftest-") as tmp:
        # The C layer is compiled once per header variant: the cases that
        # change only the exports or the soname link the unchanged one's
        # objects (each compile of it is ~8 s of the self-test's time).
        layers = {}
        for name, must_pass, edits, extra, hidden, soname in CASES:
            key = (tuple(edits), extra)
            if key not in layers:
                layers[key] = compile_layer(os.path.join(tmp, name), edits, extra, args.cxx)
            objects, include = layers[key]
            lib = link_variant(os.path.join(tmp, name + "-lib"), objects, hidden, soname, core, args.cxx)
            p = subprocess.run([sys.executable, os.path.join(HERE, "abi_check.py"), "--lib", lib,
                                "--headers", include], capture_output=True, text=True)
            verdict = {0: "compatible", 1: "INCOMPATIBLE"}.get(p.returncode, "could not check")
            ok = p.returncode == (0 if must_pass else 1)
            print("%-20s %-13s %s" % (name, verdict, "as it must be" if ok else "WRONG"))
            # The problems or additions abi_check names, not abidiff's report.
            summary = [l for l in p.stdout.split("abidiff's report:")[0].splitlines() if l.startswith("  ")][:6]
            for line in summary:
                print("    " + line.strip())
            if not ok:
                wrong.append(name)
                print(p.stdout + p.stderr)
    if wrong:
        print("selftest: FAILED: %s" % ", ".join(wrong))
        return 1
    print("selftest: every case came out as it must (%d cases)" % len(CASES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
