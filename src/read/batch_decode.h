// Decoding many components at once into caller buffers on a pool of threads.
// The unit of work is one zstd frame or one slice of raw bytes, not one
// component, so a single large component and many small ones both keep every
// thread busy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
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
  // Set: the request is for exactly the decoded bytes [*first, *first +
  // dst.size()) of the component, not for all of it (which must then fit
  // dst). A range that does not lie within the decoded bytes is refused
  // (Status::argument).
  std::optional<uint64_t> first;
};

// Called once for each request, as soon as its last byte is written or it
// has failed, with the request's index and status; from whichever worker
// thread finished it, possibly on several threads at once.
using DecodeDone = std::function<void(size_t request, Status status)>;

// Decodes every request into its buffer, on up to `threads` threads (0: all
// cores), with the rules and errors of Reader::read. Every request is
// attempted and gets its own outcome; the result is the error of the first
// failed request in request order. Fills no cache. Thread-safe like Reader.
// `done`, when set, is told of each request as it completes.
Result<void> decode_many(const Reader& reader, std::span<DecodeRequest> requests,
                         unsigned threads = 0, const DecodeDone& done = {});

}  // namespace zt
