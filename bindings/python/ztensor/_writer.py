"""Writing: ztensor.Writer takes numpy arrays."""

import ctypes
import os
import threading
from typing import Any, Dict, Optional, Sequence, Union
from ctypes import byref, c_uint64, c_void_p

import numpy as np

from . import _cbor, _lib
from ._lib import NotCopyable, check, checked_int, cpath, cstr, lib

# numpy dtype kind+size -> (storage dtype, logical type)
_ZT_OF_NUMPY = {
    "f8": ("f64", None), "f4": ("f32", None), "f2": ("f16", None),
    "i8": ("i64", None), "i4": ("i32", None), "i2": ("i16", None), "i1": ("i8", None),
    "u8": ("u64", None), "u4": ("u32", None), "u2": ("u16", None), "u1": ("u8", None),
    "b1": ("bool", None),
    "c8": ("f32", "complex64"), "c16": ("f64", "complex128"),
}
_WIDTH = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "i16": 2, "i8": 1,
          "u64": 8, "u32": 4, "u16": 2, "u8": 1, "bool": 1}


PathLike = Union[str, "os.PathLike[str]"]


def _attributes_cbor(attributes):
    """The attributes dict as one encoded CBOR map: every value exact. Refused
    here (TypeError, ValueError, OverflowError) before anything is begun."""
    if not isinstance(attributes, dict):
        raise TypeError("attributes must be a dict")
    return _cbor.dumps(attributes)


def _refuse_objects(a):
    """Arrays of Python objects (dtype=object, structured dtypes with object
    fields, numpy 2's StringDType) hold pointers into this process: written
    under dtype="u64" or a complex type they would be stored as addresses."""
    if a.dtype.hasobject or a.dtype.kind == "T":
        raise TypeError(f"numpy dtype {a.dtype} holds Python objects, not data: "
                        "convert the array to a numeric dtype first")


def _indices(x, what):
    """An index array as u64. Converting anything else would change it
    without a word: floats truncate (1.9 -> 1), negatives wrap to 2**64 - k.
    An empty list (numpy makes it float64) is an empty index."""
    a = np.asarray(x)
    _refuse_objects(a)
    if a.size == 0:
        return a.astype(np.uint64)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{what} must be integers, not {a.dtype}")
    if a.dtype.kind == "i" and a.min() < 0:
        raise ValueError(f"{what} holds a negative index ({a.min()})")
    return a.astype(np.uint64, copy=False)


def _canonical_order(items):
    """(name, value) pairs in the order canonical form takes objects: the
    bytewise order of the names as the C library gets them (cstr's UTF-8)."""
    return sorted(items, key=lambda item: cstr(item[0]))


def _prepare(array, dtype=None, type=None):
    """A C-contiguous little-endian array and its (dtype, type) for the file.

    dtype overrides the storage dtype for bit patterns numpy has no type for
    (bf16 as uint16, ...); its width must match the array's itemsize."""
    a = np.asarray(array)
    _refuse_objects(a)
    if a.dtype.byteorder == ">" or (a.dtype.byteorder == "=" and np.little_endian is False):
        a = a.astype(a.dtype.newbyteorder("<"))
    if not a.flags.c_contiguous:
        a = a.copy(order="C")  # not ascontiguousarray: it makes scalars 1-d
    key = f"{a.dtype.kind}{a.dtype.itemsize}"
    if dtype is None:
        if key not in _ZT_OF_NUMPY:
            raise TypeError(f"numpy dtype {a.dtype} has no zTensor dtype "
                            "(pass dtype= for raw bit patterns)")
        dtype, implied = _ZT_OF_NUMPY[key]
        type = type if type is not None else implied
    elif _WIDTH.get(dtype) != a.dtype.itemsize and not (type or "").startswith("complex"):
        raise ValueError(f"dtype {dtype!r} needs {_WIDTH.get(dtype)}-byte elements, "
                         f"the array has {a.dtype.itemsize}-byte {a.dtype}")
    return a, dtype, type


def _shape_arg(shape):
    """(ctypes uint64 array, rank) of a shape, each dimension checked."""
    dims = [checked_int(d, "dimension") for d in shape]
    n = len(dims)
    return (_DIMS[n] if n < len(_DIMS) else c_uint64 * n)(*dims), n


_DIMS = [c_uint64 * max(n, 1) for n in range(9)]  # the array types of the usual ranks, made once

# zt_dense_item as a numpy record (None where its layout differs: 32-bit,
# big-endian), so that many items are filled a column at a time.
_ITEM_SIZE = ctypes.sizeof(_lib.DenseItem)
_ITEM_DTYPE = _lib.records_of(_lib.DenseItem, [
    ("struct_size", "<u4"), ("ndim", "<u4"), ("name", "<u8"), ("dtype", "<u8"), ("shape", "<u8"),
    ("data", "<u8"), ("nbytes", "<u8")])


class Writer(NotCopyable):
    """Writes a .zt file. Nothing appears at `path` until finish(); used as a
    context manager it finishes on success and aborts on an exception.

        with ztensor.Writer("model.zt") as w:
            w["weight"] = np.zeros((4, 3), np.float32)
            w.add("ids", np.arange(10), encoding="zstd")
            w.add_csr("adj", values, indices, indptr, shape=(3, 3))

    zstd_level, threads (0 = all cores), digest ("xxh3", "sha256", "none"),
    frame_size and auto_min_ratio override the library's defaults.
    file_version=2 writes zTensor v2 (the default is the 1.2.0 container);
    alignment (v2 only, a multiple of 4096) defaults to 65536. canonical=True
    writes v2 canonical form (the same tensors give the same bytes): objects
    added in bytewise (UTF-8) name order, raw parts, identical parts sharing
    one blob, names in Unicode NFC; add_object (and add_csr, add_coo) then
    write an object's parts in the role order it asks for, ztensor.save sorts
    the names. shard_bytes=N (v2) splits the model into files
    <stem>-00001-<12 hex of their sha256>.zt ... of at most N bytes beside
    the root file (a failed rewrite leaves the old model whole).
    append=True adds a new generation to the existing v2 file at `path` (v2
    spec 2.5): its objects stay, objects added under their names replace
    them, and the file keeps its bytes until finish().
    encoding is "raw", "zstd", "auto" (zstd only where it pays; with
    file_version=2, byte planes for floats where they beat zstd by 5%) or,
    with file_version=2, "planes" (byte planes: libztensor.byte_planes/1).
    """

    def __init__(self, path, *, zstd_level=None, threads=None, digest=None, frame_size=None,
                 auto_min_ratio=None, file_version=None, alignment=None, canonical=None,
                 shard_bytes=None, append=False):
        # One call at a time: ctypes releases the GIL, and the C writer is
        # one caller at a time. Threads may share a Writer; their calls queue.
        self._lock = threading.RLock()
        self._canonical = bool(canonical)
        opt = _lib.new_struct(_lib.WriterOptions, lib.zt_writer_options_init_sized)
        if zstd_level is not None:
            opt.zstd_level = checked_int(zstd_level, "zstd_level", -(2 ** 31), 2 ** 31 - 1)
        if threads is not None:
            opt.threads = checked_int(threads, "threads", 0, 2 ** 32 - 1)
        if digest is not None:
            if digest not in _lib.DIGESTS:
                raise ValueError(f"digest must be one of {sorted(_lib.DIGESTS)}")
            opt.digest = _lib.DIGESTS[digest]
        if frame_size is not None:
            opt.frame_size = checked_int(frame_size, "frame_size")
        if auto_min_ratio is not None:
            opt.auto_min_ratio = auto_min_ratio
        if file_version is not None:
            opt.file_version = checked_int(file_version, "file_version", 0, 2 ** 32 - 1)
        if alignment is not None:
            opt.alignment = checked_int(alignment, "alignment")
        if canonical is not None:
            opt.canonical = 1 if canonical else 0
        if shard_bytes is not None:
            opt.shard_bytes = checked_int(shard_bytes, "shard_bytes")
        w = c_void_p()
        open_call = lib.zt_writer_open_append if append else lib.zt_writer_open_ex
        check(open_call(cpath(path), byref(opt), byref(w)))
        self._w = w.value
        self.path = os.fspath(path)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.finish()
        else:
            self.abort()

    def __del__(self):
        self.abort()

    def _live(self):
        if not self._w:
            raise _lib.Error(_lib.ERR_STATE, "the writer is already finished or aborted")
        return self._w

    # -- objects ------------------------------------------------------------

    def add(self, name: str, array: Any, *, encoding: str = "raw", dtype: Optional[str] = None,
            type: Optional[str] = None, attributes: Optional[Dict[str, Any]] = None) -> None:
        """A dense object holding `array` (any shape, C order). dtype/type
        store raw bit patterns under another name: a uint16 array as
        dtype="bf16", a uint8 array with type="f8_e4m3fn"."""
        with self._lock:
            a, zdtype, ztype = _prepare(array, dtype, type)
            if ztype is None and attributes is None:
                self._add_dense_at(name, zdtype, a.shape, a.ctypes.data, a.nbytes, encoding)
                return
            self.add_object(name, "dense", a.shape, {"data": (a, zdtype, ztype)},
                            encoding=encoding, attributes=attributes)

    __setitem__ = add

    def _add_dense_at(self, name, dtype, shape, address, nbytes, encoding):
        """The `nbytes` little-endian bytes at `address` as a dense object
        stored as `dtype`, with no type or attributes: add()'s last step,
        and save_file's way for a tensor's own memory (no numpy array made:
        ~4 us a tensor). The caller keeps the memory alive and unchanged
        through the call."""
        with self._lock:
            dims, ndim = _shape_arg(shape)
            check(lib.zt_writer_add_dense(self._live(), cstr(name), cstr(dtype), dims, ndim, address,
                                          nbytes, cstr(encoding)))

    def _add_dense_many(self, names, dtypes, shapes, addresses, sizes, encoding):
        """_add_dense_at for many objects, given a field at a time (lists
        of equal length; shapes are tuples of non-negative ints, such as
        torch.Size), in one zt_writer_add_dense_many call: a ctypes call an
        object cost ~8 us of a small tensor's save. The file is byte for
        byte the one the same _add_dense_at calls make (tested)."""
        n = len(names)
        if _ITEM_DTYPE is None or n < 2:
            for k in range(n):
                self._add_dense_at(names[k], dtypes[k], shapes[k], addresses[k], sizes[k], encoding)
            return
        encoded = [x.encode() for x in names]
        # The names back to back, each ending in its NUL; a NUL inside one
        # would cut it short in C, so it is refused as cstr() refuses it.
        text = b"\0".join(encoded) + b"\0"
        if text.count(0) != n:
            for x in names:
                cstr(x)
        name_at = np.zeros(n, np.uint64)
        np.cumsum(np.fromiter(map(len, encoded), np.uint64, n)[:-1] + 1, out=name_at[1:])
        ranks = np.fromiter(map(len, shapes), np.uint64, n)
        dims = np.array([d for shape in shapes for d in shape] or [0], np.uint64)
        dim_at = np.zeros(n, np.uint64)
        np.cumsum(ranks[:-1] * 8, out=dim_at[1:])
        dtype_of = {d: ctypes.c_char_p(cstr(d)) for d in set(dtypes)}  # alive until the call ends
        at = {d: ctypes.cast(p, c_void_p).value for d, p in dtype_of.items()}
        text_p = ctypes.c_char_p(text)
        items = np.zeros(n, _ITEM_DTYPE)
        items["struct_size"] = _ITEM_SIZE
        items["ndim"] = ranks
        items["name"] = name_at + ctypes.cast(text_p, c_void_p).value
        items["dtype"] = [at[d] for d in dtypes]
        items["shape"] = dim_at + dims.ctypes.data
        items["data"] = addresses
        items["nbytes"] = sizes
        with self._lock:
            check(lib.zt_writer_add_dense_many(self._live(), items.ctypes.data, n, cstr(encoding), None))
        del text_p, dtype_of, dims, items  # alive until here: the items point into them

    def add_csr(self, name: str, values: Any, indices: Any, indptr: Any, shape: Sequence[int], *,
                encoding: str = "raw", attributes: Optional[Dict[str, Any]] = None) -> None:
        """A sparse_csr object of shape (rows, cols); indices and indptr
        (integers, none negative) are stored as u64."""
        self.add_object(name, "sparse_csr", shape, {
            "values": np.asarray(values),  # not a tuple: that means (array, dtype, type)
            "indices": _indices(indices, "indices"),
            "indptr": _indices(indptr, "indptr"),
        }, encoding=encoding, attributes=attributes)

    def add_coo(self, name: str, values: Any, coords: Any, shape: Sequence[int], *,
                encoding: str = "raw", attributes: Optional[Dict[str, Any]] = None) -> None:
        """A sparse_coo object; coords is (ndim, nnz): all row indices, then all
        column indices, ... (integers, none negative, stored as u64)."""
        coords = _indices(coords, "coords")
        # Flattened, (nnz, ndim) coords would be a valid-looking other matrix.
        if coords.ndim != 2 or coords.shape[0] != len(shape):
            raise ValueError(f"coords must be shaped (ndim, nnz) = ({len(shape)}, nnz) "
                             f"for shape {tuple(shape)}, not {coords.shape}")
        self.add_object(name, "sparse_coo", shape, {
            "values": np.asarray(values),  # not a tuple: that means (array, dtype, type)
            "coords": coords.reshape(-1),
        }, encoding=encoding, attributes=attributes)

    def add_object(self, name: str, format: str, shape: Sequence[int], components: Dict[str, Any], *,
                   encoding: str = "raw", attributes: Optional[Dict[str, Any]] = None) -> None:
        """Any object: components maps role -> array, or -> (array, dtype, type)
        to store bit patterns under another dtype or logical type. The parts
        are written in the dict's order, or with canonical=True in bytewise
        role order (the only order it takes).
        The library checks the object against its format (ZT_ERR_INVALID
        drops it)."""
        with self._lock:
            w = self._live()
            dims, ndim = _shape_arg(shape)
            # Everything Python can refuse is refused before the object begins.
            parts = []
            for role, spec in components.items():
                array, dtype, ltype = spec if isinstance(spec, tuple) else (spec, None, None)
                parts.append((role, *_prepare(array, dtype, ltype)))
            if self._canonical:
                parts = _canonical_order(parts)
            attrs = None if attributes is None else _attributes_cbor(attributes)
            check(lib.zt_writer_begin_object(w, cstr(name), cstr(format), dims, ndim))
            try:
                if attrs is not None:
                    check(lib.zt_writer_set_object_attributes_cbor(w, attrs, len(attrs)))
                for role, a, zdtype, ztype in parts:
                    check(lib.zt_writer_add_component(w, cstr(role), cstr(zdtype), cstr(ztype),
                                                      a.ctypes.data_as(c_void_p), a.nbytes,
                                                      cstr(encoding)))
            except BaseException:
                # Any failure, the library's or Python's (a bad encoding argument,
                # KeyboardInterrupt): nothing of the object stays, and the writer
                # can take the next one.
                lib.zt_writer_cancel_object(w)
                raise
            check(lib.zt_writer_end_object(w))

    # -- streaming: objects larger than memory ------------------------------

    def begin_object(self, name: str, format: str, shape: Sequence[int], *,
                     attributes: Optional[Dict[str, Any]] = None) -> None:
        """Begins an object whose components are then written in pieces
        (begin_component), for data larger than memory; end_object() checks
        and keeps it, cancel_object() drops it."""
        attrs = None if attributes is None else _attributes_cbor(attributes)
        dims, ndim = _shape_arg(shape)
        with self._lock:
            w = self._live()
            check(lib.zt_writer_begin_object(w, cstr(name), cstr(format), dims, ndim))
            if attrs is not None:
                try:
                    check(lib.zt_writer_set_object_attributes_cbor(w, attrs, len(attrs)))
                except BaseException:
                    lib.zt_writer_cancel_object(w)
                    raise

    def begin_component(self, role: str, dtype: str, decoded_size: int, *, type: Optional[str] = None,
                        encoding: str = "raw") -> "ComponentStream":
        """A component of the object begun last, written piece by piece:
        stream.write(array_or_bytes) as often as needed (the pieces' bytes, in
        order, little-endian elements of dtype, adding up to decoded_size),
        then stream.end(). The writer's own memory stays under about
        4 x frame_size x threads whatever the component's size (two frames in
        flight a thread, each with its compressed copy). As a context manager it ends on
        success and cancels the object on an exception."""
        decoded_size = checked_int(decoded_size, "decoded_size")
        with self._lock:
            check(lib.zt_writer_begin_component(self._live(), cstr(role), cstr(dtype), cstr(type),
                                                cstr(encoding), decoded_size))
        return ComponentStream(self)

    def end_object(self) -> None:
        """Checks the object begun last against its format and keeps it
        (ZT_ERR_INVALID drops it)."""
        with self._lock:
            check(lib.zt_writer_end_object(self._live()))

    def cancel_object(self) -> None:
        """Drops the object begun last with everything written to it."""
        with self._lock:
            check(lib.zt_writer_cancel_object(self._live()))

    def set_attributes(self, attributes: Dict[str, Any]) -> None:
        """The file's attributes (a dict; values as ztensor's docs list them)."""
        attrs = _attributes_cbor(attributes)
        with self._lock:
            check(lib.zt_writer_set_file_attributes_cbor(self._live(), attrs, len(attrs)))

    # -- the end ------------------------------------------------------------

    def finish(self) -> None:
        """Writes the manifest and publishes the file at its path. The writer is
        spent afterwards, whether this succeeds or raises."""
        with self._lock:
            w = self._live()
            self._w = None
            check(lib.zt_writer_finish(w))

    def abort(self) -> None:
        """Drops everything written; the path is left as it was."""
        lock = getattr(self, "_lock", None)
        if lock is None:
            return
        with lock:
            w, self._w = getattr(self, "_w", None), None
            if w and lib is not None:
                lib.zt_writer_abort(w)

    @property
    def closed(self) -> bool:
        return not self._w


class ComponentStream:
    """One component being written in pieces (Writer.begin_component)."""

    def __init__(self, writer):
        self._writer = writer
        self._open = True

    def write(self, data: Any) -> None:
        """Appends the bytes of `data`: a numpy array (written in C order,
        little-endian) or any bytes-like object."""
        if not self._open:
            raise _lib.Error(_lib.ERR_STATE, "the component is already ended")
        if isinstance(data, np.ndarray):
            a = data
            _refuse_objects(a)
            if a.dtype.byteorder == ">" or (a.dtype.byteorder == "=" and not np.little_endian):
                a = a.astype(a.dtype.newbyteorder("<"))
            a = np.ascontiguousarray(a)
            pointer, n = a.ctypes.data_as(c_void_p), a.nbytes
        else:
            view = memoryview(data).cast("B")
            a = np.frombuffer(view, dtype=np.uint8) if view.nbytes else np.empty(0, np.uint8)
            pointer, n = a.ctypes.data_as(c_void_p), a.nbytes
        with self._writer._lock:
            check(lib.zt_writer_write(self._writer._live(), pointer, n))

    def end(self) -> None:
        """Ends the component: its size is checked against decoded_size."""
        if self._open:
            self._open = False
            with self._writer._lock:
                check(lib.zt_writer_end_component(self._writer._live()))

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                self.end()
                return
        except BaseException:
            self._cancel()
            raise
        self._cancel()

    def _cancel(self):
        """Drops the object this component belongs to."""
        self._open = False
        with self._writer._lock:
            if self._writer._w:
                lib.zt_writer_cancel_object(self._writer._w)


def save(path: PathLike, arrays: Dict[str, Any], *, encoding: str = "raw",
         attributes: Optional[Dict[str, Any]] = None, **options: Any) -> None:
    """Writes a dict of name -> numpy array as dense objects, in the dict's
    order (sorted by name with canonical=True, the only order it takes)."""
    items = _canonical_order(arrays.items()) if options.get("canonical") else arrays.items()
    with Writer(path, **options) as w:
        if attributes:
            w.set_attributes(attributes)
        for name, array in items:
            w.add(name, array, encoding=encoding)
