// Decoding many components at once into caller buffers on a pool of threads.
// The unit of work is one zstd frame or one slice of raw bytes, not one
// component, so a single large component and many small ones both keep every
// thread busy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/error.h"
#include "read/reader.h"

namespace zt {

struct DecodeRequest {
  size_t object = 0;
  size_t component = 0;
  std::span<uint8_t> dst;  // caller's buffer; buffers of one call must not overlap
  // Outcome, filled by decode_many:
  uint64_t written = 0;  // decoded bytes, when error.status is ok
  Error error;
};

// Decodes every request into its buffer, on up to `threads` threads (0: all
// cores), with the rules and errors of Reader::read. Every request is
// attempted and gets its own outcome; the result is the error of the first
// failed request in request order. Fills no cache. Thread-safe like Reader.
Result<void> decode_many(const Reader& reader, std::span<DecodeRequest> requests,
                         unsigned threads = 0);

}  // namespace zt
