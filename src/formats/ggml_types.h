// Every tensor type ggml defines (ggml.h's enum ggml_type, with the sizes of
// its type_traits: sizeof(block_<type>); gguf-py's GGML_QUANT_SIZES says 40
// for Q8_1, ggml's block_q8_1 is 36: two halves and 32 int8): a new type is
// one row of kGgmlTypes. The one table of block geometry: the GGUF reader
// and writer and v2's gguf.* layouts (formats/profile_gguf.cpp) read it. Plain types have blocks of
// one element and a zTensor dtype; block-quantized types are carried as their raw blocks. Ids 31-33
// and 36-38 are the interleaved Q4_0/IQ4_NL repackings that llama.cpp wrote into GGUF files in 2024
// before removing them: files holding them still exist.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "base/dtype.h"

namespace zt {

struct GgmlType {
  uint32_t id;
  std::string_view name;
  uint32_t block;  // elements per block
  uint32_t bytes;  // bytes per block
  std::optional<DType> dense;
};

inline constexpr std::array<GgmlType, 41> kGgmlTypes = {{
    {0, "F32", 1, 4, DType::f32},   {1, "F16", 1, 2, DType::f16},    {2, "Q4_0", 32, 18, {}},
    {3, "Q4_1", 32, 20, {}},        {6, "Q5_0", 32, 22, {}},         {7, "Q5_1", 32, 24, {}},
    {8, "Q8_0", 32, 34, {}},        {9, "Q8_1", 32, 36, {}},         {10, "Q2_K", 256, 84, {}},
    {11, "Q3_K", 256, 110, {}},     {12, "Q4_K", 256, 144, {}},      {13, "Q5_K", 256, 176, {}},
    {14, "Q6_K", 256, 210, {}},     {15, "Q8_K", 256, 292, {}},      {16, "IQ2_XXS", 256, 66, {}},
    {17, "IQ2_XS", 256, 74, {}},    {18, "IQ3_XXS", 256, 98, {}},    {19, "IQ1_S", 256, 50, {}},
    {20, "IQ4_NL", 32, 18, {}},     {21, "IQ3_S", 256, 110, {}},     {22, "IQ2_S", 256, 82, {}},
    {23, "IQ4_XS", 256, 136, {}},   {24, "I8", 1, 1, DType::i8},     {25, "I16", 1, 2, DType::i16},
    {26, "I32", 1, 4, DType::i32},  {27, "I64", 1, 8, DType::i64},   {28, "F64", 1, 8, DType::f64},
    {29, "IQ1_M", 256, 56, {}},     {30, "BF16", 1, 2, DType::bf16}, {31, "Q4_0_4_4", 32, 18, {}},
    {32, "Q4_0_4_8", 32, 18, {}},   {33, "Q4_0_8_8", 32, 18, {}},    {34, "TQ1_0", 256, 54, {}},
    {35, "TQ2_0", 256, 66, {}},     {36, "IQ4_NL_4_4", 32, 18, {}},  {37, "IQ4_NL_4_8", 32, 18, {}},
    {38, "IQ4_NL_8_8", 32, 18, {}}, {39, "MXFP4", 32, 17, {}},       {40, "NVFP4", 64, 36, {}},
    {41, "Q1_0", 128, 18, {}},      {42, "Q2_0", 64, 18, {}},
}};

inline const GgmlType* find_ggml_type(uint32_t id) {
  for (const GgmlType& t : kGgmlTypes)
    if (t.id == id) return &t;
  return nullptr;
}

inline const GgmlType* find_ggml_type(std::string_view name) {
  for (const GgmlType& t : kGgmlTypes)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace zt
