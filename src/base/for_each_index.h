#pragma once
// for_each_index: one way to share independent work items out over threads.

#include <algorithm>
#include <atomic>
#include <cstddef>

#include "base/core_count.h"
#include "base/helper_threads.h"

namespace zt {

// Calls work(i) once for every i in [0, n), on up to `threads` threads (the
// caller's among them; 0 means threads_for_all_cores()), handing indices out in order so
// that the first items start first. Returns when every call has returned.
// work must not throw. The other threads are the process's parked helpers
// (helper_threads.h); one that cannot be started is not an error: the
// threads running share its items.
template <class Work>
void for_each_index(size_t n, unsigned threads, Work&& work) {
  if (threads == 0) threads = threads_for_all_cores();
  std::atomic<size_t> next{0};
  auto drain = [&] {
    for (size_t i = next.fetch_add(1, std::memory_order_relaxed); i < n;
         i = next.fetch_add(1, std::memory_order_relaxed))
      work(i);
  };
  const size_t helpers = n == 0 ? 0 : std::min<size_t>(threads, n) - 1;
  if (helpers == 0) return drain();
  run_with_helpers(
      helpers, [](void* d) { (*static_cast<decltype(drain)*>(d))(); }, &drain);
}

}  // namespace zt
