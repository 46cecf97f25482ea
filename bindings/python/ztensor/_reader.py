"""Reading: ztensor.open(path) is a mapping of object names to numpy data."""

import bisect
import collections.abc
import contextlib
import ctypes
import gc
import json
import math
import mmap
import operator
import os
import stat
import threading
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple, Union
from array import array as _c_array  # not "array": a common local name here
from ctypes import byref, c_size_t, c_uint64, c_void_p, create_string_buffer, string_at

import numpy as np

from . import _block_places, _cbor, _dlpack, _lib
from ._lib import Error, NotCopyable, check, checked_int, cpath, cstr, lib, text

# Storage dtypes that numpy has, little-endian. bf16 has no numpy type: its
# elements come out as their uint16 bit patterns unless converted.
_NUMPY_OF_DTYPE = {
    "f64": "<f8", "f32": "<f4", "f16": "<f2", "bf16": "<u2",
    "i64": "<i8", "i32": "<i4", "i16": "<i2", "i8": "i1",
    "u64": "<u8", "u32": "<u4", "u16": "<u2", "u8": "u1",
    "bool": "?",
}
# Logical types numpy can show as they are, over their storage dtype.
_NUMPY_OF_TYPE = {("f32", "complex64"): "<c8", ("f64", "complex128"): "<c16",
                  ("u8", "bool"): "?"}  # v2's bool is a type over u8
# Types numpy lacks; `float32=True` converts them (the library decodes).
_NEEDS_CONVERSION_DTYPES = {"bf16"}
_NEEDS_CONVERSION_TYPES = {"f8_e4m3fn", "f8_e5m2", "f8_e4m3fnuz", "f8_e5m2fnuz", "f8_e8m0"}
# Types packed below a byte (v2's f4_e2m1, two values a byte): their bytes do
# not take the object's shape, so they always come out as float32.
_PACKED_TYPES = {"f4_e2m1"}
# Byte types this project names in 1.2 files and in what its foreign readers
# give (torch's float4_e2m1fn_x2, one byte a pair, and float8_e8m0fnu): their
# bytes are their codes, given as uint8 as FP8 is.
_CODE_TYPES = {"f4_e2m1fn_x2", "f8_e8m0fnu"}
# Every logical type this binding reads: the spec's registered ones and those.
# Data of any other type is never given as its storage dtype, which would
# silently reinterpret it (v2 spec section 4.2): UNSUPPORTED, its raw bytes
# left to component(name, role), the structural read.
_KNOWN_TYPES = ({None, "complex64", "complex128", "bool"} | _NEEDS_CONVERSION_TYPES
                | _PACKED_TYPES | _CODE_TYPES)
# Formats whose values are computed: an object of one comes out decoded.
_DEQUANTIZED_FORMATS = {"quantized_group", "zt.mx/1", "zt.quant_group/1"}


PathLike = Union[str, "os.PathLike[str]"]


# Arrays the library reads or fills, built as numpy records in one call
# where their layout allows (a ctypes struct set field by field costs ~4 us).
_RANGE_SIZE = ctypes.sizeof(_lib.DecodeRange)
_RANGE_DTYPE = _lib.records_of(_lib.DecodeRange, [
    ("struct_size", "<u4"), ("status", "<u4"), ("object", "<u8"), ("role", "<u8"),
    ("offset", "<u8"), ("dst", "<u8"), ("length", "<u8"), ("written", "<u8")])
_REQUEST_SIZE = ctypes.sizeof(_lib.DecodeRequest)
_REQUEST_DTYPE = _lib.records_of(_lib.DecodeRequest, [
    ("struct_size", "<u4"), ("status", "<u4"), ("object", "<u8"), ("role", "<u8"),
    ("dst", "<u8"), ("capacity", "<u8"), ("written", "<u8")])
_DATA_ROLE = ctypes.c_char_p(b"data")  # lives as long as the module: requests point at it
_SUMMARY_SIZE = ctypes.sizeof(_lib.ObjectSummary)
_SummaryPointer = ctypes.POINTER(_lib.ObjectSummary)
_SUMMARY_DTYPE = _lib.records_of(_lib.ObjectSummary, [
    ("struct_size", "<u4"), ("ndim", "<u4"), ("name", "<u8"), ("format", "<u8"), ("layout", "<u8"),
    ("shape", "<u8"), ("dtype", "<u8"), ("type", "<u8"), ("components", "<u8"),
    ("attributes_size", "<u8")])


class _Summary(NamedTuple):
    """One object at a glance (zt_object_summary), in Python's terms."""
    index: int
    name: str
    format: str
    shape: Tuple[int, ...]
    dtype: Optional[str]  # of the "data" component; None without one
    type: Optional[str]
    has_attributes: bool


class _Columns(NamedTuple):
    """Objects at a glance (zt_object_summaries), a list per field, in
    index order: what a load plans from without a tuple an object."""
    names: List[str]
    formats: List[str]
    shapes: List[Tuple[int, ...]]
    dtypes: List[Optional[str]]  # of the "data" component; None without one
    types: List[Optional[str]]
    attributed: List[bool]  # whether the object has attributes


# Per thread: a zt_decode_range for _decode_one and its address.
_ONE_REQUEST = threading.local()


def _one_request():
    q = _lib.DecodeRange(_RANGE_SIZE, 0, 0, _DATA_ROLE.value, 0, 0, 0, 0)
    return q, ctypes.addressof(q)


def _u64_column(values):
    """A list (or tuple) of Python ints as a numpy uint64 array, converted
    in C by array.array (numpy converting the list as it sets a record
    field looks at each element's type first: 0.74 against 0.15 ms for
    20,000 on the 2-core VM, four columns a load); anything else (a numpy
    column, a value that is not an unsigned 64-bit int) as it is, for numpy
    to convert or refuse as before."""
    if type(values) in (list, tuple):
        try:
            return np.frombuffer(_c_array("Q", values), np.uint64)
        except (OverflowError, TypeError):
            pass
    return values


def _c_strings(addresses):
    """The NUL-terminated strings at `addresses` (a numpy column of
    pointers, none NULL) as bytes, read in C through arrays of char
    pointers (string_at costs ~1 us a string). Blocks of one size: ctypes
    keeps every array type it makes."""
    n = len(addresses)
    column = np.zeros(-(-n // _STRINGS_AT_ONCE) * _STRINGS_AT_ONCE, dtype=np.uint64)
    column[:n] = addresses
    out = []
    for at in range(0, n, _STRINGS_AT_ONCE):
        out += _StringBlock.from_buffer(column, at * 8)[:min(_STRINGS_AT_ONCE, n - at)]
    return out


_STRINGS_AT_ONCE = 1024
_StringBlock = ctypes.c_char_p * _STRINGS_AT_ONCE


class _Memory:
    """Memory of the library's, read-only, as numpy sees it (no ctypes
    array type made for its size)."""

    def __init__(self, address, count, typestr):
        self.__array_interface__ = {"data": (address, True), "shape": (count,), "typestr": typestr,
                                    "version": 3}


def _texts(strings):
    """str of each bytes of `strings` (few distinct values), each decoded
    once, mapped in C."""
    seen = {b: b.decode() for b in set(strings)}
    return list(map(seen.__getitem__, strings))


def _texts_at(addresses):
    """str (or None for 0) of the string at each address, each read once:
    dtype and type names are few."""
    seen = {a: string_at(a).decode() if a else None for a in set(addresses)}
    return list(map(seen.__getitem__, addresses))


def _names(strings):
    """str of each bytes of `strings` (C strings: no NUL inside), decoded
    in one call."""
    return b"\0".join(strings).decode().split("\0") if strings else []


def _shapes_at(addresses, ndims):
    """The shape tuple of each object: ndims[i] uint64 values at
    addresses[i] (numpy columns), the reader's arrays. Read by numpy
    gathers, one per rank, through a view of the memory from the lowest
    array to the end of the highest (only the values named are read: the
    reader's arrays, valid while it is open): a tuple an object is the only
    Python work. Unaligned arrays (no allocator gives them) are read one
    at a time."""
    ndims = ndims.astype(np.int64)
    n = len(ndims)
    held = ndims > 0
    if not held.any():
        return [()] * n
    starts = addresses.astype(np.uint64)
    low = int(starts[held].min())
    high = int((starts + ndims.astype(np.uint64) * np.uint64(8))[held].max())
    if (starts[held] % np.uint64(8)).any():
        return [tuple((c_uint64 * d).from_address(a)) if d else ()
                for a, d in zip(addresses.tolist(), ndims.tolist())]
    memory = np.asarray(_Memory(low, (high - low) // 8, "<u8"))
    first = np.zeros(n, dtype=np.int64)
    first[held] = ((starts[held] - np.uint64(low)) // np.uint64(8)).astype(np.int64)
    ranks = np.unique(ndims).tolist()
    if len(ranks) == 1:  # the usual model: every shape of one rank
        return _tuples(memory, first, ranks[0])
    out = [()] * n
    for d in ranks:
        if d:
            which = np.flatnonzero(ndims == d)
            for k, shape in zip(which.tolist(), _tuples(memory, first[which], d)):
                out[k] = shape
    return out


def _tuples(memory, first, d):
    """[(memory[f], ..., memory[f + d - 1]) for f in first], the tuples
    made by zip in C from a list a dimension."""
    return list(zip(*(memory[first + k].tolist() for k in range(d))))


def _objects_of_kind(columns, first, kind_of):
    """(object index, name, shape, dtype, type, kind) of each object of
    `columns` (a _columns result for the objects from `first` on) for which
    kind_of(format, dtype, type) is not None, that being its kind: asked
    once per (format, dtype, type), since per-object work is what a model
    of many small tensors loads at."""
    c, kinds = columns, {}
    for i, name, fmt, shape, dtype, ltype in zip(range(first, first + len(c.names)), c.names, c.formats,
                                                 c.shapes, c.dtypes, c.types):
        key = (fmt, dtype, ltype)
        kind = kinds.get(key, False)
        if kind is False:
            kind = kinds[key] = kind_of(fmt, dtype, ltype)
        if kind is not None:
            yield i, name, shape, dtype, ltype, kind


def _dense_kind(fmt, dtype, ltype):
    """The numpy dtype a dense object's data decodes to, one element per
    value of its shape, or None: another format, a storage dtype numpy
    lacks, a packed type, or a type this binding does not know."""
    if fmt != "dense" or dtype not in _NUMPY_OF_DTYPE or ltype in _PACKED_TYPES or ltype not in _KNOWN_TYPES:
        return None
    return np.dtype(_NUMPY_OF_TYPE.get((dtype, ltype), _NUMPY_OF_DTYPE[dtype]))


@contextlib.contextmanager
def collector_paused():
    """Python's cyclic garbage collector held off while a load allocates
    (ztensor.torch's loads, decode_many). A model of many small tensors
    makes tens of thousands of tensors or arrays and tuples, and each few hundred allocations start a collection that walks
    every object the process holds: measured on 20,000 tensors of 1 KiB,
    40% of load_file's time (25 against 15 us a tensor). A load makes no
    reference cycles, so nothing is left for the collector meanwhile; it is
    switched back on (if it was on) when the load ends, however it ends."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


class _Handle:
    """Owns one zt_reader. Arrays that view the reader's memory hold a
    reference to it, so the file stays open (and mapped) while any of them
    lives, whatever the File does."""

    __slots__ = ("ptr", "memory", "__weakref__")

    def __init__(self, ptr, memory=None):
        self.ptr = ptr
        self.memory = memory  # what a reader opened from memory reads, kept alive

    @property
    def _as_parameter_(self):
        # ctypes passes the handle itself as the zt_reader*: every call holds
        # a reference to the handle for its duration, so a close() from
        # another thread, or the end of a `with` block, frees the reader only
        # after the calls in flight have returned.
        return self.ptr

    def __del__(self):
        ptr, self.ptr = self.ptr, None
        if ptr and lib is not None:
            lib.zt_close(ptr)


def _identity_of(path):
    """What tells the regular file at `path` from any other (device, inode,
    size, modification time), or None where there is none."""
    try:
        st = os.stat(path)
    except (OSError, TypeError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _map_if_same_file(path, identity, access=mmap.ACCESS_COPY):
    """The file at `path` mapped copy-on-write (mmap ACCESS_COPY, what
    hand-outs map; or `access`: ACCESS_READ, shared and read-only, what a
    registered load pins) as a uint8 array, if it is
    still the file `identity` names (_identity_of, or its first two: device
    and inode); else None. The descriptor is closed at once: the mapping
    holds its own."""
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)[:len(identity)] != identity:
            return None
        return np.frombuffer(mmap.mmap(fd, 0, access=access), np.uint8)
    except (OSError, ValueError):  # the address space, or a file emptied meanwhile
        return None
    finally:
        os.close(fd)


class _MemorySource:
    """A buffer as a zt_source (zt_open_source), for an open from memory
    with open options, which zt_open_memory does not take. The callbacks
    only copy bytes (ctypes.memmove lets the GIL go), so they may run on
    the library's threads at once."""

    def __init__(self, buf, size):
        base = buf.ctypes.data

        def read_at(ctx, offset, length, dst, done):
            try:
                n = max(0, min(length, size - offset))
                ctypes.memmove(dst, base + offset, n)
                done[0] = n
                return _lib.OK
            except Exception:  # an exception cannot cross into C: the read fails
                return _lib.ERR_IO

        def size_of(ctx, out):
            out[0] = size
            return _lib.OK

        self.buf = buf
        self.read_at, self.size = _lib.SourceReadAt(read_at), _lib.SourceSize(size_of)
        self.struct = _lib.new_struct(_lib.Source, lib.zt_source_init_sized)
        self.struct.flags = _lib.SOURCE_CONCURRENT
        self.struct.read_at, self.struct.size = self.read_at, self.size
        self.struct.name = b"<memory>"


# Fewer objects than this are placed in a mapping one at a time: numpy's
# arrays cost more than they save below it.
_FEW_PLACES = 16
# _raw_extent's answer for raw data in another file of the model.
_ELSEWHERE = object()
# Hand-outs that ask for one object's place at a time (get_tensor, f[name],
# dlpack in a loop) ask the library one object at a time this many times,
# where the objects asked are not the next ones, then the whole model (_places).
_SCATTERED_PLACES = 64


class _Places:
    """Where each object's "data" component lies, as File._places gives it
    (offsets, lengths, raw, files: numpy arrays in manifest order), and which
    objects the library was asked about (known). A place is asked only where
    a hand-out needs it: asking is what runs a zip member's pending CRC-32
    check, which reads the member, so a few tensors of a large torch.save
    checkpoint handed out read those tensors, not the whole file. In a loop
    over the model in its order (or in reverse) the windows double: log(n)
    calls, where asking every place at once was one."""

    __slots__ = ("offsets", "lengths", "raw", "files", "known", "first", "end", "scattered", "texts",
                 "mapped_at")

    def __init__(self, n):
        self.offsets = np.full(n, 2**64 - 1, np.uint64)
        self.lengths = np.zeros(n, np.uint64)
        self.raw = np.zeros(n, bool)
        self.files = np.zeros(n, np.intp)
        self.known = np.zeros(n, bool)
        self.first = self.end = 0  # the last window asked: [first, end)
        self.scattered = 0  # windows of one object asked so far
        self.texts = {}  # an encoding's text (the reader's, by address) -> whether it is "raw"
        self.mapped_at = {}  # the reader's text of a model file's path (by address) -> its index in _mapped

    def window_of(self, i):
        """[first, end): the objects to ask about where object i's place is
        not known: twice the last window where i comes next to it, known
        places between them (a loop over the model in its order, or in
        reverse), else i alone, and every object once _SCATTERED_PLACES
        such single asks were made; never past an object already known
        (asked once)."""
        n, size = len(self.known), self.end - self.first
        if size and i >= self.end and self.known[self.end:i].all():
            first, end = i, min(n, i + 2 * size)
            known = np.flatnonzero(self.known[first:end])
            end = first + int(known[0]) if len(known) else end
        elif size and i < self.first and self.known[i + 1:self.first].all():
            first, end = max(0, i + 1 - 2 * size), i + 1
            known = np.flatnonzero(self.known[first:end])
            first = first + int(known[-1]) + 1 if len(known) else first
        elif self.scattered < _SCATTERED_PLACES:
            self.scattered += 1
            first, end = i, i + 1
        else:
            first, end = 0, n
        self.first, self.end = first, end
        return first, end


class _MappedFile:
    """A file of the model that hand-outs map copy-on-write: its path, what
    tells the file the library opened from any other (identity: None once
    the path names another), the mapping (whole, made at the first
    hand-out) and what of it was handed out."""

    __slots__ = ("path", "identity", "whole", "handed")

    def __init__(self, path, identity):
        self.path, self.identity, self.whole, self.handed = path, identity, None, _Extents()

    def mapping(self):
        """The file's bytes as one copy-on-write array, sliced for each
        hand-out (a frombuffer of the mapping each time costs more); the
        mapping closes once neither this nor any slice of it is left. None
        where the file cannot be mapped (another file at the path now:
        decoded copies from then on). Called under the File's lock."""
        if self.whole is None and self.identity is not None:
            self.whole = _map_if_same_file(self.path, self.identity)
            if self.whole is None:
                self.identity = None
        return self.whole


# _Extents keeps its ranges in sorted runs of about this many.
_EXTENT_RUN = 256


class _Extents:
    """The byte ranges of a mapping already handed out (disjoint, sorted by
    start): a range overlapping one of them would share its memory. Kept in
    runs of at most 2 x _EXTENT_RUN ranges (runs: [starts, ends] lists, in
    order; firsts: each run's first start), so that a claim out of file
    order moves one run, not a list of every range (a mapped get_tensor
    loop over 20,000 tensors in reverse order spent most of its time
    inserting at the front of one)."""

    __slots__ = ("runs", "firsts")

    def __init__(self):
        self.runs, self.firsts = [], []

    def _append(self, starts, ends):
        """Ranges past every range recorded (sorted lists), as new runs."""
        for k in range(0, len(starts), _EXTENT_RUN):
            self.runs.append([starts[k:k + _EXTENT_RUN], ends[k:k + _EXTENT_RUN]])
            self.firsts.append(starts[k])

    def claim(self, start, end):
        """Records [start, end) and returns True if it overlaps no range
        handed out before; else False, recording nothing."""
        runs = self.runs
        if not runs or start >= runs[-1][1][-1]:  # past them all: loads hand out in file order as a rule
            if runs and len(runs[-1][0]) < _EXTENT_RUN:
                runs[-1][0].append(start)
                runs[-1][1].append(end)
            else:
                self._append([start], [end])
            return True
        r = max(0, bisect.bisect_right(self.firsts, start) - 1)
        starts, ends = runs[r]
        k = bisect.bisect_right(starts, start)
        before = ends[k - 1] if k else (runs[r - 1][1][-1] if r else None)
        after = starts[k] if k < len(starts) else (self.firsts[r + 1] if r + 1 < len(runs) else None)
        if (before is not None and before > start) or (after is not None and after < end):
            return False
        starts.insert(k, start)
        ends.insert(k, end)
        if not k:
            self.firsts[r] = start
        if len(starts) > 2 * _EXTENT_RUN:  # split it in two
            runs.insert(r + 1, [starts[_EXTENT_RUN:], ends[_EXTENT_RUN:]])
            self.firsts.insert(r + 1, starts[_EXTENT_RUN])
            del starts[_EXTENT_RUN:], ends[_EXTENT_RUN:]
        return True

    def claim_many(self, starts, ends):
        """Records the ranges [starts[k], ends[k]) (numpy arrays) and
        returns True where none overlaps another or a range handed out
        before; else False, recording nothing (claim them one at a time)."""
        if not len(starts):
            return True
        order = np.argsort(starts, kind="stable")
        starts, ends = starts[order], ends[order]
        if (self.runs and int(starts[0]) < self.runs[-1][1][-1]) or bool((starts[1:] < ends[:-1]).any()):
            return False
        self._append(starts.tolist(), ends.tolist())
        return True


class _Owner:
    """The base of a zero-copy array: the memory's address and size for
    numpy's array interface, plus the handle that keeps it valid."""

    __slots__ = ("__array_interface__", "_handle")

    def __init__(self, handle, address, nbytes):
        self._handle = handle
        self.__array_interface__ = {
            "version": 3, "shape": (nbytes,), "typestr": "|u1",
            "data": (address, True),  # read-only: the mapping is PROT_READ
        }


def _empty(shape, dtype, what="an array", refusal=None):
    """An output array for the library to fill. numpy does not touch its
    pages, so a size a file claims costs nothing until the library has
    decoded it; when even the address space is refused, that is a
    ztensor.Error: the library's own refusal of the read when it has one
    (refusal(): ZT_ERR_LIMIT over max_decoded_bytes, as every other way of
    reading the object says), else ZT_ERR_NOMEM, never a MemoryError."""
    try:
        return np.empty(shape, dtype)
    except MemoryError:
        if refusal is not None:
            refusal()
        raise Error(_lib.ERR_NOMEM, f"{what}: cannot allocate an array of shape {shape} and dtype "
                    f"{np.dtype(dtype)}") from None
    except ValueError as e:
        # numpy cannot represent the shape (more than 2**63 bytes, even empty).
        raise Error(_lib.ERR_LIMIT, f"{what}: numpy cannot hold shape {shape} of {np.dtype(dtype)}: {e}") from None


def _reshape(a, shape, what):
    """a.reshape(shape), with numpy's refusal of a shape it cannot represent
    as a ztensor.Error naming the object."""
    try:
        return a.reshape(shape)
    except ValueError as e:
        raise Error(_lib.ERR_LIMIT, f"{what}: numpy cannot hold shape {tuple(shape)} of {a.dtype}: {e}") from None


def _view(handle, address, nbytes, dtype, shape, what="an array"):
    """A read-only numpy array over reader-owned memory, kept alive by the array."""
    dtype = np.dtype(dtype)
    if nbytes == 0:
        a = _empty(shape, dtype, what)
        a.flags.writeable = False
        return a
    raw = np.asarray(_Owner(handle, address, nbytes))
    return raw.view(dtype).reshape(shape)


ComponentInfo = collections.namedtuple(
    "ComponentInfo", "role dtype type encoding stored_size")
ComponentInfo.__doc__ = "One component: storage dtype, logical type (or None), encoding, bytes on disk."


class ObjectInfo(collections.namedtuple("ObjectInfo", "name format shape components attributes")):
    """An object's metadata: format, shape (a tuple), components (role -> ComponentInfo)
    and attributes (a dict), without touching its data."""


class _Sparse(tuple):
    """The arrays of a sparse object as a tuple, values first, with `.shape`."""

    def __new__(cls, *arrays_then_shape):
        t = super().__new__(cls, arrays_then_shape[:-1])
        t.shape = tuple(arrays_then_shape[-1])
        return t

    values = property(lambda self: self[0])

    def __getnewargs__(self):  # pickle and copy rebuild it through __new__
        return (*self, self.shape)

    def __repr__(self):
        return f"{type(self).__name__}(shape={self.shape}, nnz={len(self[0])}, dtype={self[0].dtype})"


class CSR(_Sparse):
    """A sparse_csr object as the triple (values, indices, indptr), with `.shape`.
    Row i holds values[indptr[i]:indptr[i+1]] at columns indices[indptr[i]:indptr[i+1]]:
    scipy.sparse.csr_matrix((values, indices, indptr), shape=m.shape)."""

    def __new__(cls, values, indices, indptr, shape):
        return super().__new__(cls, values, indices, indptr, shape)

    indices = property(lambda self: self[1])
    indptr = property(lambda self: self[2])


class COO(_Sparse):
    """A sparse_coo object as the pair (values, coords), with `.shape`; coords has
    shape (ndim, nnz): entry k is at coords[:, k] (scipy: coo_matrix((values, coords)))."""

    def __new__(cls, values, coords, shape):
        return super().__new__(cls, values, coords, shape)

    coords = property(lambda self: self[1])


class File(NotCopyable, collections.abc.Mapping):
    """An open .zt file: a read-only mapping from object names, in manifest order,
    to their data.

    f[name] gives
      dense            a numpy array of the object's shape: a read-only zero-copy view
                       of the file mapping for raw data, a decoded copy otherwise
                       (zstd). bf16 comes as uint16 bit patterns and FP8 as uint8
                       codes unless the file was opened with float32=True (then
                       float32 copies); complex64/complex128 as numpy complex;
                       v2's bool as numpy bool, its f4_e2m1 (two values a byte)
                       always as float32. Data of a logical type this library
                       does not know raises ztensor.Error (ZT_ERR_UNSUPPORTED):
                       component(name, "data") gives its stored elements.
      sparse_csr       CSR: the triple (values, indices, indptr), with .shape
      sparse_coo       COO: the pair (values, coords), with .shape
      quantized_group  the dequantised weights, float32, of the object's shape
      zt.mx/1          (v2) the same: 2^(scale - 127) x element, float32
      zt.quant_group/1 (v2) the same: (code - zero) x scale, float32
      anything else    a dict role -> numpy array of the component's elements

    Zero-copy arrays keep the file open: close() (or leaving a `with` block)
    releases it once no such array is left.

    allow_foreign=True also opens .safetensors, .gguf, .npy, .npz, .onnx, PyTorch
    (.pt/.pth/.bin/.ckpt, read without executing the pickle) and sharded
    checkpoint indexes (.index.json) the same way, read-only; `format` then
    names the format.
    """

    def __init__(self, path: PathLike, *, float32: bool = False, copy: bool = False,
                 max_decoded_bytes: int = 0, allow_foreign: bool = False):
        opt = _lib.new_struct(_lib.OpenOptions, lib.zt_open_options_init_sized)
        opt.io_mode = _lib.IO_COPY if copy else _lib.IO_MAP
        opt.max_decoded_bytes = checked_int(max_decoded_bytes, "max_decoded_bytes")
        opt.allow_foreign = 1 if allow_foreign else 0
        ptr = c_void_p()
        # Copy-on-write hand-outs (_copy_on_write) map the file the library
        # opened: what names it is taken before and after zt_open_ex (the
        # same both times: the library's file), and the path, made absolute,
        # is mapped at the first hand-out only if it still names that file
        # (a file replaced by rename, as Writer publishes, or a chdir, then
        # changes nothing). No descriptor is held meanwhile.
        before = None if copy else _identity_of(path)
        check(lib.zt_open_ex(cpath(path), byref(opt), byref(ptr)))
        self._init(_Handle(ptr.value), os.fspath(path), float32, copy)
        if before is not None and _identity_of(path) == before and self._mappable():
            self._mapped = [_MappedFile(os.path.abspath(path), before)]

    @classmethod
    def from_bytes(cls, data: Any, *, float32: bool = False, max_decoded_bytes: int = 0) -> "File":
        """A .zt file held in memory (bytes, bytearray, memoryview, a numpy
        buffer: anything contiguous), read in place through zt_open_memory:
        zero-copy arrays view `data`, which stays referenced while the File
        or any such array lives, and must not change meanwhile. Parts in v2
        shard files cannot be found from memory. max_decoded_bytes (0: the
        library's cap) is an open option, which zt_open_memory does not
        take: with one, the buffer is read through zt_open_source instead,
        and arrays are copies (as from a URL)."""
        view = memoryview(data).cast("B")
        buf = np.frombuffer(view, dtype=np.uint8) if view.nbytes else np.zeros(1, np.uint8)
        cap = checked_int(max_decoded_bytes, "max_decoded_bytes")
        ptr = c_void_p()
        if cap:
            source = _MemorySource(buf, view.nbytes)
            opt = _lib.new_struct(_lib.OpenOptions, lib.zt_open_options_init_sized)
            opt.max_decoded_bytes = cap
            check(lib.zt_open_source(byref(source.struct), byref(opt), byref(ptr)))
            keep = (data, buf, source)  # the callbacks are called until zt_close
        else:
            check(lib.zt_open_memory(c_void_p(buf.ctypes.data), view.nbytes, byref(ptr)))
            keep = (data, buf)
        self = cls.__new__(cls)
        self._init(_Handle(ptr.value, keep), "<memory>", float32, bool(cap))
        return self

    @classmethod
    def from_url(cls, url: str, *, headers: Optional[Dict[str, str]] = None, timeout: float = 30.0,
                 retries: int = 3, connections: int = 4, cache_bytes: int = 0,
                 float32: bool = False, max_decoded_bytes: int = 0,
                 allow_foreign: bool = False) -> "File":
        """A .zt file behind an http:// or https:// URL (zt_open_url): the
        open fetches the last 64 KiB and then the manifest, every later read
        only its byte ranges (docs/remote.md). allow_foreign=True also reads
        a .safetensors URL (its header at open, each tensor when read). headers are sent with every
        request ({"Authorization": "Bearer ..."}; $ZT_HTTP_BEARER_TOKEN does
        the same); timeout is in seconds (connect, and the longest stall);
        5xx answers and dropped connections are retried `retries` times.
        Arrays are copies (nothing is mapped)."""
        opt = _lib.new_struct(_lib.OpenOptions, lib.zt_open_options_init_sized)
        opt.max_decoded_bytes = checked_int(max_decoded_bytes, "max_decoded_bytes")
        opt.cache_bytes = checked_int(cache_bytes, "cache_bytes")
        lines = "".join(f"{k}: {v}\n" for k, v in (headers or {}).items())
        header_bytes = lines.encode() if lines else None
        opt.http_headers = header_bytes
        opt.http_timeout_ms = max(1, int(timeout * 1000))
        opt.http_retries = checked_int(retries, "retries")
        opt.http_connections = checked_int(connections, "connections")
        opt.allow_foreign = 1 if allow_foreign else 0
        ptr = c_void_p()
        check(lib.zt_open_url(url.encode(), byref(opt), byref(ptr)))
        self = cls.__new__(cls)
        # No mapping, as in copy mode: a "view" is a copy the reader keeps.
        self._init(_Handle(ptr.value), url, float32, True)
        return self

    def _init(self, handle, path, float32, copy):
        """The state every way of opening sets; no file to map copy-on-write
        (_mapped) unless __init__ finds one."""
        self._handle = handle
        self._float32 = float32
        self.path = path
        self._manifest = None
        self._copy = copy
        # The files hand-outs map (_MappedFile): this one first, then the
        # model's others that hold raw data (_places); None where nothing
        # is mapped (copy mode, memory, a URL, a 0.1.0 file).
        self._mapped = None
        self._cow_lock = threading.Lock()
        self._lookups = 0  # f[name], f.array, f.rows, f.slice and dlpack() calls so far
        self._layouts = None  # every object's _dense_layouts entry, from the second of them (_kept_layouts)
        self._data_extents = None  # the objects' "data" extents, asked where hand-outs need them (_places)

    def _mappable(self):
        """Whether raw data of this file lies at its extents as it is read:
        every file but a zTensor 0.1.0 one (whose data may be big-endian:
        its extents hold the stored bytes). A foreign reader that changes a
        tensor's bytes (big-endian elements reordered, a Fortran-order
        array transposed, a strided view gathered, a member inflated) keeps
        the result in memory of its own, which has no extent in the file
        (zt_component_extents: UINT64_MAX), nor has a zip member whose
        CRC-32 does not hold: those are copies (or the read's refusal)."""
        return self.format != "zt" or self.version != "0.1.0"

    # -- lifetime -----------------------------------------------------------

    def close(self) -> None:
        """Gives up this File's hold on the reader; the file is closed once no
        zero-copy array needs it any more."""
        self._handle = None
        self._layouts = None
        with self._cow_lock:  # not while a hand-out maps it
            self._mapped = None  # Tensors from dlpack() keep their mappings alive

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def closed(self) -> bool:
        return self._handle is None

    def _r(self):
        """The reader for one call: the handle object itself (not its raw
        pointer), so that the reader outlives the call."""
        handle = self._handle
        if handle is None:
            raise ValueError("I/O operation on a closed ztensor file")
        return handle

    # -- the mapping --------------------------------------------------------

    def __len__(self):
        return lib.zt_object_count(self._r())

    def __iter__(self):
        # The File is asked again at every step: an iterator that outlives a
        # close() raises ValueError instead of reading a freed reader.
        for i in range(lib.zt_object_count(self._r())):
            yield text(lib.zt_object_name(self._r(), i))

    def __contains__(self, name):
        return isinstance(name, str) and "\0" not in name and self._find(name, missing_ok=True) is not None

    def __getitem__(self, name):
        layout = self._kept_layout(name)
        if layout is not None:  # a dense object of a known type, its layout already read
            return self._dense(layout[0], layout)
        i = self._index(name)
        fmt = text(lib.zt_object_format(self._r(), i))
        if fmt == "dense":
            return self._dense(i)
        if fmt == "sparse_csr":
            return self._csr(i)
        if fmt == "sparse_coo":
            return self._coo(i)
        if fmt in _DEQUANTIZED_FORMATS:
            return self.decode(name)
        return {role: self._component(i, role) for role in self._roles(i)}

    def __repr__(self):
        state = "closed" if self.closed else f"{len(self)} objects"
        return f"<ztensor.File {_lib.shown_location(self.path)!r}: {state}>"

    # -- metadata -----------------------------------------------------------

    @property
    def version(self) -> str:
        """The format version the file states ("2", "1.2.0", "1.1.0", "1.0", "0.1.0";
        "" for a foreign file)."""
        return text(lib.zt_file_version(self._r()))

    @property
    def format(self) -> str:
        """"zt", or the foreign format: "safetensors", "gguf", "npy", "npz", "onnx",
        "pytorch", "hf_index"."""
        return text(lib.zt_file_format(self._r()))

    @property
    def manifest(self) -> Dict[str, Any]:
        """The whole manifest as a dict, in the 1.2.0 vocabulary, parsed from
        zt_manifest_json: attribute values there are JSON (NaN and infinities
        as None, byte strings as {"$bytes": base64}); `attributes` and
        `info(name).attributes` give them exactly."""
        if self._manifest is None:
            j = lib.zt_manifest_json(self._r())
            if j is None:
                raise Error(_lib.ERR_NOMEM, "the manifest JSON could not be built")
            self._manifest = json.loads(j)
        return self._manifest

    @property
    def attributes(self) -> Dict[str, Any]:
        """The file's attributes (a dict), every value exact (see ztensor's docs)."""
        return self._attributes(None)

    def _attributes(self, i):
        """Attributes of object i (None: of the file), decoded from their CBOR."""
        r = self._r()
        data, size = c_void_p(), c_size_t()
        if i is None:
            check(lib.zt_file_attributes_cbor(r, byref(data), byref(size)))
        else:
            check(lib.zt_object_attributes_cbor(r, i, byref(data), byref(size)))
        # Copied out while r (the handle) is held: the bytes are the reader's.
        return _cbor.loads(string_at(data.value, size.value)) if size.value else {}

    def info(self, name: str) -> "ObjectInfo":
        """An object's metadata (ObjectInfo) without reading its data."""
        i = self._index(name)
        r = self._r()
        comps = {}
        for role in self._roles(i):
            n = c_uint64()
            check(lib.zt_component_stored_size(r, i, cstr(role), byref(n)))
            comps[role] = ComponentInfo(
                role, text(lib.zt_component_dtype(r, i, cstr(role))),
                text(lib.zt_component_type(r, i, cstr(role))),
                text(lib.zt_component_encoding(r, i, cstr(role))), n.value)
        return ObjectInfo(name, text(lib.zt_object_format(r, i)), self._shape(i), comps, self._attributes(i))

    def verify(self) -> Tuple[int, int]:
        """Decodes every component and checks digests and content rules; returns
        (checked, unchecked) component counts or raises Error."""
        checked, unchecked = c_uint64(), c_uint64()
        check(lib.zt_verify(self._r(), byref(checked), byref(unchecked)))
        return checked.value, unchecked.value

    def content_digest(self, algorithm: str = "sha256") -> str:
        """The v2 model's content digest ("sha256:<hex>" or "xxh3:<hex>"):
        the same however the model is encoded, aligned or split into shards;
        computed from the manifest alone. Raises Error for 1.x files and when
        a part has no digest."""
        out = create_string_buffer(72)
        check(lib.zt_content_digest(self._r(), algorithm.encode(), out, len(out)))
        return out.value.decode()

    # -- data ---------------------------------------------------------------

    def component(self, name: str, role: str) -> np.ndarray:
        """One component's elements as a flat numpy array of its storage dtype
        (complex pairs as numpy complex): zero-copy for raw data."""
        return self._component(self._index(name), role)

    def array(self, name: str, dtype: Any = None) -> np.ndarray:
        """A dense object as a numpy array of its shape. dtype None: as f[name]
        (zero-copy for raw data); numpy.float32 or numpy.float64: every numeric
        type (integers, bool, f16, bf16, FP8) converted by the library, complex
        data as complex64 / complex128."""
        layout = self._kept_layout(name)  # a loop over a model's names: each object's metadata read once
        i = self._index(name) if layout is None else layout[0]
        if dtype is None:
            return self._dense(i, layout)
        return self._convert(i, _float_type(dtype), lib.zt_object_read_f32, lib.zt_object_read_f64)

    def decode(self, name: str, dtype: Any = np.float32) -> np.ndarray:
        """Any object as a dense array of its shape, a fresh copy: dense data
        converted, sparse objects scattered into zeros (duplicates summed),
        quantized_group objects dequantised. dtype: numpy.float32 or float64."""
        return self._convert(self._index(name), _float_type(dtype), lib.zt_object_decode_f32,
                             lib.zt_object_decode_f64)

    def rows(self, name: str, start: int, stop: int, dtype: Any = None) -> np.ndarray:
        """Rows [start, stop) of a dense object's first dimension. dtype None:
        the stored type as f[name] gives it (f4_e2m1 as float32), zero-copy
        for raw data of a mapped file, else a copy that reads only the rows
        (at a URL, in copy mode) or decodes only the zstd frames covering
        them; numpy.float32 / float64: converted."""
        start, stop = checked_int(start, "start"), checked_int(stop, "stop")
        layout = self._kept_layout(name)  # rows in a loop: the object's metadata read once
        i = self._index(name) if layout is None else layout[0]
        shape = self._shape(i) if layout is None else layout[1]
        r = self._r()
        if not shape:
            raise Error(_lib.ERR_ARGUMENT, f'object "{name}" is a scalar: it has no rows')
        # Checked before anything is allocated for the rows.
        if not start <= stop <= shape[0]:
            raise Error(_lib.ERR_ARGUMENT, f'object "{name}": rows [{start}, {stop}) are not within its '
                        f'{shape[0]} rows')
        out_shape = (max(stop - start, 0),) + shape[1:]
        dtype_name, ltype, dt = self._numpy_dtype(i, "data") if layout is None else layout[2:5]
        # As f[name] and slice() give them: f4_e2m1 (packed, two values a
        # byte) and, with float32=True, bf16 and FP8 as float32.
        if dtype is None and self._read_as_float32(dtype_name, ltype):
            dtype = np.float32
        if dtype is not None:
            ft = _float_type(dtype)
            complex_data = ltype in ("complex64", "complex128")
            values = int(np.prod(out_shape, dtype=np.uint64)) * (2 if complex_data else 1)
            out = _empty(values, ft, self._what(i), lambda: self._read_refusal(i))
            written = c_uint64()
            fn = lib.zt_dense_rows_f32 if ft == np.float32 else lib.zt_dense_rows_f64
            check(fn(r, i, start, stop, out.ctypes.data_as(c_void_p), values, byref(written)))
            return _reshape(_complex_pairs(out, complex_data), out_shape, self._what(i))
        # Zero-copy where the data is mapped; without a mapping (copy mode,
        # a URL) a map would fetch and keep the whole component, so the rows
        # alone are read into a fresh array.
        if not self._copy and text(lib.zt_component_encoding(r, i, b"data")) == "raw":
            address, n = c_void_p(), c_uint64()
            check(lib.zt_dense_rows_map(r, i, start, stop, byref(address), byref(n)))
            out_shape = _check_size(n.value, dt, out_shape, "data")
            return _view(self._handle, address.value, n.value, dt, out_shape, self._what(i))
        out = _empty(out_shape, dt, self._what(i), lambda: self._read_refusal(i))
        written = c_uint64()
        check(lib.zt_dense_rows(r, i, start, stop, out.ctypes.data_as(c_void_p), out.nbytes,
                                byref(written)))
        return out

    def slice(self, name: str, key: Any, dtype: Any = None) -> np.ndarray:
        """A dense object indexed as numpy indexes it: ints, slices (any step)
        and one Ellipsis, e.g. f.slice("w", (slice(1, 4), Ellipsis, 7)) is
        f["w"][1:4, ..., 7]. Only the box that holds the selection is read
        (zt_dense_slice: raw data run by run, zstd only the frames holding
        it). dtype None: the stored type as f[name] gives it (bf16 and FP8 as
        uint16 / uint8 codes unless the File was opened with float32=True;
        f4_e2m1 as float32); numpy.float32 / float64: converted. Always a
        fresh array."""
        layout = self._kept_layout(name)  # slices in a loop: the object's metadata read once
        i = self._index(name) if layout is None else layout[0]
        shape = self._shape(i) if layout is None else layout[1]
        r = self._r()
        begin, end, post = _box_of(key, shape)
        box_shape = tuple(e - b for b, e in zip(begin, end))
        ndim = len(shape)
        b_arr, e_arr = (c_uint64 * max(ndim, 1))(*begin), (c_uint64 * max(ndim, 1))(*end)
        dtype_name, ltype, dt = self._numpy_dtype(i, "data") if layout is None else layout[2:5]
        if dtype is None and self._read_as_float32(dtype_name, ltype):
            dtype = np.float32
        written = c_uint64()
        if dtype is not None:
            ft = _float_type(dtype)
            complex_data = ltype in ("complex64", "complex128")
            values = int(np.prod(box_shape, dtype=np.uint64)) * (2 if complex_data else 1)
            out = _empty(values, ft, self._what(i), lambda: self._read_refusal(i))
            fn = lib.zt_dense_slice_f32 if ft == np.float32 else lib.zt_dense_slice_f64
            check(fn(r, i, ndim, b_arr, e_arr, out.ctypes.data_as(c_void_p), values, byref(written)))
            out = _reshape(_complex_pairs(out, complex_data), box_shape, self._what(i))
        else:
            out = _empty(box_shape, dt, self._what(i), lambda: self._read_refusal(i))
            check(lib.zt_dense_slice(r, i, ndim, b_arr, e_arr, out.ctypes.data_as(c_void_p),
                                     out.nbytes, byref(written)))
        picked = out[post]  # a view of out, or a numpy scalar when every index is an int
        # A reversed dimension of one element leaves a negative stride in a
        # view numpy calls contiguous, which torch.from_numpy refuses.
        if (isinstance(picked, np.ndarray) and picked.flags.c_contiguous
                and all(stride >= 0 for stride in picked.strides)):
            return picked
        return np.array(picked)

    def _slice_into(self, i: int, begin: Sequence[int], end: Sequence[int], address: int, nbytes: int) -> None:
        """The box [begin, end) of object i's data, as stored, into nbytes
        bytes at address (zt_dense_slice); the caller keeps the memory."""
        ndim = len(begin)
        b_arr, e_arr = (c_uint64 * max(ndim, 1))(*begin), (c_uint64 * max(ndim, 1))(*end)
        written = c_uint64()
        check(lib.zt_dense_slice(self._r(), i, ndim, b_arr, e_arr, c_void_p(address), nbytes, byref(written)))

    def decode_many(self, names: Optional[Iterable[str]] = None, *,
                    threads: int = 0) -> Dict[str, np.ndarray]:
        """Dense objects decoded in parallel through zt_decode_many (work
        shared by zstd frame and raw slices across up to `threads` threads,
        0: all cores): a dict name -> fresh array of the stored type (as
        f[name] gives it without float32=True: bf16/FP8 as their codes;
        packed f4_e2m1, as f[name] gives it too, float32 values, converted
        one at a time after the others). names None: every dense object of
        the file. Data of a logical type this library does not know raises
        ZT_ERR_UNSUPPORTED, as f[name] does."""
        with collector_paused():
            return self._decode_many(names, threads)

    def _decode_many(self, names, threads):
        r = self._r()
        columns = self._columns()
        if names is None:
            names = [name for name, fmt in zip(columns.names, columns.formats) if fmt == "dense"]
        names = list(names)
        threads = checked_int(threads, "threads", 0, 2 ** 32 - 1)
        # Per-name work is what a file of many small tensors decodes at: the
        # arrays come from the summaries' layouts (sizes the library checked
        # against the shapes at open), the requests go out a field at a
        # time; only a name without a layout takes the checks one by one
        # (_decode_target), which say why it cannot be decoded.
        layouts = self._dense_layouts(columns) if names else {}
        # Arrays from CPU_PACK_FROM bytes to fewer than PACK_BELOW are carved
        # out of blocks in huge pages (_block_places: 4,096 x 64 KiB in a
        # fresh process 72 -> 41 ms on the 2-core VM), the others np.empty's.
        blocks = _block_places.blocks_for(
            (layouts[name][5] for name in names if type(name) is str and name in layouts),
            _block_places.CPU_PACK_FROM, _block_places.ArrayBlocks)
        smallest, below = (_block_places.CPU_PACK_FROM, _block_places.PACK_BELOW) if blocks else (0, 0)
        by_name, empty = None, np.empty
        out, objects, arrays, addresses, sizes, converted = {}, [], [], [], [], []
        for name in names:
            layout = layouts.get(name) if type(name) is str else None
            if layout is not None:
                i, shape, _, _, dt, nbytes = layout
                try:
                    a = blocks.carve(shape, dt, nbytes) if smallest <= nbytes < below else empty(shape, dt)
                except (MemoryError, ValueError):  # _empty says why (no message made per array)
                    a = _empty(shape, dt, f'object "{name}"', lambda: self._read_refusal(i))
            else:
                if by_name is None:
                    by_name = {s.name: s for s in self._summaries()}
                i, a = self._decode_target(name, by_name)
                if a is None:  # converted after the others, in its place in `out`
                    out[name] = None
                    converted.append((name, i))
                    continue
                nbytes = a.nbytes
            out[name] = a
            objects.append(i)
            arrays.append(a)
            addresses.append(a.ctypes.data)
            sizes.append(nbytes)
        n = len(objects)
        if _REQUEST_DTYPE is not None:
            # One numpy record array laid out as zt_decode_request, filled a
            # column at a time (what zt_decode_request_init does is set
            # struct_size on zeroed memory), not ctypes structs field by field.
            reqs = np.zeros(max(n, 1), dtype=_REQUEST_DTYPE)
            reqs["struct_size"] = _REQUEST_SIZE
            if n:
                reqs["object"] = _u64_column(objects)
                reqs["role"] = ctypes.cast(_DATA_ROLE, c_void_p).value
                reqs["dst"] = _u64_column(addresses)
                reqs["capacity"] = _u64_column(sizes)
            array = ctypes.cast(reqs.ctypes.data, ctypes.POINTER(_lib.DecodeRequest))
            check(lib.zt_decode_many(r, array, n, threads))
            written = reqs["written"][:n].tolist()
        else:
            reqs = array = (_lib.DecodeRequest * max(n, 1))()
            for k in range(n):
                q = reqs[k]
                lib.zt_decode_request_init(byref(q))
                q.object, q.role, q.dst, q.capacity = objects[k], b"data", addresses[k], sizes[k]
            check(lib.zt_decode_many(r, array, n, threads))
            written = [reqs[k].written for k in range(n)]
        del reqs
        if written != sizes:
            # A component whose decoded size the manifest does not record
            # (so open could not check it) decoded to fewer bytes than its
            # shape holds: the array would keep uninitialized memory.
            k = next(k for k in range(n) if written[k] != sizes[k])
            a = arrays[k]
            raise Error(_lib.ERR_INVALID, f'{self._what(objects[k])}: component "data": {written[k]} '
                        f"bytes, expected {sizes[k]} for shape {a.shape} of {a.dtype}")
        for i, a in zip(objects, arrays):
            self._hold_bools(i, a)
        for name, i in converted:  # packed types: as f[name] gives them
            out[name] = self._convert(i, np.float32, lib.zt_object_read_f32, lib.zt_object_read_f64)
        return out

    def _hold_bools(self, i, a):
        """Bool data copied byte for byte (zt_decode_many, zt_decode_ranges,
        a mapping) held to the rule f[name] applies, since a numpy bool holds
        0 or 1: another byte is the library's refusal (ZT_ERR_INVALID) in 1.1
        files and later; in 0.1 and 1.0, where any non-zero byte is true, the
        bytes are made 0 or 1 (a in place)."""
        if a.dtype == np.bool_ and a.size and bool((a.view(np.uint8) > 1).any()):
            self._bools(i, a.shape)  # raises (1.1 and later)
            np.not_equal(a.view(np.uint8), 0, out=a)

    def _decode_target(self, name, by_name):
        """(object index, output array) for a name decode_many has no layout
        for ((index, None) for packed data, which f[name] gives as float32
        values), or the reason it cannot be decoded: KeyError for a name the
        file lacks, TypeError for a non-str, ztensor.Error for an object
        that is not dense data of a numpy dtype or of a known type."""
        s = by_name.get(name) if isinstance(name, str) else None
        if s is None:
            self._index(name)  # raises: KeyError for a name the file lacks, TypeError for a non-str
        i = s.index
        if s.format != "dense":
            raise Error(_lib.ERR_ARGUMENT, f"{self._what(i)} is not dense: decode it with decode()")
        if s.dtype is None:
            self._numpy_dtype(i, "data")  # the library's refusal, as a read of it gives
        ltype = s.type
        self._check_type(i, ltype, "data")
        if ltype in _PACKED_TYPES:
            return i, None
        dt = np.dtype(_NUMPY_OF_TYPE.get((s.dtype, ltype), _NUMPY_OF_DTYPE[s.dtype]))
        size = c_uint64()
        check(lib.zt_component_read_size(self._r(), i, b"data", byref(size)))
        shape = _check_size(size.value, dt, s.shape, "data")
        return i, _empty(shape, dt, f'object "{s.name}"')

    def _summaries(self, first=0, count=None):
        """[_Summary] of every object in index order (or of `count` from
        object `first` on): _columns' lists, an object a tuple."""
        c = self._columns(first, count)
        return list(map(_Summary, range(first, first + len(c.names)), c.names, c.formats, c.shapes,
                        c.dtypes, c.types, c.attributed))

    def _columns(self, first=0, count=None):
        """_Columns of every object in index order (or of `count` from
        object `first` on), from one zt_object_summaries call: asking object
        by object costs some 25 us each through ctypes, and the manifest's
        JSON ~7 us an object, which is what a model of many small tensors
        loads at. Read a field at a time, not a struct at a time (a struct
        element and its fields through ctypes cost ~1.6 us an object)."""
        r = self._r()
        n = lib.zt_object_count(r) if count is None else count
        if _SUMMARY_DTYPE is None:
            return self._columns_of_structs(r, first, n)
        # Zeroed rows with struct_size set: what zt_object_summary_init
        # does, for all of them in one numpy call.
        rows = np.zeros(max(n, 1), dtype=_SUMMARY_DTYPE)
        rows["struct_size"] = _SUMMARY_SIZE
        check(lib.zt_object_summaries(r, first, rows.ctypes.data_as(_SummaryPointer), n))
        rows = rows[:n]
        # The strings are the reader's, read while r is held: names and
        # formats through arrays of char pointers (ctypes reads each in C),
        # dtype and type names (few, often at one address) once an address.
        names = _names(_c_strings(rows["name"]))
        formats = _texts(_c_strings(rows["format"]))
        dtypes = _texts_at(rows["dtype"].tolist())
        types = _texts_at(rows["type"].tolist())
        ndims = rows["ndim"]
        shapes = _shapes_at(rows["shape"], ndims)
        return _Columns(names, formats, shapes, dtypes, types, (rows["attributes_size"] > 0).tolist())

    def _columns_of_structs(self, r, first, n):
        """_columns where zt_object_summary has no numpy record layout: the
        rows as ctypes structs, read one at a time."""
        array = (_lib.ObjectSummary * max(n, 1))()
        for q in array:
            lib.zt_object_summary_init(byref(q))
        check(lib.zt_object_summaries(r, first, array, n))
        rows = [array[i] for i in range(n)]
        return _Columns([q.name.decode() for q in rows], _texts([q.format for q in rows]),
                        [tuple(q.shape[:q.ndim]) for q in rows], _texts_at([q.dtype for q in rows]),
                        _texts_at([q.type for q in rows]), [q.attributes_size > 0 for q in rows])

    def _dense_layouts(self, columns=None, first=0):
        """name -> (object index, shape, storage dtype, type, numpy dtype,
        decoded bytes) of every dense object whose data decodes to one
        element per value of its shape (so not packed types) of a known
        type (data of another is never read as its storage), from the
        object summaries (one call for the whole file; or `columns`, a
        _columns result for the objects from `first` on). Whether a
        (format, dtype, type) loads, and as what, is decided once per
        combination: per-object work is what many small tensors load at."""
        out, prod = {}, math.prod
        for i, name, shape, dtype, ltype, kind in _objects_of_kind(
                self._columns() if columns is None else columns, first, _dense_kind):
            out[name] = (i, shape, dtype, ltype, kind, prod(shape) * kind.itemsize)
        return out

    def _decode_ranges(self, parts, threads=0):
        """Decoded bytes into caller memory, on up to `threads` threads (0:
        all cores), through one zt_decode_ranges: `parts` are (object index,
        role, first decoded byte, address, byte count). The caller keeps the
        memory alive and unshared until this returns."""
        if not parts:
            return self._decode_columns([], [], [], [], [], threads)
        objects, roles, offsets, addresses, lengths = zip(*parts)
        self._decode_columns(objects, roles, offsets, addresses, lengths, threads)

    def _decode_one(self, index, offset, address, length):
        """Decoded bytes [offset, offset + length) of object `index`'s data
        into caller memory at `address`: one zt_decode_ranges request (every
        core for a large one), made as one struct. get_tensor's path: a
        loop over a model's names pays this a tensor, where _decode_columns'
        general setup cost ~2.5 us more."""
        # The thread's request struct, taken out while in use (a call made
        # meanwhile on this thread, from a signal handler say, makes its
        # own) and put back after: making one cost ~0.7 us of a 3.6 us call.
        kept = _ONE_REQUEST.__dict__
        q = kept.pop("q", None) or _one_request()
        q[0].object, q[0].offset, q[0].dst, q[0].length = index, offset, address, length
        check(lib.zt_decode_ranges(self._r(), q[1], 1, 0, None, None))
        kept["q"] = q

    def _decode_columns(self, objects, roles, offsets, addresses, lengths, threads=0):
        """_decode_ranges with its parts given a field at a time (sequences
        of equal length): a loader that builds these lists as it allocates
        makes no tuple per part. `roles` may be one role name for every
        part, `offsets` 0 for all of them. The integer columns may be
        numpy arrays (the staging ring's are)."""
        r = self._r()
        threads = checked_int(threads, "threads", 0, 2 ** 32 - 1)
        n = len(objects)
        names = [roles] if isinstance(roles, str) else sorted(set(roles))
        role_of = {role: cstr(role) for role in names}
        # The requests as one numpy record array laid out as zt_decode_range,
        # filled a column at a time (a ctypes struct set field by field cost
        # ~4 us a request, 15 ms for 4,096 tensors; a record built from a
        # tuple per request ~0.3 us). What zt_decode_range_init does is set
        # struct_size on zeroed memory. A few requests (get_tensor's one)
        # are quicker as ctypes structs: the record array costs ~5 us to set up.
        if _RANGE_DTYPE is not None and n > 4:
            reqs = np.zeros(max(n, 1), dtype=_RANGE_DTYPE)
            reqs["struct_size"] = _RANGE_SIZE
            if n:
                at = {role: ctypes.cast(ctypes.c_char_p(b), c_void_p).value for role, b in role_of.items()}
                reqs["object"] = _u64_column(objects)
                reqs["role"] = next(iter(at.values())) if len(at) == 1 else [at[x] for x in roles]
                reqs["offset"] = _u64_column(offsets)
                reqs["dst"] = _u64_column(addresses)
                reqs["length"] = _u64_column(lengths)
            array = reqs.ctypes.data
        else:
            reqs = array = (_lib.DecodeRange * max(n, 1))()
            one = isinstance(roles, str)
            offsets = [offsets] * n if isinstance(offsets, int) else offsets
            for k in range(n):
                q = reqs[k]  # a view of the array's element, not a copy
                q.struct_size = _RANGE_SIZE  # zt_decode_range_init's work: the array is zeroed
                q.object, q.role = objects[k], role_of[roles if one else roles[k]]
                q.offset, q.dst, q.length = offsets[k], int(addresses[k]), lengths[k]  # a pointer takes no numpy int
        check(lib.zt_decode_ranges(r, array, n, threads, None, None))
        del role_of, reqs  # alive until here: the requests point into them

    def dlpack(self, name: str) -> "_dlpack.Tensor":
        """A dense object's data as a ztensor.Tensor, for DLPack consumers
        (torch.from_dlpack, numpy.from_dlpack, jax.dlpack.from_dlpack) in
        its own dtype, bf16 and FP8 included. Raw data is not copied: it is
        a copy-on-write private mapping of the file (writes stay in this
        process); zstd data, files opened with copy=True, from memory or a
        URL, foreign files other than safetensors, and elements not aligned
        to their size in the file are decoded into a buffer of the Tensor's
        own, and so is data
        this File handed out before (another export of the object, or an
        object sharing its bytes: each export is memory of its own). Either
        stays valid after close(). Objects that need a conversion (packed
        f4_e2m1, sparse, quantized) raise ztensor.Error (ZT_ERR_ARGUMENT):
        decode them with array(name, numpy.float32) or decode(name); data
        of a logical type this library does not know, ZT_ERR_UNSUPPORTED."""
        i = self._index(name)
        layouts = self._kept_layouts()
        layout = (layouts if layouts is not None else self._dense_layouts(self._columns(i, 1), i)).get(name)
        if layout is None or (layout[2], layout[3]) not in _dlpack._CODES:
            summary = self._columns(i, 1)
            if summary.formats[0] == "dense":
                self._check_type(i, summary.types[0], "data")
            raise Error(_lib.ERR_ARGUMENT, f"{self._what(i)} is not dense data of a DLPack dtype: "
                        "decode it with array(name, numpy.float32) or decode(name)")
        _, shape, dtype, ltype, dt, nbytes = layout
        storage = self._copy_on_write(i, dt, shape, nbytes)
        if storage is None:
            self._read_refusal(i)  # a size over the cap, before it is allocated
            storage = _empty(shape, dt, self._what(i))
            if nbytes:
                self._decode_ranges([(i, "data", 0, storage.ctypes.data, nbytes)])
        self._hold_bools(i, storage)
        return _dlpack.Tensor(name, storage, dtype, ltype, shape)

    def _kept_layout(self, name):
        """`name`'s entry of _kept_layouts() where that table is read and has
        it (a dense object of a known type), else None."""
        layouts = self._kept_layouts()
        return layouts.get(name) if layouts is not None and type(name) is str else None

    def _kept_layouts(self):
        """Every dense object's _dense_layouts entry from a File's second
        f[name], f.array, f.rows, f.slice or dlpack() on (a loop over a
        model: dict(f), or JAX's from_dlpack a name), read once and kept;
        None for the first, which reads its own object's metadata alone. 2-core VM: f[name] of raw
        data ~12 -> ~6 us, dlpack() ~91 -> ~7 us. Reading them all costs
        about half what the open did (20,000 objects: 18 against 37 ms), so
        a File looked into twice pays at most that much more."""
        self._lookups += 1
        if self._layouts is None and self._lookups > 1:
            self._layouts = self._dense_layouts()
        return self._layouts

    def _copy_on_write(self, i, dt, shape, nbytes):
        """Object i's raw data as a writable copy-on-write mapping of the
        file holding it (mmap ACCESS_COPY of the file the library opened,
        one mapping a file, sliced: this file, or a shard of the model), or
        None where the caller is to decode a copy: bytes that are not raw
        little-endian bytes at a place in a file, and bytes of a mapping
        handed out before (a second export of an object, or a v2 object
        sharing another's blob), which would share that hand-out's memory.
        Where it lies: at a first call two calls into the library for the
        object (its encoding and zt_component_extent: this file only), not
        the manifest's JSON (~10 us an object, all of them at the first);
        in a loop (the File keeps its layouts or extents) the places of the
        whole model, asked once (_places)."""
        if not nbytes or self._mapped is None:
            return None
        where, start = 0, None
        if self._data_extents is None and self._layouts is None:
            start = self._raw_extent(i, nbytes, dt.itemsize)
        if start is _ELSEWHERE or self._data_extents is not None or self._layouts is not None:
            where, start = self._kept_raw_extent(i, nbytes, dt.itemsize)
        whole = None if start is None else self._claim(where, start, nbytes)
        return None if whole is None else whole[start:start + nbytes].view(dt).reshape(shape)

    def _raw_extent(self, i, nbytes, align):
        """Where object i's data starts in this file, asked of the library,
        if it is nbytes raw bytes there at a multiple of `align` (its
        element's size: a misaligned element would be undefined behaviour
        in the code that reads it; a zTensor file aligns to 64, a
        safetensors file need not); _ELSEWHERE where its raw bytes are not
        in this file (a shard's: _places knows where); else None (encoded,
        not the shape's bytes, misaligned)."""
        r = self._r()
        if lib.zt_component_encoding(r, i, b"data") != b"raw":
            return None
        offset, length = c_uint64(), c_uint64()
        status = lib.zt_component_extent(r, i, b"data", byref(offset), byref(length))
        if status == _lib.ERR_UNSUPPORTED:
            return _ELSEWHERE
        if status != _lib.OK or length.value != nbytes or offset.value % align:
            return None
        return offset.value

    def _kept_raw_extent(self, i, nbytes, align):
        """(which of _mapped holds object i's data, where it starts there),
        as _raw_extent says, from the places of the model (_places: asked
        from object i on where it is not known yet); (None, None) where
        _raw_extent would say None."""
        p = self._data_extents
        if p is None or not p.known[i]:
            p = self._places_table()
            self._places(*p.window_of(i))
        start = int(p.offsets[i])
        if p.raw[i] and int(p.lengths[i]) == nbytes and not start % align:
            return int(p.files[i]), start
        return None, None

    def _claim(self, where, start, nbytes):
        """The mapping of file _mapped[where], with [start, start + nbytes)
        of it claimed for a hand-out; None where there is none or those
        bytes were handed out before (in part or whole)."""
        with self._cow_lock:
            if self._mapped is None:
                return None
            m = self._mapped[where]
            whole = m.mapping()
            if whole is None or start + nbytes > whole.size or not m.handed.claim(start, start + nbytes):
                return None
        return whole

    def _copy_on_write_places(self, indices, nbytes, aligns):
        """_copy_on_write of many objects at once: ([the mapping of the file
        holding object indices[k]'s data, a uint8 array], [where its
        nbytes[k] bytes start in it, at a multiple of aligns[k]]), or None
        for both where _copy_on_write would give None; every place claimed.
        Their places come from one zt_component_extents call for the whole
        file (two calls an object through ctypes made a mapped load of
        20,000 small tensors twice as slow as copying them), and one
        zt_component_files call where the model has other files; a few
        objects are placed one at a time (_copy_on_write_place), which
        costs less than the arrays."""
        count = len(indices)
        if count < _FEW_PLACES:
            wholes, starts = [], []
            for i, n, align in zip(indices, nbytes, aligns):
                whole, start = self._copy_on_write_place(i, n, align)
                wholes.append(whole)
                starts.append(start)
            return wholes, starts
        wholes, out = [None] * count, [None] * count
        if self._mapped is None:
            return wholes, out
        at = np.fromiter(indices, np.intp, count)
        offsets, lengths, raw, files = self._places(int(at.min()), int(at.max()) + 1)
        want = np.fromiter(nbytes, np.uint64, count)
        starts, where = offsets[at], files[at]
        ok = raw[at] & (lengths[at] == want) & (want > 0) & (starts % np.fromiter(aligns, np.uint64, count) == 0)
        ends = starts + want
        begin = None
        with self._cow_lock:
            mapped = self._mapped
            if mapped is None:
                return wholes, out
            for f in np.unique(where[ok]).tolist():
                m = mapped[f]
                whole = m.mapping()
                if whole is None:
                    continue
                picked = np.flatnonzero(ok & (where == f) & (ends <= whole.size))
                if m.handed.claim_many(starts[picked], ends[picked]):
                    picked = picked.tolist()
                else:  # overlaps: one at a time, in the order asked, as _copy_on_write
                    claim = m.handed.claim
                    picked = [k for k in picked.tolist() if claim(int(starts[k]), int(ends[k]))]
                if begin is None:
                    begin = starts.tolist()
                for k in picked:
                    wholes[k], out[k] = whole, begin[k]
        return wholes, out

    def _copy_on_write_place(self, i, nbytes, align):
        """(the mapping of the file holding object i's data, where its
        nbytes bytes start in it, at a multiple of `align`), claimed, or
        (None, None) where _copy_on_write would give None; from the places
        _places keeps (a get_tensor loop pays no call into the library for
        them)."""
        if not nbytes or self._mapped is None:
            return None, None
        where, start = self._kept_raw_extent(i, nbytes, align)
        whole = None if start is None else self._claim(where, start, nbytes)
        return (None, None) if whole is None else (whole, start)

    def _places_table(self):
        """The File's _Places, made empty at the first need."""
        p = self._data_extents
        if p is None:
            p = self._data_extents = _Places(lib.zt_object_count(self._r()))
        return p

    def _places(self, first=0, end=None):
        """(offsets, lengths, raw, files) of every object's "data" component,
        numpy arrays in manifest order, known at least for objects [first,
        end) (end None: all): where its stored bytes lie in the file
        _mapped[files[k]] (0: this one), and whether they are raw (as they
        decode: _mappable files only) in a file that hand-outs may map. An
        object without one (none; in memory a foreign reader made; a shard
        not to be mapped), or not asked about yet, has raw False."""
        p = self._places_table()
        end = len(p.known) if end is None else end
        if first < end and not p.known[first:end].all():
            self._ask_places(p, first, end)
        return p.offsets, p.lengths, p.raw, p.files

    def _ask_places(self, p, first, end):
        """Objects [first, end)'s places into p, asked in one
        zt_component_extents call (which runs their zip members' pending
        CRC-32 checks, on every core) and, for those in the model's other
        files, one zt_component_files call."""
        r, n = self._r(), end - first
        offsets, lengths = np.empty(n, np.uint64), np.empty(n, np.uint64)
        encodings = np.zeros(n, np.uintp)  # the reader's texts, as addresses
        check(lib.zt_component_extents(r, b"data", first, n, offsets.ctypes.data, lengths.ctypes.data,
                                       encodings.ctypes.data))
        texts = p.texts
        for address in np.unique(encodings).tolist():
            if address and address not in texts:
                texts[address] = ctypes.string_at(address) == b"raw"
        raw_at = [address for address, raw in texts.items() if raw]
        raw = np.isin(encodings, np.array(raw_at, np.uintp))
        here = offsets != np.uint64(2**64 - 1)
        files = np.zeros(n, np.intp)
        if self._mapped is not None and (raw & ~here).any():
            self._place_in_other_files(p, first, raw & ~here, offsets, lengths, files, here)
        p.offsets[first:end], p.lengths[first:end] = offsets, lengths
        p.raw[first:end], p.files[first:end] = raw & here, files
        p.known[first:end] = True  # last: another thread reads a place once it is known

    def _place_in_other_files(self, p, first, elsewhere, offsets, lengths, files, here):
        """Where the objects `elsewhere` marks (raw, not in this file; index
        k is object first + k) lie in the model's other files (v2 shards, a
        sharded checkpoint's), asked in one zt_component_files call: offsets,
        lengths, files (an index into _mapped, each file added once: p
        keeps which) and here (in a file now) updated in place. Each file is
        mapped at its first hand-out if what its path names then is the file
        the library opened (its device and inode)."""
        r, n = self._r(), len(offsets)
        paths = np.zeros(n, np.uintp)
        other_offsets, other_lengths = np.empty(n, np.uint64), np.empty(n, np.uint64)
        devices, inodes = np.zeros(n, np.uint64), np.zeros(n, np.uint64)
        check(lib.zt_component_files(r, b"data", first, n, paths.ctypes.data, other_offsets.ctypes.data,
                                     other_lengths.ctypes.data, devices.ctypes.data, inodes.ctypes.data))
        picked = np.flatnonzero(elsewhere & (paths != 0))
        if not len(picked):
            return
        addresses, first_of, which = np.unique(paths[picked], return_index=True, return_inverse=True)
        with self._cow_lock:
            if self._mapped is None:
                return
            mapped, at = list(self._mapped), []
            for address, k in zip(addresses.tolist(), picked[first_of].tolist()):
                index = p.mapped_at.get(address)
                if index is None:  # a file no window placed an object in before
                    path = os.fsdecode(ctypes.string_at(address))
                    index = p.mapped_at[address] = len(mapped)
                    mapped.append(_MappedFile(os.path.abspath(path), (int(devices[k]), int(inodes[k]))))
                at.append(index)
            self._mapped = mapped
        offsets[picked] = other_offsets[picked]
        lengths[picked] = other_lengths[picked]
        files[picked] = np.array(at, np.intp)[which]
        here[picked] = True

    def get_slice(self, name: str) -> "SliceView":
        """The object `name` as a SliceView: view[1:4, :, 7] reads only that
        selection (File.slice)."""
        self._index(name)  # KeyError now, not at the first read
        return SliceView(self, name)

    # -- internals ----------------------------------------------------------

    def _read_as_float32(self, dtype_name, ltype):
        """Whether f[name] gives this dense data as float32 conversions."""
        return ltype in _PACKED_TYPES or (self._float32 and (
            dtype_name in _NEEDS_CONVERSION_DTYPES or ltype in _NEEDS_CONVERSION_TYPES))

    def _find(self, name, missing_ok=False):
        i = c_size_t()
        status = lib.zt_object_find(self._r(), cstr(name), byref(i))
        if status == _lib.ERR_NOT_FOUND and missing_ok:
            return None
        check(status)
        return i.value

    def _index(self, name):
        if not isinstance(name, str):
            raise TypeError(f"object names are str, not {type(name).__name__}")
        i = self._find(name, missing_ok=True)
        if i is None:
            raise KeyError(name)
        return i

    def _shape(self, i):
        ndim = c_size_t()
        p = lib.zt_object_shape(self._r(), i, byref(ndim))
        return tuple(p[d] for d in range(ndim.value))

    def _roles(self, i):
        r = self._r()
        return [text(lib.zt_component_role(r, i, k)) for k in range(lib.zt_component_count(r, i))]

    def _numpy_dtype(self, i, role, structural=False):
        """(storage dtype, logical type, numpy dtype) of a component. Data
        of a logical type this library does not know is refused
        (UNSUPPORTED) unless the read is `structural` (component(): the
        stored elements as they are, by the name of their storage dtype)."""
        r = self._r()
        dtype = text(lib.zt_component_dtype(r, i, cstr(role)))
        if dtype is None:  # no such component (an object the reader lists but cannot read)
            n = c_uint64()
            check(lib.zt_component_stored_size(r, i, cstr(role), byref(n)))  # the library's refusal
            raise Error(_lib.ERR_NOT_FOUND, f"object {text(lib.zt_object_name(r, i))!r} has no component {role!r}")
        ltype = text(lib.zt_component_type(r, i, cstr(role)))
        if not structural:
            self._check_type(i, ltype, role)
        return dtype, ltype, np.dtype(_NUMPY_OF_TYPE.get((dtype, ltype), _NUMPY_OF_DTYPE[dtype]))

    def _check_type(self, i, ltype, role):
        """Refuses data of a logical type this library does not know: given
        as its storage dtype it would be silently reinterpreted (v2 spec
        section 4.2)."""
        if ltype not in _KNOWN_TYPES:
            raise Error(_lib.ERR_UNSUPPORTED, f'{self._what(i)}: component "{role}" is of logical type '
                        f'"{ltype}", which this library cannot interpret; component(name, "{role}") '
                        "gives its stored elements as they are")

    def _bytes(self, i, role, dtype, shape):
        """The component's decoded elements: a zero-copy view for raw data
        (the mapping, or the reader's cache for legacy big-endian data), a
        fresh decoded copy otherwise."""
        r = self._r()
        role_b = cstr(role)
        if text(lib.zt_component_encoding(r, i, role_b)) == "raw":
            address, n = c_void_p(), c_uint64()
            check(lib.zt_component_map(r, i, role_b, byref(address), byref(n)))
            shape = _check_size(n.value, dtype, shape, role)
            return _view(self._handle, address.value, n.value, dtype, shape, self._what(i))
        size = c_uint64()
        check(lib.zt_component_read_size(r, i, role_b, byref(size)))  # over the cap: ZT_ERR_LIMIT
        shape = _check_size(size.value, dtype, shape, role)
        out = _empty(shape, dtype, self._what(i))
        written = c_uint64()
        check(lib.zt_component_read(r, i, role_b, out.ctypes.data_as(c_void_p), out.nbytes,
                                    byref(written)))
        return out

    def _component(self, i, role):
        _, _, dt = self._numpy_dtype(i, role, structural=True)
        return self._bytes(i, role, dt, None)

    def _dense(self, i, layout=None):
        """Dense object i as f[name] gives it; `layout`: its _dense_layouts
        entry where that was read already (else its types are asked)."""
        if layout is None:
            (dtype, ltype, dt), shape = self._numpy_dtype(i, "data"), None
        else:
            _, shape, dtype, ltype, dt, _ = layout
        if self._read_as_float32(dtype, ltype):
            return self._convert(i, np.float32, lib.zt_object_read_f32, lib.zt_object_read_f64)
        shape = self._shape(i) if shape is None else shape
        if dt == np.bool_:
            return self._bools(i, shape)
        return self._bytes(i, "data", dt, shape)

    def _bools(self, i, shape):
        """Bool data through the library's dense view, which holds each byte
        to 0 or 1 in 1.1 files and later (as zt_verify does; numpy's bool is
        undefined for other bytes): zero-copy as _bytes, the same refusal as
        every converting call. 0.1 and 1.0 files read any non-zero byte as
        true, and their bytes come as they are."""
        v = _lib.new_struct(_lib.DenseInfo, lib.zt_dense_info_init_sized)
        check(lib.zt_dense_view(self._r(), i, byref(v)))
        return _view(self._handle, v.data, v.nbytes, np.bool_, shape, self._what(i))

    # Sparse objects come through the library's views, which check the index
    # structure first; their arrays view the mapping (raw data) or the
    # reader's decode cache (zstd), and keep the reader open.

    def _csr(self, i):
        v = _lib.new_struct(_lib.CsrInfo, lib.zt_csr_info_init_sized)
        check(lib.zt_csr_view(self._r(), i, byref(v)))
        nnz = v.nnz
        return CSR(self._sparse_values(i, v, nnz),
                   self._typed(v.indices, nnz, v.indices_dtype, None),
                   self._typed(v.indptr, v.rows + 1, v.indptr_dtype, None), self._shape(i))

    def _coo(self, i):
        v = _lib.new_struct(_lib.CooInfo, lib.zt_coo_info_init_sized)
        check(lib.zt_coo_view(self._r(), i, byref(v)))
        coords = self._typed(v.coords, v.ndim * v.nnz, v.coords_dtype, None)
        return COO(self._sparse_values(i, v, v.nnz), coords.reshape(v.ndim, v.nnz),
                   self._shape(i))

    def _sparse_values(self, i, v, nnz):
        dtype, ltype = text(v.values_dtype), text(v.values_type)
        if ltype in _PACKED_TYPES or (
                self._float32 and (dtype in _NEEDS_CONVERSION_DTYPES or ltype in _NEEDS_CONVERSION_TYPES)):
            out = _empty(nnz, np.float32, self._what(i), lambda: self._read_refusal(i))
            written = c_uint64()
            check(lib.zt_component_read_f32(self._r(), i, b"values", out.ctypes.data_as(c_void_p),
                                            nnz, byref(written)))
            return out
        return self._typed(v.values, nnz, v.values_dtype, v.values_type)

    def _typed(self, address, elements, dtype, ltype):
        """`elements` logical elements of (dtype, type) at a reader-owned address."""
        dtype, ltype = text(dtype), text(ltype)
        dt = np.dtype(_NUMPY_OF_TYPE.get((dtype, ltype), _NUMPY_OF_DTYPE[dtype]))
        return _view(self._handle, address, elements * dt.itemsize, dt, (elements,))

    def _convert(self, i, ft, read_f32, read_f64):
        """A fresh float32/float64 array of the object's shape from a converting call."""
        r = self._r()
        count = c_uint64()
        # Checked against max_decoded_bytes as the call checks it: a sparse
        # shape of 2^50 values is refused before anything is allocated.
        check(lib.zt_object_decode_capacity(r, i, np.dtype(ft).itemsize, byref(count)))
        out = _empty(count.value, ft, self._what(i), lambda: self._read_refusal(i))
        written = c_uint64()
        fn = read_f32 if ft == np.float32 else read_f64
        check(fn(r, i, out.ctypes.data_as(c_void_p), count.value, byref(written)))
        shape = self._shape(i)
        elements = int(np.prod(shape, dtype=np.uint64))
        # Counts tell complex data apart only when there is some: an empty
        # object is complex when its values component says so.
        is_complex = count.value == 2 * elements if elements else self._values_are_complex(i)
        return _reshape(_complex_pairs(out, is_complex), shape, self._what(i))

    def _read_refusal(self, i):
        """Raises what the library says of reading object i when it refuses
        it for its size (ZT_ERR_LIMIT: a component over max_decoded_bytes),
        asked without allocating: an allocation that failed is told apart
        from a plain lack of memory."""
        r = self._r()
        size = c_uint64()
        for role in self._roles(i):
            status = lib.zt_component_read_size(r, i, cstr(role), byref(size))
            if status == _lib.ERR_LIMIT:
                check(status)  # raises, with the call's own message

    def _what(self, i):
        return f'object "{text(lib.zt_object_name(self._r(), i))}"'

    def _values_are_complex(self, i):
        roles = self._roles(i)
        role = "data" if "data" in roles else "values" if "values" in roles else None
        if role is None:
            return False
        return text(lib.zt_component_type(self._r(), i, cstr(role))) in ("complex64", "complex128")


class SliceView:
    """A dense object of an open File, read a selection at a time:
    view[key] is File.slice(name, key); view.shape and view.dtype describe
    the whole object (dtype as File.slice gives it)."""

    def __init__(self, file, name):
        self._file = file
        self.name = name

    @property
    def shape(self) -> Tuple[int, ...]:
        return self._file._shape(self._file._index(self.name))

    def get_shape(self) -> List[int]:
        """The shape as a list (the name safetensors' slices use)."""
        return list(self.shape)

    @property
    def dtype(self) -> np.dtype:
        f = self._file
        dtype_name, ltype, dt = f._numpy_dtype(f._index(self.name), "data")
        return np.dtype(np.float32) if f._read_as_float32(dtype_name, ltype) else dt

    def __getitem__(self, key):
        return self._file.slice(self.name, key)

    def __repr__(self):
        return f"<ztensor.SliceView {self.name!r} shape={self.shape}>"


def _box_of_slices(key, shape):
    """(begin, end) of `key` where it is a slice, or a tuple of at most
    len(shape) slices, all without steps (a rank's rows, its columns, [:]):
    what _box_of_any gives for it, in a third of the time (a loop of
    get_slice(name)[rows] pays it a tensor); None for any other key."""
    if type(key) is slice:
        key = (key,)
    if type(key) is not tuple or len(key) > len(shape):
        return None
    begin, end = [0] * len(shape), list(shape)
    for d, k in enumerate(key):
        if type(k) is not slice or k.step not in (None, 1):
            return None
        b, e, _ = k.indices(shape[d])
        if e > b:
            begin[d], end[d] = b, e
        else:  # nothing selected in this dimension: as _box_of_any says it
            end[d] = 0
    return begin, end


def _box_of(key, shape):
    """numpy basic indexing over `shape` as a box (begin, end per dimension)
    and the index that takes the selection out of the box: steps and
    reversed slices select within it, ints drop their dimension."""
    box = _box_of_slices(key, shape)
    if box is None:
        return _box_of_any(key, shape)
    begin, end = box
    return begin, end, tuple(slice(0, e - b, 1) if e > b else _ALL for b, e in zip(begin, end))


_ALL = slice(None)


def _box_of_any(key, shape):
    """_box_of for any key: the general parse."""
    if not isinstance(key, tuple):
        key = (key,)
    for k in key:
        if k is None:
            raise IndexError("ztensor slices do not add dimensions (None / numpy.newaxis)")
        if isinstance(k, (bool, np.bool_)) or (not isinstance(k, slice) and k is not Ellipsis and
                                                  not hasattr(k, "__index__")):
            raise IndexError("only integers, slices and one Ellipsis index a ztensor slice, "
                             f"not {type(k).__name__}")
        # An array or tensor of one element has __index__ too, but torch and
        # numpy read it as advanced indexing (t[torch.tensor([1])] keeps the
        # dimension; a bool one is a mask): refused, not read as an int.
        if not isinstance(k, (int, slice)) and k is not Ellipsis and (
                getattr(k, "ndim", 0) != 0 or str(getattr(k, "dtype", "")) in ("bool", "torch.bool")):
            raise IndexError("only integers, slices and one Ellipsis index a ztensor slice, not "
                             f"an array or tensor used as an index ({type(k).__name__})")
    ellipses = sum(k is Ellipsis for k in key)
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    explicit = len(key) - ellipses
    if explicit > len(shape):
        raise IndexError(f"too many indices: the object has {len(shape)} dimensions, "
                         f"{explicit} were indexed")
    fill = (slice(None),) * (len(shape) - explicit)
    if ellipses:
        at = next(j for j, k in enumerate(key) if k is Ellipsis)
        key = key[:at] + fill + key[at + 1:]
    else:
        key = key + fill
    begin, end, post = [], [], []
    for d, (k, n) in enumerate(zip(key, shape)):
        if isinstance(k, slice):
            r = range(*k.indices(n))
            if not r:
                begin.append(0), end.append(0), post.append(slice(None))
                continue
            lo, hi = min(r[0], r[-1]), max(r[0], r[-1]) + 1
            begin.append(lo), end.append(hi)
            stop = r[-1] - lo + (1 if r.step > 0 else -1)
            post.append(slice(r[0] - lo, stop if stop >= 0 else None, r.step))
        else:
            k = operator.index(k)
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for dimension {d} with size {n}")
            k %= n
            begin.append(k), end.append(k + 1), post.append(0)
    return begin, end, tuple(post)


def _float_type(dtype):
    ft = np.dtype(dtype)
    if ft not in (np.float32, np.float64):
        raise TypeError(f"conversions give float32 or float64, not {ft}")
    return ft


def _complex_pairs(values, is_complex):
    """Interleaved (real, imag) floats as numpy complex, without a copy."""
    if not is_complex:
        return values
    return values.view(np.complex64 if values.dtype == np.float32 else np.complex128)


def _check_size(nbytes, dtype, shape, role):
    """The library checked sizes against shapes; this guards the numpy view.
    Returns the shape, (elements,) when none is given."""
    if shape is None:
        if nbytes % dtype.itemsize:
            raise Error(_lib.ERR_INVALID, f'component "{role}": {nbytes} bytes are not whole '
                        f"{dtype} elements")
        return (nbytes // dtype.itemsize,)
    want = math.prod(shape) * dtype.itemsize  # exact: a product past 2^64 matches no size
    if nbytes != want:
        raise Error(_lib.ERR_INVALID, f'component "{role}": {nbytes} bytes, expected {want} '
                    f"for shape {shape} of {dtype}")
    return shape


def open(path: PathLike, *, float32: bool = False, copy: bool = False,  # noqa: A001 (the API name)
         max_decoded_bytes: int = 0, allow_foreign: bool = False) -> File:
    """Opens a .zt file as a File (a mapping of names to numpy data).

    float32: give bf16 and FP8 dense objects as float32 arrays (decoded copies)
             instead of their raw uint16 / uint8 storage.
    copy:    read with pread instead of a memory mapping (for files that may
             change while open); "zero-copy" arrays then view reader buffers.
    max_decoded_bytes: cap on one component's decoded size (0: the library's).
    allow_foreign: also read .safetensors, .gguf, .npy, .npz, .onnx, PyTorch files
             and sharded checkpoint indexes (read-only; see File).
    An http:// or https:// URL is read with range requests (File.from_url,
    which takes the HTTP options).
    """
    if isinstance(path, str) and path.lower().startswith(("http://", "https://")):
        return File.from_url(path, float32=float32, max_decoded_bytes=max_decoded_bytes,
                             allow_foreign=allow_foreign)
    return File(path, float32=float32, copy=copy, max_decoded_bytes=max_decoded_bytes,
                allow_foreign=allow_foreign)
