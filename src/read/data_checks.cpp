// The data checks a held model's components run at the first read of
// their bytes (Component::crc_check: a zip member's CRC-32), once each.
#include <algorithm>
#include <functional>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "base/for_each_index.h"
#include "read/reader.h"

namespace zt {

Result<void> Reader::run_check(uint32_t index) const {
  DataCheck& check = checks_[index];
  std::call_once(check.once, [&] {
    const Result<void> r = check.run();
    if (!r) check.failed = r.error();
  });
  if (check.failed) return *check.failed;
  return {};
}

void Reader::run_checks(std::span<const Component* const> components, unsigned threads) const {
  if (check_count_ == 0) return;
  // Largest first (a check's bytes are at least its largest component's),
  // so that the threads end together.
  std::vector<std::pair<uint64_t, uint32_t>> by_size;
  for (const Component* c : components)
    if (c && c->crc_check) by_size.emplace_back(c->length, *c->crc_check);
  std::sort(by_size.begin(), by_size.end(), std::greater<>());
  std::vector<uint32_t> pending;
  std::vector<bool> seen(check_count_);
  for (const auto& [length, index] : by_size)
    if (!seen[index]) {
      seen[index] = true;
      pending.push_back(index);
    }
  for_each_index(pending.size(), threads, [&](size_t k) { (void)run_check(pending[k]); });
}

}  // namespace zt
