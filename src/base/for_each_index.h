#pragma once
// for_each_index: one way to share independent work items out over threads.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <system_error>
#include <thread>
#include <vector>

#include "base/core_count.h"

namespace zt {

// Calls work(i) once for every i in [0, n), on up to `threads` threads (the
// caller's among them; 0 means one a core), handing indices out in order so
// that the first items start first. Returns when every call has returned.
// work must not throw. A thread that cannot be started is not an error: the
// threads running share its items.
template <class Work>
void for_each_index(size_t n, unsigned threads, Work&& work) {
  if (threads == 0) threads = core_count();
  std::atomic<size_t> next{0};
  auto drain = [&] {
    for (size_t i = next.fetch_add(1, std::memory_order_relaxed); i < n;
         i = next.fetch_add(1, std::memory_order_relaxed))
      work(i);
  };
  const size_t helpers = n == 0 ? 0 : std::min<size_t>(threads, n) - 1;
  std::vector<std::jthread> pool;
  pool.reserve(helpers);
  for (size_t t = 0; t < helpers; ++t) {
    try {
      pool.emplace_back(drain);
    } catch (const std::system_error&) {
      break;
    }
  }
  drain();
}  // the pool joins as it goes

}  // namespace zt
