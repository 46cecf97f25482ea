// Checked and rounding arithmetic on sizes, shared by every stage.
#pragma once

#include <cstdint>
#include <optional>

namespace zt {

// a * b, nullopt on overflow.
inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// ceil(a / b) for b > 0, without the overflow of (a + b - 1) / b.
constexpr uint64_t ceil_div(uint64_t a, uint64_t b) {
  return a / b + (a % b != 0);
}

}  // namespace zt
