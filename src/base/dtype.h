// The 13 storage types of spec 1.2.0 and the logical types layered on them.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace zt {

enum class DType : uint8_t { f64, f32, f16, bf16, i64, i32, i16, i8, u64, u32, u16, u8, boolean };

inline constexpr int kDTypeCount = 13;

// Byte width of one storage element.
unsigned dtype_width(DType d);
// Spec name: "f32", "bool", ...
std::string_view dtype_name(DType d);
std::optional<DType> dtype_from_name(std::string_view s);
// 0.1.0 / 1.0.x long names: "float32", "uint8", "bool", ...
std::optional<DType> dtype_from_legacy_name(std::string_view s);
bool dtype_is_integer(DType d);
bool dtype_is_signed(DType d);
bool dtype_is_float(DType d);

// A logical type the library knows: the dtype it requires and how many
// storage elements make one logical element.
struct LogicalType {
  std::string_view name;
  DType storage;
  unsigned ratio;
};
const LogicalType* find_logical_type(std::string_view name);

// 1.1.0 wrote f8 and complex types as dtypes; 1.2.0 spells them dtype + type.
struct LegacyDType {
  DType storage;
  std::string_view type;
};
std::optional<LegacyDType> v11_dtype_upgrade(std::string_view s);

}  // namespace zt
