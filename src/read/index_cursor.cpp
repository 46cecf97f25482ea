#include "read/index_cursor.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "read/content.h"

namespace zt {

using ull = unsigned long long;

IndexCursor::IndexCursor(std::unique_ptr<ByteWindows> windows, DType dtype, uint64_t count,
                         std::string where)
    : windows_(std::move(windows)),
      dtype_(dtype),
      width_(dtype_width(dtype)),
      count_(count),
      where_(std::move(where)) {}

__int128 IndexCursor::load(const uint8_t* p) const {
  return load_index(std::span<const uint8_t>(p, width_), dtype_, 0);
}

Result<__int128> IndexCursor::next_across() {
  ZT_FAIL_IF(taken_ >= count_, invalid, "%s: reading past its %llu elements", where_.c_str(),
             static_cast<ull>(count_));
  uint8_t element[16];
  unsigned have = 0;
  for (;;) {
    const size_t n = std::min<size_t>(width_ - have, window_.size() - pos_);
    if (n > 0) std::memcpy(element + have, window_.data() + pos_, n);  // (a first window is null)
    have += static_cast<unsigned>(n);
    pos_ += n;
    if (have == width_) break;
    auto w = windows_->next();
    ZT_TRY(w);
    ZT_FAIL_IF(w->empty(), invalid, "%s: its bytes end after %llu of %llu elements", where_.c_str(),
               static_cast<ull>(taken_), static_cast<ull>(count_));
    window_ = *w;
    pos_ = 0;
  }
  ++taken_;
  return load(element);
}

Result<void> IndexCursor::skip(uint64_t n) {
  ZT_FAIL_IF(n > count_ - taken_, invalid, "%s: reading past its %llu elements", where_.c_str(),
             static_cast<ull>(count_));
  // Whole windows are passed over without loading their elements.
  uint64_t bytes = n * width_;
  for (;;) {
    const uint64_t here = std::min<uint64_t>(bytes, window_.size() - pos_);
    pos_ += static_cast<size_t>(here);
    bytes -= here;
    if (bytes == 0) break;
    auto w = windows_->next();
    ZT_TRY(w);
    ZT_FAIL_IF(w->empty(), invalid, "%s: its bytes end before element %llu of %llu", where_.c_str(),
               static_cast<ull>(taken_ + n), static_cast<ull>(count_));
    window_ = *w;
    pos_ = 0;
  }
  taken_ += n;
  return {};
}

Result<void> IndexCursor::expect_end() {
  for (;;) {
    ZT_FAIL_IF(pos_ < window_.size(), invalid, "%s: more bytes than its %llu elements",
               where_.c_str(), static_cast<ull>(count_));
    auto w = windows_->next();
    ZT_TRY(w);
    if (w->empty()) return {};
    window_ = *w;
    pos_ = 0;
  }
}

}  // namespace zt
