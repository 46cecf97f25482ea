#include "source/http_source.h"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "source/http_response.h"

namespace zt {

using namespace zt::http;
using ull = unsigned long long;

namespace {

constexpr size_t kMaxRangesPerRequest = 128;             // keeps the Range header short
constexpr uint64_t kParallelPiece = uint64_t{16} << 20;  // a read of 2 such goes in parallel

void curl_init_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct EasyDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
using Easy = std::unique_ptr<CURL, EasyDeleter>;

// Easy handles between requests, with the connections they keep alive:
// one pool for every HttpSource of the process, the most recently used
// handed out first, the least recently used closed beyond kMaxIdle. A
// sharded checkpoint's index is one source per shard, mostly on one host:
// each kept its own (1,100 shards held 3,300 descriptors, a TCP socket and
// libcurl's socket pair each, past `ulimit -n 1024`), and a budget kept by
// the first sources left every later one a new connection a request. A
// handle carries no request's options (each request resets them: the
// caller's headers go with the request, never with the connection).
class IdleHandles {
 public:
  static constexpr size_t kMaxIdle = 64;

  Easy take() {
    std::lock_guard lock(mu_);
    if (handles_.empty()) return {};
    Easy e = std::move(handles_.back());
    handles_.pop_back();
    return e;
  }
  void give(Easy e) {
    Easy closed;  // closed outside the lock
    std::lock_guard lock(mu_);
    handles_.push_back(std::move(e));
    if (handles_.size() > kMaxIdle) {
      closed = std::move(handles_.front());
      handles_.pop_front();
    }
  }

 private:
  std::mutex mu_;
  std::deque<Easy> handles_;
};

// Never destroyed: a request still running on another thread while the
// process exits (a Python daemon thread, say) must not find it gone. The
// system closes its sockets with the process.
IdleHandles& idle_handles() {
  static IdleHandles& pool = *new IdleHandles();  // NOLINT: immortal on purpose
  return pool;
}
struct SlistDeleter {
  void operator()(curl_slist* s) const { curl_slist_free_all(s); }
};
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;
// libcurl's callbacks: the response's headers and body go to http_response.h.
size_t on_header(char* data, size_t size, size_t n, void* user) {
  take_header_line(*static_cast<Exchange*>(user), std::string_view(data, size * n));
  return size * n;
}

struct Transfer {
  Exchange* ex;
  const std::string* where;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const std::span<const uint8_t> piece(reinterpret_cast<const uint8_t*>(data), size * n);
  return take_body(*t.ex, piece, *t.where) ? piece.size() : 0;
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

class HttpSource final : public RangeSource {
 public:
  HttpSource(std::string url, HttpOptions opt)
      : url_(std::move(url)), name_(url_for_messages(url_)), opt_(std::move(opt)) {
    if (opt_.connections == 0) opt_.connections = 4;
  }
  HttpSource(const HttpSource&) = delete;
  HttpSource& operator=(const HttpSource&) = delete;

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

  // A file beside this one: its name is one path segment, percent-encoded
  // into the URL, so that no name a file gives ("%2E%2E%2Fsecret", "a?b")
  // can reach outside this URL's folder on a server that decodes paths.
  // Resolved as a relative reference by libcurl (RFC 3986 §5): beside the
  // file in its path, also where the URL has no path ("http://host").
  Result<RangeOpened> sibling(std::string_view file_name, OpenWindow window) const override {
    const std::string relative = percent_encoded_segment(file_name);
    const std::string beside = resolved_reference(url_, relative);
    ZT_FAIL_IF(beside.empty(), io, "%s: the URL of \"%s\" beside it cannot be made", name_.c_str(),
               relative.c_str());
    return open_http(beside, opt_, window);
  }

  // The open: the bytes of `window` (at least one), with the size and the
  // version of the file.
  // nullopt: the server says the file is not there (404, 410) and the
  // window allows it (missing_ok).
  Result<std::optional<std::vector<uint8_t>>> open(OpenWindow window) {
    Exchange ex;
    ex.window = window;
    ex.window.bytes = std::max<uint64_t>(window.bytes, 1);
    if (auto r = perform(ex); !r) {
      if (window.missing_ok &&
          (ex.status == 404 || ex.status == 410 || ex.status == 401 || ex.status == 403))
        return std::optional<std::vector<uint8_t>>();
      return std::move(r).error();
    }
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
    return std::optional(std::move(got));
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
      Exchange fresh = ex.asked_again();
      bool retry = false;
      auto r = perform_once(fresh, range, retry);
      if (r) {
        ex = std::move(fresh);
        return {};
      }
      last = std::move(r).error();
      ex.status = fresh.status;  // what the server last answered, for the caller
      if (!retry || attempt >= opt_.retries) return last;
    }
  }

  // One try; `retry` says whether another may succeed (a 5xx, a dropped
  // connection, a body cut short). Redirects are followed here, not by
  // libcurl, so that the caller's headers (an API key, a token) go to the
  // URL's own origin only: libcurl drops Authorization and Cookie at
  // another host, but sent every other header of the caller's along.
  // Five redirects at most, to http or https only, and never from https
  // down to plain http: the bytes (and what they are taken for) would
  // travel where anyone on the way may change them.
  Result<void> perform_once(Exchange& ex, const std::string& range, bool& retry) const {
    const auto home = http_origin(url_);
    std::string url = url_;
    bool at_home = true;
    for (int hop = 0;; ++hop) {
      std::string next;
      ZT_TRY(perform_at(ex, range, url, at_home, retry, next));
      if (next.empty()) return {};
      ZT_FAIL_IF(hop == 5, io, "%s: more than 5 redirects", name_.c_str());
      const auto origin = http_origin(next);
      if (auto why = redirect_refused(url_, next))
        return make_error(Status::io, "%s: redirected (HTTP %ld) %s", name_.c_str(), ex.status,
                          why->c_str());
      at_home = at_home && origin == home;
      url = std::move(next);
      ex = ex.asked_again();
    }
  }

  // One request to `url` (the caller's headers only when `with_headers`);
  // a redirect is not followed but handed back in `redirect`.
  Result<void> perform_at(Exchange& ex, const std::string& range, const std::string& url,
                          bool with_headers, bool& retry, std::string& redirect) const {
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
    if (with_headers)
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
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(opt_.timeout_ms));
    // Below 1 KiB/s over the stall time the transfer is cut off: a server
    // trickling a byte now and then cannot hold a read open for ever.
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
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
    if (!ex.error && !ex.location.empty() &&
        (ex.status == 301 || ex.status == 302 || ex.status == 303 || ex.status == 307 ||
         ex.status == 308)) {
      // The Location resolved against `url` (RFC 3986 §5), by libcurl's
      // parser; its body was not read (on_body declines a redirect's).
      redirect = resolved_reference(url, ex.location);
      ZT_FAIL_IF(redirect.empty(), io,
                 "%s: redirected (HTTP %ld) to a Location that does not parse", name_.c_str(),
                 ex.status);
      return {};
    }
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
    // An open of an empty file: no range of it can be satisfied, and the
    // server says so with its size, "bytes */0" (RFC 9110 §14.4, §15.5.17).
    // It is a file of 0 bytes, refused (or not) by its reader as a local
    // one is, not an HTTP error.
    if (ex.status == 416 && ex.reads.empty() && ex.range && !ex.range->has_range &&
        ex.range->total == uint64_t{0}) {
      ex.size = 0;
      ex.opened.clear();
      return {};
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
    if (auto whole = check_open_complete(ex, name_); !whole) {
      retry = true;  // a connection closed early: another try may get it all
      return whole;
    }
    return {};
  }

  // A connection of this source: at most opt_.connections at once; handles
  // (and the connections they keep alive) come from the process's pool.
  struct Connection {
    explicit Connection(const HttpSource& s) : src(s) {
      {
        std::unique_lock lock(s.mu_);
        s.cv_.wait(lock, [&] { return s.busy_ < s.opt_.connections; });
        ++s.busy_;
      }
      easy = idle_handles().take();
      if (!easy) easy.reset(curl_easy_init());
    }
    ~Connection() {
      if (easy) idle_handles().give(std::move(easy));
      std::lock_guard lock(src.mu_);
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
};

}  // namespace

Result<RangeOpened> open_http(const std::string& url, const HttpOptions& opt, OpenWindow window) {
  ZT_FAIL_IF(!is_http_url(url), argument, "%s: not an http:// or https:// URL",
             url_for_messages(url).c_str());
  HttpOptions o = opt;
  bool has_auth = false;
  for (size_t k = 0; k < o.headers.size(); ++k) {
    // Named by its place, never by its text: a header's value may be a token.
    const std::string& h = o.headers[k];
    ZT_FAIL_IF(h.find(':') == std::string::npos || h.find_first_of("\r\n") != std::string::npos,
               argument,
               "HTTP header %zu of %zu is not one \"Name: value\" line (not shown: it may "
               "hold a secret)",
               k + 1, o.headers.size());
    has_auth = has_auth || iequals_prefix(h, "authorization:");
  }
  if (const char* token = std::getenv("ZT_HTTP_BEARER_TOKEN");
      token && *token && !has_auth && may_send_environment_token(url))
    o.headers.push_back(std::string("Authorization: Bearer ") + token);
  curl_init_once();
  auto src = std::make_shared<HttpSource>(url, std::move(o));
  auto bytes = src->open(window);
  ZT_TRY(bytes);
  RangeOpened out;
  if (!*bytes) return out;  // not there, and the window allows it
  out.bytes = std::move(**bytes);
  out.end = window.end;
  out.source = std::move(src);
  return out;
}

}  // namespace zt
