"""The version of the package is the library's, from the one place it is
written: the ZT_VERSION_* macros of include/ztensor.h (two folders up in
the source tree). Everything else is in pyproject.toml."""

import os
import re

from setuptools import setup


def library_version():
    header = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "include", "ztensor.h")
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


setup(version=library_version())
