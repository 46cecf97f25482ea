"""A load's small tensors carved out of shared blocks of memory
(_block_places says why, which ones, and where each goes).

Each tensor has a storage of its own, exactly its bytes, that holds a
reference to its block (torch's storage slicing): torch.save and
safetensors see only its bytes, and no two loaded tensors share a storage.
What changes: a block is freed when the last of its tensors is, and these
storages cannot be resized (as those of a mapped load cannot). On a CUDA
device, torch's allocator knows the block only: `record_stream` on such a
tensor does nothing, and CUDA IPC (torch.multiprocessing) refuses one that
does not start its block ("invalid device pointer"; H200, torch 2.11).
"""

from typing import Callable, Dict, Optional, Tuple

import torch

from ._block_places import Places, cpu_block

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


class Blocks(Places):
    """Places a load's small tensors (on the CPU or a device) in blocks of
    flat uint8 tensors, allocated as they are needed: _block_places.Places
    with the current block's storage and address at hand for carve()."""

    def __init__(self, total: int, device: torch.device, block_bytes: Optional[int] = None,
                 first_block_bytes: Optional[int] = None):
        super().__init__(total, block_bytes, first_block_bytes)
        self.device = device
        # The current block as a flat uint8 tensor, its storage, where the
        # block starts in that storage (carve's `start` is base + the
        # place's offset) and its address (a place's is address + offset).
        self.block: Optional[torch.Tensor] = None
        self.storage = None
        self.base = 0
        self.address = 0

    def _new_block(self, size: int) -> int:
        if self.device.type == "cpu":
            block = cpu_block(size, _cpu_bytes, torch.Tensor.data_ptr)
        else:
            block = torch.empty(size, dtype=torch.uint8, device=self.device)
        self.block, self.storage, self.base = block, storage_of(block), block.storage_offset()
        self.device = block.device  # "cuda" becomes the device it is, as carve's cache wants
        self.address = block.data_ptr()
        return block.numel()


def _cpu_bytes(n: int) -> torch.Tensor:
    return torch.empty(n, dtype=torch.uint8)
