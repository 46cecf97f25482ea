#include "container/http_source.h"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

namespace zt {

using ull = unsigned long long;

namespace {

// Ranges closer than this go as one: a multipart part costs ~100 bytes of
// framing, so a smaller gap is cheaper fetched than framed.
constexpr uint64_t kMergeGap = 256;

// Whether a range starting at `next` is fetched with the one before it,
// which ends at `end` (sorted, not overlapping).
constexpr bool joins(uint64_t end, uint64_t next) {
  return next <= end + kMergeGap;
}

uint64_t end_of(const RangeRead& r) {
  return r.offset + r.dst.size();
}
constexpr size_t kMaxRangesPerRequest = 128;         // keeps the Range header short
constexpr size_t kMaxHeaderLine = size_t{8} << 10;   // a multipart part's header line
constexpr uint64_t kBodySlack = uint64_t{64} << 10;  // multipart framing allowed on top
constexpr uint64_t kParallelPiece = uint64_t{16} << 20;  // a read of 2 such goes in parallel

void curl_init_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct EasyDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
using Easy = std::unique_ptr<CURL, EasyDeleter>;
struct SlistDeleter {
  void operator()(curl_slist* s) const { curl_slist_free_all(s); }
};
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

bool iequals_prefix(std::string_view line, std::string_view name) {
  if (line.size() < name.size()) return false;
  for (size_t i = 0; i < name.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
  return true;
}

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

// "bytes first-last/total" (total may be "*"), or "bytes */total" (a 416).
struct ContentRange {
  uint64_t first = 0, last = 0;
  bool has_range = false;
  std::optional<uint64_t> total;
};

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

}  // namespace

bool is_http_url(std::string_view path) {
  return iequals_prefix(path, "http://") || iequals_prefix(path, "https://");
}

std::string url_for_messages(std::string_view url) {
  url = url.substr(0, url.find_first_of("?#"));
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(url);
  const size_t host = scheme + 3;
  const size_t path = url.find('/', host);
  const size_t at = url.substr(0, path).find('@', host);
  if (at == std::string_view::npos) return std::string(url);
  std::string out(url.substr(0, host));
  out.append(url.substr(at + 1));
  return out;
}

namespace {

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
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto& ex = *static_cast<Exchange*>(user);
  const std::string_view line(data, size * n);
  if (line.starts_with("HTTP/")) {  // a new response (after a redirect or 100)
    ex.range.reset();
    ex.boundary.reset();
    ex.etag.clear();
    ex.last_modified.clear();
    ex.content_length.reset();
    const size_t sp = line.find(' ');
    const size_t sp2 = sp == std::string_view::npos ? sp : line.find(' ', sp + 1);
    ex.status = sp == std::string_view::npos
                    ? 0
                    : static_cast<long>(parse_u64(line.substr(sp + 1, sp2 - sp - 1)).value_or(0));
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
  }
  return size * n;
}

// Decides at the first byte of the body whether to read it.
Result<void> start_body(Exchange& ex, const std::string& where) {
  ex.started = true;
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
  ex.body_cap = last_end - first + kBodySlack + 1024 * ex.reads.size();
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
  ex.at = ex.part_range->first;
  ex.part_end = ex.part_range->last + 1;
  ex.part = Exchange::Part::data;
  return {};
}

struct Transfer {
  Exchange* ex;
  const std::string* where;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  Exchange& ex = *t.ex;
  const size_t total = size * n;
  if (!ex.started) {
    if (auto s = start_body(ex, *t.where); !s) {
      ex.error = std::move(s).error();
      return 0;
    }
  }
  if (!ex.accept) return 0;  // an error status: the body does not matter
  ex.body += total;
  if (ex.body > ex.body_cap) {
    ex.error = make_error(Status::io, "%s: the server sent more than the %llu bytes asked for",
                          t.where->c_str(), static_cast<ull>(ex.body_cap));
    return 0;
  }
  if (ex.reads.empty()) {  // the open
    ex.opened.insert(ex.opened.end(), data, data + total);
    return total;
  }
  const Sink sink(ex.reads);
  const auto* p = reinterpret_cast<const uint8_t*>(data);
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
        ex.error = make_error(Status::io, "%s: more body than its Content-Range", t.where->c_str());
        return 0;
      }
      return total;  // the epilogue
    }
    const uint8_t* nl = static_cast<const uint8_t*>(std::memchr(p, '\n', left));
    const size_t k = nl ? static_cast<size_t>(nl - p) + 1 : left;
    ex.line.append(reinterpret_cast<const char*>(p), k);
    p += k;
    left -= k;
    if (ex.line.size() > kMaxHeaderLine) {
      ex.error = make_error(Status::io, "%s: a multipart line longer than %zu bytes",
                            t.where->c_str(), kMaxHeaderLine);
      return 0;
    }
    if (nl) {
      if (auto r = on_line(ex, ex.line, *t.where); !r) {
        ex.error = std::move(r).error();
        return 0;
      }
      ex.line.clear();
    }
  }
  return total;
}

bool transient(CURLcode c) {
  switch (c) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

bool transient_status(long s) {
  return s == 429 || (s >= 500 && s <= 599);
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

class HttpSource final : public RangeSource {
 public:
  HttpSource(std::string url, HttpOptions opt)
      : url_(std::move(url)), name_(url_for_messages(url_)), opt_(std::move(opt)) {
    if (opt_.connections == 0) opt_.connections = 4;
  }

  uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }

  // A large range goes as several requests on parallel connections: one
  // TCP stream over loopback delivers ~4 GB/s, a copy behind it takes its
  // share of that, and the pieces overlap both.
  Result<void> read(uint64_t off, std::span<uint8_t> dst) const override {
    const RangeRead one{off, dst};
    return read_many(std::span(&one, 1));
  }

  Result<void> read_parallel(uint64_t off, std::span<uint8_t> dst, uint64_t pieces) const {
    std::vector<RangeRead> parts(pieces);
    const uint64_t step = (dst.size() + pieces - 1) / pieces;
    for (uint64_t k = 0; k < pieces; ++k) {
      const uint64_t a = k * step, e = std::min<uint64_t>(dst.size(), a + step);
      parts[k] = RangeRead{off + a, dst.subspan(a, e - a)};
    }
    std::vector<Result<void>> results(pieces);
    std::vector<std::thread> threads;
    threads.reserve(pieces - 1);
    for (uint64_t k = 1; k < pieces; ++k)
      threads.emplace_back([&, k] { results[k] = request(std::span(&parts[k], 1)); });
    results[0] = request(std::span(&parts[0], 1));
    for (std::thread& t : threads) t.join();
    for (Result<void>& r : results) ZT_TRY(r);
    return {};
  }

  Result<void> read_many(std::span<const RangeRead> reads) const override {
    // Ranges closer than kMergeGap become one range; up to
    // kMaxRangesPerRequest ranges go in one request while the server
    // answers multipart/byteranges.
    size_t i = 0;
    while (i < reads.size()) {
      size_t j = i + 1, ranges = 1;
      while (j < reads.size() && multi_ok_.load()) {
        if (!joins(end_of(reads[j - 1]), reads[j].offset)) {
          if (ranges == kMaxRangesPerRequest) break;
          ++ranges;
        }
        ++j;
      }
      if (!multi_ok_.load()) {  // merge only what is close
        while (j < reads.size() && joins(end_of(reads[j - 1]), reads[j].offset)) ++j;
      }
      const uint64_t pieces =
          std::min<uint64_t>(opt_.connections, reads[i].dst.size() / kParallelPiece);
      auto r = j == i + 1 && pieces >= 2 ? read_parallel(reads[i].offset, reads[i].dst, pieces)
                                         : request(reads.subspan(i, j - i));
      if (!r && ranges > 1 && !multi_ok_.load()) continue;  // again, one range at a time
      ZT_TRY(r);
      i = j;
    }
    return {};
  }

  Result<RangeOpened> sibling(std::string_view file_name, OpenWindow window) const override {
    std::string base = url_.substr(0, url_.find_first_of("?#"));
    base = base.substr(0, base.rfind('/') + 1);
    return open_http(base + std::string(file_name), opt_, window);
  }

  // The open: the bytes of `window` (at least one), with the size and the
  // version of the file.
  Result<std::vector<uint8_t>> open(OpenWindow window) {
    Exchange ex;
    ex.window = window;
    ex.window.bytes = std::max<uint64_t>(window.bytes, 1);
    ZT_TRY(perform(ex));
    size_ = *ex.size;
    etag_ = ex.etag;
    last_modified_ = ex.last_modified;
    std::vector<uint8_t>& got = ex.opened;
    if (got.size() > window.bytes) {  // a small file taken whole, or the 1 byte asked for 0
      if (window.end == OpenWindow::End::head)
        got.resize(window.bytes);
      else
        got.erase(got.begin(), got.end() - static_cast<ptrdiff_t>(window.bytes));
    }
    return std::move(got);
  }

 private:
  // The ranges of `reads` (merged where close) in one request.
  Result<void> request(std::span<const RangeRead> reads) const {
    Exchange ex;
    ex.reads = reads;
    ex.size = size_;
    ZT_TRY(perform(ex));
    if (auto gap = first_missing(reads, ex.delivered))
      return make_error(Status::io, "%s: the answer left out bytes %llu to %llu", name_.c_str(),
                        static_cast<ull>(gap->first), static_cast<ull>(gap->second));
    return {};
  }

  std::string range_header(const Exchange& ex) const {
    if (ex.reads.empty()) {
      const std::string n = std::to_string(ex.window.bytes);
      return ex.window.end == OpenWindow::End::head ? "0-" + std::to_string(ex.window.bytes - 1)
                                                    : "-" + n;
    }
    std::string h;
    uint64_t begin = ex.reads.front().offset, end = begin;
    auto flush = [&] {
      if (!h.empty()) h += ',';
      h += std::to_string(begin) + "-" + std::to_string(end - 1);
    };
    for (const RangeRead& r : ex.reads) {
      if (r.dst.empty()) continue;
      if (!joins(end, r.offset) && end > begin) {
        flush();
        begin = r.offset;
      }
      if (end == begin) begin = r.offset;
      end = std::max(end, end_of(r));
    }
    if (end > begin) flush();
    return h;
  }

  // Runs the exchange with retries; on success the body went where asked.
  Result<void> perform(Exchange& ex) const {
    const std::string range = range_header(ex);
    if (range.empty()) return {};
    Error last;
    for (uint32_t attempt = 0;; ++attempt) {
      if (attempt > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(100u << std::min(attempt - 1, 6u)));
      Exchange fresh;
      fresh.reads = ex.reads;
      fresh.window = ex.window;
      fresh.size = ex.size;
      bool retry = false;
      auto r = perform_once(fresh, range, retry);
      if (r) {
        ex = std::move(fresh);
        return {};
      }
      last = std::move(r).error();
      if (!retry || attempt >= opt_.retries) return last;
    }
  }

  // One try; `retry` says whether another may succeed (a 5xx, a dropped
  // connection, a body cut short).
  Result<void> perform_once(Exchange& ex, const std::string& range, bool& retry) const {
    Connection c(*this);
    CURL* h = c.easy.get();
    curl_easy_reset(h);
    char errbuf[CURL_ERROR_SIZE] = {};
    Slist headers;
    curl_slist* list = nullptr;
    auto add = [&](const std::string& line) {
      curl_slist* next = curl_slist_append(list, line.c_str());
      if (next) list = next;
    };
    for (const std::string& line : opt_.headers) add(line);
    if (!ex.reads.empty()) {
      // The version pinned at open: a strong ETag, else the date.
      if (!etag_.empty() && !etag_.starts_with("W/"))
        add(std::string("If-Match: ").append(etag_));
      else if (!last_modified_.empty())
        add(std::string("If-Unmodified-Since: ").append(last_modified_));
    }
    headers.reset(list);
    Transfer t{&ex, &name_};
    const long stall_s = static_cast<long>(std::max<uint32_t>(1, (opt_.timeout_ms + 999) / 1000));
    curl_easy_setopt(h, CURLOPT_URL, url_.c_str());
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(opt_.timeout_ms));
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, stall_s);
    curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 256L << 10);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "libztensor");
    curl_easy_setopt(h, CURLOPT_RANGE, range.c_str());
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &ex);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    const CURLcode rc = curl_easy_perform(h);
    if (ex.error) {
      if (ex.ignored_range && range.find(',') != std::string::npos) {
        multi_ok_ = false;
        ex.error->message += " (to a request for several ranges: asking one at a time)";
      }
      return *ex.error;
    }
    // A write error without ex.error is the body of an error status,
    // which on_body declined to read: the status says what happened.
    const bool declined = rc == CURLE_WRITE_ERROR && ex.started && !ex.accept;
    if (rc != CURLE_OK && !declined) {
      retry = transient(rc);
      return make_error(Status::io, "%s: %s", name_.c_str(),
                        errbuf[0] ? errbuf : curl_easy_strerror(rc));
    }
    if (!ex.started && (ex.status == 206 || ex.status == 200)) {
      if (auto s = start_body(ex, name_); !s) return s;  // an empty body
    }
    if (ex.status == 412 || (ex.status == 416 && !ex.reads.empty())) {
      const std::string pinned = !etag_.empty()
                                     ? std::string("ETag ").append(etag_)
                                     : std::string("Last-Modified ").append(last_modified_);
      return make_error(Status::io,
                        "%s: changed on the server since it was opened (HTTP %ld %s; it was %s)",
                        name_.c_str(), ex.status, ex.reason.c_str(), pinned.c_str());
    }
    if (ex.status != 206 && !(ex.status == 200 && ex.accept)) {
      retry = transient_status(ex.status);
      return make_error(Status::io, "%s: HTTP %ld %s", name_.c_str(), ex.status, ex.reason.c_str());
    }
    if (!ex.reads.empty() && !etag_.empty() && !ex.etag.empty() && ex.etag != etag_)
      return make_error(Status::io,
                        "%s: changed on the server since it was opened (ETag %s, "
                        "was %s)",
                        name_.c_str(), ex.etag.c_str(), etag_.c_str());
    if (ex.part == Exchange::Part::data || ex.part == Exchange::Part::headers) {
      retry = true;
      return make_error(Status::io, "%s: the body was cut short", name_.c_str());
    }
    return {};
  }

  // A connection of the pool: at most opt_.connections at once; handles
  // (and the connections they keep alive) are reused.
  struct Connection {
    explicit Connection(const HttpSource& s) : src(s) {
      std::unique_lock lock(s.mu_);
      s.cv_.wait(lock, [&] { return s.busy_ < s.opt_.connections; });
      ++s.busy_;
      if (!s.idle_.empty()) {
        easy = std::move(s.idle_.back());
        s.idle_.pop_back();
      }
      lock.unlock();
      if (!easy) easy.reset(curl_easy_init());
    }
    ~Connection() {
      std::lock_guard lock(src.mu_);
      if (easy) src.idle_.push_back(std::move(easy));
      --src.busy_;
      src.cv_.notify_one();
    }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;
    const HttpSource& src;
    Easy easy;
  };

  std::string url_;
  std::string name_;
  HttpOptions opt_;
  uint64_t size_ = 0;
  std::string etag_, last_modified_;
  mutable std::atomic<bool> multi_ok_{true};  // the server answers several ranges
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable unsigned busy_ = 0;
  mutable std::vector<Easy> idle_;
};

}  // namespace

Result<RangeOpened> open_http(const std::string& url, const HttpOptions& opt, OpenWindow window) {
  ZT_FAIL_IF(!is_http_url(url), argument, "%s: not an http:// or https:// URL",
             url_for_messages(url).c_str());
  HttpOptions o = opt;
  bool has_auth = false;
  for (const std::string& h : o.headers) {
    ZT_FAIL_IF(h.find(':') == std::string::npos || h.find_first_of("\r\n") != std::string::npos,
               argument, "HTTP header \"%s\" is not one \"Name: value\" line", h.c_str());
    has_auth = has_auth || iequals_prefix(h, "authorization:");
  }
  if (const char* token = std::getenv("ZT_HTTP_BEARER_TOKEN"); token && *token && !has_auth)
    o.headers.push_back(std::string("Authorization: Bearer ") + token);
  curl_init_once();
  auto src = std::make_shared<HttpSource>(url, std::move(o));
  auto bytes = src->open(window);
  ZT_TRY(bytes);
  RangeOpened out;
  out.bytes = std::move(*bytes);
  out.end = window.end;
  out.source = std::move(src);
  return out;
}

}  // namespace zt
