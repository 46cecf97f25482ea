// The integer elements of a component (sparse indices, coordinates) one
// at a time, from its decoded bytes pulled a window at a time: the CSR and
// COO rules walk parts of any size in the memory of one window.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/byte_windows.h"
#include "base/dtype.h"
#include "base/error.h"

namespace zt {

class IndexCursor {
 public:
  // `where` names the component in messages; `count` is how many elements
  // its size says it holds (windows that end before them: Status::invalid).
  IndexCursor(std::unique_ptr<ByteWindows> windows, DType dtype, uint64_t count, std::string where);

  // The next element as a signed 128-bit value (every integer dtype fits).
  Result<__int128> next() {
    if (pos_ + width_ <= window_.size()) {
      const __int128 v = load(window_.data() + pos_);
      pos_ += width_;
      ++taken_;
      return v;
    }
    return next_across();
  }
  // Passes over n elements.
  Result<void> skip(uint64_t n);
  // After the last element: the windows must end there (their own end
  // checks, a decoded size, run then); Status::invalid if more bytes come.
  Result<void> expect_end();
  uint64_t taken() const { return taken_; }

 private:
  __int128 load(const uint8_t* p) const;
  // An element that starts in one window and ends in a later one, or in
  // the next window.
  Result<__int128> next_across();

  std::unique_ptr<ByteWindows> windows_;
  DType dtype_;
  unsigned width_;
  uint64_t count_;
  std::string where_;
  std::span<const uint8_t> window_;
  size_t pos_ = 0;
  uint64_t taken_ = 0;
};

}  // namespace zt
