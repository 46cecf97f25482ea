// Which generation of the format a file is: what the container stage finds
// (magic, footer) and every later stage reads its manifest by.
#pragma once

#include <cstdint>

namespace zt {

// v1 = 1.1.x, 1.2.x and later 1.x; v2 = the "ZT2" container (footer version 2).
enum class Generation : uint8_t { v0_1, v1_0, v1, v2 };

// 0.1.0 and 1.0.x read any non-zero bool byte as true; later generations
// allow only 0 and 1.
inline bool lenient_bools(Generation g) {
  return g == Generation::v0_1 || g == Generation::v1_0;
}

}  // namespace zt
