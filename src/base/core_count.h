#pragma once
// core_count: how many threads "all cores" means, asked once.

#include <algorithm>
#include <thread>

namespace zt {

// std::thread::hardware_concurrency() (at least 1), read once per process:
// glibc answers it by reading /sys each time (~12 us on the project's VM),
// which every zt_decode_ranges call of one small tensor paid, three times
// its own work.
inline unsigned core_count() {
  static const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  return n;
}

}  // namespace zt
