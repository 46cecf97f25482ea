// Byte order of stored elements: files are little-endian except the data of
// 0.1.0 components marked big-endian, and big-endian .npy arrays and
// PyTorch storages, which readers swap. The one byte swap of the library.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

namespace zt {

// Reverses the bytes of each whole `width`-byte element of `bytes`.
inline void swap_elements(std::span<uint8_t> bytes, unsigned width) {
  if (width <= 1) return;
  for (size_t i = 0; i + width <= bytes.size(); i += width)
    std::reverse(bytes.data() + i, bytes.data() + i + width);
}

}  // namespace zt
