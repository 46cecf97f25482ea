// Bytes pulled a window at a time: how a content rule reads a component
// whatever it decodes to (a writer's check of what it wrote, a verify), in
// the memory of one window rather than of the whole component.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/error.h"

namespace zt {

class ByteWindows {
 public:
  virtual ~ByteWindows() = default;
  // The next window (valid until the following call); empty at the end.
  virtual Result<std::span<const uint8_t>> next() = 0;
};

// Bytes already in memory, handed out at once.
class SpanWindows final : public ByteWindows {
 public:
  explicit SpanWindows(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  Result<std::span<const uint8_t>> next() override {
    const auto out = bytes_;
    bytes_ = {};
    return out;
  }

 private:
  std::span<const uint8_t> bytes_;
};

}  // namespace zt
