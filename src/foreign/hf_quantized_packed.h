// Quantized Hugging Face checkpoints whose codes are packed in int32
// words; each layer becomes `<p>.weight` [out, in], one
// libztensor.packed_group/1 object (docs/profiles/libztensor.packed_group-1.md)
// of the layer's tensors, bytes unchanged. Internal to
// foreign/hf_quantized.cpp's scheme table.
//
//   "gptq": `<p>.qweight` I32 [in / n, out] (n = 32 / bits, packed down the
//     input axis), `<p>.qzeros` I32 [G, out / n], `<p>.scales` [G, out],
//     `<p>.g_idx` [in]; checkpoint_format gptq stores zero - 1.
//   "awq" (GEMM): `<p>.qweight` I32 [in, out / 8] (slots 0,2,4,6,1,3,5,7
//     along the output axis), `<p>.qzeros`, `<p>.scales`.
//   "compressed-tensors" pack-quantized: `<p>.weight_packed` I32 [R, C / n]
//     (codes + 2^(bits-1) along the input axis), `<p>.weight_scale` [R, G],
//     `<p>.weight_shape` [R, C], `<p>.weight_zero_point` (packed down the
//     output axis, or plain) when not symmetric; weight_shape is the
//     object's shape, recorded as attribute "hf.shape_tensor".
#pragma once

#include <string>

#include "foreign/foreign.h"

namespace zt::foreign {

Result<void> group_gptq(const std::string& config, const nlohmann::json& qc, ForeignFile& f);
Result<void> group_awq(const std::string& config, const nlohmann::json& qc, ForeignFile& f);
Result<void> group_pack_quantized(const std::string& config, const nlohmann::json& qc,
                                  ForeignFile& f);

}  // namespace zt::foreign
