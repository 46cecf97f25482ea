#include "manifest/manifest.h"

namespace zt {

namespace {

uint32_t hash32(std::string_view name) {
  return static_cast<uint32_t>(std::hash<std::string_view>{}(name));
}

uint64_t slot_of(uint32_t hash, uint32_t index) {
  return uint64_t{hash} << 32 | (uint64_t{index} + 1);
}

uint32_t hash_in(uint64_t slot) {
  return static_cast<uint32_t>(slot >> 32);
}

uint32_t index_in(uint64_t slot) {
  return static_cast<uint32_t>(slot) - 1;
}

}  // namespace

// Entries are placed by the 32 bits kept, in tables of any size (the
// object limit keeps them far below 2^32 slots, where that is every bit).
void NameIndex::rehash(size_t capacity) {
  std::vector<uint64_t> old = std::move(table_);
  table_.assign(capacity, 0);
  const size_t mask = capacity - 1;
  for (const uint64_t slot : old) {
    if (!slot) continue;
    size_t h = hash_in(slot) & mask;
    while (table_[h]) h = (h + 1) & mask;
    table_[h] = slot;
  }
}

void NameIndex::reserve(size_t n) {
  size_t capacity = 16;
  while (capacity < 2 * n) capacity *= 2;
  if (capacity > table_.size()) rehash(capacity);
}

bool NameIndex::insert(uint32_t i, const std::vector<Object>& objects) {
  if (2 * (used_ + 1) > table_.size()) rehash(table_.empty() ? 16 : 2 * table_.size());
  const std::string_view name = objects[i].name;
  const uint32_t hash = hash32(name);
  const size_t mask = table_.size() - 1;
  for (size_t h = hash & mask;; h = (h + 1) & mask) {
    const uint64_t slot = table_[h];
    if (!slot) {
      table_[h] = slot_of(hash, i);
      ++used_;
      return true;
    }
    if (hash_in(slot) == hash && objects[index_in(slot)].name == name) return false;
  }
}

std::optional<size_t> NameIndex::find(std::string_view name,
                                      const std::vector<Object>& objects) const {
  if (table_.empty()) return std::nullopt;
  const uint32_t hash = hash32(name);
  const size_t mask = table_.size() - 1;
  for (size_t h = hash & mask; table_[h]; h = (h + 1) & mask) {
    const uint64_t slot = table_[h];
    if (hash_in(slot) == hash && objects[index_in(slot)].name == name) return index_in(slot);
  }
  return std::nullopt;
}

}  // namespace zt
