// A file that is not on this machine's disk: bytes fetched by range (a
// caller's callbacks through zt_open_source, HTTP through zt_open_url).
// Source wraps one in a RangeCache; the rest of the library sees an
// unmapped Source, as in copy mode.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace zt {

// One range of a multi-range read: bytes [offset, offset + dst.size()).
struct RangeRead {
  uint64_t offset = 0;
  std::span<uint8_t> dst;
};

inline uint64_t end_of(const RangeRead& r) {
  return r.offset + r.dst.size();
}

// Reads whose gaps are at most this many bytes are read as one run (one
// preadv of a file, one read() of a caller's source), the gaps with them.
inline constexpr uint64_t kReadRunGap = 4096;

class RangeSource;

// What an open fetches with the file's size: its last `bytes` (a .zt
// footer and manifest) or its first (a safetensors header); fewer for a
// smaller file.
struct OpenWindow {
  enum class End { tail, head };
  uint64_t bytes = 0;
  End end = End::tail;
  // A file that is not there (HTTP 404 or 410), or that the server will
  // not give (401, 403: a pre-signed URL signs the one file it names, not
  // the files beside it), opens as nothing (a RangeOpened without a
  // source) instead of failing: for files a model may or may not have
  // beside it, such as config.json.
  bool missing_ok = false;
  // A file larger than this is refused (Status::limit) as soon as its size
  // is known, before its bytes are read: an index or config.json the open
  // means to take whole, over the limit on such files.
  uint64_t max_size = UINT64_MAX;
};

// A RangeSource as opened, with the bytes of its window the open fetched.
struct RangeOpened {
  std::shared_ptr<const RangeSource> source;  // null: not there (OpenWindow::missing_ok)
  std::vector<uint8_t> bytes;
  OpenWindow::End end = OpenWindow::End::tail;
  // Where `bytes` lie in the file.
  uint64_t offset() const;
};

class RangeSource {
 public:
  virtual ~RangeSource() = default;
  // The file's size, known from the open on.
  virtual uint64_t size() const = 0;
  // Fills dst with bytes [off, off + dst.size()), which lie inside the
  // file, or fails (Status::io with a message naming the source). Called
  // from any thread, possibly several at once.
  virtual Result<void> read(uint64_t off, std::span<uint8_t> dst) const = 0;
  // Several ranges, sorted by offset and not overlapping, in as few
  // round trips as the transport allows (HTTP: one request). The default
  // reads each run of neighbouring ranges (gaps of at most 4 KiB, 16 MiB
  // in all) with one read(), the others one by one.
  virtual Result<void> read_many(std::span<const RangeRead> reads) const;
  // Whether its bytes come as streams read in order (deflated zip members:
  // foreign/inflated_members.h): a read that starts behind where the last
  // one of its stream ended reads all that lies before it again, so a
  // planner keeps each range whole rather than cutting it into pieces
  // that threads would read side by side.
  virtual bool streams() const { return false; }
  // What messages call it: a URL without its query string (which may hold
  // a signature), or the caller's name for a callback source.
  virtual const std::string& name() const = 0;
  // The file `file_name` beside this one (a v2 shard, named by the
  // positional convention; a safetensors shard named by an index), with
  // the bytes of `window` where the transport gets them with the open
  // (HTTP: the ranged request that tells the size). Status::unsupported
  // unless the transport can address other files.
  virtual Result<RangeOpened> sibling(std::string_view file_name, OpenWindow window) const;
};

class RangeCache;

// One byte budget for the caches of one reader's files (a sharded model's
// root and its shards; an index's safetensors shards): what they hold
// together stays within the capacity the caller gave (cache_bytes), the
// least recently used entry of any of them dropped first. Its mutex guards
// every cache that shares it.
class CacheBudget {
 public:
  explicit CacheBudget(uint64_t capacity) : capacity_(capacity) {}
  uint64_t capacity() const { return capacity_; }
  // Bytes held by all the caches of the budget together.
  uint64_t held() const;

 private:
  friend class RangeCache;
  const uint64_t capacity_;
  mutable std::mutex mu_;
  // Entries of all the caches, most recently used first.
  mutable std::list<std::pair<const RangeCache*, uint64_t>> lru_;
  mutable uint64_t held_ = 0;
};

// The bounded cache in front of a RangeSource. Small reads (up to a
// quarter of the capacity) are kept, least recently used dropped first;
// such a read is served from the cache where it covers it and fetched
// where it does not, the missing pieces of one read in one read_many.
// Larger reads go to the source whole. The open
// seeds it with the file's tail and manifest so that they cost no second
// fetch. Thread-safe.
class RangeCache final : public RangeSource {
 public:
  static constexpr uint64_t kDefaultCapacity = uint64_t{64} << 20;

  // A cache with a budget of its own, or one sharing `budget`.
  RangeCache(std::shared_ptr<const RangeSource> inner, uint64_t capacity);
  RangeCache(std::shared_ptr<const RangeSource> inner, std::shared_ptr<const CacheBudget> budget);
  ~RangeCache() override;
  RangeCache(const RangeCache&) = delete;
  RangeCache& operator=(const RangeCache&) = delete;

  uint64_t size() const override { return inner_->size(); }
  Result<void> read(uint64_t off, std::span<uint8_t> dst) const override;
  Result<void> read_many(std::span<const RangeRead> reads) const override;
  const std::string& name() const override { return inner_->name(); }
  bool streams() const override { return inner_->streams(); }
  Result<RangeOpened> sibling(std::string_view file_name, OpenWindow window) const override {
    return inner_->sibling(file_name, window);
  }

  // Fetches the ranges not cached yet, in one read_many, and keeps them
  // (each if it fits). For reads known to come.
  Result<void> prefetch(std::span<const std::pair<uint64_t, uint64_t>> ranges) const;
  // Keeps bytes already fetched (the tail an HTTP open read with the size).
  void keep(uint64_t off, std::vector<uint8_t> bytes) const;
  // A cache over an opened source, holding the bytes its open fetched.
  static std::shared_ptr<const RangeCache> of(RangeOpened opened, uint64_t capacity);
  static std::shared_ptr<const RangeCache> of(RangeOpened opened,
                                              std::shared_ptr<const CacheBudget> budget);
  const RangeSource& inner() const { return *inner_; }
  uint64_t capacity() const { return budget_->capacity(); }
  // The budget it shares, for the caches of the reader's other files.
  const std::shared_ptr<const CacheBudget>& budget() const { return budget_; }

 private:
  using Use = std::list<std::pair<const RangeCache*, uint64_t>>::iterator;
  struct Entry {
    std::vector<uint8_t> bytes;
    Use use;  // its place in the budget's LRU list
  };
  // Copies what the cache holds of [off, off + dst.size()) into dst and
  // returns the gaps, sorted.
  std::vector<std::pair<uint64_t, uint64_t>> copy_cached(uint64_t off,
                                                         std::span<uint8_t> dst) const;
  void insert_locked(uint64_t off, std::vector<uint8_t> bytes) const;
  // Whether a read of n bytes is kept: up to a quarter of the capacity.
  bool keeps(uint64_t n) const { return n <= capacity() / 4; }
  // Reads `fetch` from the source in one read_many and keeps the pieces
  // small enough to keep.
  Result<void> fetch_and_keep(std::span<const RangeRead> fetch) const;

  std::shared_ptr<const RangeSource> inner_;
  std::shared_ptr<const CacheBudget> budget_;
  std::mutex& mu_;  // the budget's: eviction reaches into any of its caches
  mutable std::map<uint64_t, Entry> entries_;  // by offset; never overlapping
};

}  // namespace zt
