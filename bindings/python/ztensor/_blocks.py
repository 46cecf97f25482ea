"""The small tensors of one load, carved out of shared blocks of memory.

A load allocates every tensor before filling them all at once. Allocated
one by one, a model's small tensors (norms, biases, a small model's every
weight) each cost an allocator call (an mmap of its own from 128 KiB on,
on the CPU) and, when filled, a page fault per 4 KiB: on the 2-core VM a
fresh process's load of 4,096 x 64 KiB spent more time faulting than
reading (BENCHMARKS.md). Here they come out of blocks of up to
BLOCK_BYTES: one allocation each, on the CPU advised for huge pages (one
fault per 2 MiB: see BLOCK_HUGE_PAGES).

Each tensor has a storage of its own, exactly its bytes, that holds a
reference to its block (torch's storage slicing): torch.save and
safetensors see only its bytes, and no two loaded tensors share a storage.
What changes: a block is freed when the last of its tensors is, and these
storages cannot be resized (as those of a mapped load cannot). On a CUDA
device, torch's allocator knows the block only: `record_stream` on such a
tensor does nothing, and CUDA IPC (torch.multiprocessing) refuses one that
does not start its block ("invalid device pointer"; H200, torch 2.11).
"""

import ctypes
import sys
from typing import Callable, Dict, Optional, Tuple

import torch

# Where each tensor starts in its block: as pieces do in a staging buffer
# (so that a buffer's run of tensors is one copy), and as torch's own
# allocators align.
from ._staging import aligned

# Tensors of fewer bytes than this are carved out of blocks; larger ones
# are allocated on their own (from 4 MiB each gets huge pages of its own).
PACK_BELOW = 4 << 20
# On the CPU tensors from this size are carved out; smaller ones come from
# the C heap, where a tensor costs less Python time than a carving (~1.2
# against ~1.8 us) and its few bytes few page faults. From 4 KiB a carved
# tensor's pages are a block's huge ones: in fresh processes on the 2-core
# VM (2026-12-06, medians of 5 - 10, page cache empty or full) a load of
# 32,768 x 4 KiB took 136 against 166 ms allocated one by one, 16,384 x
# 16 KiB 102 against 130, 4,096 x 64 KiB 51 against 84 (the 2-thread
# pread floor into one fresh buffer: 66 - 76), 20,000 x 1 KiB carved 80
# against 77 (so not carved). What it costs: a loop of loads and frees in
# one process, where the heap hands the last load's memory back already
# mapped, 36 -> 45 ms for 4,096 x 64 KiB. On a CUDA device every small
# tensor is carved: one allocation instead of many, and one copy a run of
# them.
CPU_PACK_FROM = 4 << 10
# Whether CPU blocks of 2 MiB or more are advised for transparent huge
# pages (one page fault per 2 MiB instead of 512; numpy advises its arrays
# of 4 MiB and more, and tensors of 4 MiB and more are advised by the
# load too). Session 66 (2026-12-05) saw huge-page blocks fill 1.3 - 2.7x
# slower in a fresh process's first load on the 2-core VM (a Firecracker
# guest that reports freed memory to its host) and turned them off; on
# 2026-12-06 the same VM's fresh processes filled them faster every time
# (the 1.1 GiB model 148 - 155 against 156 - 166 ms; the small models
# above), with the page cache empty, full (compaction stalls counted) or
# after 12 GiB touched and freed. bench_load's *BlocksHuge and First_*
# rows keep both ways measured.
BLOCK_HUGE_PAGES = True
# A block holds up to this much: what one kept tensor can hold alive.
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


_EMPTY = torch.empty
# UntypedStorage's own __getitem__ only refuses the meta device (~1 us a
# call in Python) before calling this one: blocks are never on it.
_SLICE = getattr(getattr(torch._C, "StorageBase", None), "__getitem__", None) or torch.UntypedStorage.__getitem__


def storage_of(t: torch.Tensor):
    return t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage().untyped()  # torch < 2.0


# (dtype, device) -> the `new` method of an empty tensor of that dtype on
# that device: new() makes another without parsing a dtype and a device
# (torch.empty(0, dtype=, device=) 1.13 us, new() 0.58 on the 2-core VM).
_NEW: Dict[Tuple[torch.dtype, torch.device], Callable[[], torch.Tensor]] = {}


def _new_of(dtype: torch.dtype, device: torch.device) -> Callable[[], torch.Tensor]:
    new = _EMPTY(0, dtype=dtype, device=device).new
    if device.type == "cpu" or device.index is not None:  # "cuda" means the current device: not kept
        _NEW[dtype, device] = new
    return new


def carve(storage, start: int, shape: Tuple[int, ...], dtype: torch.dtype, nbytes: int,
          device: torch.device) -> torch.Tensor:
    """An empty contiguous tensor of `shape` and `dtype` whose storage is
    bytes [start, start + nbytes) of `storage` (a block's), its own."""
    # A load of many small tensors runs at the speed of these three calls
    # (2.4 -> 1.8 us on the 2-core VM with new(); 5.5 on an H200's CUDA
    # before): the storage's slice, a tensor, its storage set.
    new = _NEW.get((dtype, device)) or _new_of(dtype, device)
    return new().set_(_SLICE(storage, slice(start, start + nbytes)), 0, shape)


class Blocks:
    """Places a load's small tensors, in the order it asks, in blocks
    allocated as they are needed. `total` is what the load will ask for in
    all (the sum of aligned(nbytes)): the last block is no larger than what
    is left."""

    def __init__(self, total: int, device: torch.device, block_bytes: Optional[int] = None):
        self.device = device
        self._left = total
        self._block_bytes = BLOCK_BYTES if block_bytes is None else block_bytes
        # The current block as a flat uint8 tensor, its storage, where the
        # block starts in that storage (carve's `start` is base + the
        # place's offset) and its address (a place's is address + offset).
        self.block: Optional[torch.Tensor] = None
        self.storage = None
        self.base = 0
        self.address = 0
        self._at = self._end = 0

    def place(self, nbytes: int) -> int:
        """Where a tensor of `nbytes` bytes (fewer than PACK_BELOW) goes in
        `block`, a new one where the current one is full: its offset there.
        torch's RuntimeError where a block cannot be allocated."""
        at = self._at
        if at + nbytes > self._end:
            self._new_block(nbytes)
            at = 0
        step = aligned(nbytes)
        self._at = at + step
        self._left -= step
        return at

    def _new_block(self, nbytes: int) -> None:
        size = max(aligned(nbytes), min(self._block_bytes, self._left))
        if self.device.type == "cpu" and size >= HUGE_PAGE and BLOCK_HUGE_PAGES:
            # Started on a 2 MiB boundary, whole huge pages: the bytes before
            # it are never touched, so never resident.
            whole = (size + HUGE_PAGE - 1) // HUGE_PAGE * HUGE_PAGE
            raw = torch.empty(whole + HUGE_PAGE, dtype=torch.uint8)
            skip = -raw.data_ptr() % HUGE_PAGE
            block = raw[skip:skip + whole]
            advise_huge_pages(block.data_ptr(), whole)
        else:
            block = torch.empty(size, dtype=torch.uint8, device=self.device)
        self.block, self.storage, self.base = block, storage_of(block), block.storage_offset()
        self.device = block.device  # "cuda" becomes the device it is, as carve's cache wants
        self.address = block.data_ptr()
        self._at, self._end = 0, block.numel()
