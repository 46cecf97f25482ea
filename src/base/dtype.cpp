#include "base/dtype.h"

#include <array>

#include "base/arithmetic.h"

namespace zt {
namespace {

struct DTypeInfo {
  std::string_view name;
  std::string_view legacy;
  unsigned width;
};

constexpr std::array<DTypeInfo, kDTypeCount> kInfo = {{
    {"f64", "float64", 8},
    {"f32", "float32", 4},
    {"f16", "float16", 2},
    {"bf16", "bfloat16", 2},
    {"i64", "int64", 8},
    {"i32", "int32", 4},
    {"i16", "int16", 2},
    {"i8", "int8", 1},
    {"u64", "uint64", 8},
    {"u32", "uint32", 4},
    {"u16", "uint16", 2},
    {"u8", "uint8", 1},
    {"bool", "bool", 1},
}};

constexpr std::array<LogicalType, 9> kLogical = {{
    {"f8_e4m3fn", DType::u8, 1},
    {"f8_e5m2", DType::u8, 1},
    {"f8_e4m3fnuz", DType::u8, 1},
    {"f8_e5m2fnuz", DType::u8, 1},
    {"complex64", DType::f32, 2},
    {"complex128", DType::f64, 2},
    {"bool", DType::u8, 1, 0, true},
    {"f8_e8m0", DType::u8, 1, 0, true},
    {"f4_e2m1", DType::u8, 1, 2, true},
}};

const DTypeInfo& info(DType d) {
  return kInfo[static_cast<size_t>(d)];
}

}  // namespace

unsigned dtype_width(DType d) {
  return info(d).width;
}
std::string_view dtype_name(DType d) {
  return info(d).name;
}

std::optional<DType> dtype_from_name(std::string_view s) {
  for (size_t i = 0; i < kInfo.size(); ++i)
    if (kInfo[i].name == s) return static_cast<DType>(i);
  return std::nullopt;
}

std::optional<DType> dtype_from_legacy_name(std::string_view s) {
  for (size_t i = 0; i < kInfo.size(); ++i)
    if (kInfo[i].legacy == s) return static_cast<DType>(i);
  return std::nullopt;
}

bool dtype_is_integer(DType d) {
  return d >= DType::i64 && d <= DType::u8;
}
bool dtype_is_signed(DType d) {
  return d >= DType::i64 && d <= DType::i8;
}
bool dtype_is_float(DType d) {
  return d <= DType::bf16;
}

const LogicalType* find_logical_type(std::string_view name, bool v2) {
  for (const auto& t : kLogical)
    if (t.name == name && (v2 || !t.v2_only)) return &t;
  return nullptr;
}

std::optional<LegacyDType> v11_dtype_upgrade(std::string_view s) {
  if (s == "f8_e4m3") return LegacyDType{DType::u8, "f8_e4m3fn"};
  if (s == "f8_e5m2") return LegacyDType{DType::u8, "f8_e5m2"};
  if (s == "complex64") return LegacyDType{DType::f32, "complex64"};
  if (s == "complex128") return LegacyDType{DType::f64, "complex128"};
  return std::nullopt;
}

std::optional<uint64_t> values_bytes(DType storage, const LogicalType* type, uint64_t n) {
  if (type && type->per_byte) return ceil_div(n, type->per_byte);
  return checked_mul(n, static_cast<uint64_t>(dtype_width(storage)) * (type ? type->ratio : 1));
}

}  // namespace zt
