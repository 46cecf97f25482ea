#include "manifest/manifest.h"

namespace zt {

void NameIndex::rehash(size_t capacity, const std::vector<Object>& objects) {
  std::vector<uint32_t> old = std::move(table_);
  table_.assign(capacity, 0);
  used_ = 0;
  for (const uint32_t slot : old)
    if (slot) insert(slot - 1, objects);
}

void NameIndex::reserve(size_t n, const std::vector<Object>& objects) {
  size_t capacity = 16;
  while (capacity < 2 * n) capacity *= 2;
  if (capacity > table_.size()) rehash(capacity, objects);
}

bool NameIndex::insert(uint32_t i, const std::vector<Object>& objects) {
  if (2 * (used_ + 1) > table_.size()) rehash(table_.empty() ? 16 : 2 * table_.size(), objects);
  const std::string_view name = objects[i].name;
  const size_t mask = table_.size() - 1;
  for (size_t h = std::hash<std::string_view>{}(name)&mask;; h = (h + 1) & mask) {
    if (!table_[h]) {
      table_[h] = i + 1;
      ++used_;
      return true;
    }
    if (objects[table_[h] - 1].name == name) return false;
  }
}

std::optional<size_t> NameIndex::find(std::string_view name,
                                      const std::vector<Object>& objects) const {
  if (table_.empty()) return std::nullopt;
  const size_t mask = table_.size() - 1;
  for (size_t h = std::hash<std::string_view>{}(name)&mask; table_[h]; h = (h + 1) & mask)
    if (objects[table_[h] - 1].name == name) return table_[h] - 1;
  return std::nullopt;
}

}  // namespace zt
