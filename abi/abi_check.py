#!/usr/bin/python3
"""Checks a built libztensor.so.1 against the ABI baseline of this major version.

    abi_check.py --lib build/libztensor.so.1 [--headers include] [--baseline abi/libztensor.so.1.abi]
    abi_check.py --lib build/libztensor.so.1 --write-baseline      (at a release, see docs/abi.md)

The library must be built with debug information (-g). Two checks:

1. libabigail: `abidw` writes the library's ABI (exported zt_* functions and
   the public header's types only), `abidiff` compares it with the baseline.
   Compatible: no change, added functions, enumerators added to an enum, and
   members appended at the end of a struct (our option and view structs begin
   with struct_size, so a library knows how much of a caller's struct exists).
   Everything else fails: a removed function, a changed parameter or return
   type, a member moved, retyped or removed, a changed enumerator value, a
   changed soname. abidiff's own suppression for appended members
   (has_data_member_inserted_at = end) also hides a member moved to the end,
   so this script reads abidiff's report instead and accepts only the lines
   that describe an addition.
2. The constants of the baseline header (abi/ztensor-1.0.h): every
   `ZT_NAME = value` enumerator and every numeric `#define ZT_NAME value` keeps
   its value in the current header (enums such as zt_io_mode travel in
   uint32_t fields, where abidiff does not see them). ZT_VERSION_* may move.

Exit status: 0 compatible (additions are listed), 1 incompatible, 2 the check
could not run (a tool is missing, no debug information).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Lines of an abidiff report that describe only compatible changes.
ALLOWED = [
    r"Functions changes summary: 0 Removed, \d+ Changed( \(\d+ filtered out\))?, \d+ Added functions?",
    r"Variables changes summary: 0 Removed, 0 Changed( \(\d+ filtered out\))?, \d+ Added variables?",
    r"\d+ Added functions?:",
    r"\d+ Added variables?:",
    r"\[A\] '(function|variable) .*",
    r"\d+ functions? with some indirect sub-type changes?:",
    r"\[C\] 'function .*' has some indirect sub-type changes:",
    r"parameter \d+ of type '.*' has sub-type changes:",
    r"return type changed:",
    r"in pointed to type '.*':",
    r"in unqualified underlying type '.*':",
    r"underlying type '(struct|typedef) .*' changed:",
    r"\d+ data member insertions?:",
]
SIZE = re.compile(r"type size changed from (\d+) to (\d+) \(in bits\)")
INSERTED = re.compile(r"'(.*)', at offset (\d+) \(in bits\)")


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def abidw(lib, headers, out):
    """The library's ABI as abixml, without paths of the machine that built it."""
    p = run(["abidw", "--headers-dir", headers, "--drop-private-types", "--exported-interfaces-only",
             "--no-corpus-path", "--no-comp-dir-path", "--no-show-locs", "--type-id-style", "hash",
             "--drop-undefined-syms", lib])
    if p.returncode != 0:
        raise SystemExit("abi_check: abidw failed on %s:\n%s" % (lib, p.stderr))
    if "<function-decl" not in p.stdout:
        print("abi_check: %s has no debug information for its functions (build it with -g)" % lib)
        sys.exit(2)
    # Source paths (path='/home/me/libztensor/capi/x.cpp') become relative to
    # the tree, so the baseline does not depend on where it was built.
    text = re.sub(r"path='[^']*/(capi|src)/", r"path='\1/", p.stdout)
    with open(out, "w") as f:
        f.write(text)


def soname(abi_path):
    with open(abi_path) as f:
        m = re.search(r"<abi-corpus [^>]*soname='([^']*)'", f.read(4096))
    return m.group(1) if m else None


def classify(report):
    """(problems, additions) from an abidiff report."""
    problems, additions = [], []
    size_before = None
    inserting = False
    for raw in report.splitlines():
        line = raw.strip()
        if not line:
            continue
        m = SIZE.fullmatch(line)
        if m:
            size_before = int(m.group(1))
            if int(m.group(2)) < size_before:
                problems.append(line)
            continue
        if inserting:
            m = INSERTED.fullmatch(line)
            if m:
                if size_before is None or int(m.group(2)) < size_before:
                    problems.append(line + "  (not after the old end of the struct)")
                else:
                    additions.append("member %s appended at bit %s" % (m.group(1), m.group(2)))
                continue
            inserting = False
        if re.fullmatch(r"\d+ data member insertions?:", line):
            inserting = True
            continue
        if line.startswith("[A] "):
            additions.append(line[4:].split("    {")[0])
            continue
        if any(re.fullmatch(a, line) for a in ALLOWED):
            continue
        problems.append(line)
    return problems, additions


CONSTANT = re.compile(r"^\s*(ZT_[A-Z0-9_]+)\s*=\s*(-?\d+)|^#define\s+(ZT_[A-Z0-9_]+)\s+\(?(-?\d+)[uU]?\)?\s*$", re.M)


def constants(header):
    with open(header) as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    out = {}
    for m in CONSTANT.finditer(text):
        name, value = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        out[name] = int(value)
    return out


def check_constants(old_header, new_header):
    old, new = constants(old_header), constants(new_header)
    problems = []
    added = ["constant %s = %d" % (n, v) for n, v in sorted(new.items()) if n not in old]
    for name, value in sorted(old.items()):
        if name.startswith("ZT_VERSION_"):
            continue
        if name not in new:
            problems.append("constant %s (= %d) is gone from %s" % (name, value, new_header))
        elif new[name] != value:
            problems.append("constant %s changed from %d to %d" % (name, value, new[name]))
    return problems, added, len(old)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", required=True, help="libztensor.so.1 built with -g")
    ap.add_argument("--headers", default=os.path.join(ROOT, "include"),
                    help="the directory of the ztensor.h the library was built from")
    ap.add_argument("--baseline", default=os.path.join(HERE, "libztensor.so.1.abi"))
    ap.add_argument("--baseline-header", default=os.path.join(HERE, "ztensor-1.0.h"))
    ap.add_argument("--write-baseline", action="store_true", help="write the baseline from --lib and stop")
    args = ap.parse_args()

    for tool in ("abidw", "abidiff"):
        if shutil.which(tool) is None:
            print("abi_check: %s is missing (Debian: abigail-tools; scripts/setup.sh installs it)" % tool)
            return 2
    headers = os.path.abspath(args.headers)
    if args.write_baseline:
        abidw(args.lib, headers, args.baseline)
        print("abi_check: wrote %s" % args.baseline)
        return 0

    with tempfile.TemporaryDirectory(prefix="zt-abi-") as tmp:
        current = os.path.join(tmp, "current.abi")
        abidw(args.lib, headers, current)
        p = run(["abidiff", args.baseline, current])
        if p.returncode & 3:
            print("abi_check: abidiff could not compare (exit %d):\n%s%s" % (p.returncode, p.stdout, p.stderr))
            return 2
        problems, additions = classify(p.stdout) if p.returncode else ([], [])
        if p.returncode & 8 and not problems:
            problems.append("abidiff calls the change incompatible (exit %d)" % p.returncode)
        old_soname, new_soname = soname(args.baseline), soname(current)
        if old_soname != new_soname:
            problems.append("soname changed from %s to %s" % (old_soname, new_soname))
        constant_problems, added_constants, n_constants = check_constants(
            args.baseline_header, os.path.join(headers, "ztensor.h"))
        problems += constant_problems
        additions += added_constants

    if problems:
        print("abi_check: INCOMPATIBLE with %s:" % os.path.relpath(args.baseline, ROOT))
        for line in problems:
            print("  " + line)
        print("\nabidiff's report:\n" + p.stdout)
        return 1
    print("abi_check: %s is compatible with %s (soname %s, %d baseline constants unchanged)" %
          (args.lib, os.path.relpath(args.baseline, ROOT), new_soname, n_constants))
    for a in additions:
        print("  added: " + a)
    if not additions:
        print("  no additions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
