// GGML's Q8_0, Q4_0 and Q5_0 blocks as zTensor quantized_group objects, and back.
// Both are (code - zero) x scale with one f16 scale per 32 values, which
// quantized_group states exactly (w = (q - zero) x scale):
//   Q8_0  block = f16 d, 32 x int8 c; ggml: c x d.
//         -> bits 8, packing "1_per_u8", codes c + 128, zeros 128.
//   Q4_0  block = f16 d, 16 bytes: value j in the low nibble of byte j,
//         value j + 16 in its high nibble; ggml: (q - 8) x d.
//         -> bits 4, packing "2_per_u8", zeros 8.
//   Q5_0  block = f16 d, u32 qh, 16 bytes as Q4_0's: bit j of qh is value
//         j's fifth bit; ggml: (q - 16) x d.
//         -> bits 5, packing "1_per_u8", zeros 16.
// group_size 32, scales f16 [G, N], zeros u8 [G, N], packed_weight u8
// [W, N] (quantized_group's GPTQ layout: values of one input column k run
// down the words of column n), plus the attribute ggml_type, which brings
// the object back to its GGML type byte for byte. Dequantised in f32, each
// value is one product of an exact integer and d, as ggml computes it.
// Q4_1/Q5_1 (d x q + m) and the k-quants stay raw blocks: (q - zero) x
// scale cannot give ggml's d x q + m exactly in floating point.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/error.h"
#include "foreign/foreign.h"
#include "foreign/ggml_types.h"

namespace zt::foreign {

// Whether a GGML type converts to quantized_group.
bool ggml_group_type(const GgmlType& t);

// The quantized_group object of a tensor held as GGML blocks: `shape` its
// row-major shape, whose last dimension is a whole, non-zero number of
// blocks, `blocks` not empty. Its buffers land in f.owned.
ForeignObject ggml_blocks_to_group(const GgmlType& t, std::span<const uint8_t> blocks,
                                   std::vector<uint64_t> shape, ForeignFile& f);

// The GGML blocks of a quantized_group made by ggml_blocks_to_group, row by
// row to `sink`. Status::argument when the components are not of that form
// (another packing, a zero that is not 128 or 8, sizes that disagree).
Result<void> ggml_group_to_blocks(
    const GgmlType& t, uint64_t rows, uint64_t k, std::span<const uint8_t> packed,
    std::span<const uint8_t> scales, std::span<const uint8_t> zeros,
    const std::function<Result<void>(std::span<const uint8_t>)>& sink);

}  // namespace zt::foreign
