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

// A logical type the library knows: the dtype it requires, how many storage
// elements make one logical element, and for packed sub-byte types how many
// logical elements share one byte (v2's f4_e2m1: two, low nibble first).
// Its size function (v2 spec §4.2) is n * ratio * width, or ceil(n /
// per_byte) bytes when packed.
struct LogicalType {
  std::string_view name;
  DType storage;
  unsigned ratio;
  unsigned per_byte = 0;  // 0: not packed
  bool v2_only = false;   // registered by v2 (Appendix A), not by 1.2
};
// The registered type called `name`: 1.2's, and with v2 also v2's own
// (bool, f8_e8m0, f4_e2m1). nullptr when unknown.
const LogicalType* find_logical_type(std::string_view name, bool v2 = false);

// Bytes of n values of `storage` under the logical type `type` (nullptr:
// none): the type's size function above; nullopt when it overflows.
std::optional<uint64_t> values_bytes(DType storage, const LogicalType* type, uint64_t n);

// FP4 as a 1.2 file holds it: torch's float4_e2m1fn_x2, one u8 per pair of
// E2M1 values (low nibble first), the shape counting pairs. 1.2 registers
// no packed type, so this is a plain byte type to any 1.2 reader (sizes as
// u8) and nothing is lost; v2 files use f4_e2m1, which counts values
// (docs/cli.md, "FP4").
inline constexpr std::string_view kF4PairsType = "f4_e2m1fn_x2";

// 1.1.0 wrote f8 and complex types as dtypes; 1.2.0 spells them dtype + type.
struct LegacyDType {
  DType storage;
  std::string_view type;
};
std::optional<LegacyDType> v11_dtype_upgrade(std::string_view s);

}  // namespace zt
