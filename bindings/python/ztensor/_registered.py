"""Loading raw tensors to a device from the file's own pages, pinned where
they lie.

The staging ring (_staging) moves every byte through host memory three
times: the page cache read, a pinned buffer written, that buffer read by
the copy engine. On an H200 its decode ran at 43 - 45 GB/s against a pinned
copy's 55 (BENCHMARKS.md, session 60), so the ring cannot reach the
issue's 0.8 of the pinned floor by much. Here the file's mapping is pinned
a chunk at a time (cudaHostRegister, read-only), on threads, ahead of the
copies, and each tensor is copied to the device from where its bytes lie:
one pass over host memory. A chunk is unpinned once its copies are done,
so at most `ahead` + 2 chunks are pinned at once, whatever the model's size.

Off by default (ztensor.torch._REGISTERED_LOADS) until a lent GPU has
measured it against the ring (bench row Gpu_LoadFileRegistered;
bench/gpu_register.py measures the mechanism alone: issue #41 saw 0.64 s to
register 4.8 GB in one call). Only raw bytes of the file the library
mapped qualify; the rest of a load goes through the ring.

The engine is the only device-specific part (CudaRegistered: start(),
register(address, nbytes), unregister(address), copy(dst, src), record()
-> token, wait(token), finish()); register and unregister are called on
threads of this module's own. Tests drive the same pipeline with a CPU
engine that performs copies late and checks that no copy reads a chunk that
is not registered.
"""

import mmap
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from typing import Any, List, NamedTuple, Optional, Sequence

import numpy as np
import torch

from . import _staging

# A chunk of the mapping pinned at a time.
CHUNK_BYTES = 64 << 20
# Chunks registered ahead of the one whose copies are issued.
AHEAD = 4
# Threads that register chunks.
THREADS = 4
# cudaHostRegisterReadOnly (CUDA 11.1+): the pages are only read.
_REGISTER_READ_ONLY = 0x08


class Piece(NamedTuple):
    """One tensor's raw bytes in the file: [offset, offset + nbytes) of the
    mapping go to dst (a flat uint8 tensor on the device, nbytes long), or,
    where dst is None, to block[at:at + nbytes] (_blocks: runs of tensors
    that lie in the file as in their block go over in one copy)."""
    offset: int
    nbytes: int
    dst: Optional[torch.Tensor]
    block: Optional[torch.Tensor] = None
    at: int = 0


class Chunk(NamedTuple):
    """Pages [start, end) of the mapping (page-aligned), and the copies out
    of them: (piece index, first byte of the piece, bytes)."""
    start: int
    end: int
    parts: List[tuple]


def plan(pieces: Sequence[Piece], chunk_bytes: int) -> List[Chunk]:
    """Chunks of at most chunk_bytes (whole pages) covering every piece's
    bytes in file order, a piece that crosses a chunk's end split there;
    pages no piece lies in are not pinned (a chunk starts at the page of
    the next byte wanted). A chunk ends on a page boundary (the mapping
    holds the file's last page whole). Pieces must not overlap."""
    page = mmap.PAGESIZE
    step = max(page, chunk_bytes // page * page)
    order = sorted(range(len(pieces)), key=lambda k: pieces[k].offset)
    chunks: List[Chunk] = []
    current: Optional[Chunk] = None
    for k in order:
        offset, n = pieces[k].offset, pieces[k].nbytes
        done = 0
        while done < n:
            at = offset + done
            if current is None or at >= current.end:
                start = at // page * page
                current = Chunk(start, start + step, [])
                chunks.append(current)
            take = min(n - done, current.end - at)
            current.parts.append((k, done, take))
            done += take
    # A chunk's pages end at the page of its last byte wanted (the next
    # chunk starts at or after its untrimmed end: none overlap, as
    # registrations must not).
    out = []
    for c in chunks:
        last = max(pieces[k].offset + first + n for k, first, n in c.parts)
        out.append(Chunk(c.start, min(c.end, (last + page - 1) // page * page), c.parts))
    return out


class CudaRegistered(_staging.CudaCopies):
    """CudaCopies from pages registered with CUDA where they lie."""

    def __init__(self, device: torch.device):
        super().__init__(device)
        self.cudart = torch.cuda.cudart()

    def register(self, address: int, nbytes: int) -> None:
        err = self.cudart.cudaHostRegister(address, nbytes, _REGISTER_READ_ONLY)
        if int(err) != 0:
            raise RuntimeError(f"cudaHostRegister of {nbytes} bytes: cudaError {int(err)}")

    def unregister(self, address: int) -> None:
        err = self.cudart.cudaHostUnregister(address)
        if int(err) != 0:
            raise RuntimeError(f"cudaHostUnregister: cudaError {int(err)}")


def load(whole: np.ndarray, pieces: Sequence[Piece], engine, chunk_bytes: Optional[int] = None,
         ahead: Optional[int] = None, threads: Optional[int] = None) -> None:
    """Copies every piece from `whole` (the file's mapping, a uint8 array)
    to its destination: the chunks registered on `threads` threads, at most
    `ahead` beyond the one being copied; a chunk's copies issued once it is
    registered; it is unregistered on a thread of its own once they are
    done. Every chunk registered is unregistered when this returns, an
    error included (a registration's error is raised here: the caller then
    loads the pieces another way). None: this module's CHUNK_BYTES, AHEAD,
    THREADS."""
    chunk_bytes = CHUNK_BYTES if chunk_bytes is None else chunk_bytes
    ahead = AHEAD if ahead is None else ahead
    threads = THREADS if threads is None else threads
    pieces = [p for p in pieces if p.nbytes]
    if not pieces:
        return
    chunks = plan(pieces, chunk_bytes)
    base = whole.ctypes.data
    host = torch.from_numpy(whole) if whole.flags.writeable else _read_only_tensor(whole)
    blocks = [p.block for p in pieces]
    places = [p.at for p in pieces]
    dsts = [p.dst for p in pieces]
    registering = ThreadPoolExecutor(max(1, threads), thread_name_prefix="zt-register")
    releasing = ThreadPoolExecutor(1, thread_name_prefix="zt-unregister")
    registered: List[Optional[Future]] = [None] * len(chunks)
    released: List[Optional[Future]] = [None] * len(chunks)

    def release(k: int, token: Any) -> None:
        engine.wait(token)
        engine.unregister(base + chunks[k].start)

    next_up = 0
    try:
        engine.start()
        for k, chunk in enumerate(chunks):
            while next_up < len(chunks) and next_up <= k + ahead:
                old = next_up - ahead - 2  # pinned at most ahead + 2 chunks: wait for this one's release
                if old >= 0 and released[old] is not None:
                    released[old].result()
                c = chunks[next_up]
                registered[next_up] = registering.submit(engine.register, base + c.start, c.end - c.start)
                next_up += 1
            registered[k].result()
            parts = ((k, first, n, pieces[k].offset + first) for k, first, n in chunk.parts)
            for dst, src in zip(*_staging.run_copies(parts, blocks, places, dsts, host)):
                engine.copy(dst, src)
            released[k] = releasing.submit(release, k, engine.record())
    finally:
        # Every registration finished, and every chunk registered is
        # unregistered (its copies done first), before we return.
        futures_wait([f for f in registered if f is not None])
        for k, f in enumerate(registered):
            if f is not None and released[k] is None and f.exception() is None:
                released[k] = releasing.submit(engine.unregister, base + chunks[k].start)
        futures_wait([f for f in released if f is not None])
        registering.shutdown(wait=True)
        releasing.shutdown(wait=True)
        engine.finish()
    for f in released:
        if f is not None:
            f.result()


def _read_only_tensor(whole: np.ndarray) -> torch.Tensor:
    """A uint8 tensor over a read-only array (torch warns that it cannot be
    written; nothing here writes it)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.from_numpy(whole)
