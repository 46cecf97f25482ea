#include "source/range_source.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <vector>

namespace zt {

// Neighbouring ranges (gaps of at most kReadRunGap bytes, kRunBytes in all)
// are one read into a buffer of the run's size, copied out: a caller's
// source (zt_open_source) is then called once for the many small tensors
// decode_many gathers, not once a tensor; each call may be a round trip.
// A run of one range is read straight into its buffer.
Result<void> RangeSource::read_many(std::span<const RangeRead> reads) const {
  constexpr uint64_t kRunBytes = uint64_t{16} << 20;
  std::vector<uint8_t> run;
  for (size_t i = 0; i < reads.size();) {
    size_t j = i + 1;
    while (j < reads.size() && reads[j].offset <= end_of(reads[j - 1]) + kReadRunGap &&
           reads[j].offset >= end_of(reads[j - 1]) &&
           end_of(reads[j]) - reads[i].offset <= kRunBytes)
      ++j;
    if (j == i + 1) {
      ZT_TRY(read(reads[i].offset, reads[i].dst));
    } else {
      run.resize(end_of(reads[j - 1]) - reads[i].offset);
      ZT_TRY(read(reads[i].offset, run));
      for (const RangeRead& r : reads.subspan(i, j - i))
        std::memcpy(r.dst.data(), run.data() + (r.offset - reads[i].offset), r.dst.size());
    }
    i = j;
  }
  return {};
}

uint64_t RangeOpened::offset() const {
  return end == OpenWindow::End::head ? 0 : source->size() - bytes.size();
}

Result<RangeOpened> RangeSource::sibling(std::string_view file_name, OpenWindow) const {
  return make_error(Status::unsupported, "%s: cannot open \"%.*s\" beside it (a v2 shard)",
                    name().c_str(), static_cast<int>(file_name.size()), file_name.data());
}

uint64_t CacheBudget::held() const {
  std::lock_guard lock(mu_);
  return held_;
}

RangeCache::RangeCache(std::shared_ptr<const RangeSource> inner, uint64_t capacity)
    : RangeCache(std::move(inner), std::make_shared<const CacheBudget>(capacity)) {}

RangeCache::RangeCache(std::shared_ptr<const RangeSource> inner,
                       std::shared_ptr<const CacheBudget> budget)
    : inner_(std::move(inner)), budget_(std::move(budget)), mu_(budget_->mu_) {}

// Its entries leave the budget with it.
RangeCache::~RangeCache() {
  std::lock_guard lock(mu_);
  for (auto& [off, e] : entries_) {
    budget_->held_ -= e.bytes.size();
    budget_->lru_.erase(e.use);
  }
}

std::shared_ptr<const RangeCache> RangeCache::of(RangeOpened opened, uint64_t capacity) {
  return of(std::move(opened), std::make_shared<const CacheBudget>(capacity));
}

std::shared_ptr<const RangeCache> RangeCache::of(RangeOpened opened,
                                                 std::shared_ptr<const CacheBudget> budget) {
  // The offset first: keep() takes the bytes away.
  const uint64_t at = opened.offset();
  auto cache = std::make_shared<const RangeCache>(std::move(opened.source), std::move(budget));
  if (!opened.bytes.empty()) cache->keep(at, std::move(opened.bytes));
  return cache;
}

std::vector<std::pair<uint64_t, uint64_t>> RangeCache::copy_cached(uint64_t off,
                                                                   std::span<uint8_t> dst) const {
  std::vector<std::pair<uint64_t, uint64_t>> gaps;
  const uint64_t end = off + dst.size();
  uint64_t at = off;
  std::lock_guard lock(mu_);
  auto it = entries_.upper_bound(off);
  if (it != entries_.begin()) --it;
  for (; it != entries_.end() && it->first < end; ++it) {
    const uint64_t e_begin = it->first;
    const uint64_t e_end = e_begin + it->second.bytes.size();
    if (e_end <= at) continue;
    if (e_begin > at) gaps.emplace_back(at, e_begin);
    const uint64_t from = std::max(at, e_begin);
    const uint64_t to = std::min(end, e_end);
    std::memcpy(dst.data() + (from - off), it->second.bytes.data() + (from - e_begin), to - from);
    budget_->lru_.splice(budget_->lru_.begin(), budget_->lru_, it->second.use);
    at = to;
  }
  if (at < end) gaps.emplace_back(at, end);
  return gaps;
}

void RangeCache::insert_locked(uint64_t off, std::vector<uint8_t> bytes) const {
  const uint64_t n = bytes.size();
  if (n == 0 || !keeps(n)) return;
  // Another thread may have fetched an overlapping range meanwhile: the
  // entries never overlap, so the later copy is dropped.
  auto next = entries_.lower_bound(off);
  if (next != entries_.end() && next->first < off + n) return;
  if (next != entries_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.bytes.size() > off) return;
  }
  // The budget's least recently used entries go first, whichever of its
  // caches holds them.
  auto& lru = budget_->lru_;
  while (budget_->held_ + n > capacity() && !lru.empty()) {
    const auto [cache, victim_off] = lru.back();
    auto victim = cache->entries_.find(victim_off);
    budget_->held_ -= victim->second.bytes.size();
    cache->entries_.erase(victim);
    lru.pop_back();
  }
  // The entry first, then its place in the list: a failed allocation
  // leaves no list node without an entry (which eviction, in any cache of
  // the budget, would look up).
  const auto entry = entries_.emplace(off, Entry{std::move(bytes), {}}).first;
  try {
    lru.emplace_front(this, off);
  } catch (...) {
    entries_.erase(entry);
    throw;
  }
  entry->second.use = lru.begin();
  budget_->held_ += n;
}

void RangeCache::keep(uint64_t off, std::vector<uint8_t> bytes) const {
  std::lock_guard lock(mu_);
  insert_locked(off, std::move(bytes));
}

Result<void> RangeCache::read(uint64_t off, std::span<uint8_t> dst) const {
  if (dst.empty()) return {};
  const RangeRead one{off, dst};
  return read_many(std::span(&one, 1));
}

Result<void> RangeCache::read_many(std::span<const RangeRead> reads) const {
  std::vector<RangeRead> fetch;
  for (const RangeRead& r : reads) {
    // A read too large to keep goes to the source whole: pieces of it that
    // the cache holds (a column slice's runs, say) would split it into as
    // many requests.
    if (!keeps(r.dst.size())) {
      fetch.push_back(r);
      continue;
    }
    for (const auto& [b, e] : copy_cached(r.offset, r.dst))
      fetch.push_back({b, r.dst.subspan(b - r.offset, e - b)});
  }
  return fetch_and_keep(fetch);
}

Result<void> RangeCache::fetch_and_keep(std::span<const RangeRead> fetch) const {
  if (fetch.empty()) return {};
  // The missing pieces fetched together; kept when small (a large read is
  // a tensor the Reader caches decoded, or streams).
  ZT_TRY(inner_->read_many(fetch));
  std::lock_guard lock(mu_);
  for (const RangeRead& f : fetch)
    if (keeps(f.dst.size()))
      insert_locked(f.offset, std::vector<uint8_t>(f.dst.begin(), f.dst.end()));
  return {};
}

Result<void> RangeCache::prefetch(std::span<const std::pair<uint64_t, uint64_t>> ranges) const {
  std::deque<std::vector<uint8_t>> buffers;  // stable addresses as it grows
  std::vector<RangeRead> fetch;
  for (const auto& [off, len] : ranges) {
    if (len == 0 || !keeps(len)) continue;
    std::vector<uint8_t> probe(len);
    for (const auto& [b, e] : copy_cached(off, probe)) {
      buffers.emplace_back(e - b);
      fetch.push_back({b, buffers.back()});
    }
  }
  std::sort(fetch.begin(), fetch.end(),
            [](const RangeRead& a, const RangeRead& b) { return a.offset < b.offset; });
  return fetch_and_keep(fetch);
}

}  // namespace zt
