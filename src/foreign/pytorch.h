// PyTorch checkpoints written by torch.save, read without PyTorch and
// without executing their pickles (foreign/pickle.h).
//
// Two containers: the zip format of torch >= 1.6 (PREFIX/data.pkl, the
// storages as PREFIX/data/KEY, optional PREFIX/byteorder "little"/"big")
// and the legacy format (_use_new_zipfile_serialization=False: five
// pickles - magic number, protocol 1001, system info, the object, the
// storage keys - then each storage as an 8-byte element count and its
// bytes, viewed in place).
//
// Tensors are calls of torch._utils._rebuild_tensor_v2 (or _rebuild_tensor,
// _rebuild_parameter[_with_state], _rebuild_from_type_v2 of a plain Tensor
// or Parameter) on a persistent id ("storage", torch.<T>Storage, key,
// location, numel). Every dtype torch stores has a zTensor dtype: f64 f32
// f16 bf16 i64 i32 i16 i8 u8 bool, complex64/128 as f32/f64 + type. A view
// at a storage_offset is viewed in place when contiguous; other strides
// (transposes, expands) are copied out row-major after a bound check of
// the farthest element they reach. Big-endian storages are swapped.
//
// Structure: the saved object is walked from its root. A tensor becomes
// an object named by its path, joined with "." (dict keys as they are,
// int keys and list/tuple indices in decimal: "optimizer.state.0.exp_avg");
// a container holding no tensor, and every other leaf (None, bool, int,
// float, str, bytes, a dtype), becomes a file attribute under its path. A
// tensor (or a leaf) saved alone is named after the file. The same storage
// reached twice (tied weights) is read once and given to both objects.
#pragma once

#include <string>

#include "foreign/foreign.h"

namespace zt::foreign {

// Bytes made at open (a strided view gathered, a compressed member
// inflated) beyond `limit` (the caller's cap on a component) are refused
// before they are allocated.
Result<ForeignFile> read_pytorch(const std::string& path, uint64_t limit = Limits::decoded_bytes);

}  // namespace zt::foreign
