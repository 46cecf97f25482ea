#pragma once
// How large the raw tasks of one decode_many call are: slices of a large
// raw component, gathers of small ones (read_many's reads together), and
// the small tasks its threads end on.

#include <cstdint>

namespace zt {

// Raw bytes are copied in slices of at least this size, and of at most an
// equal share per thread: few large copies (a pread each from a file, a
// memcpy with its non-temporal path from memory, a request each over
// HTTP) beat many cache-sized ones, and still spread over the threads.
inline constexpr uint64_t kMostRawTaskBytes = uint64_t{8} << 20;
// ... unless the call is smaller than that a thread (a 16 MiB staging buffer
// on 16 cores made 2 slices): then its equal share a thread, down to this.
inline constexpr uint64_t kLeastRawTaskBytes = uint64_t{1} << 20;

// The threads take tasks largest first, and a call ends when its last task
// does: a thread that takes a large one as the others run dry keeps them
// waiting for up to that task's time (a 256 MiB staging buffer on 16 cores
// was 32 slices of 8 MiB, two a thread: up to half the call). So a call
// from a file or memory ends on at least this many bytes of tasks of
// kLeastRawTaskBytes or less: a few for each thread.
inline constexpr uint64_t small_tail_bytes(unsigned threads) {
  return threads < 2 ? 0 : uint64_t{threads} * 2 * kLeastRawTaskBytes;
}

}  // namespace zt
