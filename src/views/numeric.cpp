// The number-conversion kernels: any stored numeric format (integers,
// bool, f16, bf16, FP8, complex parts) into float or double.
#include <cstring>
#include <type_traits>

#include "views/kernels.h"

namespace zt {

using namespace zt::views;
using ull = unsigned long long;

namespace {

// dst[i] = T(f(S at src + i * sizeof(S))). Blocks of a fixed 16 elements,
// which the compiler unrolls and vectorises at -O2 (a loop of unknown
// length it leaves scalar there).
template <typename S, typename T, typename F>
void convert_loop(const uint8_t* src, uint64_t n, T* dst, F&& f) {
  constexpr uint64_t kBlock = 16;
  uint64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    S in[kBlock];
    std::memcpy(in, src + i * sizeof(S), sizeof in);
    for (uint64_t l = 0; l < kBlock; ++l) dst[i + l] = static_cast<T>(f(in[l]));
  }
  for (; i < n; ++i) dst[i] = static_cast<T>(f(load_unaligned<S>(src + i * sizeof(S))));
}

template <typename S, typename T>
void convert_loop(const uint8_t* src, uint64_t n, T* dst) {
  convert_loop<S>(src, n, dst, [](S v) { return v; });
}

}  // namespace

template <typename T>
void convert_f4_values(const uint8_t* src, uint64_t first, uint64_t n, T* dst) {
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t nibble = first + i;
    dst[i] = static_cast<T>(kF4E2m1[(src[nibble / 2] >> (4 * (nibble % 2))) & 0x0f]);
  }
}

template <typename T>
void convert_values(const uint8_t* src, const NumericFormat& f, uint64_t n, T* dst) {
  if (f.f4) return convert_f4_values(src, 0, n, dst);
  if (f.fp8 != Fp8::none) {
    const float* table = fp8_table(f.fp8);
    for (uint64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(table[src[i]]);
    return;
  }
  switch (f.dtype) {
    case DType::f64:
      return convert_loop<double>(src, n, dst);
    case DType::f32:
      if constexpr (std::is_same_v<T, float>) {
        if (n) std::memcpy(dst, src, n * sizeof(float));
        return;
      } else {
        return convert_loop<float>(src, n, dst);
      }
    case DType::f16:
      return convert_loop<uint16_t>(src, n, dst, f16_to_f32);
    case DType::bf16:
      return convert_loop<uint16_t>(src, n, dst, bf16_to_f32);
    case DType::i64:
      return convert_loop<int64_t>(src, n, dst);
    case DType::i32:
      return convert_loop<int32_t>(src, n, dst);
    case DType::i16:
      return convert_loop<int16_t>(src, n, dst);
    case DType::i8:
      return convert_loop<int8_t>(src, n, dst);
    case DType::u64:
      return convert_loop<uint64_t>(src, n, dst);
    case DType::u32:
      return convert_loop<uint32_t>(src, n, dst);
    case DType::u16:
      return convert_loop<uint16_t>(src, n, dst);
    case DType::u8:
      return convert_loop<uint8_t>(src, n, dst);
    case DType::boolean:
      for (uint64_t i = 0; i < n; ++i) dst[i] = src[i] != 0 ? T{1} : T{0};
      return;
  }
}

template void convert_f4_values<float>(const uint8_t*, uint64_t, uint64_t, float*);
template void convert_f4_values<double>(const uint8_t*, uint64_t, uint64_t, double*);
template void convert_values<float>(const uint8_t*, const NumericFormat&, uint64_t, float*);
template void convert_values<double>(const uint8_t*, const NumericFormat&, uint64_t, double*);

Result<NumericFormat> numeric_format(const Object& o, const Component& c) {
  NumericFormat f;
  f.dtype = c.dtype;
  if (!c.type) return f;
  const std::string& t = *c.type;
  if (t == "f8_e4m3fn") {
    f.fp8 = Fp8::e4m3fn;
  } else if (t == "f8_e5m2") {
    f.fp8 = Fp8::e5m2;
  } else if (t == "f8_e4m3fnuz") {
    f.fp8 = Fp8::e4m3fnuz;
  } else if (t == "f8_e5m2fnuz") {
    f.fp8 = Fp8::e5m2fnuz;
  } else if (t == "f8_e8m0" && c.known_type) {  // v2 types: unknown text in 1.x
    f.fp8 = Fp8::e8m0;
  } else if (t == "f4_e2m1" && c.known_type) {
    f.f4 = true;
  } else if (t == "bool" && c.known_type) {  // bytes 0 and 1, as 1.2's bool dtype
    f.dtype = DType::boolean;
  } else if (t == "complex64" || t == "complex128") {
    f.ratio = 2;
  } else {
    return make_error(Status::unsupported,
                      "%s: logical type \"%s\" is not one this library can convert",
                      component_where(o, c).c_str(), t.c_str());
  }
  // The parser pairs known types with their storage dtype; checked again
  // because a table lookup trusts it.
  const bool byte_type = f.fp8 != Fp8::none || f.f4 || f.dtype == DType::boolean;
  ZT_FAIL_IF(byte_type && c.dtype != DType::u8, invalid, "%s: type \"%s\" needs dtype \"u8\"",
             component_where(o, c).c_str(), t.c_str());
  return f;
}

}  // namespace zt
