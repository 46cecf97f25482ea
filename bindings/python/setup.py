"""How the package is built; everything else is in pyproject.toml.

The version is the library's, from the one place it is written: the
ZT_VERSION_* macros of include/ztensor.h (two folders up in the source
tree).

Inside the libztensor source tree (bindings/python/ of it), building the
package also configures and builds libztensor.so.1 with CMake (the library
alone: no tests, no `zt` tool) and ships it inside the package, so that
`pip install bindings/python` or its wheel is all a Python user needs
(ztensor._lib loads that copy first). The wheel is then tagged for this
platform (py3-none-<platform>: the library is loaded with ctypes, so any
Python 3 takes it). Set ZTENSOR_BUILD_LIBRARY=0 for a pure-Python package
over a library installed apart (found through ZTENSOR_LIBRARY, the loader or
pkg-config); =1 makes a missing source tree or CMake an error instead of
falling back to that. ZTENSOR_CMAKE_ARGS adds arguments to the configure
step; CMAKE_BUILD_PARALLEL_LEVEL sets the build's jobs (default: all cores).
"""

import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SONAME = "libztensor.so.1"


def library_version():
    header = os.path.join(ROOT, "include", "ztensor.h")
    try:
        with open(header, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise SystemExit(f"ztensor: cannot read the library's version from {header}: {e} "
                         "(build the package from the libztensor source tree)") from None
    parts = [re.search(rf"^#define ZT_VERSION_{p} +(\d+)", text, re.M) for p in ("MAJOR", "MINOR", "PATCH")]
    if not all(parts):
        raise SystemExit(f"ztensor: {header} has no ZT_VERSION_MAJOR/MINOR/PATCH")
    return ".".join(m.group(1) for m in parts)


def bundles_library():
    """Whether this build makes libztensor and ships it in the package."""
    wanted = os.environ.get("ZTENSOR_BUILD_LIBRARY", "auto")
    if wanted not in ("0", "1", "auto"):
        raise SystemExit(f"ztensor: ZTENSOR_BUILD_LIBRARY is 0, 1 or unset, not {wanted!r}")
    if wanted == "0":
        return False
    tree = all(os.path.exists(os.path.join(ROOT, p)) for p in ("CMakeLists.txt", "capi", "src"))
    cmake = shutil.which("cmake") is not None
    if wanted == "1" and not (tree and cmake):
        raise SystemExit("ztensor: ZTENSOR_BUILD_LIBRARY=1 needs the libztensor source tree around "
                         f"bindings/python ({ROOT}) and cmake on PATH")
    if not (tree and cmake):
        print(f"ztensor: {'no cmake on PATH' if tree else 'not inside the libztensor source tree'}: "
              "building a package that uses an installed libztensor", file=sys.stderr)
    return tree and cmake


def build_library(build_temp):
    """Configures and builds libztensor.so.1 under build_temp; its path."""
    out = os.path.join(os.path.abspath(build_temp), "libztensor")
    configure = ["cmake", "-S", ROOT, "-B", out, "-DCMAKE_BUILD_TYPE=Release", "-DZT_BUILD_TESTS=OFF",
                 "-DZT_BUILD_CLI=OFF", "-DZT_BUILD_BENCH=OFF", "-DZT_BUILD_FUZZ=OFF", "-DZT_BUILD_SHARED=ON"]
    if shutil.which("ninja") and not os.path.exists(os.path.join(out, "CMakeCache.txt")):
        configure += ["-G", "Ninja"]
    configure += shlex.split(os.environ.get("ZTENSOR_CMAKE_ARGS", ""))
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
    print("ztensor: building libztensor with CMake in " + out, file=sys.stderr)
    for cmd in (configure, ["cmake", "--build", out, "--target", "ztensor", "--parallel", jobs]):
        try:
            subprocess.run(cmd, check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            raise SystemExit(f"ztensor: building libztensor failed ({' '.join(cmd)}): {e}. Install the "
                             "build packages (bash scripts/setup.sh), or set ZTENSOR_BUILD_LIBRARY=0 to "
                             "use an installed library") from None
    built = os.path.join(out, SONAME)
    if not os.path.exists(built):
        raise SystemExit(f"ztensor: the CMake build made no {built}")
    return os.path.realpath(built)


class BuildPyWithLibrary(build_py):
    """build_py, then libztensor.so.1 beside the package's modules."""

    def run(self):
        super().run()
        if self.distribution.bundles_library:
            build_temp = self.get_finalized_command("build").build_temp
            target = os.path.join(self.build_lib, "ztensor", SONAME)
            shutil.copyfile(build_library(build_temp), target)
            os.chmod(target, 0o755)


class PackageDistribution(Distribution):
    """A distribution that is platform-specific when it ships the library."""

    def __init__(self, attrs=None):
        self.bundles_library = bundles_library()
        super().__init__(attrs)

    def has_ext_modules(self):
        return self.bundles_library


commands = {"build_py": BuildPyWithLibrary}
try:
    from wheel.bdist_wheel import bdist_wheel

    class PlatformWheel(bdist_wheel):
        """py3-none-<platform> when the library is inside: it is loaded with
        ctypes, so any Python 3 on this platform takes the wheel."""

        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = not self.distribution.bundles_library

        def get_tag(self):
            python, abi, platform = super().get_tag()
            return ("py3", "none", platform) if self.distribution.bundles_library else (python, abi, platform)

    commands["bdist_wheel"] = PlatformWheel
except ImportError:  # no wheel package: pip builds no wheel either
    pass

setup(version=library_version(), distclass=PackageDistribution, cmdclass=commands, zip_safe=False)
