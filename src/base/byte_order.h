// Byte order of stored elements: files are little-endian except the data of
// 0.1.0 components marked big-endian, and big-endian .npy arrays and
// PyTorch storages, which readers swap. The one byte swap of the library,
// and the one load of an element from bytes of any alignment.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>

namespace zt {

// The T stored at p in the machine's byte order, p of any alignment.
template <typename T>
T load_unaligned(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Reverses the bytes of each whole `width`-byte element of `bytes`.
inline void swap_elements(std::span<uint8_t> bytes, unsigned width) {
  if (width <= 1) return;
  for (size_t i = 0; i + width <= bytes.size(); i += width)
    std::reverse(bytes.data() + i, bytes.data() + i + width);
}

}  // namespace zt
