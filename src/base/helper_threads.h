#pragma once
// helper_threads: the process's parked threads that for_each_index shares
// work out to, instead of starting threads on every call.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace zt {

// Calls drain(context) on the calling thread and on up to `helpers` of the
// process's helper threads (started the first time they are wanted, then
// parked between calls), and returns once every one of those calls has
// returned. drain must share its work out itself (each call takes items
// until none is left) and must not throw: a helper that joins late, or
// not at all, then only means fewer hands. Calls may come from several
// threads at once, and from inside a drain (a nested call runs on its
// caller and on whichever helpers are free; it never waits for one).
//
// Why: starting and joining 15 threads cost a 16-core machine ~1 ms a
// call, which a load through a ring of staging buffers pays on every
// buffer.
void run_with_helpers(size_t helpers, void (*drain)(void*), void* context);

// Thread-local scratch a decoding thread keeps between calls, at most (the
// helpers live as long as the process): our writer's frames are 1 MiB.
inline constexpr size_t kKeptScratchBytes = size_t{4} << 20;

// Frees `scratch` if it holds more than kKeptScratchBytes.
inline void shed_large_scratch(std::vector<uint8_t>& scratch) {
  if (scratch.capacity() > kKeptScratchBytes) std::vector<uint8_t>().swap(scratch);
}

}  // namespace zt
