// Scalar decoding of the narrow floating-point formats: f16, bf16, the
// four FP8 types of spec 1.2.0 and v2's f8_e8m0. Header-only: the bulk converters in numeric.cpp
// inline these into one tight loop per source type.
//
// FP8 (one byte: sign, E exponent bits, M mantissa bits, bias B):
//   f8_e4m3fn    E4 M3 B7   OCP FP8 E4M3: no infinities; S.1111.111 is NaN
//                           (so 0x7F and 0xFF); max 448; -0 exists.
//   f8_e5m2      E5 M2 B15  OCP FP8 E5M2, IEEE-like: S.11111.00 is +-inf,
//                           S.11111.xx (xx != 0) is NaN; max 57344.
//   f8_e4m3fnuz  E4 M3 B8   "fnuz" (finite, no negative zero): 0x80 is the
//                           only NaN, no infinities, no -0; max 240.
//   f8_e5m2fnuz  E5 M2 B16  as above; max 57344.
//   f8_e8m0      E8 M0 B127 (v2, OCP MX scales): no sign, 2^(e-127); 0xFF is
//                NaN; no zero (0x00 is 2^-127, an f32 subnormal).
// Exponent field 0 is subnormal: (-1)^S * 2^(1-B) * m/2^M; otherwise
// (-1)^S * 2^(e-B) * (1 + m/2^M).
#pragma once

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>

namespace zt {

enum class Fp8 : uint8_t { none, e4m3fn, e5m2, e4m3fnuz, e5m2fnuz, e8m0 };

// IEEE binary16 to binary32, exact for every code (subnormals, +-0, +-inf,
// NaN payloads). Subnormals are built by an exact integer-to-float product
// rather than by scaling a denormal float, so a caller's flush-to-zero /
// denormals-are-zero mode cannot turn them into zeros.
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7fffu;  // exponent and mantissa
  // Normal and inf/NaN: move the fields into place and rebias the exponent
  // (15 -> 127, or the all-ones exponent 31 -> 255). Selects, no branches,
  // so that the loops of numeric.cpp vectorise.
  const uint32_t shifted = (em << 13) + (em >= 0x7c00u ? (224u << 23) : (112u << 23));
  const uint32_t subnormal = std::bit_cast<uint32_t>(static_cast<float>(em) * 0x1p-24f);
  return std::bit_cast<float>((em < 0x0400u ? subnormal : shifted) | sign);
}

// The IEEE binary16 bits of v, rounded to nearest even (subnormals too;
// overflow to infinity, NaN to the quiet NaN 0x7e00).
inline uint16_t f16_bits_of(double v) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (std::isnan(v)) return 0x7e00;
  if (a >= 65520.0) return sign | 0x7c00;  // 65504 is the largest half; 65520 rounds up
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  if (a != 0 && e - 1 >= -14) {
    uint32_t mant = static_cast<uint32_t>(std::nearbyint(std::ldexp(a, 10 - (e - 1))));
    int exp = e - 1;
    if (mant == 2048) mant = 1024, ++exp;
    if (exp > 15) return sign | 0x7c00;
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(exp + 15) << 10 | (mant - 1024));
  }
  return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(std::ldexp(a, 24))));
}

// bfloat16 is the top half of a binary32.
inline float bf16_to_f32(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

namespace detail {

struct Fp8Params {
  unsigned exp_bits, man_bits;
  int bias;
};

constexpr Fp8Params fp8_params(Fp8 kind) {
  switch (kind) {
    case Fp8::e4m3fn:
      return {4, 3, 7};
    case Fp8::e5m2:
      return {5, 2, 15};
    case Fp8::e4m3fnuz:
      return {4, 3, 8};
    case Fp8::e5m2fnuz:
      return {5, 2, 16};
    case Fp8::e8m0:
      return {8, 0, 127};
    case Fp8::none:
      break;
  }
  return {0, 0, 0};
}

constexpr float pow2(int e) {
  float r = 1.0f;
  for (; e > 0; --e) r *= 2.0f;
  for (; e < 0; ++e) r *= 0.5f;  // exact: powers of two down to 2^-149 are f32 values
  return r;
}

// The value of one FP8 code, exactly (every FP8 value is an f32 value).
constexpr float fp8_value(uint8_t code, Fp8 kind) {
  if (kind == Fp8::e8m0)  // unsigned exponent only
    return code == 0xFFu ? std::bit_cast<float>(0x7fc00000u) : pow2(static_cast<int>(code) - 127);
  const Fp8Params p = fp8_params(kind);
  const bool negative = (code & 0x80u) != 0;
  const unsigned e = (code >> p.man_bits) & ((1u << p.exp_bits) - 1u);
  const unsigned m = code & ((1u << p.man_bits) - 1u);
  const unsigned e_max = (1u << p.exp_bits) - 1u;
  const unsigned m_max = (1u << p.man_bits) - 1u;
  const float nan = std::bit_cast<float>(negative ? 0xffc00000u : 0x7fc00000u);
  const bool fnuz = kind == Fp8::e4m3fnuz || kind == Fp8::e5m2fnuz;
  if (fnuz && code == 0x80u) return std::bit_cast<float>(0x7fc00000u);
  if (kind == Fp8::e4m3fn && e == e_max && m == m_max) return nan;
  if (kind == Fp8::e5m2 && e == e_max)
    return m == 0 ? std::bit_cast<float>(negative ? 0xff800000u : 0x7f800000u) : nan;
  const float magnitude =
      e == 0 ? static_cast<float>(m) * pow2(1 - p.bias - static_cast<int>(p.man_bits))
             : static_cast<float>((1u << p.man_bits) + m) *
                   pow2(static_cast<int>(e) - p.bias - static_cast<int>(p.man_bits));
  return negative ? -magnitude : magnitude;
}

constexpr std::array<float, 256> make_fp8_table(Fp8 kind) {
  std::array<float, 256> t{};
  for (unsigned c = 0; c < 256; ++c) t[c] = fp8_value(static_cast<uint8_t>(c), kind);
  return t;
}

inline constexpr std::array<float, 256> kFp8E4m3fn = make_fp8_table(Fp8::e4m3fn);
inline constexpr std::array<float, 256> kFp8E5m2 = make_fp8_table(Fp8::e5m2);
inline constexpr std::array<float, 256> kFp8E4m3fnuz = make_fp8_table(Fp8::e4m3fnuz);
inline constexpr std::array<float, 256> kFp8E5m2fnuz = make_fp8_table(Fp8::e5m2fnuz);
inline constexpr std::array<float, 256> kFp8E8m0 = make_fp8_table(Fp8::e8m0);

}  // namespace detail

// FP4 E2M1 (v2's f4_e2m1, OCP MX): one nibble, sign, 2 exponent bits, 1
// mantissa bit, bias 1; no infinities, no NaN; -0 exists; max 6.
inline constexpr std::array<float, 16> kF4E2m1 = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,
                                                  4.0f,  6.0f,  -0.0f, -0.5f, -1.0f, -1.5f,
                                                  -2.0f, -3.0f, -4.0f, -6.0f};

// The 256 values of one FP8 type (nullptr for Fp8::none), built at compile time.
inline const float* fp8_table(Fp8 kind) {
  switch (kind) {
    case Fp8::e4m3fn:
      return detail::kFp8E4m3fn.data();
    case Fp8::e5m2:
      return detail::kFp8E5m2.data();
    case Fp8::e4m3fnuz:
      return detail::kFp8E4m3fnuz.data();
    case Fp8::e5m2fnuz:
      return detail::kFp8E5m2fnuz.data();
    case Fp8::e8m0:
      return detail::kFp8E8m0.data();
    case Fp8::none:
      break;
  }
  return nullptr;
}

inline float fp8_to_f32(uint8_t code, Fp8 kind) {
  return fp8_table(kind)[code];
}

}  // namespace zt
