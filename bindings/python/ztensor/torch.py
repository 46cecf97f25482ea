"""PyTorch tensors in zTensor files, with the API of `safetensors.torch`.

    from ztensor.torch import save_file, load_file, safe_open, save_model, load_model

    save_file({"w": torch.randn(4, 3, dtype=torch.bfloat16)}, "m.zt", {"step": "10"},
              encoding="zstd")
    tensors = load_file("m.zt")
    with safe_open("m.zt", framework="pt") as f:
        w = f.get_slice("w")[1:3, ::2]        # reads only that box
    save_model(model, "model.zt")             # tied weights stored once
    missing, unexpected = load_model(model, "model.zt")

Switching from safetensors is the import line; what it adds: zstd
(`encoding="zstd"` or `"auto"`), digests checked by `ztensor.open(...).verify()`,
N-d slices that touch only the box, sparse and quantized objects (loaded as
dense tensors; a quantized Hugging Face layer as its checkpoint's tensors,
or its values with quantized="dequantize"), and every format the library
reads (`allow_foreign=True`).

dtypes: every torch dtype a file can hold round-trips: float64/32/16,
bfloat16 (stays torch.bfloat16), int64/32/16/8, uint8, bool,
complex64/128, and float8_e4m3fn / float8_e5m2 (+ the fnuz variants) where
the installed torch has them. A file's u16/u32 data (which torch < 2.3 has
no type for) loads widened to int32/int64, u64 to int64 when every value
fits (else TypeError); FP8 data on a torch without float8 types raises
TypeError unless float8="float32" asks for decoded float32 values.

Speed: load_file allocates the tensors and fills them with one
zt_decode_ranges call on every core; to a CUDA device it goes through a
ring of pinned staging buffers, decoding one while the last is copied
(load_file's doc). Memory: tensors are copies by default (writable,
independent of the file). load_file(..., mmap=True) instead maps raw data
of every dtype with a torch type (bf16 and FP8 included) copy-on-write
(mmap ACCESS_COPY): no copy is made until a tensor is written to, and a
write changes that process's pages only, never the file; so is a
safetensors file read with allow_foreign=True (little-endian by its
specification), but a tensor whose bytes do not start at a multiple of
its element's size (the format packs tensors back to back) is a copy.
Each tensor is memory of its own: a tensor whose bytes the file already
handed out (a v2 object sharing another's blob, or get_tensor of one name
twice) is a copy.
The mapping is of the file that was opened, even if its path has been
replaced since (a checkpoint rewritten, as Writer does, by rename).
"""

import math
import mmap
import os
import sys
import tempfile
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, Union

import numpy as np
import torch

from . import _block_places, _blocks, _reader, _registered, _staging, _writer, cpu_count
from ._lib import ERR_INVALID, ERR_NOMEM, Error
from ._writer import Writer, _attributes_cbor, _canonical_order

PathLike = Union[str, "os.PathLike[str]"]
Device = Union[str, torch.device]

__all__ = ["save_file", "load_file", "save", "load", "safe_open", "save_model", "load_model"]

# Where save_model records the names it left out because they share storage
# with a stored tensor (removed name -> stored name).
ALIASES_KEY = "ztensor.torch.aliases"

_FLOAT8 = {f"float8_{k}": f"f8_{k}" for k in ("e4m3fn", "e5m2", "e4m3fnuz", "e5m2fnuz")}

# torch dtype -> (numpy view for writing, zt storage dtype or None for numpy's, zt type)
_TO_ZT = {
    torch.float64: (None, None, None), torch.float32: (None, None, None),
    torch.float16: (None, None, None), torch.int64: (None, None, None),
    torch.int32: (None, None, None), torch.int16: (None, None, None),
    torch.int8: (None, None, None), torch.uint8: (None, None, None),
    torch.bool: (None, None, None), torch.complex64: (None, None, None),
    torch.complex128: (None, None, None),
    torch.bfloat16: (torch.int16, "bf16", None),
}
for _name, _type in _FLOAT8.items():
    if hasattr(torch, _name):
        _TO_ZT[getattr(torch, _name)] = (torch.uint8, "u8", _type)
for _name in ("uint16", "uint32", "uint64"):
    if hasattr(torch, _name):
        _TO_ZT[getattr(torch, _name)] = (None, None, None)

# safetensors' dtype names, for get_slice(...).get_dtype()
_ST_NAMES = {
    ("f64", None): "F64", ("f32", None): "F32", ("f16", None): "F16", ("bf16", None): "BF16",
    ("i64", None): "I64", ("i32", None): "I32", ("i16", None): "I16", ("i8", None): "I8",
    ("u64", None): "U64", ("u32", None): "U32", ("u16", None): "U16", ("u8", None): "U8",
    ("bool", None): "BOOL", ("f32", "complex64"): "C64", ("f64", "complex128"): "C128",
    ("u8", "f8_e4m3fn"): "F8_E4M3", ("u8", "f8_e5m2"): "F8_E5M2",
}

# safetensors' dtype names -> torch dtypes, where this torch has them (the
# checkpoint tensors a quantized object records; F4 holds two values a byte,
# torch's float4_e2m1fn_x2 one byte a pair).
_ST_TORCH_NAMES = (
    ("F64", "float64"), ("F32", "float32"), ("F16", "float16"), ("BF16", "bfloat16"),
    ("I64", "int64"), ("I32", "int32"), ("I16", "int16"), ("I8", "int8"), ("U8", "uint8"),
    ("BOOL", "bool"), ("C64", "complex64"), ("U16", "uint16"), ("U32", "uint32"), ("U64", "uint64"),
    ("F8_E4M3", "float8_e4m3fn"), ("F8_E5M2", "float8_e5m2"), ("F8_E8M0", "float8_e8m0fnu"),
    ("F8_E4M3FNUZ", "float8_e4m3fnuz"), ("F8_E5M2FNUZ", "float8_e5m2fnuz"),
    ("F4", "float4_e2m1fn_x2"))
_TORCH_OF_ST = {st: getattr(torch, name) for st, name in _ST_TORCH_NAMES if hasattr(torch, name)}
_ST_DTYPES = {st for st, _ in _ST_TORCH_NAMES}  # a record naming another is not a checkpoint tensor

_QUANTIZED_MODES = ("checkpoint", "dequantize")

# ---------------------------------------------------------------------------
# writing


def _storage_ptr(t):
    """The address of the first byte of t's storage: t's own address less its
    offset (torch defines data_ptr so), without a storage object (torch <
    2.0's storage() cost ~2-9 us a tensor)."""
    return t.data_ptr() - t.storage_offset() * t.element_size()


def _shared_groups(tensors):
    """Lists of names whose tensors share storage (only groups of 2 or more)."""
    by_storage = {}
    for name, t in tensors.items():
        if t.is_meta or t.numel() == 0:  # t.is_meta: t.device.type costs ~0.5-1 us a tensor
            continue
        # A CPU address is the key by itself (t.device, ~0.5 us, only for others).
        key = _storage_ptr(t) if t.is_cpu else (t.device, _storage_ptr(t))
        by_storage.setdefault(key, []).append(name)
    return [names for names in by_storage.values() if len(names) > 1]


def _check_tensors(tensors):
    """Refuses (TypeError, naming the entry) what cannot be saved, in one
    pass before anything else looks at the tensors: the storage checks would
    otherwise fail first with torch's own errors (a sparse tensor has no
    storage), and a bad last tensor only after all the others were written."""
    if not isinstance(tensors, dict):
        raise TypeError("tensors must be a dict of name -> torch.Tensor")
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"tensor names must be str, not {type(name).__name__} {name!r}")
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name!r}: expected a torch.Tensor, got {type(t).__name__}")
        if t.layout != torch.strided:
            raise TypeError(f"{name!r}: a {t.layout} tensor; save it dense (to_dense()) "
                            "or through ztensor.Writer.add_csr / add_coo")
        if t.dtype not in _TO_ZT:
            raise TypeError(f"{name!r}: dtype {t.dtype} has no zTensor form")


def _same_view(a, b):
    """Whether b reads a's storage exactly as a does, so that loading b as a
    gives b back: same place and layout, and the same dtype and conj/neg bits
    (a float parameter's int32 view shares everything else)."""
    return (a.shape == b.shape and a.stride() == b.stride() and a.data_ptr() == b.data_ptr()
            and a.dtype == b.dtype and a.is_conj() == b.is_conj() and a.is_neg() == b.is_neg())


def _raw_dtypes():
    """torch dtype -> the file's dtype, for the dtypes whose bytes are stored
    as they are with no logical type (bf16, ints, floats, bool): what
    _numpy_of and Writer.add decide for them, decided once. Others (complex,
    FP8) and big-endian machines go through numpy."""
    out = {}
    if sys.byteorder != "little":
        return out
    for torch_dtype, (view, dtype, ztype) in _TO_ZT.items():
        if ztype is not None:
            continue
        if dtype is None:
            a = torch.empty(0, dtype=torch_dtype).numpy()
            dtype, implied = _writer._ZT_OF_NUMPY.get(f"{a.dtype.kind}{a.dtype.itemsize}", (None, "?"))
            if implied is not None:
                continue
        out[torch_dtype] = dtype
    return out


_RAW_DTYPES = _raw_dtypes()
assert not any(d.is_complex for d in _RAW_DTYPES), "complex tensors carry a conj bit"


def _raw_tensor(t):
    """(file dtype, address, bytes) of a CPU tensor whose own memory is
    written as it is (contiguous, no conj or neg bit, a _RAW_DTYPES dtype,
    not empty), or None where _numpy_of makes the bytes."""
    dtype = _RAW_DTYPES.get(t.dtype)
    # No conj bit to ask of: _RAW_DTYPES holds no complex dtype (asserted below).
    if dtype is None or not t.is_cpu or not t.is_contiguous() or t.is_neg():
        return None
    n = t.numel()
    return (dtype, t.data_ptr(), n * t.element_size()) if n else None


def _numpy_of(name, t):
    """The tensor (checked by _check_tensors) as a C-contiguous CPU numpy
    array, and the (dtype, type) the file stores it as."""
    view, dtype, ztype = _TO_ZT[t.dtype]
    # numpy() refuses conj/neg views: their bits say how to read the values.
    t = t.detach().resolve_conj().resolve_neg().to("cpu").contiguous()
    if view is not None:
        t = t.view(view)
    a = t.numpy()
    if dtype == "bf16":
        a = a.view(np.uint16)
    return a, dtype, ztype


def _check_metadata(metadata):
    """A copy of metadata, its keys and values checked as the writer's
    attributes encoding checks them (TypeError, ValueError, OverflowError):
    before any tensor is written, not after the last."""
    if metadata is None:
        return {}
    if not isinstance(metadata, dict) or not all(isinstance(k, str) for k in metadata):
        raise TypeError("metadata must be a dict with str keys")
    _attributes_cbor(metadata)
    return dict(metadata)


def save_file(tensors: Dict[str, torch.Tensor], filename: PathLike, metadata: Optional[Dict[str, Any]] = None,
              *, encoding: str = "raw", digest: str = "xxh3", **options: Any) -> None:
    """Writes a dict of tensors (names -> torch.Tensor) to a .zt file, whole or
    not at all. metadata: file attributes (str keys; any value a CBOR map
    holds, not only str as in safetensors). encoding: "raw" (mappable),
    "zstd", "auto" (zstd where it saves at least 10%; in v2 files byte
    planes for floats where they beat zstd by 5%) or, with
    file_version=2, "planes" (byte planes: bf16 weights about 1.49x where
    zstd makes 1.28x). digest: "xxh3",
    "sha256" or "none". Other options go to ztensor.Writer (zstd_level,
    threads, ...). Tensors that share storage are refused (ValueError), as
    safetensors does: save_model stores them once. Tensors are written in
    the dict's order (sorted by name with canonical=True, the only order it
    takes)."""
    _check_tensors(tensors)
    shared = _shared_groups(tensors)
    if shared:
        raise ValueError(
            f"Some tensors share memory, this would store them twice and lose the sharing: {shared}."
            " Use save_model, which stores each once, or pass clones.")
    attributes = _check_metadata(metadata)
    items = _canonical_order(tensors.items()) if options.get("canonical") else tensors.items()
    with Writer(filename, digest=digest, **options) as w:
        if attributes:
            w.set_attributes(attributes)  # first: what the library refuses, it refuses early
        # Tensors written from their own memory (no numpy array: ~15 us a
        # tensor) go to the writer a run at a time, in one call each run.
        names, dtypes, shapes, addresses, sizes = [], [], [], [], []
        for name, t in items:
            raw = _raw_tensor(t)
            if raw is not None:
                names.append(name)
                dtypes.append(raw[0])
                shapes.append(t.shape)
                addresses.append(raw[1])
                sizes.append(raw[2])
                continue
            w._add_dense_many(names, dtypes, shapes, addresses, sizes, encoding)
            names, dtypes, shapes, addresses, sizes = [], [], [], [], []
            a, dtype, ztype = _numpy_of(name, t)
            w.add(name, a, encoding=encoding, dtype=dtype, type=ztype)
        w._add_dense_many(names, dtypes, shapes, addresses, sizes, encoding)


def save(tensors: Dict[str, torch.Tensor], metadata: Optional[Dict[str, Any]] = None, **kwargs: Any) -> bytes:
    """save_file into bytes: one file's, so shard_bytes (the shards would be
    deleted with the temporary folder) and append (to no file) are refused."""
    for option in ("shard_bytes", "append"):
        if kwargs.get(option):
            raise ValueError(f"save() returns one file's bytes and cannot take {option}=; "
                             "use save_file")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "tensors.zt")
        save_file(tensors, path, metadata, **kwargs)
        with open(path, "rb") as f:
            return f.read()


def save_model(model: torch.nn.Module, filename: PathLike, metadata: Optional[Dict[str, Any]] = None,
               **kwargs: Any) -> None:
    """Saves model.state_dict() with every storage stored once: of the names
    that share one (tied weights), the first is stored and the others are
    recorded in the file attribute "ztensor.torch.aliases", so that
    load_file and load_model give them back as one shared tensor."""
    state = model.state_dict()
    _check_tensors(state)
    attributes = _check_metadata(metadata)
    aliases = {}
    for names in _shared_groups(state):
        # One stored name per group: the others must be views of exactly it.
        keep = names[0]
        for other in names[1:]:
            if not _same_view(state[keep], state[other]):
                raise ValueError(f"{keep!r} and {other!r} share storage but are different views; "
                                 "save clones with save_file")
            aliases[other] = keep
    if aliases:
        attributes[ALIASES_KEY] = aliases
    save_file({k: v for k, v in state.items() if k not in aliases}, filename, attributes, **kwargs)


# ---------------------------------------------------------------------------
# reading


def _torch_of_numpy(a, dtype, ztype, float8, name):
    """A numpy array of the file's storage as the torch dtype it stands for."""
    if dtype == "bf16":
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    if ztype in _FLOAT8.values():
        native = {v: k for k, v in _FLOAT8.items()}[ztype]
        if hasattr(torch, native):
            return torch.from_numpy(a).view(getattr(torch, native))
        raise TypeError(f"{name!r}: {ztype} data, and this torch ({torch.__version__}) has no "
                        f"torch.{native}; pass float8='float32' for decoded values")
    if a.dtype == np.uint16 and not hasattr(torch, "uint16"):
        return torch.from_numpy(a.astype(np.int32))
    if a.dtype == np.uint32 and not hasattr(torch, "uint32"):
        return torch.from_numpy(a.astype(np.int64))
    if a.dtype == np.uint64 and not hasattr(torch, "uint64"):
        if a.size and int(a.max()) > np.iinfo(np.int64).max:
            raise TypeError(f"{name!r}: u64 values above 2**63 - 1 have no torch type here")
        return torch.from_numpy(a.astype(np.int64))
    return torch.from_numpy(a)


# numpy storage dtypes -> the torch dtype holding the same bytes
_TORCH_OF_NUMPY = {
    np.dtype("<f8"): torch.float64, np.dtype("<f4"): torch.float32, np.dtype("<f2"): torch.float16,
    np.dtype("<i8"): torch.int64, np.dtype("<i4"): torch.int32, np.dtype("<i2"): torch.int16,
    np.dtype("i1"): torch.int8, np.dtype("u1"): torch.uint8, np.dtype("?"): torch.bool,
    np.dtype("<c8"): torch.complex64, np.dtype("<c16"): torch.complex128,
}
for _np, _name in (("<u2", "uint16"), ("<u4", "uint32"), ("<u8", "uint64")):
    if hasattr(torch, _name):
        _TORCH_OF_NUMPY[np.dtype(_np)] = getattr(torch, _name)


def _exact_dtype(dtype, ltype, np_dtype, float8):
    """The torch dtype that holds a dense object's decoded bytes as they
    are (bf16 as torch.bfloat16, FP8 as torch's float8 types), or None
    where loading it takes a conversion (tensor() then does it, or says why
    not)."""
    if dtype == "bf16" and ltype is None:
        return torch.bfloat16
    if ltype in _FLOAT8.values():
        native = {v: k for k, v in _FLOAT8.items()}[ltype]
        return getattr(torch, native, None) if float8 == "native" else None
    if ltype not in (None, "complex64", "complex128", "bool"):
        return None
    return _TORCH_OF_NUMPY.get(np_dtype)


_CPU = torch.device("cpu")


_ELEMENT_SIZES: Dict[torch.dtype, int] = {}


def _element_size(dtype):
    """Bytes an element of `dtype` takes (torch < 2.1 has no dtype.itemsize)."""
    size = _ELEMENT_SIZES.get(dtype)
    if size is None:
        size = _ELEMENT_SIZES[dtype] = torch.empty(0, dtype=dtype).element_size()
    return size


def _is_cpu(device):
    """Whether `device` (None, a str, a torch.device) is the CPU."""
    return device is None or device == "cpu" or torch.device(device).type == "cpu"


def _advise_huge_pages(t):
    """Transparent huge pages over a fresh tensor of 4 MiB or more
    (_block_places.advise_huge_pages; numpy does so for its arrays from 4 MiB):
    the faults were most of a hot load's time on the 2-core machine
    (BENCHMARKS.md)."""
    n = t.numel() * t.element_size()
    if n >= 2 * _block_places.HUGE_PAGE:
        _block_places.advise_huge_pages(t.data_ptr(), n)


# From this size on, a load asks the library whether it would read a tensor
# (zt_component_read_size: ZT_ERR_LIMIT over max_decoded_bytes) before
# allocating what the file claims, as every reading call of the File does:
# a zstd object may claim terabytes in a few bytes. Below it the question
# (~1 us) would cost more than the allocation it guards, and the decode
# refuses the tensor all the same.
_ASK_FROM = 1 << 20


def _allocation_error(f, e, err, device=None):
    """torch's refusal to allocate object e's tensor (a RuntimeError) as a
    ztensor.Error, as the File's own reads say it (ZT_ERR_NOMEM)."""
    where = f" on {device}" if device is not None else ""
    return Error(ERR_NOMEM, f"{f._what(e.index)}: cannot allocate a tensor of shape {tuple(e.shape)} "
                 f"and dtype {e.dtype}{where}: {err}")


# Through the staging ring, the tensors carved out of device blocks are
# made while the ring's first batches decode, not before it starts: the
# copies go to the blocks, and making 2,000 of them took ~11 ms of the
# 17.7 ms before the first decode of a 4.8 GB model on an H200. Off until
# a lent GPU has measured it (bench row Gpu_LoadFileCarveDuringRing).
_CARVE_DURING_RING = False


# Through a CUDA device, raw tensors of the mapped file are copied from its
# own pages, pinned where they lie a chunk at a time (_registered), and the
# rest through the staging ring. Off until a lent GPU has measured it
# against the ring (bench row Gpu_LoadFileRegistered).
_REGISTERED_LOADS = False


# On the CPU, a load's carved tensors are made while its decode runs, on
# a worker thread, where there are at least this many (starting and joining
# the thread cost ~0.14 ms on the 2-core VM, ~50 carvings). On that VM,
# alternating, within the noise for the 500 carved 256 KiB tensors of the
# 1.2 GB model (120.4 against 124.9 ms) and 1.09x for 4,096 carved 64 KiB
# ones (47.2 against 51.3 ms); it hides ~3 - 5 us a carved tensor where
# the decode has the other cores. Bench row Load_LoadFileCarveFirst: the
# other way.
_CARVE_DURING_DECODE_FROM = 64


def _blocks_for(exact, out, device, smallest):
    """The _blocks.Blocks that a load's tensors of `smallest` bytes to
    fewer than _block_places.PACK_BELOW (of `exact`, those not in `out` already)
    come out of, or None where fewer than two would."""
    return _block_places.blocks_for((e[3] for name, e in exact.items() if name not in out), smallest,
                                    lambda total: _blocks.Blocks(total, device))


def _carve_into(out, later):
    """out[name] = _blocks.carve(*carving) for each (name, carving) of
    `later`: the tensors a load placed in blocks and makes afterwards."""
    carve = _blocks.carve
    for name, carving in later:
        out[name] = carve(*carving)


def _decode_while_carving(f, columns, later, out):
    """f._decode_columns(*columns) on a worker thread while the tensors of
    `later` (as _carve_into takes them: bytes of blocks already allocated,
    which the decode fills) are carved into `out` on this one: making a
    tensor object costs ~3 - 5 us of Python, which the decode's time on the
    other cores hides. The decode is waited for whatever happens here, a
    KeyboardInterrupt too: it writes into the blocks, which must outlive
    it."""
    failed = []

    def decode():
        try:
            f._decode_columns(*columns)
        except BaseException as e:  # re-raised on the caller's thread
            failed.append(e)

    worker = threading.Thread(target=decode, name="ztensor-decode", daemon=True)
    worker.start()
    try:
        _carve_into(out, later)
    finally:
        interrupted = None
        while worker.is_alive():
            try:
                worker.join()
            except BaseException as e:  # a signal's exception: wait all the same, then raise it
                interrupted = e
        if interrupted is not None:
            raise interrupted
    if failed:
        raise failed[0]


def _cpu_new_empty(news, dtype):
    """news[dtype] = the new_empty method of an empty CPU tensor of dtype."""
    new = news[dtype] = torch.empty(0, dtype=dtype).new_empty
    return new


def _new_tensor(f, e, device=None):
    """An empty tensor for object e (an _Exact) of File f, after the
    library's refusal of its size where it has one."""
    if e.nbytes >= _ASK_FROM:
        f._read_refusal(e.index)
    try:
        return torch.empty(e.shape, dtype=e.dtype, device=device)
    except RuntimeError as err:  # out of memory, or a size torch cannot compute
        raise _allocation_error(f, e, err, device) from None


class _Exact(NamedTuple):
    """A dense object that loads byte for byte into a torch tensor: its
    decoded bytes [first, first + nbytes) (all of them, or the one run a
    selection of it is: _selection)."""
    index: int
    shape: Tuple[int, ...]
    dtype: torch.dtype
    nbytes: int
    first: int = 0


class _Selection(NamedTuple):
    """A selection of a tensor with steps of 1: its box [begin, end), the
    shape it has (an int drops its dimension), its element count, and its
    first element where it is one run of the tensor's elements in row-major
    order (a tensor-parallel rank's share along the first dimension it
    splits, or any selection of whole rows; 0 when empty), else None (a
    box of runs: columns)."""
    begin: List[int]
    end: List[int]
    shape: Tuple[int, ...]
    count: int
    first: Optional[int]


def _selection(key, shape):
    """The selection `key` (numpy basic indexing) of a tensor of `shape` as
    a _Selection, or None where it has steps (zt_dense_slice reads those,
    on the CPU)."""
    box = _reader._box_of_slices(key, shape)
    if box is None:
        begin, end, post = _reader._box_of_any(key, shape)
        if any(isinstance(p, slice) and p.step not in (None, 1) for p in post):
            return None
        extents = [e - b for b, e in zip(begin, end)]
        selected = tuple(x for x, p in zip(extents, post) if isinstance(p, slice))
    else:
        begin, end = box
        extents = [e - b for b, e in zip(begin, end)]
        selected = tuple(extents)
    count = math.prod(extents)
    if count == 0:
        return _Selection(begin, end, selected, 0, 0)
    # Whole trailing dimensions, at most one partial one before them, and
    # a single index in each dimension before that.
    partial = len(shape)
    while partial > 0 and extents[partial - 1] == shape[partial - 1]:
        partial -= 1
    if any(x != 1 for x in extents[:max(partial - 1, 0)]):
        return _Selection(begin, end, selected, count, None)
    first = 0
    for b, n in zip(begin, shape):
        first = first * n + b
    return _Selection(begin, end, selected, count, first)


def _selected(e, s):
    """The _Exact of selection s (a _Selection) of object e (an _Exact of
    it whole): its shape and bytes, from its first element's (0 for a box
    of runs)."""
    size = e.nbytes // math.prod(e.shape) if s.count else 0
    return _Exact(e.index, s.shape, e.dtype, s.count * size, (s.first or 0) * size)


# The first block get_tensor carves tensors out of (one()): each next is
# twice the last, up to _block_places.BLOCK_BYTES.
_ONE_FIRST_BLOCK = 64 << 10


class _File:
    """One open file as tensors."""

    def __init__(self, filename, *, float8="native", mmap=False, sparse=False, allow_foreign=False,
                 memory=None, copy=False, quantized="checkpoint", max_decoded_bytes=0):
        if float8 not in ("native", "float32"):
            raise ValueError('float8 is "native" or "float32"')
        if quantized not in _QUANTIZED_MODES:
            raise ValueError('quantized is "checkpoint" or "dequantize"')
        self.quantized = quantized
        if memory is not None:
            self.f = _reader.File.from_bytes(memory, max_decoded_bytes=max_decoded_bytes)
        else:
            # copy=True: pread, no mapping.
            self.f = _reader.open(filename, allow_foreign=allow_foreign, copy=copy,
                                  max_decoded_bytes=max_decoded_bytes)
        self.float8 = float8
        self.sparse = sparse
        self._exact = self._names = None
        self._news = {}  # dtype -> new_empty of an empty CPU tensor of it (one(), load())
        self._bools = False
        self._column = self._summary = None
        self._summary_by_name = None
        self._mapping_storage = {}  # id(a mapping of the File) -> (it, its torch storage): _storage_of_mapping
        # mmap=True: raw data from the File's copy-on-write mapping
        # (File._copy_on_write_places, as dlpack() hands out its bytes), which knows where there is
        # none (memory, URLs, zstd, shards).
        self._map = mmap
        # The blocks one() carves CPU tensors out of (made at its first
        # such tensor), and the lock that makes a place in them one
        # thread's: get_tensor may be called from many.
        self._one_blocks = None
        self._one_lock = threading.Lock()

    def close(self):
        # The mapping stays alive as long as tensors use it (they keep it referenced).
        self.f.close()
        self._column = self._summary = self._exact = self._names = None
        self._mapping_storage = {}
        self._one_blocks = None  # its blocks stay alive as long as tensors carved out of them do

    def attributes(self):
        return self.f.attributes

    def _columns(self):
        if self._column is None:
            self._column = self.f._columns()
        return self._column

    def _summaries(self):
        if self._summary is None:
            self._summary = self.f._summaries()
        return self._summary

    def keys(self):
        return list(self._columns().names)  # in index order, one call for all

    def summary(self, name):
        """The object summary of `name` (KeyError for a name the file lacks)."""
        if self._summary_by_name is None:
            self._summary_by_name = {s.name: s for s in self._summaries()}
        s = self._summary_by_name.get(name)
        if s is None:
            self.f._index(name)  # the reader's own error for the name
            raise KeyError(name)
        return s

    def tensor_names(self):
        """The names a reader sees: the objects', but with
        quantized="checkpoint" each object that records its checkpoint
        tensors gives their names instead (in the order recorded)."""
        if self.quantized != "checkpoint":
            return self.keys()
        c = self._columns()
        if not any(c.attributed):
            return list(c.names)
        return [t for s in self._summaries() for t in self._recorded_names(s.name, s) or [s.name]]

    def _recorded_names(self, name, summary=None):
        """The checkpoint tensor names object `name` records, or None."""
        if summary is not None and not summary.has_attributes:
            return None
        i = summary.index if summary else self.f._index(name)
        records = self._records(i, self.f._attributes(i))
        return None if records is None else [r["name"] for _, r in records]

    def _records(self, i, attributes):
        """[(role, record)] of the checkpoint tensors object i records, one
        a part (attribute hf.tensors: role -> {"name", "dtype", "shape"}),
        then its shape's (hf.shape_tensor, role None); None where it records
        none. Checked as the CLI's way back checks them: a record that is
        not one raises ztensor.Error (ZT_ERR_INVALID), not a KeyError or
        TypeError from deep inside a load."""
        records = attributes.get("hf.tensors")
        if records is None:
            return None
        what = f"{self.f._what(i)}: attribute hf.tensors"
        roles = self.f._roles(i)
        if not isinstance(records, dict) or sorted(records) != sorted(roles):
            raise Error(ERR_INVALID, f"{what} must map each of the object's parts {roles} to a record")
        out = [(role, _checked_record(f"{what}: part {role!r}", r)) for role, r in records.items()]
        shape = attributes.get("hf.shape_tensor")
        if shape is not None:
            r = _checked_record(f"{self.f._what(i)}: attribute hf.shape_tensor", shape)
            ndim = len(self.f._shape(i))
            if r["dtype"] not in ("I64", "I32") or list(r["shape"]) != [ndim]:
                raise Error(ERR_INVALID, f"{self.f._what(i)}: attribute hf.shape_tensor is "
                            f"{r['dtype']} {r['shape']}, which cannot hold the object's shape "
                            f"(I64 or I32 [{ndim}])")
            out.append((None, r))
        self._check_record_names(i, [r["name"] for _, r in out])
        return out

    def _check_record_names(self, i, names):
        """A recorded name stands for one tensor: not twice, and not the
        name of another stored object, which it would silently replace."""
        clash = sorted({n for n in names if names.count(n) > 1}
                       | {n for n in names if n in self.f and self.f._index(n) != i})
        if clash:
            raise Error(ERR_INVALID, f"{self.f._what(i)}: attribute hf.tensors names {clash} more "
                        "than once or names another stored object")

    def get(self, key, device):
        """One tensor by the name tensor_names() gives."""
        if self.quantized == "checkpoint" and not self._has(key):
            for name in self.keys():
                if key in (self._recorded_names(name) or ()):
                    return _to(dict(self.checkpoint_tensors(name))[key], device)
            raise KeyError(key)
        t = self.one(key, device)
        return self.load([key], device)[key] if t is None else t

    def _has(self, key):
        """Whether the file has an object named `key`: a str from the set of
        the summaries' names, made once (the reader's lookup through ctypes
        cost ~2.7 us, a get_tensor loop pays it a tensor)."""
        if type(key) is not str:
            return key in self.f  # the reader's answer for anything else
        if self._names is None:
            self._names = frozenset(self._columns().names)
        return key in self._names

    def _exacts(self, names):
        """name -> _Exact for those of `names` that load byte for byte (the
        others need a conversion). Every object's comes from one pass over
        the object summaries' columns, made once; whether a (format, dtype,
        type) loads, and as what, is decided once per combination:
        per-tensor Python work is what a model of many small tensors loads
        at (BENCHMARKS.md)."""
        table = self._exact_table()
        if names == self._columns().names:  # every object, in index order: the usual load
            return dict(table)
        return {name: table[name] for name in names if name in table}

    def _exact_table(self):
        """name -> _Exact of every object that loads byte for byte, made once."""
        if self._exact is None:
            table, new, prod = {}, tuple.__new__, math.prod
            for i, name, shape, _, _, (torch_dtype, size) in _reader._objects_of_kind(
                    self._columns(), 0, self._exact_kind):
                table[name] = new(_Exact, (i, shape, torch_dtype, prod(shape) * size, 0))  # no __new__ call
            self._exact = table
        return self._exact

    def one(self, name, device, key=None, staging=None):
        """Object `name` (or its selection `key`, where that is one run of
        its bytes: whole rows, a rank's share) as a new tensor by the
        shortest way (a box of runs, a rank's columns: one zt_dense_slice
        into the tensor or staging buffer; selections with steps on the
        CPU: slice()), or None where load() has more to do (mmap=True, a
        conversion, a name the file lacks, steps to a device, a device other
        than the CPU and CUDA, a tensor larger than a staging buffer). A
        loader that asks for a model's tensors one by one (safe_open's
        get_tensor and get_slice(name)[key], as transformers loads) pays
        this a tensor: on the CPU ~5 us for 1 KiB where load([name]) took
        ~14 (2-core VM); to a CUDA device (staging: its _Staging, by
        default the device's) one staging buffer and one copy
        (_staging.load_one), not the ring."""
        if self._map:  # a mapped tensor where the file has one; load() for the rest
            e = self._exact_table().get(name) if key is None and _is_cpu(device) else None
            t = None if e is None else self._mapped_one(e)
            if t is not None and e.dtype is torch.bool:
                self._hold_bools({name: e}, {name: t})
            return t
        if staging is None and not _is_cpu(device):
            staging = _staging_for(device, _staging.DEFAULT_BUFFERS, _staging.DEFAULT_BUFFER_BYTES)
            if staging is None:
                return None
        e, box = self._exact_table().get(name), None
        if e is not None and key is not None:
            s = _selection(key, e.shape)
            if s is None:  # steps: on the CPU what load() does, zt_dense_slice of the box, then numpy's pick
                return self.slice(name, key) if staging is None else None
            if s.first is None:  # a box of runs (a rank's columns): zt_dense_slice into the tensor or buffer
                box = s
            e = _selected(e, s)
        if e is None or (staging is not None and e.nbytes > staging.buffer_bytes):
            return None
        index, shape, dtype, nbytes, first = e
        if nbytes >= _ASK_FROM:  # what the file claims, asked before it is allocated
            self.f._read_refusal(index)
        on = device if staging is not None else None
        try:
            if on is None and _block_places.CPU_PACK_FROM <= nbytes < _block_places.PACK_BELOW:
                t = self._one_carved(shape, dtype, nbytes)
            elif on is None:  # new_empty of a kept empty tensor of the dtype: no dtype or device parsed
                t = (self._news.get(dtype) or _cpu_new_empty(self._news, dtype))(shape)
            else:
                t = torch.empty(shape, dtype=dtype, device=on)
        except RuntimeError as err:
            raise _allocation_error(self.f, e, err, on) from None
        if box is not None:
            def fill(address, n, f=self.f):
                f._slice_into(index, box.begin, box.end, address, n)
        elif staging is not None:
            def fill(address, n, f=self.f):
                f._decode_one(index, first, address, n)
        if staging is not None:
            _staging.load_one(fill, t, nbytes, staging.engine)
        elif nbytes:
            if nbytes >= 2 * _block_places.HUGE_PAGE:
                _advise_huge_pages(t)
            if box is None:  # the usual call: no closure made
                self.f._decode_one(index, first, t.data_ptr(), nbytes)
            else:
                fill(t.data_ptr(), nbytes)
        if dtype is torch.bool:
            self._hold_bools({name: e}, {name: t})
        return t

    def _one_carved(self, shape, dtype, nbytes):
        """An empty CPU tensor for one(), carved out of the File's blocks
        in huge pages as a whole load's are (_block_places): a get_tensor
        loop over 4,096 x 64 KiB in a fresh process took 149 ms with each
        tensor the heap's (16 page faults a tensor when filled), against
        load_file's 54. The blocks hold at most the bytes of the file's
        tensors carved this way (a tensor asked again takes a block of its
        own once they are spent), the first 64 KiB, each next twice the
        last up to BLOCK_BYTES: a few tensors asked hold little more than
        their bytes. torch's RuntimeError where a block cannot be
        allocated."""
        with self._one_lock:
            blocks = self._one_blocks
            if blocks is None:
                _, total = _block_places.pieces_to_carve((e.nbytes for e in self._exact_table().values()),
                                                         _block_places.CPU_PACK_FROM)
                blocks = self._one_blocks = _blocks.Blocks(total, _CPU, first_block_bytes=_ONE_FIRST_BLOCK)
            at = blocks.place(nbytes)
            return _blocks.carve(blocks.storage, blocks.base + at, shape, dtype, nbytes, _CPU)

    def _exact_kind(self, fmt, dtype, ltype):
        """(torch dtype, element bytes) of dense data that loads byte for
        byte as it is stored, or None."""
        np_dtype = _reader._dense_kind(fmt, dtype, ltype)
        if np_dtype is None:
            return None
        torch_dtype = _exact_dtype(dtype, ltype, np_dtype, self.float8)
        if torch_dtype is torch.bool:
            self._bools = True  # _hold_bools has work (asked once per kind, not per tensor)
        return None if torch_dtype is None else (torch_dtype, np_dtype.itemsize)

    def _mapped(self, exact, skip):
        """name -> a copy-on-write tensor over the file's bytes, for each of
        `exact` not in `skip` whose data is raw little-endian bytes at a
        place in this very file (File._copy_on_write_places): each carved
        out of one storage of the File's mapping, a storage of its own that
        holds exactly its bytes, as a decoded tensor's would (_blocks.carve:
        ~2 us a tensor where a numpy view of the mapping made into a tensor
        and viewed as its dtype cost ~11, with the extent asked through
        ctypes)."""
        names = [name for name in exact if name not in skip] if skip else list(exact)
        entries = [exact[name] for name in names]
        wholes, starts = self.f._copy_on_write_places([e.index for e in entries], [e.nbytes for e in entries],
                                                      [_element_size(e.dtype) for e in entries])
        out, carve, last, storage = {}, _blocks.carve, None, None
        for name, e, whole, start in zip(names, entries, wholes, starts):
            if start is not None:
                if whole is not last:  # a sharded model's next file
                    last, storage = whole, self._storage_of_mapping(whole)
                out[name] = carve(storage, start, e.shape, e.dtype, e.nbytes, _CPU)
        return out

    def _load_registered(self, items, engine):
        """Copies the items whose bytes lie raw in the mapped file (whole
        tensors or one run of them) from the file's pages, pinned where they
        lie (_registered.load); the other items, to go through the staging
        ring. Where pinning fails, every item goes through the ring (which
        writes all their bytes again)."""
        f = self.f
        if f._mapped is None or not items:
            return items
        indices = [it.index for it in items]
        offsets, lengths, raw, files = f._places(min(indices), max(indices) + 1)
        # A read-only shared mapping of the file the library opened (pages
        # pinned read-only: as bench/gpu_register.py pins them), made for
        # this load and unmapped after it.
        mapped = f._mapped[0] if f._mapped is not None else None
        whole = None if mapped is None or mapped.identity is None else \
            _reader._map_if_same_file(mapped.path, mapped.identity, mmap.ACCESS_READ)
        if whole is None:
            return items
        candidates, rest = [], []
        for it in items:
            i = it.index
            start = int(offsets[i]) + it.first
            if (it.box is None and raw[i] and files[i] == 0 and it.first + it.nbytes <= int(lengths[i])
                    and start + it.nbytes <= whole.size):
                candidates.append((start, it))
            else:
                rest.append(it)
        # Pieces must not overlap (a chunk is pinned once): bytes that an
        # earlier piece holds too (a v2 file's objects stored once) go
        # through the ring.
        pieces, end = [], 0
        for start, it in sorted(candidates, key=lambda c: c[0]):
            if start < end:
                rest.append(it)
                continue
            end = start + it.nbytes
            dst = None if it.block is not None else _staging._bytes_of(it.dst)
            pieces.append(_registered.Piece(start, it.nbytes, dst, it.block, it.at))
        try:
            _registered.load(whole, pieces, engine)
        except RuntimeError as e:  # not pinned (cudaHostRegister refused): the ring does it all
            warnings.warn(f"ztensor: the file's pages could not be pinned ({e}); loading through the "
                          "staging ring", RuntimeWarning, stacklevel=4)
            return items
        return rest

    def _mapped_one(self, e):
        """_mapped of one object (its _Exact), or None: get_tensor's way."""
        whole, start = self.f._copy_on_write_place(e.index, e.nbytes, _element_size(e.dtype))
        if whole is None:
            return None
        return _blocks.carve(self._storage_of_mapping(whole), start, e.shape, e.dtype, e.nbytes, _CPU)

    def _storage_of_mapping(self, whole):
        """The torch storage of a mapping `whole` of the File (of one of the
        model's files), made once a mapping (a storage of torch 1.13 is
        asked through Python: ~7 us)."""
        kept = self._mapping_storage.get(id(whole))
        if kept is None or kept[0] is not whole:
            kept = self._mapping_storage[id(whole)] = (whole, _blocks.storage_of(torch.from_numpy(whole)))
        return kept[1]

    def _selections(self, slices, ring):
        """(name -> _Exact, name -> _staging.Box) for the objects of `slices`
        that load byte for byte: each selection that is one run of its
        object's bytes (_selection) loads with the whole tensors, in the same
        decode calls (every core, the staging ring to a device; over HTTP
        only the run's bytes are fetched); with ring=True, so do the others
        with steps of 1 (a rank's columns), each a Box that the ring reads
        piece by piece, so that host memory stays the ring's. The rest go
        through slice()."""
        exact, boxes = {}, {}
        for name, e in self._exacts(list(slices)).items():
            s = _selection(slices[name], e.shape)
            if s is None or (s.first is None and not ring):
                continue
            exact[name] = _selected(e, s)
            if s.first is None:
                boxes[name] = _staging.Box(s.begin, s.end, e.nbytes // math.prod(e.shape))
        return exact, boxes

    def _boxes(self, names, slices):
        """name -> a Future of slice(name, slices[name]) for each of `names`,
        read side by side on every core (the library's calls release the
        GIL; a reader serves many threads at once; zt_dense_slice reads one
        box on one thread); all have ended when this returns, and result()
        raises a slice's error. {} where there is one core or one name:
        load() reads them one at a time."""
        workers = min(len(names), cpu_count())
        if workers <= 1:
            return {}
        with ThreadPoolExecutor(workers, thread_name_prefix="zt-slice") as pool:
            return {name: pool.submit(self.slice, name, slices[name]) for name in names}

    def slice(self, name, key):
        """The selection `key` (numpy basic indexing) of a dense object as a
        CPU tensor, reading only the box that holds it (zt_dense_slice)."""
        c = self.f.info(name).components["data"]
        wanted = np.float32 if c.type in _FLOAT8.values() and self.float8 == "float32" else None
        a = self.f.slice(name, key, wanted)
        # Negative steps give numpy views with negative strides, which torch
        # cannot take: those become copies (as x[::-1] is in numpy's terms).
        if any(stride < 0 for stride in a.strides):
            a = a.copy()
        if wanted is not None:
            return torch.from_numpy(a)
        return _torch_of_numpy(a, c.dtype, c.type, self.float8, name)

    def load(self, names, device, staging=None, slices=None, into=None):
        """The named objects as tensors on `device`, in the order given.
        Objects that load byte for byte are allocated first and filled
        together: on the CPU by one zt_decode_ranges on every core (or
        mapped, with mmap=True), on a CUDA device through the staging ring
        (_staging.load); the others one
        at a time through tensor(). Those named in `slices` (name -> index)
        whose selection is one run of their bytes load with the first ones,
        and so do boxes of them through the staging ring (_selections); the
        others through slice().
        into={name: tensor}: a tensor there of the object's shape and torch
        dtype, contiguous and on `device`, is filled in place and returned
        instead of a new one (load_model's parameters)."""
        device = torch.device("cpu" if device is None else device)
        slices = slices or {}
        exact = self._exacts([name for name in names if name not in slices] if slices else names)
        if staging is None:
            staging = _staging_for(device, _staging.DEFAULT_BUFFERS, _staging.DEFAULT_BUFFER_BYTES)
        boxes = {}
        if slices:
            selected, boxes = self._selections({name: slices[name] for name in names if name in slices},
                                               staging is not None)
            exact.update(selected)
        out = _fillable(exact, into, device) if into else {}
        if staging is not None:
            # As the CPU's loop below: a model of many small tensors loads at
            # this loop's speed (e unpacked once, names looked up once, the
            # Item made without a __new__ call: a ring load of 20,000 x 1 KiB
            # 148 - 157 -> 135 - 139 ms on the 2-core VM).
            items, later = [], []
            blocks = _blocks_for(exact, out, device, 1)
            defer, small, ask = _CARVE_DURING_RING, _block_places.PACK_BELOW, _ASK_FROM
            carve, new, item = _blocks.carve, tuple.__new__, _staging.Item
            for name, e in exact.items():
                index, shape, dtype, nbytes, first = e
                block, at = None, 0  # where in a block the tensor's bytes are, if carved
                if name in out:
                    t = out[name]  # a tensor of into= to fill
                elif blocks is not None and 0 < nbytes < small:
                    if nbytes >= ask:  # what the file claims, asked before it is placed
                        self.f._read_refusal(index)
                    try:
                        at = blocks.place(nbytes)
                    except RuntimeError as err:  # a block could not be allocated
                        raise _allocation_error(self.f, e, err, device) from None
                    block = blocks.block  # after place(): it may have started a new one
                    carving = (blocks.storage, blocks.base + at, shape, dtype, nbytes, blocks.device)
                    if defer:  # the ring copies into the block: the tensor can wait
                        t = out[name] = None  # its place in the order
                        later.append((name, carving))
                    else:
                        t = out[name] = carve(*carving)
                else:
                    t = out[name] = _new_tensor(self.f, e, device)
                items.append(new(item, (index, nbytes, t, first, block, at, None)))
            if boxes:  # a rank's columns: each item's box (not asked in the loop above: ~0.5 ms a 20,000)
                items = [it._replace(box=boxes[name]) if name in boxes else it for name, it in zip(exact, items)]
            later.reverse()  # made from the end: pop() is cheap

            def carve_while(decoding):
                """Carves tensors while `decoding` (a Future) is not done."""
                while later and not decoding.done():
                    name, carving = later.pop()
                    out[name] = carve(*carving)

            if _REGISTERED_LOADS and hasattr(staging.engine, "register"):
                items = self._load_registered(items, staging.engine)
            _staging.load(self.f._decode_columns, items, staging.engine, staging.buffers,
                          staging.buffer_bytes, staging.ahead, carve_while if later else None,
                          self.f._slice_into if boxes else None)
            _carve_into(out, later)
        else:
            # A model of many small tensors loads at the speed of this loop:
            # the requests go out a field at a time (no tuple a tensor), and
            # torch.empty is looked up once. Every allocation is made before
            # anything is decoded: decoding chunks on a worker while the next
            # tensors were allocated (sessions 43-58) made the 4.5 GiB model
            # load 1.45x slower on an H200's 16 cores (264 against 182 ms;
            # likely the allocations' mmap calls holding up the decoding
            # threads' page faults). The tensors carved out of blocks need no
            # allocation of their own: their places are known once their
            # blocks are there, so the decode starts then and they are made
            # while it runs (_decode_while_carving).
            objects, offsets, addresses, lengths, later = [], [], [], [], []
            huge, ask = 2 * _block_places.HUGE_PAGE, _ASK_FROM
            mapped = self._mapped(exact, slices.keys() | out.keys()) if self._map else None
            # The File's dtype -> new_empty table (one()'s too): new_empty(shape)
            # parses no dtype (1.20 against torch.empty's 1.40 us a tensor).
            news, new_of, cpu = self._news, _cpu_new_empty, _CPU
            blocks = None if self._map else _blocks_for(exact, out, cpu, _block_places.CPU_PACK_FROM)
            smallest, small = (_block_places.CPU_PACK_FROM, _block_places.PACK_BELOW) if blocks is not None else (0, 0)
            for name, e in exact.items():
                index, shape, dtype, nbytes, first = e  # one unpacking, not five attribute reads
                t = out.get(name) if into else None  # a tensor of into= (each name comes once)
                if t is None:
                    if mapped:
                        t = mapped.get(name)
                        if t is not None:
                            out[name] = t
                            continue
                    if nbytes >= ask:  # what the file claims, asked before it is allocated
                        self.f._read_refusal(index)
                    try:
                        if smallest <= nbytes < small:  # never 0 bytes: smallest > 0
                            at = blocks.place(nbytes)
                            out[name] = None  # its place in the order: made while the decode runs
                            later.append((name, (blocks.storage, blocks.base + at, shape, dtype, nbytes, cpu)))
                            objects.append(index)
                            offsets.append(first)
                            addresses.append(blocks.address + at)
                            lengths.append(nbytes)
                            continue
                        t = out[name] = (news.get(dtype) or new_of(news, dtype))(shape)
                    except RuntimeError as err:
                        raise _allocation_error(self.f, e, err) from None
                    if nbytes >= huge:
                        _advise_huge_pages(t)
                if nbytes:
                    objects.append(index)
                    offsets.append(first)
                    addresses.append(t.data_ptr())
                    lengths.append(nbytes)
            columns = (objects, "data", offsets, addresses, lengths)
            if len(later) >= _CARVE_DURING_DECODE_FROM:
                _decode_while_carving(self.f, columns, later, out)
            else:
                _carve_into(out, later)
                if objects:  # none where every tensor was mapped
                    self.f._decode_columns(*columns)
            if device.type != "cpu":
                out = {name: t.to(device) for name, t in out.items()}
        self._hold_bools(exact, out)
        if not slices and len(out) == len(names) and list(out) == list(names):
            return out  # every name loaded byte for byte, in the order asked
        boxes = self._boxes([name for name in names if name in slices and name not in out], slices)
        result = {}
        for name in names:
            if name in out:
                result[name] = out[name]
            elif name in slices:
                box = boxes[name].result() if name in boxes else self.slice(name, slices[name])
                result[name] = _to(box, device)
            else:
                recorded = self.checkpoint_tensors(name) if self.quantized == "checkpoint" else None
                if recorded is None:
                    result[name] = _to(self.tensor(name), device)
                else:
                    for key, t in recorded:
                        result[key] = _to(t, device)
        return result

    def _hold_bools(self, exact, out):
        """Bool tensors filled byte for byte hold 0 or 1, as f[name] gives
        them (torch's bool, like numpy's, is undefined for other bytes): the
        library's refusal in 1.1 files and later; in 0.1 and 1.0, where any
        non-zero byte is true, the bytes made 0 or 1. A reduction over bool
        tensors only."""
        if not self._bools:  # no object of the file loads as bool
            return
        for name, e in exact.items():
            t = out.get(name)
            if e.dtype is not torch.bool or t is None or not t.numel():
                continue
            codes = t.view(torch.uint8)
            if bool((codes > 1).any()):
                self.f._bools(e.index, tuple(self.f._shape(e.index)))  # raises in 1.1 and later
                codes.clamp_(max=1)

    def checkpoint_tensors(self, name):
        """[(name, tensor)] of the checkpoint tensors an object that a
        quantized layer became records (attribute hf.tensors: one a part,
        bytes unchanged; hf.shape_tensor: the object's shape), as
        safetensors would load them from the checkpoint; None for an object
        that records none."""
        info = self.f.info(name)
        records = self._records(self.f._index(name), info.attributes)
        if records is None:
            return None
        out = []
        for role, r in records:
            if role is None:  # hf.shape_tensor: the object's shape as its values
                raw = np.array(info.shape, "<i8" if r["dtype"] == "I64" else "<i4")
            else:
                raw = np.ascontiguousarray(self.f.component(name, role)).view(np.uint8).reshape(-1)
            out.append((r["name"], _checkpoint_tensor(name, r, raw.tobytes())))
        return out

    def tensor(self, name):
        info = self.f.info(name)
        if info.format == "dense" and "data" in info.components:
            c = info.components["data"]
            dtype, ztype = c.dtype, c.type
            if ztype in _FLOAT8.values() and self.float8 == "float32":
                return torch.from_numpy(self.f.array(name, np.float32))
            a = self.f.array(name)
            return _torch_of_numpy(np.array(a, copy=True), dtype, ztype, self.float8, name)
        if self.sparse and info.format in ("sparse_csr", "sparse_coo"):
            v = self.f[name]
            def index(x):  # any integer dtype the file holds, as torch's int64
                return torch.from_numpy(np.array(x, dtype=np.int64))

            if info.format == "sparse_csr":
                values, indices, indptr = v
                return torch.sparse_csr_tensor(index(indptr), index(indices),
                                               torch.from_numpy(np.array(values)), size=v.shape)
            values, coords = v
            return torch.sparse_coo_tensor(index(coords), torch.from_numpy(np.array(values)),
                                           size=v.shape)
        # Sparse and quantized objects (and anything the library decodes to
        # dense): float64 where the stored values are, else float32.
        wide = any(c.dtype == "f64" for c in info.components.values())
        return torch.from_numpy(self.f.decode(name, np.float64 if wide else np.float32))

    def metadata(self):
        """The file attributes without the module's own keys."""
        return {k: v for k, v in self.f.attributes.items() if k != ALIASES_KEY}

    def aliases(self):
        """alias -> stored name, as save_model records them; a record that
        is not a map of names to names raises ztensor.Error (ZT_ERR_INVALID)."""
        aliases = self.f.attributes.get(ALIASES_KEY, {})
        if not isinstance(aliases, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in aliases.items()):
            raise Error(ERR_INVALID, f"file attribute {ALIASES_KEY} must map names to names, "
                        f"not {aliases!r:.200}")
        return aliases


def _checked_record(what, record):
    """A checkpoint tensor's record ({"name": str, "dtype": a safetensors
    dtype name, "shape": sizes}), or ztensor.Error (ZT_ERR_INVALID) saying
    what is wrong with it."""
    if not isinstance(record, dict):
        raise Error(ERR_INVALID, f'{what}: a record is a map {{"name", "dtype", "shape"}}, not {record!r:.100}')
    name, dtype, shape = record.get("name"), record.get("dtype"), record.get("shape")
    if not isinstance(name, str) or not isinstance(dtype, str) or dtype not in _ST_DTYPES:
        raise Error(ERR_INVALID, f"{what}: the record needs a name and a safetensors dtype, "
                    f"not {name!r:.100} and {dtype!r:.40}")
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        raise Error(ERR_INVALID, f"{what}: record {name!r}: shape {shape!r:.100} is not a list of sizes")
    if dtype == "F4" and (not shape or shape[-1] % 2):
        raise Error(ERR_INVALID, f"{what}: record {name!r}: F4 {shape} does not fill whole bytes")
    return record


def _checkpoint_tensor(obj, record, raw):
    """One recorded checkpoint tensor (a _checked_record) over its bytes,
    as torch holds that dtype; bytes of another size than the record's
    shape needs raise ztensor.Error (ZT_ERR_INVALID)."""
    dtype = _TORCH_OF_ST.get(record["dtype"])
    if dtype is None:
        raise TypeError(f'{obj!r}: checkpoint tensor {record["name"]!r} is {record["dtype"]}, which '
                        f'this torch ({torch.__version__}) has no type for; load with '
                        f'quantized="dequantize" for its values')
    shape = list(record["shape"])
    if record["dtype"] == "F4":
        shape[-1] //= 2  # torch's float4_e2m1fn_x2 counts pairs
    need = math.prod(shape) * _element_size(dtype)
    if need != len(raw):
        raise Error(ERR_INVALID, f'{obj!r}: checkpoint tensor {record["name"]!r}, {record["dtype"]} '
                    f'{record["shape"]}, needs {need} bytes; its part holds {len(raw)}')
    if not raw:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).reshape(shape)


def _on(t, device):
    """Whether tensor t lives on `device` ("cuda" meaning the current one)."""
    if t.device.type != device.type:
        return False
    if device.type == "cuda" and device.index is None:
        return t.device.index == torch.cuda.current_device()
    return device.index is None or t.device.index == device.index


def _fillable(exact, into, device):
    """name -> the tensor of `into` that object `name` can be written into
    byte for byte: same shape and torch dtype, contiguous, on `device`.
    Only for the CPU and CUDA: other devices load on the CPU, then move."""
    if device.type not in ("cpu", "cuda"):
        return {}
    out = {}
    for name, e in exact.items():
        t = into.get(name)
        if (t is not None and t.dtype == e.dtype and tuple(t.shape) == e.shape and t.is_contiguous()
                and _on(t, device)):
            out[name] = t
    return out


class _Staging(NamedTuple):
    """How tensors reach a device: the copy engine, the ring of host
    staging buffers (count, bytes each) and how many batches are decoded
    ahead of the copies (_staging.load)."""
    engine: Any
    buffers: int = _staging.DEFAULT_BUFFERS
    buffer_bytes: int = _staging.DEFAULT_BUFFER_BYTES
    ahead: int = 1


def _to(t, device):
    return t if device in (None, "cpu") else t.to(device)


def _staging_for(device, buffers, buffer_bytes):
    """The staging ring for a CUDA device, None for any other."""
    if device is None or device == "cpu":
        return None
    device = torch.device(device)
    if device.type != "cuda":
        return None
    engine = _registered.CudaRegistered if _REGISTERED_LOADS else _staging.CudaCopies
    return _Staging(engine(device), buffers, buffer_bytes)


def _load_all(f: "_File", device: Device, staging: Optional[_Staging] = None,
              slices: Optional[Dict[str, Any]] = None,
              into: Optional[Dict[str, torch.Tensor]] = None) -> Dict[str, torch.Tensor]:
    """Every tensor of an open _File (closed after), aliases sharing their
    tensor; `into` as in _File.load."""
    try:
        if slices:
            unknown = sorted(set(slices) - set(f.keys()))
            if unknown:
                raise KeyError(f"slices name objects the file lacks: {unknown}")
        # Checked before anything is loaded: load_model's tensors are filled in place.
        aliases = f.aliases()
        if aliases:
            _check_aliases(aliases, set(f.tensor_names()))
        with _reader.collector_paused():
            out = f.load(f.keys(), device, staging, slices, into)
            for alias, kept in aliases.items():
                if kept in out:
                    out[alias] = out[kept]
            # The plan (a tuple or two per tensor) goes before the collector
            # comes back: its first collection then walks the tensors only.
            f.close()
        return out
    finally:
        f.close()


def _check_aliases(aliases, names):
    """An alias that is the name of a tensor the file loads (`names`) would
    silently replace it: ztensor.Error (ZT_ERR_INVALID), as save_model never
    records one."""
    taken = sorted(alias for alias in aliases if alias in names)
    if taken:
        raise Error(ERR_INVALID, f"file attribute {ALIASES_KEY} names stored tensors as aliases: "
                    f"{taken[:10]}")


def load_file(filename: PathLike, device: Device = "cpu", *, mmap: bool = False, float8: str = "native",
              sparse: bool = False, allow_foreign: bool = False,
              staging_buffers: int = _staging.DEFAULT_BUFFERS,
              staging_bytes: int = _staging.DEFAULT_BUFFER_BYTES,
              slices: Optional[Dict[str, Any]] = None,
              quantized: str = "checkpoint", max_decoded_bytes: int = 0) -> Dict[str, torch.Tensor]:
    """Every tensor of a file, as a dict name -> torch.Tensor on `device`.

    CPU: the tensors are allocated first and filled by one zt_decode_ranges
    on every core (raw slices and zstd frames shared out). mmap=True: raw
    data copy-on-write from the file instead (see the module's doc).
    CUDA: the tensors are allocated on the device and filled through a ring
    of `staging_buffers` pinned host buffers of `staging_bytes` each: one
    buffer is decoded into on every core while the previous one is copied
    on a CUDA stream, so host memory stays the ring's, whatever the model's
    size (raw bytes are read with pread; a zstd file's compressed pages are
    read through its mapping, on every core; mmap is not used). Other
    devices: loaded on the CPU, then moved.

    slices={name: key}: those tensors load as the selection `key` (what
    tensor[key] selects: ints, slices with steps, ...; a tensor-parallel
    rank's share, say (slice(None), slice(r * n, (r + 1) * n))), reading only
    the box that holds it, locally and over HTTP (get_slice's rule); a name
    the file lacks is a KeyError. A selection that is one run of the
    tensor's bytes (whole rows: slice(r * n, (r + 1) * n) of the first
    dimension) loads with the whole tensors, on every core or through the
    staging ring; others (columns, steps) a box a thread, side by side,
    except that to a CUDA device a box with steps of 1 (a rank's
    columns) goes through the staging ring too, a piece a buffer.

    filename may be an http(s) URL (ztensor.File.from_url, the default
    options). Names save_model recorded as aliases come back as the same
    tensor as the name they share storage with. sparse=True: sparse objects as torch
    sparse CSR / COO tensors instead of dense ones. allow_foreign=True:
    also .safetensors, .gguf, .npy, .npz, .onnx and PyTorch checkpoints
    (read without executing their pickle).

    Quantized layers of a Hugging Face checkpoint (one object each, see
    docs/cli.md): quantized="checkpoint" (the default) loads each as the
    checkpoint's own tensors (e.g. qweight, qzeros, scales, g_idx), names,
    dtypes, shapes and bytes as safetensors loads them from the checkpoint,
    for the model's quantized modules; quantized="dequantize" loads its
    values as one float32 tensor under the object's name (<layer>.weight).
    Other quantized and sparse objects load as their values either way.

    max_decoded_bytes: the reader's cap on one component's decoded size
    (0: the library's; ztensor.open's option): a tensor over it raises
    ztensor.Error (ZT_ERR_LIMIT) before it is allocated."""
    return _load_path(filename, device, mmap=mmap, float8=float8, sparse=sparse, allow_foreign=allow_foreign,
                      staging_buffers=staging_buffers, staging_bytes=staging_bytes, slices=slices,
                      quantized=quantized, max_decoded_bytes=max_decoded_bytes)


def _load_path(filename, device, *, into=None, mmap=False, float8="native", sparse=False, allow_foreign=False,
               staging_buffers=_staging.DEFAULT_BUFFERS, staging_bytes=_staging.DEFAULT_BUFFER_BYTES,
               slices=None, quantized="checkpoint", max_decoded_bytes=0):
    """load_file, filling the tensors of `into` in place where they fit."""
    staging = _staging_for(device, staging_buffers, staging_bytes)
    # The file is mapped for the staging ring too. Its raw reads of 64 KiB
    # or more use pread all the same (Source::read_into: no page of them is
    # mapped into the process; peak RSS above the start of a 4.5 GiB cuda
    # load on an H200: 0). zstd frames decode from the mapping on every
    # core; opened copy=True, each ring piece of a zstd tensor decoded its
    # whole component on one thread (H200: 1.16 GB/s to cuda, against
    # 9.3 GB/s for the CPU load). The compressed pages read stay resident
    # (the page cache's, shared) until the file is closed.
    return _load_all(_File(filename, float8=float8, mmap=mmap, sparse=sparse, allow_foreign=allow_foreign,
                           quantized=quantized, max_decoded_bytes=max_decoded_bytes),
                     device, staging, slices, into)


def load(data: bytes, device: Device = "cpu", **kwargs: Any) -> Dict[str, torch.Tensor]:
    """load_file from bytes, read in place (ztensor.File.from_bytes); the
    tensors are copies, so the bytes may go. kwargs: load_file's
    (max_decoded_bytes included) but mmap and slices."""
    kwargs.pop("mmap", None)
    staging = _staging_for(device, kwargs.pop("staging_buffers", _staging.DEFAULT_BUFFERS),
                           kwargs.pop("staging_bytes", _staging.DEFAULT_BUFFER_BYTES))
    return _load_all(_File(None, memory=data, **kwargs), device, staging)


def load_model(model: torch.nn.Module, filename: PathLike, strict: bool = True, device: Device = "cpu",
               **kwargs: Any) -> Tuple[List[str], List[str]]:
    """Loads a file written by save_model (or save_file) into the model.
    Returns (missing, unexpected) key lists; with strict=True either being
    non-empty raises RuntimeError listing them, as load_state_dict does.

    The file's bytes are decoded straight into the model's parameters and
    buffers where name, shape and dtype match and the tensor is contiguous
    on `device` (the CPU, or a CUDA device through the staging ring): no
    second copy of the model is made. Everything else (another dtype or
    device, a quantized object) is loaded apart and handed to
    load_state_dict, which also runs for the tensors filled in place (its
    copy of a tensor onto itself costs nothing), so its checks and hooks
    see every tensor. kwargs: load_file's.

    Not all or nothing: since tensors are filled in place as they are
    decoded, a file that fails part-way (a damaged tensor, one over
    max_decoded_bytes: ztensor.Error) leaves the model partly loaded, some
    tensors new and one possibly half-written (safetensors' load_model
    reads every tensor first). The file's own records (aliases) are checked
    before anything is written. Where a failure must leave the model as it
    was, load_file first and then model.load_state_dict (twice the memory)."""
    with torch.no_grad():  # parameters that require grad are written in place
        targets = model.state_dict(keep_vars=True)
        state = _load_path(filename, device, into=targets, **kwargs)
    in_place = set()
    if _plain_loading(model):
        # load_state_dict's walk costs (modules x keys) string comparisons
        # (H200, 2,032 tensors: 0.45 s, 4x the load itself); for a tensor
        # filled in place it would only copy the tensor onto itself.
        in_place = {k for k, v in state.items() if targets.get(k) is v}
    result = model.load_state_dict({k: v for k, v in state.items() if k not in in_place} if in_place else state,
                                   strict=False)
    missing = [k for k in result.missing_keys if k not in in_place]
    unexpected = list(result.unexpected_keys)
    if strict and (missing or unexpected):
        lines = [f"Error(s) in loading state_dict for {model.__class__.__name__}:"]
        if missing:
            lines.append("    Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ".")
        if unexpected:
            lines.append("    Unexpected key(s) in state_dict: " +
                         ", ".join(f'"{k}"' for k in unexpected) + ".")
        raise RuntimeError("\n".join(lines))
    return missing, unexpected


def _plain_loading(model: torch.nn.Module) -> bool:
    """Whether load_state_dict does nothing to a tensor already in place but
    copy it onto itself: no module loads its own way (BatchNorm, quantized
    modules, extra state) and no load hook is registered, so it need not
    see those tensors."""
    base = torch.nn.Module
    for m in model.modules():
        kind = type(m)
        if (kind._load_from_state_dict is not base._load_from_state_dict
                or kind.get_extra_state is not base.get_extra_state
                or getattr(m, "_load_state_dict_pre_hooks", None)
                or getattr(m, "_load_state_dict_post_hooks", None)):
            return False
    return True


_ALL = slice(None)


class _Slice:
    """get_slice's result: slicing reads only the box."""

    def __init__(self, handle, name):
        self._h = handle
        self._name = name
        # From the file's object summaries (one call for all of them): what
        # a loader that slices every weight pays per tensor.
        s = handle._file.summary(name)
        if s.format != "dense":
            raise Error(8, f'object "{name}" is {s.format}: get_slice reads dense objects')
        self._summary = s

    def get_shape(self) -> List[int]:
        return list(self._summary.shape)

    def get_dtype(self) -> str:
        s = self._summary
        return _ST_NAMES.get((s.dtype, s.type), s.type or s.dtype)

    def __getitem__(self, key: Any) -> torch.Tensor:
        # _File.one: the tensor whole, a run of its bytes (whole rows) or a
        # box of runs (columns) read straight into the new tensor (to a CUDA
        # device, through one staging buffer); the rest (steps to a device,
        # conversions, a selection larger than a staging buffer) as
        # load_file(slices=) reads it.
        f, device = self._h._file, self._h._device
        whole = key is Ellipsis or (type(key) is slice and key == _ALL and self._summary.shape)
        t = f.one(self._name, device, None if whole else key)  # transformers' param[...], a rank's rows
        if t is not None:
            return t
        return f.load([self._name], device, slices={self._name: key})[self._name]


class safe_open:  # noqa: N801 (the name safetensors uses)
    """A file opened for reading a tensor at a time, as safetensors.safe_open:

        with safe_open("m.zt", framework="pt", device="cpu") as f:
            for k in f.keys():
                t = f.get_tensor(k)
            part = f.get_slice("w")[0:2, :, 7]

    kwargs: load_file's reading options (mmap, float8, sparse, allow_foreign,
    quantized, max_decoded_bytes), and copy=True (pread, no mapping).
    """

    def __init__(self, filename: PathLike, framework: str = "pt", device: Device = "cpu", **kwargs: Any):
        if framework not in ("pt", "pytorch", "torch"):
            raise ValueError(f'framework {framework!r}: ztensor.torch gives torch tensors ("pt")')
        self._device = device
        self._file = _File(filename, **kwargs)

    def __enter__(self) -> "safe_open":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._file.close()

    def keys(self) -> List[str]:
        return self._file.tensor_names()

    def metadata(self) -> Optional[Dict[str, Any]]:
        """The file attributes (None when there are none, as safetensors)."""
        return self._file.metadata() or None

    def get_tensor(self, name: str) -> torch.Tensor:
        return self._file.get(name, self._device)

    def get_slice(self, name: str) -> "_Slice":
        return _Slice(self, name)  # a name the file lacks: the reader's error, from summary()
