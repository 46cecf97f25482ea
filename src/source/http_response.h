// One HTTP response to a range request, taken as libcurl hands it over
// (header lines, then pieces of the body) and with no network of its own,
// so that a hostile server's answers can be fuzzed (fuzz_http_response):
// the status line and the headers that matter (Content-Range, the
// multipart boundary, ETag, Last-Modified, Content-Length), then the body:
// the open's bytes kept, a single range or a multipart/byteranges body
// written straight into the destinations of the ranges asked for. What
// the server says is checked against what was asked; the body is bounded
// by it (plus framing), a header line by Limits::http_header_line.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/zt_limits.h"
#include "source/range_source.h"

namespace zt::http {

// Ranges closer than this go as one: a multipart part costs ~100 bytes of
// framing, so a smaller gap is cheaper fetched than framed.
constexpr uint64_t kMergeGap = 256;

// Whether a range starting at `next` is fetched with the one before it,
// which ends at `end` (sorted, not overlapping).
constexpr bool joins(uint64_t end, uint64_t next) {
  return next <= end + kMergeGap;
}

// Whether `s` starts with `lower_prefix` (lowercase ASCII), ignoring case.
bool iequals_prefix(std::string_view s, std::string_view lower_prefix);

// "bytes first-last/total" (total may be "*"), or "bytes */total" (a 416).
struct ContentRange {
  uint64_t first = 0, last = 0;
  bool has_range = false;
  std::optional<uint64_t> total;
};

// One HTTP exchange: what was asked, what came back, where it went.
struct Exchange {
  std::span<const RangeRead> reads;  // sorted; empty for the open's request
  OpenWindow window;                 // the open: bytes=-n (tail) or bytes=0-(n-1) (head)
  std::optional<uint64_t> size;      // the file's size, once known

  // From the headers of the last response (a redirect's are replaced).
  long status = 0;
  std::string reason;
  std::optional<ContentRange> range;
  std::optional<std::string> boundary;
  std::string etag, last_modified;
  std::optional<uint64_t> content_length;
  std::string content_encoding;  // never asked for: any but identity is refused
  std::string location;          // a redirect's target, as sent (perhaps relative)

  // The body.
  bool started = false;
  bool accept = false;  // a body we read (else the transfer is stopped)
  uint64_t body = 0, body_cap = 0;
  uint64_t at = 0, part_end = 0;  // next offset of the current part, its end
  enum class Part { preamble, headers, data, done } part = Part::preamble;
  std::optional<ContentRange> part_range;
  std::string line;
  std::vector<std::pair<uint64_t, uint64_t>> delivered;  // whole parts [first, end)
  std::vector<uint8_t> opened;                           // the open's bytes
  std::optional<Error> error;                            // why the transfer was stopped
  bool ignored_range = false;                            // 200 to a Range request

  // The same request, asked again (a retry, a redirect): what was asked
  // stays, what came back goes.
  Exchange asked_again() const {
    Exchange e;
    e.reads = reads;
    e.window = window;
    e.size = size;
    return e;
  }
};

// A header line of the response (a status line starts a new response, as
// after a redirect).
void take_header_line(Exchange& ex, std::string_view line);

// Decides at the first byte of the body (or at its end, for an empty one)
// whether to read it: a 206 that answers what was asked, or a small file
// sent whole to the open, neither with a Content-Encoding (we send no
// Accept-Encoding: an encoded body is not the file's bytes). An error
// status's body is not read.
Result<void> start_body(Exchange& ex, const std::string& where);

// After a transfer that ended without an error: whether the open got all
// the bytes its answer announced (a connection closed early can end a body
// short of its Content-Range while curl, trusting a Content-Length that
// agrees with the short body, reports success). Status::io naming both
// counts; nothing to check for later reads (their ranges are checked as
// delivered) or an error status.
Result<void> check_open_complete(const Exchange& ex, const std::string& where);

// A piece of the body; false stops the transfer: ex.error says why, or
// nothing for the body of an error status, which is not read.
bool take_body(Exchange& ex, std::span<const uint8_t> piece, const std::string& where);

// Whether the parts delivered cover every range asked for.
std::optional<std::pair<uint64_t, uint64_t>> first_missing(
    std::span<const RangeRead> reads, std::vector<std::pair<uint64_t, uint64_t>> got);

}  // namespace zt::http
