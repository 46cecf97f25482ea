#include "source/http_response.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "base/zt_limits.h"

namespace zt::http {

using ull = unsigned long long;

bool iequals_prefix(std::string_view s, std::string_view lower_prefix) {
  if (s.size() < lower_prefix.size()) return false;
  for (size_t i = 0; i < lower_prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != lower_prefix[i]) return false;
  return true;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' '))
    s.remove_suffix(1);
  return s;
}

// The value of header `name` (lowercase, with its colon) on `line`.
std::optional<std::string_view> header_value(std::string_view line, std::string_view name) {
  if (!iequals_prefix(line, name)) return std::nullopt;
  return trim(line.substr(name.size()));
}

std::optional<uint64_t> parse_u64(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

std::optional<ContentRange> parse_content_range(std::string_view v) {
  if (!iequals_prefix(v, "bytes ")) return std::nullopt;
  v.remove_prefix(6);
  const size_t slash = v.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  ContentRange cr;
  const std::string_view span = v.substr(0, slash), total = v.substr(slash + 1);
  if (total != "*") {
    cr.total = parse_u64(total);
    if (!cr.total) return std::nullopt;
  }
  if (span == "*") return cr;
  const size_t dash = span.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const auto first = parse_u64(span.substr(0, dash)), last = parse_u64(span.substr(dash + 1));
  if (!first || !last || *last < *first) return std::nullopt;
  cr.first = *first;
  cr.last = *last;
  cr.has_range = true;
  return cr;
}

// The boundary of "multipart/byteranges; boundary=X" (quoted or not).
std::optional<std::string> multipart_boundary(std::string_view content_type) {
  if (!iequals_prefix(content_type, "multipart/byteranges")) return std::nullopt;
  const size_t at = content_type.find("boundary=");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view b = content_type.substr(at + 9);
  b = b.substr(0, b.find(';'));
  b = trim(b);
  if (b.size() >= 2 && b.front() == '"' && b.back() == '"') b = b.substr(1, b.size() - 2);
  if (b.empty() || b.size() > 200) return std::nullopt;
  return std::string(b);
}

// Where a response's bytes go: into the destinations of the ranges asked
// for, by file offset. Bytes between them (a gap merged into one range, a
// range a server coalesced) are dropped.
class Sink {
 public:
  explicit Sink(std::span<const RangeRead> reads) : reads_(reads) {}
  void put(uint64_t off, const uint8_t* p, size_t n) const {
    const uint64_t end = off + n;
    auto it = std::partition_point(reads_.begin(), reads_.end(),
                                   [&](const RangeRead& r) { return end_of(r) <= off; });
    for (; it != reads_.end() && it->offset < end; ++it) {
      const uint64_t from = std::max(off, it->offset);
      const uint64_t to = std::min(end, end_of(*it));
      std::memcpy(it->dst.data() + (from - it->offset), p + (from - off), to - from);
    }
  }

 private:
  std::span<const RangeRead> reads_;
};

// Whether bytes [first, end) meet one of the ranges asked for (sorted).
bool meets_a_read(std::span<const RangeRead> reads, uint64_t first, uint64_t end) {
  const auto it = std::partition_point(reads.begin(), reads.end(),
                                       [&](const RangeRead& r) { return end_of(r) <= first; });
  return it != reads.end() && it->offset < end;
}

// Multipart framing: a line of the preamble or of a part's headers.
Result<void> on_line(Exchange& ex, std::string_view line, const std::string& where) {
  line = trim(line);
  std::string delimiter("--");
  delimiter += *ex.boundary;
  if (ex.part == Exchange::Part::preamble) {
    if (line == delimiter) {
      ex.part = Exchange::Part::headers;
      ex.part_range.reset();
    } else if (line == delimiter + "--") {
      ex.part = Exchange::Part::done;
    }
    return {};
  }
  if (!line.empty()) {  // headers
    if (auto v = header_value(line, "content-range:")) ex.part_range = parse_content_range(*v);
    return {};
  }
  ZT_FAIL_IF(!ex.part_range || !ex.part_range->has_range, io,
             "%s: a multipart/byteranges part without a Content-Range", where.c_str());
  ZT_FAIL_IF(ex.size && ex.part_range->total && *ex.part_range->total != *ex.size, io,
             "%s: changed on the server (now %llu bytes, %llu when opened)", where.c_str(),
             static_cast<ull>(*ex.part_range->total), static_cast<ull>(*ex.size));
  // A server may coalesce the ranges asked for, never send others: a part
  // that meets none of them is not an answer to this request.
  ZT_FAIL_IF(!meets_a_read(ex.reads, ex.part_range->first, ex.part_range->last + 1), io,
             "%s: a multipart/byteranges part of bytes %llu-%llu, outside the ranges asked for",
             where.c_str(), static_cast<ull>(ex.part_range->first),
             static_cast<ull>(ex.part_range->last));
  ex.at = ex.part_range->first;
  ex.part_end = ex.part_range->last + 1;
  ex.part = Exchange::Part::data;
  return {};
}

}  // namespace

void take_header_line(Exchange& ex, std::string_view line) {
  if (line.starts_with("HTTP/")) {  // a new response (after a redirect or 100)
    ex.range.reset();
    ex.boundary.reset();
    ex.etag.clear();
    ex.last_modified.clear();
    ex.content_length.reset();
    ex.content_encoding.clear();
    ex.location.clear();
    const size_t sp = line.find(' ');
    const size_t sp2 = sp == std::string_view::npos ? sp : line.find(' ', sp + 1);
    // "HTTP/1.1 206\r\n" has no reason phrase (RFC 9112 allows it): the
    // code then runs to the line's end.
    ex.status =
        sp == std::string_view::npos
            ? 0
            : static_cast<long>(parse_u64(trim(line.substr(sp + 1, sp2 - sp - 1))).value_or(0));
    ex.reason = sp2 == std::string_view::npos ? "" : std::string(trim(line.substr(sp2 + 1)));
  } else if (auto v = header_value(line, "content-range:")) {
    ex.range = parse_content_range(*v);
  } else if (auto ct = header_value(line, "content-type:")) {
    ex.boundary = multipart_boundary(*ct);
  } else if (auto et = header_value(line, "etag:")) {
    ex.etag = std::string(*et);
  } else if (auto lm = header_value(line, "last-modified:")) {
    ex.last_modified = std::string(*lm);
  } else if (auto cl = header_value(line, "content-length:")) {
    ex.content_length = parse_u64(*cl);
  } else if (auto ce = header_value(line, "content-encoding:")) {
    ex.content_encoding = std::string(ce->substr(0, 64));
  } else if (auto lo = header_value(line, "location:")) {
    ex.location = std::string(lo->substr(0, 8192));
  }
}

// Decides at the first byte of the body whether to read it.
Result<void> start_body(Exchange& ex, const std::string& where) {
  ex.started = true;
  const bool encoded =
      !ex.content_encoding.empty() && !iequals_prefix(ex.content_encoding, "identity");
  ZT_FAIL_IF(encoded && (ex.status == 200 || ex.status == 206), io,
             "%s: the server sent the bytes encoded (Content-Encoding: %s), which were not asked "
             "for: they are not the file's bytes",
             where.c_str(), printable(ex.content_encoding).c_str());
  // The open of a file that is to be taken whole: refused for its size
  // before a byte of it is read.
  uint64_t announced = 0;  // the file's size as the answer tells it
  if (ex.status == 206 && ex.range && ex.range->total)
    announced = *ex.range->total;
  else if (ex.status == 200 && ex.content_length)
    announced = *ex.content_length;
  ZT_FAIL_IF(ex.reads.empty() && announced > ex.window.max_size, limit,
             "%s: %llu bytes, more than the limit of %llu", where.c_str(),
             static_cast<ull>(announced), static_cast<ull>(ex.window.max_size));
  if (ex.status == 200 && ex.reads.empty()) {
    // The open, answered with the whole file: taken only if it is small.
    if (ex.content_length && *ex.content_length <= ex.window.bytes) {
      ex.size = *ex.content_length;
      ex.body_cap = ex.window.bytes;
      ex.accept = true;
      return {};
    }
  }
  if (ex.status == 200) {
    ex.ignored_range = true;
    return make_error(Status::io,
                      "%s: the server ignores Range requests (HTTP 200 with the whole body); "
                      "reading a remote file needs them",
                      where.c_str());
  }
  if (ex.status != 206) return {};  // an error status: its body is not read
  if (ex.reads.empty()) {
    ZT_FAIL_IF(!ex.range || !ex.range->has_range || !ex.range->total, io,
               "%s: HTTP 206 without a usable Content-Range", where.c_str());
    const bool head = ex.window.end == OpenWindow::End::head;
    const uint64_t total = *ex.range->total, first = ex.range->first, last = ex.range->last;
    const uint64_t want = std::min(total, ex.window.bytes);
    ZT_FAIL_IF(last >= total || last - first + 1 != want || (head ? first != 0 : last + 1 != total),
               io, "%s: the server answered bytes %llu-%llu/%llu to a request for the %s %llu",
               where.c_str(), static_cast<ull>(first), static_cast<ull>(last),
               static_cast<ull>(total), head ? "first" : "last", static_cast<ull>(ex.window.bytes));
    ex.size = *ex.range->total;
    ex.body_cap = ex.range->last - ex.range->first + 1;
    ex.accept = true;
    return {};
  }
  const uint64_t first = ex.reads.front().offset;
  const uint64_t last_end = end_of(ex.reads.back());
  ex.body_cap = last_end - first + Limits::http_body_slack + 1024 * ex.reads.size();
  if (ex.boundary) {
    ex.part = Exchange::Part::preamble;
  } else {
    ZT_FAIL_IF(!ex.range || !ex.range->has_range, io, "%s: HTTP 206 without a Content-Range",
               where.c_str());
    ZT_FAIL_IF(ex.range->first > first || ex.range->last - ex.range->first >= ex.body_cap, io,
               "%s: the server answered bytes %llu-%llu to a request from %llu to %llu",
               where.c_str(), static_cast<ull>(ex.range->first), static_cast<ull>(ex.range->last),
               static_cast<ull>(first), static_cast<ull>(last_end));
    ex.part_range = ex.range;
    ex.at = ex.range->first;
    ex.part_end = ex.range->last + 1;
    ex.part = Exchange::Part::data;
  }
  if (ex.range && ex.range->total && ex.size && *ex.range->total != *ex.size)
    return make_error(Status::io, "%s: changed on the server (now %llu bytes, %llu when opened)",
                      where.c_str(), static_cast<ull>(*ex.range->total),
                      static_cast<ull>(*ex.size));
  ex.accept = true;
  return {};
}

bool take_body(Exchange& ex, std::span<const uint8_t> piece, const std::string& where) {
  const size_t total = piece.size();
  if (!ex.started) {
    if (auto s = start_body(ex, where); !s) {
      ex.error = std::move(s).error();
      return false;
    }
  }
  if (!ex.accept) return false;  // an error status: the body does not matter
  ex.body += total;
  if (ex.body > ex.body_cap) {
    ex.error = make_error(Status::io, "%s: the server sent more than the %llu bytes asked for",
                          where.c_str(), static_cast<ull>(ex.body_cap));
    return false;
  }
  if (ex.reads.empty()) {  // the open
    ex.opened.insert(ex.opened.end(), piece.begin(), piece.end());
    return true;
  }
  const Sink sink(ex.reads);
  const uint8_t* p = piece.data();
  size_t left = total;
  while (left > 0) {
    if (ex.part == Exchange::Part::data) {
      const size_t k = static_cast<size_t>(std::min<uint64_t>(left, ex.part_end - ex.at));
      sink.put(ex.at, p, k);
      ex.at += k;
      p += k;
      left -= k;
      if (ex.at == ex.part_end) {
        ex.delivered.emplace_back(ex.part_range->first, ex.part_end);
        ex.part = ex.boundary ? Exchange::Part::preamble : Exchange::Part::done;
      }
      continue;
    }
    if (ex.part == Exchange::Part::done) {
      if (!ex.boundary) {
        ex.error = make_error(Status::io, "%s: more body than its Content-Range", where.c_str());
        return false;
      }
      return true;  // the epilogue
    }
    const uint8_t* nl = static_cast<const uint8_t*>(std::memchr(p, '\n', left));
    const size_t k = nl ? static_cast<size_t>(nl - p) + 1 : left;
    ex.line.append(reinterpret_cast<const char*>(p), k);
    p += k;
    left -= k;
    if (ex.line.size() > Limits::http_header_line) {
      ex.error = make_error(Status::io, "%s: a multipart line longer than %zu bytes", where.c_str(),
                            Limits::http_header_line);
      return false;
    }
    if (nl) {
      if (auto r = on_line(ex, ex.line, where); !r) {
        ex.error = std::move(r).error();
        return false;
      }
      ex.line.clear();
    }
  }
  return true;
}

Result<void> check_open_complete(const Exchange& ex, const std::string& where) {
  if (!ex.reads.empty() || !ex.accept) return {};
  // 206: exactly the range announced; 200 (a small file sent whole): the file.
  const uint64_t want = ex.status == 206 ? ex.body_cap : ex.size.value_or(ex.body);
  ZT_FAIL_IF(ex.opened.size() != want, io,
             "%s: the answer to the open carried %llu bytes of the %llu it announced",
             where.c_str(), static_cast<ull>(ex.opened.size()), static_cast<ull>(want));
  return {};
}

// Whether the parts delivered cover every range asked for.
std::optional<std::pair<uint64_t, uint64_t>> first_missing(
    std::span<const RangeRead> reads, std::vector<std::pair<uint64_t, uint64_t>> got) {
  std::sort(got.begin(), got.end());
  for (const RangeRead& r : reads) {
    uint64_t at = r.offset;
    const uint64_t end = end_of(r);
    for (const auto& [b, e] : got) {
      if (b <= at && e > at) at = e;
      if (at >= end) break;
    }
    if (at < end) return std::pair{at, end};
  }
  return std::nullopt;
}

}  // namespace zt::http
