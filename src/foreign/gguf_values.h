// GGUF's metadata value types (the spec's gguf_metadata_value_type), their
// names as "gguf.types" spells them, and how deep arrays may nest: shared
// by the reader (gguf.cpp) and the writer (gguf_write.cpp), so that the
// writer never produces what the reader refuses.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace zt::foreign {

enum GgufValueType : uint32_t {
  kU8 = 0,
  kI8,
  kU16,
  kI16,
  kU32,
  kI32,
  kF32,
  kBool,
  kString,
  kArray,
  kU64,
  kI64,
  kF64,
  kValueTypes
};

inline constexpr std::array<std::string_view, kValueTypes> kValueTypeNames = {
    "uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
    "bool",  "string", "array",  "uint64", "int64",  "float64"};

// The value type of a scalar type name ("uint32"; not "array").
inline std::optional<uint32_t> gguf_scalar_type(std::string_view name) {
  for (uint32_t t = 0; t < kValueTypes; ++t)
    if (t != kArray && kValueTypeNames[t] == name) return t;
  return std::nullopt;
}

}  // namespace zt::foreign
