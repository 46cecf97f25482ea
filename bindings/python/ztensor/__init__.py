"""ztensor: read and write zTensor (.zt) files with numpy, through libztensor's C ABI.

    import ztensor
    with ztensor.open("model.zt") as f:
        for name in f:
            print(name, f.info(name).shape)
        w = f["layer.weight"]            # a zero-copy numpy view for raw data
    with ztensor.Writer("out.zt") as w:
        w["x"] = numpy.arange(6, dtype=numpy.float32).reshape(2, 3)

The library is loaded from $ZTENSOR_LIBRARY, else found by the system's
loader (libztensor.so.1), else in the libdir of `pkg-config zt`. Errors are ztensor.Error with .status,
.status_name and .message.

Attributes (File.attributes, File.info(name).attributes, and the
attributes= arguments of Writer) travel as CBOR, so every value is exact:
int (from -2**64 to 2**64 - 1), float (NaN, infinities and -0.0 included),
str, bytes, bool, None, list (tuples are written as lists), dict with str
keys, and the CBOR values ztensor.UNDEFINED and ztensor.Simple(n).
"""

from typing import Optional

from ._cbor import UNDEFINED, Simple
from ._dlpack import Tensor
from ._lib import Error
from . import _lib
from ._lib import lib as _cdll
from ._reader import COO, CSR, ComponentInfo, File, ObjectInfo, SliceView, open
from ._writer import Writer, save

__all__ = ["__version__", "open", "File", "Writer", "save", "load", "Error", "CSR", "COO", "ObjectInfo",
           "ComponentInfo", "SliceView", "Tensor", "library_version", "library_path", "cpu_count", "UNDEFINED",
           "Simple"]


def _package_version():
    """The installed package's version (the library's, at build time), or
    the loaded library's when run from the source tree."""
    try:
        from importlib.metadata import PackageNotFoundError, version
        try:
            return version("ztensor")
        except PackageNotFoundError:
            pass
    except ImportError:
        pass
    return _cdll.zt_version().decode()


def __getattr__(name):
    """__version__, made when first asked for (PEP 562): importlib.metadata
    took ~14 ms, a third of `import ztensor`."""
    if name == "__version__":
        version = globals()["__version__"] = _package_version()
        return version
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def library_version() -> str:
    """The loaded libztensor's version, "MAJOR.MINOR.PATCH" (zt_version())."""
    return _cdll.zt_version().decode()


def library_path() -> Optional[str]:
    """The file of the libztensor this process loaded: the package's own copy
    (a package built with its library, the default of pip install), the one
    ZTENSOR_LIBRARY names, or one the system loader or pkg-config found; None
    where the platform cannot say."""
    return _lib.loaded_path()


def cpu_count() -> int:
    """How many threads the library's loads and decodes use by default: the
    CPUs this process may run on (os.sched_getaffinity's), bounded by its
    cgroup's CPU quota (Docker's --cpus, a Kubernetes CPU limit; 1.5 CPUs
    count 2), at least 1; or the ZT_THREADS environment variable's whole
    number from 1 to 1024 where it is set before the first load; found once
    per process (zt_cpu_count())."""
    return int(_cdll.zt_cpu_count())


def load(path, **options) -> dict:
    """Every object of a file, as copies that do not keep the file open
    (options as for open())."""
    with open(path, **options) as f:
        out = {}
        for name in f:
            v = f[name]
            if isinstance(v, (CSR, COO)):
                out[name] = type(v)(*(a.copy() for a in v), v.shape)
            elif isinstance(v, dict):
                out[name] = {role: a.copy() for role, a in v.items()}
            else:
                out[name] = v.copy()
        return out
