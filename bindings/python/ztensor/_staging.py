"""Loading tensors to a device through a ring of host staging buffers.

The tensors' decoded bytes are cut into pieces that fill one staging buffer
at a time (small tensors batched together, large ones split across
buffers). A batch is decoded into its buffer on every core by one
zt_decode_ranges call, then copied to the device asynchronously; the next
batch is decoded into the next buffer while that copy runs, and a buffer is
refilled only once its copy is known to be done. Host memory is the ring
(`buffers` x `buffer_bytes`), whatever the model's size.

The copy engine is the only device-specific part (CudaCopies: buffer(n),
start(), copy(dst, src), optionally copy_many(dsts, srcs), record() -> token,
wait(token), finish(); buffer(n) is also called on threads of the ring's
own, so that buffers are pinned while the first batches move, and
wait(token) on the worker that decodes, one ahead, while this thread
issues copies and records tokens); tests drive
the same pipeline with a CPU engine that performs copies late, so that a
buffer refilled too early shows as wrong bytes.
"""

import math
import queue
from operator import attrgetter
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import torch

from . import cpu_count
# Pieces start on ALIGN boundaries in a staging buffer (fast memcpy, and
# DMA engines prefer aligned sources), as in blocks (_block_places): a
# buffer's run of carved tensors is then one copy.
from ._block_places import ALIGN

DEFAULT_BUFFERS = 2
# 2 x 64 MiB: on an H200 (2026-12-04, fresh processes, 4.8 GB bf16 model) a
# first load took 296 - 333 ms against 525 - 541 with 2 x 256 MiB (pinning
# the ring is most of a first load's extra time), and hot loads the same
# (median 184 against 186 ms); 4 x 64, 4 x 32 and 3 x 128 MiB were slower
# hot (206, 212, 194 ms). Host memory: 128 MiB.
DEFAULT_BUFFER_BYTES = 64 << 20
_FOREACH_COPY = getattr(torch, "_foreach_copy_", None)


class Box:
    """A selection of an object's data that is a box of it and not one run
    of its bytes (a tensor-parallel rank's columns). A piece of its bytes,
    as the ring cuts them (at multiples of ALIGN, so at whole elements), is
    read as the boxes that hold it, at most two a dimension
    (zt_dense_slice: raw data copied out of the mapping on every core, or
    read in shares of its runs; frames decoded in shares: one call a box,
    where a byte range a run cost ~0.7 us, a syscall each)."""

    __slots__ = ("begin", "extents", "size")

    def __init__(self, begin: Sequence[int], end: Sequence[int], size: int):
        """The box [begin, end) of an object whose elements are `size`
        bytes (a divisor of ALIGN)."""
        self.begin = tuple(begin)
        self.extents = tuple(e - b for b, e in zip(begin, end))
        self.size = size

    def parts(self, offset: int, n: int) -> List[Tuple[tuple, tuple, int, int]]:
        """Bytes [offset, offset + n) of the box (whole elements) as boxes:
        (begin, end) in the object's dimensions, their place in the piece
        and their bytes, in order."""
        out, at = [], 0
        for lo, hi in _grid_boxes(self.extents, offset // self.size, (offset + n) // self.size):
            nbytes = math.prod(h - lo_ for lo_, h in zip(lo, hi)) * self.size
            out.append((tuple(b + x for b, x in zip(self.begin, lo)), tuple(b + x for b, x in zip(self.begin, hi)),
                        at, nbytes))
            at += nbytes
        return out


def _grid_boxes(extents: Sequence[int], a: int, b: int) -> List[Tuple[tuple, tuple]]:
    """Elements [a, b) of a row-major grid of `extents` as boxes (lo, hi
    per dimension), in order: at most two a dimension."""
    if a >= b:
        return []
    if not extents:
        return [((), ())]
    inner = math.prod(extents[1:])
    rest = tuple(extents[1:])
    i, j = a // inner, (b - 1) // inner
    if i == j:
        return [((i,) + lo, (i + 1,) + hi) for lo, hi in _grid_boxes(rest, a - i * inner, b - i * inner)]
    out = []
    if a % inner:
        out += [((i,) + lo, (i + 1,) + hi) for lo, hi in _grid_boxes(rest, a % inner, inner)]
        i += 1
    stop = j + 1 if b % inner == 0 else j
    if stop > i:
        out.append(((i,) + (0,) * len(rest), (stop,) + rest))
    if b % inner:
        out += [((j,) + lo, (j + 1,) + hi) for lo, hi in _grid_boxes(rest, 0, b - j * inner)]
    return out


class Item(NamedTuple):
    """One tensor to load: which object, how many decoded bytes from which
    decoded byte `first` (a rank's share of a tensor: one run of it), and
    the destination tensor (contiguous, on the device). `block`: the flat
    uint8 tensor whose bytes dst's are, from `at` (_blocks.Blocks): pieces
    of tensors that lie in one block as they lie in a staging buffer go to
    the device in one copy. `box`: a Box where the tensor is a box of the
    object's data that is not one run (first is then unused)."""
    index: int
    nbytes: int
    dst: torch.Tensor
    first: int = 0
    block: Optional[torch.Tensor] = None
    at: int = 0
    box: Optional[Box] = None


class Batch(NamedTuple):
    """The pieces that fill one buffer, a column each (numpy int64 arrays,
    one element a piece, in order): bytes [offset, offset + nbytes) of item
    `item`, at `at` in the buffer."""
    item: np.ndarray
    offset: np.ndarray
    nbytes: np.ndarray
    at: np.ndarray


def plan(sizes: Sequence[int], buffer_bytes: int) -> List[Batch]:
    """Batches of pieces, each batch filling at most one buffer of
    `buffer_bytes` (of which a multiple of ALIGN is used): items in order,
    packed at aligned places, an item that does not fit the rest of a
    buffer split at its end; an empty item has no piece.

    The items lie in one stream of buffers, each at the aligned place after
    the one before, so every piece is found at once with numpy (a loop a
    piece cost 1.7 us a tensor on the 2-core VM: 34 ms of a load of 20,000
    small tensors)."""
    if buffer_bytes < ALIGN:
        raise ValueError(f"staging buffers of {buffer_bytes} bytes: at least {ALIGN} are needed")
    size = buffer_bytes // ALIGN * ALIGN  # so that a buffer's end is an aligned place too
    sizes = np.asarray(sizes, dtype=np.int64).reshape(-1)
    if not sizes.size:
        return []
    spans = (sizes + ALIGN - 1) // ALIGN * ALIGN
    items = np.flatnonzero(sizes)
    begins = (np.cumsum(spans) - spans)[items]  # each item's first byte in the stream
    if int(spans.sum()) <= size:  # all in one buffer, each item whole (a get_tensor's: ~40 -> ~10 us)
        return [Batch(items, np.zeros_like(items), sizes[items], begins)] if items.size else []
    ends = begins + sizes[items]
    first = begins // size
    count = (ends - 1) // size - first + 1  # the buffers an item's pieces lie in
    total = int(count.sum())
    if not total:
        return []
    run = np.repeat(np.cumsum(count) - count, count)
    buffer = np.repeat(first, count) + np.arange(total) - run
    begin, end = np.repeat(begins, count), np.repeat(ends, count)
    lo = np.maximum(begin, buffer * size)
    hi = np.minimum(end, (buffer + 1) * size)
    columns = (np.repeat(items, count), lo - begin, hi - lo, lo - buffer * size)
    cuts = np.flatnonzero(np.diff(buffer)) + 1
    return [Batch(*parts) for parts in zip(*(np.split(c, cuts) for c in columns))]


def _bytes_of(t: torch.Tensor) -> torch.Tensor:
    """A contiguous tensor's storage as a flat uint8 tensor (a view)."""
    return t.reshape(-1).view(torch.uint8)


class CudaCopies:
    """Asynchronous host-to-device copies on a CUDA stream of their own,
    from pinned buffers (torch's pinned allocator, so they are reused
    across loads)."""

    def __init__(self, device: torch.device):
        self.device = device
        self.stream = torch.cuda.Stream(device=device)

    def start(self) -> None:
        # The destination tensors were allocated on the caller's stream,
        # whose caching allocator may hand out memory that work queued there
        # still uses: our copies start after that work.
        self.stream.wait_stream(torch.cuda.current_stream(self.device))

    def buffer(self, nbytes: int) -> torch.Tensor:
        return torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)

    def copy(self, dst: torch.Tensor, src: torch.Tensor) -> None:
        with torch.cuda.stream(self.stream):
            dst.copy_(src, non_blocking=True)

    def copy_many(self, dsts: List[torch.Tensor], srcs: List[torch.Tensor]) -> None:
        # One call for a batch's copies where torch has it (>= 2.1): the loop
        # over small tensors runs in C++, not here.
        with torch.cuda.stream(self.stream):
            if _FOREACH_COPY is not None:
                _FOREACH_COPY(dsts, srcs, non_blocking=True)
            else:
                for d, s in zip(dsts, srcs):
                    d.copy_(s, non_blocking=True)

    def record(self):
        event = torch.cuda.Event()
        event.record(self.stream)
        return event

    def wait(self, token) -> None:
        token.synchronize()

    def finish(self) -> None:
        self.stream.synchronize()
        # The tensors were written on our stream: the caller's stream must
        # not reuse or read them before those writes (and torch's allocator
        # must know they were used there).
        torch.cuda.current_stream(self.device).wait_stream(self.stream)


def run_copies(parts, blocks: Sequence[Optional[torch.Tensor]], places: Sequence[int],
               dsts: Sequence[Optional[torch.Tensor]], source: torch.Tensor):
    """([destination views], [source views]) of copies out of `source` (a
    flat uint8 tensor), `parts` being (item, offset, n, at): bytes [offset,
    offset + n) of item `item` are source[at:at + n]. An item with a block
    (blocks[item], its bytes from places[item]) goes there, and a run of
    such parts that lie in one block as in the source (the same distance
    apart; the padding between them goes along: it is no tensor's) is one
    copy; others go to dsts[item] (flat uint8)."""
    dst, src = [], []
    run = None  # [block, its first byte, the source's, the block's end]
    for item, offset, n, at in parts:
        block = blocks[item]
        if block is not None:
            start = places[item] + offset
            if run is not None and run[0] is block and start - run[1] == at - run[2]:
                run[3] = start + n
                continue
            if run is not None:
                dst.append(run[0][run[1]:run[3]])
                src.append(source[run[2]:run[2] + run[3] - run[1]])
            run = [block, start, at, start + n]
            continue
        dst.append(dsts[item][offset:offset + n])
        src.append(source[at:at + n])
    if run is not None:
        dst.append(run[0][run[1]:run[3]])
        src.append(source[run[2]:run[2] + run[3] - run[1]])
    return dst, src


Decode = Callable[[np.ndarray, str, np.ndarray, np.ndarray, np.ndarray], None]


SliceInto = Callable[[int, tuple, tuple, int, int], None]


def load(decode: Decode, items: Sequence[Item], engine, buffers: int = DEFAULT_BUFFERS,
         buffer_bytes: int = DEFAULT_BUFFER_BYTES, ahead: int = 1,
         idle: Optional[Callable[[Future], None]] = None,
         slice_into: Optional[SliceInto] = None) -> None:
    """Fills every item's dst with its decoded bytes. `decode(objects,
    role, offsets, addresses, lengths)` takes a batch's requests a column at
    a time (numpy int64 arrays; role "data") and writes them
    (File._decode_columns); `engine` copies buffers to the device.

    Batches are decoded on worker threads (the C call releases the GIL)
    while this thread issues the copies of those decoded before them. With
    ahead=1 (the default) one worker decodes them back to back, each as
    soon as its buffer's copies are done: the cores never wait for Python's
    per-batch work. With ahead=2 or more (3 buffers or more), that many
    batches are decoded at once, so that one decode call's last slices
    overlap the next call's first ones (the library's helper threads serve
    both). ahead=0: decoded on this thread, one after the other (the
    benchmark's comparison). At most buffers - 1 ahead.

    idle(future): called on this thread before it waits for a batch
    decoded on a worker, with that worker's Future: work of the caller's
    that runs while the cores decode (it should return soon after the
    Future is done). Items whose dst is in a block need no dst tensor.

    slice_into(object, begin, end, address, nbytes) writes the box [begin,
    end) of an object's data to address (File._slice_into): given where
    items have a Box (None: none has)."""
    if buffers < 1:
        raise ValueError("at least one staging buffer is needed")
    if ahead < 0:
        raise ValueError("ahead is 0 or more")
    items = [it for it in items if it.nbytes]
    if not items:
        return
    batches = plan([it.nbytes for it in items], buffer_bytes)
    # The ring is never larger than the data needs. Pinning a buffer is
    # most of a first load's extra time (H200: ~190 ms for 2 x 256 MiB, the
    # decode of one 256 MiB batch 6 ms): the first buffer is taken here, the
    # others on threads of their own while the first batches are decoded and
    # copied.
    largest = max(int((b.at + b.nbytes).max()) for b in batches)
    slots = min(buffers, len(batches))
    allocator = ThreadPoolExecutor(slots - 1, thread_name_prefix="zt-staging-buffer") if slots > 1 else None
    later = [allocator.submit(engine.buffer, largest) for _ in range(slots - 1)] if allocator else []
    try:
        first = engine.buffer(largest)
    except BaseException:
        _shut(allocator, later)
        raise
    ring: List[Any] = [first] + later  # a Future until its buffer is there

    def buffer(slot: int) -> torch.Tensor:
        b = ring[slot]
        if isinstance(b, Future):
            b = ring[slot] = b.result()
        return b

    # Per item: its object and first decoded byte, as arrays the batches
    # index (fill), its block and place there, as lists (copies).
    # (map and attrgetter: a loop in C.)
    objects = np.array(list(map(attrgetter("index"), items)), dtype=np.int64)
    firsts = np.array(list(map(attrgetter("first"), items)), dtype=np.int64)
    blocks, places = list(map(attrgetter("block"), items)), list(map(attrgetter("at"), items))
    dsts = [_bytes_of(it.dst) if it.block is None else None for it in items]
    # Items with a Box come with slice_into (a load of whole tensors does
    # not look for any: a pass over 20,000 items is ~0.6 ms).
    boxes = list(map(attrgetter("box"), items)) if slice_into is not None else []
    boxed = np.array([b is not None for b in boxes]) if boxes.count(None) != len(boxes) else None
    # A batch's boxes are read side by side (its threads start as calls come).
    slicer = ThreadPoolExecutor(cpu_count(), thread_name_prefix="zt-staging-box") if boxed is not None else None

    def copies(batch: Batch, buf: torch.Tensor):
        """The (destination, source) views of a batch's copies (run_copies;
        a loop over the batch's columns as lists: numpy's fixed cost a call
        is more than most batches' (one or two pieces) loop)."""
        return run_copies(zip(*(column.tolist() for column in batch)), blocks, places, dsts, buf)

    copy_many = getattr(engine, "copy_many", None)

    def issue(k: int) -> Any:
        """Issues batch k's copies out of its buffer; their token."""
        dst, src = copies(batches[k], buffer(k % len(ring)))
        if copy_many is not None:
            copy_many(dst, src)
        else:
            for d, s_ in zip(dst, src):
                engine.copy(d, s_)
        return engine.record()

    def fill(k: int) -> None:
        b = batches[k]
        base = buffer(k % len(ring)).data_ptr()
        if boxed is None or not boxed[b.item].any():
            decode(objects[b.item], "data", firsts[b.item] + b.offset, base + b.at, b.nbytes)
            return
        fill_with_boxes(b, boxed[b.item], base)

    def fill_with_boxes(b: Batch, inside: np.ndarray, base: int) -> None:
        """A batch with pieces of boxes: the other pieces in one decode
        call, then the boxes that hold each box's piece."""
        plain = ~inside
        if plain.any():
            item = b.item[plain]
            decode(objects[item], "data", firsts[item] + b.offset[plain], base + b.at[plain], b.nbytes[plain])
        calls = [(int(objects[item]), lo, hi, base + at + place, nbytes)
                 for item, offset, n, at in zip(*(column[inside].tolist() for column in b))
                 for lo, hi, place, nbytes in boxes[item].parts(offset, n)]
        if len(calls) == 1:
            slice_into(*calls[0])
            return
        # Side by side (the calls release the GIL): a small box is read on
        # one thread, and a batch may hold hundreds (a rank's columns of a
        # model's norms); a large one's call uses every core itself.
        done = [slicer.submit(slice_into, *call) for call in calls]
        futures_wait(done)  # all of them, before a failure is raised: they write the buffer
        for f in done:
            f.result()

    # A batch is decoded ahead into a buffer whose last copies were issued
    # already (batch j's buffer was batch j - len(ring)'s): so at most
    # len(ring) - 1 ahead.
    depth = max(0, min(ahead, len(ring) - 1, len(batches) - 1))
    try:
        engine.start()
        if depth == 1:
            _chained(fill, issue, len(batches), len(ring), engine, idle)
        else:
            _pooled(fill, issue, len(batches), len(ring), depth, engine, idle)
    finally:
        _shut(allocator, later)
        if slicer is not None:
            slicer.shutdown(wait=True)
        engine.finish()


def load_one(decode_one: Callable[[int, int], None], dst: torch.Tensor, nbytes: int, engine) -> None:
    """One tensor of `nbytes` that fits one staging buffer to the device,
    without the ring's machinery (~100 us of Python for one tensor on the
    2-core VM, a loop of get_tensor to a device pays it a tensor):
    decode_one(address, nbytes) fills a buffer of the engine's, which is
    copied to dst (contiguous, nbytes long) once the copy is done."""
    if not nbytes:
        return
    buf = engine.buffer(nbytes)
    decode_one(buf.data_ptr(), nbytes)
    engine.start()
    try:
        engine.copy(_bytes_of(dst), buf[:nbytes])
    finally:
        engine.finish()


_STOP = object()


def _chained(fill: Callable[[int], None], issue: Callable[[int], Any], n: int, slots: int, engine,
             idle: Optional[Callable[[Future], None]]) -> None:
    """Batches 0 .. n - 1 through a ring of `slots` buffers, one decoded
    ahead: a worker decodes them back to back, each once the copies out of
    its buffer are done, while this thread issues the copies of each batch
    decoded. No handoff between threads lies between one decode and the
    next (waking this thread, then the worker, cost ~0.11 ms a batch on the
    2-core VM: with a copy engine that does nothing, gaps between decodes
    of 0.15 - 0.23 ms against 0.04 - 0.06 here and 0.06 - 0.08 with no
    worker at all)."""
    issued: "queue.SimpleQueue[Any]" = queue.SimpleQueue()  # the batches' copy tokens, in order
    decoded: List[Future] = [Future() for _ in range(n)]
    stopping: List[bool] = []

    def decoder() -> None:
        for k in range(n):
            try:
                if k >= slots:  # batch k takes batch k - slots's buffer
                    token = issued.get()
                    if token is _STOP:
                        return
                    engine.wait(token)
                if stopping:
                    return
                fill(k)
            except BaseException as e:  # the batch's waiter raises it
                decoded[k].set_exception(e)
                return
            decoded[k].set_result(None)

    worker = ThreadPoolExecutor(1, thread_name_prefix="zt-staging")
    try:
        worker.submit(decoder)
        for k in range(n):
            if idle is not None:
                idle(decoded[k])
            decoded[k].result()  # batch k is in its buffer (or its error raised)
            issued.put(issue(k))
    finally:
        # No decode may still write a buffer once we return (an error
        # included): the worker stops before its next batch.
        stopping.append(True)
        issued.put(_STOP)
        worker.shutdown(wait=True)


def _pooled(fill: Callable[[int], None], issue: Callable[[int], Any], n: int, slots: int, depth: int, engine,
            idle: Optional[Callable[[Future], None]]) -> None:
    """Batches 0 .. n - 1 through a ring of `slots` buffers: with depth 0
    decoded on this thread, each after the copies of the one before were
    issued; else `depth` batches at once on workers, submitted as each
    batch's copies are issued."""
    pending: List[Any] = [None] * slots  # the token of each buffer's last copies

    def free(k: int) -> None:
        """Batch k's buffer once the copies out of it are done."""
        if pending[k % slots] is not None:
            engine.wait(pending[k % slots])
            pending[k % slots] = None

    worker = ThreadPoolExecutor(depth, thread_name_prefix="zt-staging") if depth else None
    decoding: Dict[int, Future] = {}  # batch -> the worker decoding it
    next_up = 0  # the first batch neither decoded nor being decoded
    try:
        for k in range(n):
            done = decoding.pop(k, None)
            if done is not None:
                if idle is not None:
                    idle(done)
                done.result()  # batch k is in its buffer (or its error raised)
            else:
                free(k)
                fill(k)
                next_up = k + 1
            pending[k % slots] = issue(k)
            # Batches k + 1 .. k + depth - 1 are being decoded already.
            while worker is not None and next_up <= min(k + depth, n - 1):
                free(next_up)
                decoding[next_up] = worker.submit(fill, next_up)
                next_up += 1
    finally:
        # No decode may still write a buffer, and no copy still read one,
        # once we return (an error included).
        if decoding:
            futures_wait(list(decoding.values()))
        if worker is not None:
            worker.shutdown(wait=True)


def _shut(allocator: Optional[ThreadPoolExecutor], buffers: List[Future]) -> None:
    """Waits for the buffers still being allocated (their errors are the
    caller's to see through the batches that use them)."""
    if allocator is not None:
        futures_wait(buffers)
        allocator.shutdown(wait=True)
