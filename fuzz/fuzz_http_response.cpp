// libFuzzer target: a hostile HTTP server's answer to a range request,
// parsed as libcurl would hand it over (source/http_response.h): header
// lines, then the body in pieces of fuzzed sizes. No crash, no write outside
// the destinations (AddressSanitizer watches each in its own allocation), a
// body never taken beyond what was asked plus framing, and a response that
// is accepted whole covers what it claims to.
//
// Input: control bytes, then the response's text.
//   [0]    bit 0: the open (no ranges; bit 1: its window is the file's
//          head, else its tail); bit 2: the size is known (1 MiB)
//   [1]    number of ranges asked (mod 9), then 3 bytes each: offset / 64
//          (u16, added to the previous range's end) and length - 1 (u8)
//   [..]   the open's window size (u16), a seed for the body's piece sizes
//   then   header lines up to an empty line ("\r\n" or "\n"), then the body
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "source/http_response.h"

namespace {

using namespace zt::fuzz;
using namespace zt::http;

// The header block: lines ending in '\n', up to the first empty one.
std::vector<std::string> header_lines(std::string_view text, size_t& body_at) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size() - 1;
    const std::string_view line = text.substr(at, nl + 1 - at);
    at = nl + 1;
    if (line == "\n" || line == "\r\n") break;
    lines.emplace_back(line);
  }
  body_at = at;
  return lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteReader in(data, size);
  const uint8_t mode = in.u8();
  const bool open = mode & 1;
  const size_t count = open ? 0 : in.u8() % 9;
  std::vector<std::vector<uint8_t>> buffers(count);  // one allocation each: ASan sees overruns
  std::vector<zt::RangeRead> reads;
  uint64_t end = 0;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t offset = end + uint64_t{in.u16()} * 64;
    buffers[i].resize(size_t{in.u8()} + 1);
    reads.push_back({offset, buffers[i]});
    end = offset + buffers[i].size();
  }
  const uint16_t window = in.u16();
  uint32_t seed = in.u8() | 1u;
  const std::string text = in.text(in.remaining());

  Exchange ex;
  ex.reads = reads;
  ex.window.bytes = uint64_t{window} + 1;
  ex.window.end = mode & 2 ? zt::OpenWindow::End::head : zt::OpenWindow::End::tail;
  if (mode & 4) ex.size = uint64_t{1} << 20;
  const std::string where = "http://fuzz/x.zt";

  size_t body_at = 0;
  for (const std::string& line : header_lines(text, body_at)) take_header_line(ex, line);
  const std::string_view body = std::string_view(text).substr(body_at);
  bool stopped = false;
  for (size_t at = 0; at < body.size() && !stopped;) {
    seed = seed * 1103515245u + 12345u;
    const size_t piece = std::min<size_t>(body.size() - at, 1 + (seed >> 16) % 97);
    stopped =
        !take_body(ex, std::span(reinterpret_cast<const uint8_t*>(body.data()) + at, piece), where);
    at += piece;
  }
  if (!ex.started && (ex.status == 206 || ex.status == 200)) {
    if (auto s = start_body(ex, where); !s) stopped = true;
  }
  FUZZ_CHECK(ex.body <= ex.body_cap || stopped, "a body of " + std::to_string(ex.body) +
                                                    " bytes taken past its cap of " +
                                                    std::to_string(ex.body_cap));
  if (stopped || !ex.accept) return 0;
  if (open) {
    FUZZ_CHECK(ex.opened.size() <= ex.body_cap, "the open kept more than its cap");
    // What the open's reader then takes: exactly the bytes announced, or an error.
    if (check_open_complete(ex, where))
      FUZZ_CHECK(ex.opened.size() == (ex.status == 206 ? ex.body_cap : ex.size.value_or(ex.body)),
                 "a short open accepted");
    return 0;
  }
  for (const auto& [first, stop] : ex.delivered)
    FUZZ_CHECK(first < stop, "an empty part delivered");
  // Whatever the parts claimed, the check of what is missing runs on them.
  static_cast<void>(first_missing(reads, ex.delivered));
  return 0;
}
