"""Where a load's small tensors or arrays go in shared blocks of memory, and
the blocks' huge pages.

A load allocates everything before filling it all at once. Allocated one
by one, a model's small tensors (norms, biases, a small model's every
weight) each cost an allocator call (an mmap of its own from 128 KiB on,
in glibc) and, when filled, a page fault per 4 KiB: on the 2-core VM a
fresh process's load of 4,096 x 64 KiB spent more time faulting than
reading (BENCHMARKS.md). Carved out of blocks of up to BLOCK_BYTES, they
cost one allocation a block and, on the CPU, one fault per 2 MiB (the
blocks are advised for huge pages: BLOCK_HUGE_PAGES).

`Places` is the placement, whatever the memory: ztensor.torch's blocks of
tensors (_blocks.Blocks, CPU or device) and File.decode_many's blocks of
numpy arrays (ArrayBlocks) are both placed by it. numpy only: this module
must not import torch (the numpy binding works without it).
"""

import ctypes
import sys
from typing import Callable, Optional, Tuple

import numpy as np

# Pieces start on this boundary in a block (and in a staging buffer: fast
# memcpy, and DMA engines prefer aligned sources). Device blocks lay
# tensors out as the staging ring lays them out: a buffer's run of them is
# then one copy.
ALIGN = 64


def aligned(n: int) -> int:
    """n rounded up to ALIGN."""
    return (n + ALIGN - 1) // ALIGN * ALIGN


# Pieces of fewer bytes than this are carved out of blocks; larger ones are
# allocated on their own (from 4 MiB each gets huge pages of its own: numpy
# advises its arrays from 4 MiB, and ztensor.torch its tensors).
PACK_BELOW = 4 << 20
# On the CPU pieces from this size are carved out; smaller ones come from
# the C heap, where a tensor costs less Python time than a carving (~1.2
# against ~1.8 us) and its few bytes few page faults. From 4 KiB a carved
# piece's pages are a block's huge ones: in fresh processes on the 2-core
# VM (2026-12-06, medians of 5 - 10, page cache empty or full) a torch load
# of 32,768 x 4 KiB took 136 against 166 ms allocated one by one, 16,384 x
# 16 KiB 102 against 130, 4,096 x 64 KiB 51 against 84 (the 2-thread pread
# floor into one fresh buffer: 66 - 76), 20,000 x 1 KiB carved 80 against
# 77 (so not carved); File.decode_many of 4,096 x 64 KiB 72 -> 41 ms,
# 16,384 x 16 KiB 107 -> 76, 32,768 x 4 KiB 128 -> 105, the 1.1 GiB model
# 157 -> 143. What it costs: a torch loop of loads and frees in one
# process, where the heap hands the last load's memory back already
# mapped, 36 -> 45 ms for 4,096 x 64 KiB (decode_many's loop: 43 - 79 ->
# 38 ms, faster). Before, only pieces from 128 KiB were carved (glibc's
# own mmap a piece from there on): the 2,000 x 256 KiB of the 4.8 GB model
# made its CPU load 1.07x faster on an H200 (214.5 against 229.7 ms). On a
# CUDA device every small tensor is carved (ztensor.torch): one allocation
# instead of many, and one copy a run of them.
CPU_PACK_FROM = 4 << 10
# Whether CPU blocks of 2 MiB or more are advised for transparent huge
# pages (one page fault per 2 MiB instead of 512). Session 66 (2026-12-05)
# saw huge-page blocks fill 1.3 - 2.7x slower in a fresh process's first
# load on the 2-core VM (a Firecracker guest that reports freed memory to
# its host) and turned them off; on 2026-12-06 the same VM's fresh
# processes filled them faster every time (the 1.1 GiB model 148 - 155
# against 156 - 166 ms; the small models above), with the page cache
# empty, full (compaction stalls counted) or after 12 GiB touched and
# freed. bench_load's *Blocks4k and First_* rows keep both ways measured.
BLOCK_HUGE_PAGES = True
# A block holds up to this much: what one kept tensor or array can hold
# alive.
BLOCK_BYTES = 32 << 20

HUGE_PAGE = 2 << 20
_MADV_HUGEPAGE = 14
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def advise_huge_pages(address: int, nbytes: int) -> None:
    """Asks for transparent huge pages over the 2 MiB pages that lie inside
    [address, address + nbytes) of fresh memory: filling it then takes one
    page fault per 2 MiB instead of one per 4 KiB (as numpy does for its
    arrays of 4 MiB and more). A hint: where the kernel declines, nothing
    changes."""
    start = (address + HUGE_PAGE - 1) // HUGE_PAGE * HUGE_PAGE
    end = (address + nbytes) // HUGE_PAGE * HUGE_PAGE
    if _libc is not None and end > start:
        _libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(end - start), _MADV_HUGEPAGE)


def huge_page_block(size: int, empty: Callable[[int], object], address_of: Callable[[object], int]):
    """A fresh CPU block of whole huge pages holding at least `size` bytes,
    started on a 2 MiB boundary and advised for huge pages: a slice of
    empty(n) (a flat uint8 array or tensor of n bytes; address_of gives its
    address). The bytes before it are never touched, so never resident."""
    whole = (size + HUGE_PAGE - 1) // HUGE_PAGE * HUGE_PAGE
    raw = empty(whole + HUGE_PAGE)
    address = address_of(raw)
    skip = -address % HUGE_PAGE
    advise_huge_pages(address + skip, whole)
    return raw[skip:skip + whole]


def cpu_block(size: int, empty: Callable[[int], object], address_of: Callable[[object], int]):
    """A fresh CPU block of at least `size` bytes: in huge pages where it
    holds one or more and BLOCK_HUGE_PAGES is set, else empty(size)."""
    if size >= HUGE_PAGE and BLOCK_HUGE_PAGES:
        return huge_page_block(size, empty, address_of)
    return empty(size)


class Places:
    """Places a load's small pieces, in the order it asks, in blocks that
    _new_block allocates as they are needed. `total` is what the load will
    ask for in all (the sum of aligned(nbytes)): the last block is no larger
    than what is left. first_block_bytes: blocks start at that size and
    double up to block_bytes (pieces asked one at a time, where a few may
    be all there is: a block in huge pages holds 2 MiB resident from its
    first piece on, and as long as any of its pieces lives)."""

    def __init__(self, total: int, block_bytes: Optional[int] = None,
                 first_block_bytes: Optional[int] = None):
        self._left = total
        self._block_bytes = BLOCK_BYTES if block_bytes is None else block_bytes
        self._next = self._block_bytes if first_block_bytes is None else first_block_bytes
        self._at = self._end = 0

    def place(self, nbytes: int) -> int:
        """Where a piece of `nbytes` bytes (fewer than PACK_BELOW) goes in
        the current block, a new one where the current one is full: its
        offset there. The allocator's error (MemoryError, torch's
        RuntimeError) where a block cannot be allocated."""
        at = self._at
        if at + nbytes > self._end:
            size = self._next
            self._end = self._new_block(max(aligned(nbytes), min(size, self._left)))
            self._next = min(2 * size, self._block_bytes)
            at = 0
        step = aligned(nbytes)
        self._at = at + step
        self._left -= step
        return at

    def _new_block(self, size: int) -> int:
        """Allocates the next block, of at least `size` bytes, and makes it
        the current one: its bytes."""
        raise NotImplementedError


class ArrayBlocks(Places):
    """Places numpy arrays in CPU blocks: each a view of its bytes of a
    block (the block's memory is freed when the last of its arrays is;
    such an array cannot be resized in place, as any view cannot)."""

    def __init__(self, total: int, block_bytes: Optional[int] = None):
        super().__init__(total, block_bytes)
        self.block: Optional[np.ndarray] = None

    def _new_block(self, size: int) -> int:
        self.block = cpu_block(size, _bytes, _address)
        return self.block.size

    def carve(self, shape: Tuple[int, ...], dtype: np.dtype, nbytes: int) -> np.ndarray:
        """An uninitialized C-contiguous array of `shape` and `dtype`
        (`nbytes` bytes) of the blocks."""
        at = self.place(nbytes)
        return np.ndarray(shape, dtype, buffer=self.block, offset=at)


def _bytes(n: int) -> np.ndarray:
    return np.empty(n, np.uint8)


def _address(a: np.ndarray) -> int:
    return a.ctypes.data


def pieces_to_carve(sizes, smallest: int) -> Tuple[int, int]:
    """(how many of `sizes` are from `smallest` to fewer than PACK_BELOW
    bytes, their total in aligned places)."""
    below = PACK_BELOW
    carved = [n for n in sizes if smallest <= n < below]
    return len(carved), sum(map(aligned, carved))


def blocks_for(sizes, smallest: int, make: Callable[[int], Places]) -> Optional[Places]:
    """make(total) for a load whose pieces are of `sizes` bytes (total: what
    those from `smallest` to fewer than PACK_BELOW take in aligned places),
    or None where fewer than two of them would be carved."""
    count, total = pieces_to_carve(sizes, smallest)
    return make(total) if count >= 2 else None
