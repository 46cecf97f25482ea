"""ctypes declarations of the C ABI (include/ztensor.h) and the error type.

The library is found, in this order: at the path in the environment
variable ZTENSOR_LIBRARY; inside the package (the libztensor.so.1 that
`pip install bindings/python` builds and ships, setup.py); as
"libztensor.so.1" through the system's dynamic loader (an installed prefix:
/usr/local/lib, a directory in LD_LIBRARY_PATH or ld.so.conf); in the libdir
that `pkg-config zt` names (an install under another prefix, found through
PKG_CONFIG_PATH). ztensor.library_path() says which file was loaded.
"""

import ctypes
import numbers
import os

from ctypes import (POINTER, Structure, c_char_p, c_double, c_int, c_int32,
                    c_size_t, c_uint, c_uint32, c_uint64, c_void_p)

import numpy as np

# zt_status values (the enum in ztensor.h).
OK = 0
ERR_IO = 1
ERR_FORMAT = 2
ERR_INVALID = 3
ERR_UNSUPPORTED = 4
ERR_DIGEST = 5
ERR_LIMIT = 6
ERR_NOT_FOUND = 7
ERR_ARGUMENT = 8
ERR_STATE = 9
ERR_NOMEM = 10

IO_MAP = 0
IO_COPY = 1

DIGESTS = {"xxh3": 0, "sha256": 1, "none": 2}


class Error(Exception):
    """A failing libztensor call: `status` (the zt_status number),
    `status_name` ("ZT_ERR_INVALID", ...) and the library's `message`."""

    def __init__(self, status, message):
        self.status = int(status)
        self.status_name = _lib.zt_status_name(self.status).decode()
        self.message = message
        super().__init__(f"{self.status_name}: {message}")

    def __reduce__(self):
        # Rebuilt from (status, message), so that the error crosses process
        # boundaries (multiprocessing, concurrent.futures) intact.
        return (type(self), (self.status, self.message))


SONAME = "libztensor.so.1"


def _pkg_config_libdir():
    """The libdir of `pkg-config zt`, or None."""
    import shutil  # here: the last way tried, and subprocess costs ~3 ms of every import
    import subprocess
    if not shutil.which("pkg-config"):
        return None
    try:
        p = subprocess.run(["pkg-config", "--variable=libdir", "zt"], capture_output=True,
                           text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    libdir = p.stdout.strip()
    return libdir if p.returncode == 0 and libdir else None


def _load():
    tried = []
    explicit = os.environ.get("ZTENSOR_LIBRARY")
    if explicit:
        try:
            return ctypes.CDLL(explicit)
        except OSError as e:
            raise ImportError(f"ztensor: cannot load libztensor from ZTENSOR_LIBRARY={explicit}: "
                              f"{e}") from None
    bundled = os.path.join(os.path.dirname(os.path.abspath(__file__)), SONAME)
    if os.path.exists(bundled):
        try:
            return ctypes.CDLL(bundled)
        except OSError as e:  # a runtime library missing: say so, then try the others
            tried.append(f"the package's own copy ({bundled}): {e}")
    try:
        return ctypes.CDLL(SONAME)
    except OSError as e:
        tried.append(f"the system loader: {e}")
    libdir = _pkg_config_libdir()
    if libdir:
        path = os.path.join(libdir, SONAME)
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"pkg-config zt ({path}): {e}")
    else:
        tried.append("pkg-config zt: not found")
    raise ImportError(
        "ztensor: cannot find libztensor (" + "; ".join(tried) + "). Install the library "
        "(cmake --install build) and then either set ZTENSOR_LIBRARY to the path of "
        f"{SONAME}, or install it where the system loader finds it (e.g. /usr/local/lib, "
        "then run ldconfig), or make `pkg-config zt` find it (PKG_CONFIG_PATH=<prefix>/lib/"
        "pkgconfig)") from None


_lib = _load()


class _DlInfo(Structure):
    _fields_ = [("dli_fname", c_char_p), ("dli_fbase", c_void_p), ("dli_sname", c_char_p),
                ("dli_saddr", c_void_p)]


def loaded_path():
    """The path of the libztensor file this process loaded (dladdr of one of
    its functions), or None where the platform cannot say."""
    try:
        libc = ctypes.CDLL(None)
        dladdr = libc.dladdr
    except (OSError, AttributeError):
        return None
    dladdr.argtypes = [c_void_p, POINTER(_DlInfo)]
    dladdr.restype = c_int
    info = _DlInfo()
    address = ctypes.cast(_lib.zt_version, c_void_p)
    if not dladdr(address, ctypes.byref(info)) or not info.dli_fname:
        return None
    return os.path.realpath(os.fsdecode(info.dli_fname))

_reader_p = c_void_p
_writer_p = c_void_p
_u64_p = POINTER(c_uint64)


class OpenOptions(Structure):
    _fields_ = [("struct_size", c_uint32), ("io_mode", c_uint32),
                ("max_decoded_bytes", c_uint64), ("allow_foreign", c_uint32),
                ("cache_bytes", c_uint64), ("http_headers", c_char_p),
                ("http_timeout_ms", c_uint32), ("http_retries", c_uint32),
                ("http_connections", c_uint32)]


# zt_source: a file read through callbacks (zt_open_source).
SOURCE_CONCURRENT = 1
SourceReadAt = ctypes.CFUNCTYPE(c_int, c_void_p, c_uint64, c_size_t, c_void_p, POINTER(c_size_t))
SourceSize = ctypes.CFUNCTYPE(c_int, c_void_p, POINTER(c_uint64))
SourceClose = ctypes.CFUNCTYPE(None, c_void_p)


class Source(Structure):
    _fields_ = [("struct_size", c_uint32), ("flags", c_uint32), ("ctx", c_void_p),
                ("read_at", SourceReadAt), ("size", SourceSize), ("close", SourceClose),
                ("name", c_char_p)]


class WriterOptions(Structure):
    _fields_ = [("struct_size", c_uint32), ("zstd_level", c_int32), ("threads", c_uint32),
                ("digest", c_uint32), ("frame_size", c_uint64), ("auto_min_ratio", c_double),
                ("file_version", c_uint32), ("alignment", c_uint64), ("canonical", c_uint32),
                ("shard_bytes", c_uint64)]


class DecodeRequest(Structure):
    """zt_decode_request: an array element, its layout frozen (ztensor.h)."""
    _fields_ = [("struct_size", c_uint32), ("status", c_uint32), ("object", c_size_t),
                ("role", c_char_p), ("dst", c_void_p), ("capacity", c_uint64),
                ("written", c_uint64)]


class DecodeRange(Structure):
    """zt_decode_range: an array element, its layout frozen (ztensor.h)."""
    _fields_ = [("struct_size", c_uint32), ("status", c_uint32), ("object", c_size_t),
                ("role", c_char_p), ("offset", c_uint64), ("dst", c_void_p), ("length", c_uint64),
                ("written", c_uint64)]


class DenseItem(Structure):
    """zt_dense_item: an array element, its layout frozen (ztensor.h)."""
    _fields_ = [("struct_size", c_uint32), ("ndim", c_uint32), ("name", c_char_p), ("dtype", c_char_p),
                ("shape", c_void_p), ("data", c_void_p), ("nbytes", c_uint64)]


def records_of(struct, fields):
    """A numpy record dtype of `fields` (name, numpy type) laid out exactly
    as the ctypes `struct` (64-bit little-endian size_t and pointers), or
    None elsewhere, where arrays of it are built as ctypes structs."""
    dtype = np.dtype(fields)
    if np.little_endian and dtype.itemsize == ctypes.sizeof(struct) and all(
            dtype.fields[n][1] == getattr(struct, n).offset for n in dtype.names):
        return dtype
    return None


class ObjectSummary(Structure):
    """zt_object_summary: an array element, its layout frozen (ztensor.h).
    The strings read as bytes and the shape as a pointer to index: each
    such field costs ~0.1 us, string_at() ~1 us (a model of many small
    tensors plans at this speed). dtype and type stay addresses: the
    reader's few dtype names are read once per address."""
    _fields_ = [("struct_size", c_uint32), ("ndim", c_uint32), ("name", c_char_p),
                ("format", c_char_p), ("layout", c_char_p), ("shape", POINTER(c_uint64)),
                ("dtype", c_void_p), ("type", c_void_p), ("components", c_uint64),
                ("attributes_size", c_uint64)]


class CsrInfo(Structure):
    _fields_ = [("struct_size", c_uint32), ("zero_copy", c_uint32), ("rows", c_uint64),
                ("cols", c_uint64), ("nnz", c_uint64), ("values", c_void_p),
                ("values_dtype", c_char_p), ("values_type", c_char_p), ("indices", c_void_p),
                ("indices_dtype", c_char_p), ("indptr", c_void_p), ("indptr_dtype", c_char_p)]


class DenseInfo(Structure):
    _fields_ = [("struct_size", c_uint32), ("zero_copy", c_uint32), ("elements", c_uint64),
                ("values", c_uint64), ("dtype", c_char_p), ("type", c_char_p),
                ("data", c_void_p), ("nbytes", c_uint64)]


class CooInfo(Structure):
    _fields_ = [("struct_size", c_uint32), ("zero_copy", c_uint32), ("ndim", c_uint64),
                ("shape", POINTER(c_uint64)), ("nnz", c_uint64), ("values", c_void_p),
                ("values_dtype", c_char_p), ("values_type", c_char_p), ("coords", c_void_p),
                ("coords_dtype", c_char_p)]


def _declare(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)


_STATUS = c_int
for _name, _res, _args in [
    ("zt_status_name", c_char_p, [c_int]),
    ("zt_last_error", c_char_p, []),
    ("zt_version", c_char_p, []),
    ("zt_url_for_messages", c_size_t, [c_char_p, c_char_p, c_size_t]),
    ("zt_open_options_init_sized", None, [POINTER(OpenOptions), c_size_t]),
    ("zt_open_ex", _STATUS, [c_char_p, POINTER(OpenOptions), POINTER(_reader_p)]),
    ("zt_open_url", _STATUS, [c_char_p, POINTER(OpenOptions), POINTER(_reader_p)]),
    ("zt_close", None, [_reader_p]),
    ("zt_open_memory", _STATUS, [c_void_p, c_size_t, POINTER(_reader_p)]),
    ("zt_source_init_sized", None, [POINTER(Source), c_size_t]),
    ("zt_open_source", _STATUS, [POINTER(Source), POINTER(OpenOptions), POINTER(_reader_p)]),
    ("zt_file_version", c_char_p, [_reader_p]),
    ("zt_file_format", c_char_p, [_reader_p]),
    ("zt_manifest_json", c_char_p, [_reader_p]),
    ("zt_object_count", c_size_t, [_reader_p]),
    ("zt_object_name", c_char_p, [_reader_p, c_size_t]),
    ("zt_object_find", _STATUS, [_reader_p, c_char_p, POINTER(c_size_t)]),
    ("zt_object_format", c_char_p, [_reader_p, c_size_t]),
    ("zt_object_layout", c_char_p, [_reader_p, c_size_t]),
    ("zt_object_shape", _u64_p, [_reader_p, c_size_t, POINTER(c_size_t)]),
    ("zt_component_count", c_size_t, [_reader_p, c_size_t]),
    ("zt_component_role", c_char_p, [_reader_p, c_size_t, c_size_t]),
    ("zt_component_dtype", c_char_p, [_reader_p, c_size_t, c_char_p]),
    ("zt_component_type", c_char_p, [_reader_p, c_size_t, c_char_p]),
    ("zt_component_encoding", c_char_p, [_reader_p, c_size_t, c_char_p]),
    ("zt_component_encoding_id", c_char_p, [_reader_p, c_size_t, c_char_p]),
    ("zt_component_shard", c_char_p, [_reader_p, c_size_t, c_char_p]),
    ("zt_component_stored_size", _STATUS, [_reader_p, c_size_t, c_char_p, _u64_p]),
    ("zt_component_extent", _STATUS, [_reader_p, c_size_t, c_char_p, _u64_p, _u64_p]),
    ("zt_component_extents", _STATUS, [_reader_p, c_char_p, c_size_t, c_size_t, c_void_p, c_void_p, c_void_p]),
    ("zt_component_files", _STATUS, [_reader_p, c_char_p, c_size_t, c_size_t, c_void_p, c_void_p, c_void_p,
                                     c_void_p, c_void_p]),
    ("zt_component_decoded_size", _STATUS, [_reader_p, c_size_t, c_char_p, _u64_p]),
    ("zt_component_map", _STATUS, [_reader_p, c_size_t, c_char_p, POINTER(c_void_p), _u64_p]),
    ("zt_component_read", _STATUS, [_reader_p, c_size_t, c_char_p, c_void_p, c_uint64, _u64_p]),
    ("zt_component_read_size", _STATUS, [_reader_p, c_size_t, c_char_p, _u64_p]),
    ("zt_verify", _STATUS, [_reader_p, _u64_p, _u64_p]),
    ("zt_content_digest", _STATUS, [_reader_p, c_char_p, c_char_p, c_size_t]),
    ("zt_writer_options_init_sized", None, [POINTER(WriterOptions), c_size_t]),
    ("zt_writer_open_ex", _STATUS, [c_char_p, POINTER(WriterOptions), POINTER(_writer_p)]),
    ("zt_writer_open_append", _STATUS, [c_char_p, POINTER(WriterOptions), POINTER(_writer_p)]),
    ("zt_writer_add_dense", _STATUS,
     [_writer_p, c_char_p, c_char_p, _u64_p, c_size_t, c_void_p, c_uint64, c_char_p]),
    ("zt_writer_add_dense_many", _STATUS, [_writer_p, c_void_p, c_size_t, c_char_p, POINTER(c_size_t)]),
    ("zt_writer_begin_object", _STATUS, [_writer_p, c_char_p, c_char_p, _u64_p, c_size_t]),
    ("zt_writer_add_component", _STATUS,
     [_writer_p, c_char_p, c_char_p, c_char_p, c_void_p, c_uint64, c_char_p]),
    ("zt_writer_end_object", _STATUS, [_writer_p]),
    ("zt_writer_cancel_object", _STATUS, [_writer_p]),
    ("zt_writer_begin_component", _STATUS, [_writer_p, c_char_p, c_char_p, c_char_p, c_char_p, c_uint64]),
    ("zt_writer_write", _STATUS, [_writer_p, c_void_p, c_uint64]),
    ("zt_writer_end_component", _STATUS, [_writer_p]),
    ("zt_decode_request_init", None, [c_void_p]),
    ("zt_decode_many", _STATUS, [_reader_p, c_void_p, c_size_t, c_uint32]),
    ("zt_decode_range_init", None, [c_void_p]),
    ("zt_decode_ranges", _STATUS, [_reader_p, c_void_p, c_size_t, c_uint32, c_void_p, c_void_p]),
    ("zt_cpu_count", c_uint, []),
    ("zt_writer_set_file_attributes_json", _STATUS, [_writer_p, c_char_p]),
    ("zt_writer_set_object_attributes_json", _STATUS, [_writer_p, c_char_p]),
    ("zt_writer_set_file_attributes_cbor", _STATUS, [_writer_p, c_char_p, c_size_t]),
    ("zt_writer_set_object_attributes_cbor", _STATUS, [_writer_p, c_char_p, c_size_t]),
    ("zt_file_attributes_cbor", _STATUS, [_reader_p, POINTER(c_void_p), POINTER(c_size_t)]),
    ("zt_object_attributes_cbor", _STATUS, [_reader_p, c_size_t, POINTER(c_void_p), POINTER(c_size_t)]),
    ("zt_writer_finish", _STATUS, [_writer_p]),
    ("zt_writer_abort", None, [_writer_p]),
    # typed views
    ("zt_object_value_count", _STATUS, [_reader_p, c_size_t, _u64_p]),
    ("zt_object_decode_capacity", _STATUS, [_reader_p, c_size_t, c_size_t, _u64_p]),
    ("zt_object_read_f32", _STATUS, [_reader_p, c_size_t, c_void_p, c_uint64, _u64_p]),
    ("zt_object_read_f64", _STATUS, [_reader_p, c_size_t, c_void_p, c_uint64, _u64_p]),
    ("zt_component_read_f32", _STATUS, [_reader_p, c_size_t, c_char_p, c_void_p, c_uint64, _u64_p]),
    ("zt_object_decode_f32", _STATUS, [_reader_p, c_size_t, c_void_p, c_uint64, _u64_p]),
    ("zt_object_decode_f64", _STATUS, [_reader_p, c_size_t, c_void_p, c_uint64, _u64_p]),
    ("zt_object_summary_init", None, [POINTER(ObjectSummary)]),
    ("zt_object_summaries", _STATUS, [_reader_p, c_size_t, POINTER(ObjectSummary), c_size_t]),
    ("zt_dense_info_init_sized", None, [POINTER(DenseInfo), c_size_t]),
    ("zt_dense_view", _STATUS, [_reader_p, c_size_t, POINTER(DenseInfo)]),
    ("zt_csr_info_init_sized", None, [POINTER(CsrInfo), c_size_t]),
    ("zt_csr_view", _STATUS, [_reader_p, c_size_t, POINTER(CsrInfo)]),
    ("zt_coo_info_init_sized", None, [POINTER(CooInfo), c_size_t]),
    ("zt_coo_view", _STATUS, [_reader_p, c_size_t, POINTER(CooInfo)]),
    ("zt_dense_rows_map", _STATUS,
     [_reader_p, c_size_t, c_uint64, c_uint64, POINTER(c_void_p), _u64_p]),
    ("zt_dense_rows", _STATUS, [_reader_p, c_size_t, c_uint64, c_uint64, c_void_p, c_uint64, _u64_p]),
    ("zt_dense_slice", _STATUS, [_reader_p, c_size_t, c_size_t, _u64_p, _u64_p, c_void_p, c_uint64, _u64_p]),
    ("zt_dense_slice_f32", _STATUS, [_reader_p, c_size_t, c_size_t, _u64_p, _u64_p, c_void_p, c_uint64, _u64_p]),
    ("zt_dense_slice_f64", _STATUS, [_reader_p, c_size_t, c_size_t, _u64_p, _u64_p, c_void_p, c_uint64, _u64_p]),
    ("zt_dense_rows_f32", _STATUS,
     [_reader_p, c_size_t, c_uint64, c_uint64, c_void_p, c_uint64, _u64_p]),
    ("zt_dense_rows_f64", _STATUS,
     [_reader_p, c_size_t, c_uint64, c_uint64, c_void_p, c_uint64, _u64_p]),
]:
    _declare(_name, _res, *_args)


def new_struct(cls, init_sized):
    """A `cls` filled by the library's *_init_sized call, which writes no
    more than the size this binding knows and records it in struct_size."""
    s = cls()
    init_sized(ctypes.byref(s), ctypes.sizeof(cls))
    return s


def check(status):
    """Raises Error for a failing status. The message is read at once: it is
    thread-local and valid until the next call in this thread."""
    if status != OK:
        raise Error(status, _lib.zt_last_error().decode(errors="replace"))


def text(p):
    return None if p is None else p.decode()


def shown_location(location):
    """What messages show of a path or URL (zt_url_for_messages): an
    http(s) URL without user info, query string and fragment, where
    passwords and signatures travel; a path as it is."""
    raw = location.encode("utf-8", "surrogateescape") if isinstance(location, str) else bytes(location)
    n = _lib.zt_url_for_messages(raw, None, 0)
    out = ctypes.create_string_buffer(n + 1)
    _lib.zt_url_for_messages(raw, out, n + 1)
    return out.value.decode("utf-8", "surrogateescape")


def cstr(s):
    """A str for a C string argument. A NUL inside it would silently cut the
    string short at the C boundary (another object, another file), so it is
    refused."""
    if s is None:
        return None
    if "\0" in s:
        raise ValueError(f"embedded NUL character in {s!r}")
    return s.encode()


def checked_int(v, what, lo=0, hi=2 ** 64 - 1):
    """An integer for a C integer argument, range-checked: ctypes would wrap
    2**64 + 3 to 3 and truncate 2.9 to 2 without a word."""
    if type(v) is int:  # the usual argument: no ABC check
        if not lo <= v <= hi:
            raise ValueError(f"{what} {v} is out of range [{lo}, {hi}]")
        return v
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{what} must be an integer, not {type(v).__name__} {v!r}")
    v = int(v)
    if not lo <= v <= hi:
        raise ValueError(f"{what} {v} is out of range [{lo}, {hi}]")
    return v


def cpath(p):
    """A path for a C string argument, with the same NUL rule as cstr."""
    b = os.fsencode(p)
    if b"\0" in b:
        raise ValueError(f"embedded NUL character in path {os.fsdecode(b)!r}")
    return b


class NotCopyable:
    """Handles that own a C object cannot be copied or pickled: a copy would
    free the same C object twice."""

    def __copy__(self):
        raise TypeError(f"cannot copy a {type(self).__name__}: it owns an open libztensor handle")

    def __deepcopy__(self, memo):
        raise TypeError(f"cannot copy a {type(self).__name__}: it owns an open libztensor handle")

    def __reduce_ex__(self, protocol):
        raise TypeError(f"cannot pickle a {type(self).__name__}: it owns an open libztensor handle")


lib = _lib
