// GGML's Q8_0, Q4_0, Q5_0, Q4_1 and Q5_1 blocks as zTensor quantized_group
// objects, and back. quantized_group states w = (q - zero) x scale:
//   Q8_0  block = f16 d, 32 x int8 c; ggml: c x d.
//         -> bits 8, packing "1_per_u8", codes c + 128, zeros u8 128.
//   Q4_0  block = f16 d, 16 bytes: value j in the low nibble of byte j,
//         value j + 16 in its high nibble; ggml: (q - 8) x d.
//         -> bits 4, packing "2_per_u8", zeros u8 8.
//   Q5_0  block = f16 d, u32 qh, 16 bytes as Q4_0's: bit j of qh is value
//         j's fifth bit; ggml: (q - 16) x d.
//         -> bits 5, packing "1_per_u8", zeros u8 16.
//   Q4_1  block = f16 d, f16 m, 16 bytes as Q4_0's; ggml: q x d + m.
//         -> bits 4, packing "2_per_u8", zeros f64 -m/d.
//   Q5_1  block = f16 d, f16 m, u32 qh, 16 bytes as Q5_0's; ggml: q x d + m.
//         -> bits 5, packing "1_per_u8", zeros f64 -m/d.
// group_size 32, scales f16 d [G, N], zeros [G, N], packed_weight u8
// [W, N] (quantized_group's GPTQ layout: values of one input column k run
// down the words of column n), plus the attribute ggml_type, which brings
// the object back to its GGML type byte for byte.
//
// Dequantised in f32 the values are ggml's, bit for bit. For the _0 types
// each is one product of an exact integer and d, as ggml computes it. For
// the _1 types ggml rounds q x d + m once (q x d is exact); (q - zero) x d
// with zero = -m/d is computed at f64 (an f64 zero point makes the decoder
// work at f64, formats/quantized_group_view.cpp) and rounded once, which gives the same
// f32 unless the exact sum lies on a rounding midpoint. So a tensor is
// mapped only when every block checks out (every code's value equal, and
// d, m recovered from d, zero bit for bit); otherwise it stays raw blocks.
// The k-quants stay raw blocks: their sub-block scales are not one group.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "base/dtype.h"
#include "base/error.h"
#include "foreign/foreign.h"
#include "formats/ggml_types.h"

namespace zt::foreign {

// What quantized_group makes of a GGML type.
struct GgmlGroupForm {
  unsigned bits;
  std::string_view packing;
  DType zeros;  // u8 (a constant code) or f64 (-m/d)
};

// The quantized_group form of a GGML type; nullopt when it stays raw blocks.
std::optional<GgmlGroupForm> ggml_group_form(const GgmlType& t);

// The quantized_group object of a tensor held as GGML blocks: `shape` its
// row-major shape, whose last dimension is a whole, non-zero number of
// blocks, `blocks` not empty. Its buffers land in f.owned. nullopt when a
// Q4_1/Q5_1 block has no exact zero point (above): keep the blocks raw.
std::optional<ForeignObject> ggml_blocks_to_group(const GgmlType& t,
                                                  std::span<const uint8_t> blocks,
                                                  std::vector<uint64_t> shape, ForeignFile& f);

// The GGML blocks of a quantized_group made by ggml_blocks_to_group, row by
// row to `sink`. Status::argument when the components are not of that form
// (another packing, a constant zero other than the type's, a zero point
// that does not give back d and m, sizes that disagree).
Result<void> ggml_group_to_blocks(
    const GgmlType& t, uint64_t rows, uint64_t k, std::span<const uint8_t> packed,
    std::span<const uint8_t> scales, std::span<const uint8_t> zeros,
    const std::function<Result<void>(std::span<const uint8_t>)>& sink);

}  // namespace zt::foreign
