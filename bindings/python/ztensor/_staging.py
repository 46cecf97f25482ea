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
own, so that buffers are pinned while the first batches move); tests drive
the same pipeline with a CPU engine that performs copies late, so that a
buffer refilled too early shows as wrong bytes.
"""

import queue
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence

import torch

DEFAULT_BUFFERS = 2
# 2 x 64 MiB: on an H200 (2026-12-04, fresh processes, 4.8 GB bf16 model) a
# first load took 296 - 333 ms against 525 - 541 with 2 x 256 MiB (pinning
# the ring is most of a first load's extra time), and hot loads the same
# (median 184 against 186 ms); 4 x 64, 4 x 32 and 3 x 128 MiB were slower
# hot (206, 212, 194 ms). Host memory: 128 MiB.
DEFAULT_BUFFER_BYTES = 64 << 20
# Pieces start on this boundary in a staging buffer (fast memcpy, and DMA
# engines prefer aligned sources). Device blocks (_blocks) lay tensors out
# on the same boundary: a buffer's run of them is then one copy.
ALIGN = 64


def aligned(n: int) -> int:
    """n rounded up to ALIGN."""
    return (n + ALIGN - 1) // ALIGN * ALIGN
_FOREACH_COPY = getattr(torch, "_foreach_copy_", None)


class Item(NamedTuple):
    """One tensor to load: which object, how many decoded bytes from which
    decoded byte `first` (a rank's share of a tensor: one run of it), and
    the destination tensor (contiguous, on the device). `block`: the flat
    uint8 tensor whose bytes dst's are, from `at` (_blocks.Blocks): pieces
    of tensors that lie in one block as they lie in a staging buffer go to
    the device in one copy."""
    index: int
    nbytes: int
    dst: torch.Tensor
    first: int = 0
    block: Optional[torch.Tensor] = None
    at: int = 0


class Piece(NamedTuple):
    """Bytes [offset, offset + nbytes) of item `item`, at `at` in a buffer."""
    item: int
    offset: int
    nbytes: int
    at: int


def plan(sizes: Sequence[int], buffer_bytes: int) -> List[List[Piece]]:
    """Batches of pieces, each batch filling at most one buffer of
    `buffer_bytes`: items in order, packed at aligned places, an item that
    does not fit the rest of a buffer split at its end."""
    if buffer_bytes < ALIGN:
        raise ValueError(f"staging buffers of {buffer_bytes} bytes: at least {ALIGN} are needed")
    batches: List[List[Piece]] = []
    batch: List[Piece] = []
    at = 0
    for k, size in enumerate(sizes):
        offset = 0
        while offset < size:
            if at >= buffer_bytes:
                batches.append(batch)
                batch, at = [], 0
            n = min(size - offset, buffer_bytes - at)
            batch.append(Piece(k, offset, n, at))
            offset += n
            at = aligned(at + n)
    if batch:
        batches.append(batch)
    return batches


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


Decode = Callable[[list], None]


def load(decode: Decode, items: Sequence[Item], engine, buffers: int = DEFAULT_BUFFERS,
         buffer_bytes: int = DEFAULT_BUFFER_BYTES, ahead: int = 1,
         idle: Optional[Callable[[Future], None]] = None) -> None:
    """Fills every item's dst with its decoded bytes. `decode(parts)` takes
    (object index, role, offset, address, nbytes) tuples and writes them
    (File._decode_ranges); `engine` copies buffers to the device.

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
    Future is done). Items whose dst is in a block need no dst tensor."""
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
    largest = max(p.at + p.nbytes for b in batches for p in b)
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

    dsts = [_bytes_of(it.dst) if it.block is None else None for it in items]

    def copies(batch: List[Piece], buf: torch.Tensor):
        """The (destination, source) views of a batch's copies: one a piece,
        or one a run of pieces that lie back to back in one block as in the
        buffer (the padding between them goes along: it is no tensor's)."""
        dst, src = [], []
        run = None  # [block, its first byte, the buffer's, the block's end]
        for p in batch:
            it = items[p.item]
            if it.block is not None:
                start = it.at + p.offset
                if run is not None and run[0] is it.block and start - run[1] == p.at - run[2]:
                    run[3] = start + p.nbytes
                    continue
                if run is not None:
                    dst.append(run[0][run[1]:run[3]])
                    src.append(buf[run[2]:run[2] + run[3] - run[1]])
                run = [it.block, start, p.at, start + p.nbytes]
                continue
            dst.append(dsts[p.item][p.offset:p.offset + p.nbytes])
            src.append(buf[p.at:p.at + p.nbytes])
        if run is not None:
            dst.append(run[0][run[1]:run[3]])
            src.append(buf[run[2]:run[2] + run[3] - run[1]])
        return dst, src

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
        base = buffer(k % len(ring)).data_ptr()
        decode([(items[p.item].index, "data", items[p.item].first + p.offset, base + p.at, p.nbytes)
                for p in batches[k]])

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
    of 0.16 ms against 0.04 here and 0.05 with no worker at all)."""
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
