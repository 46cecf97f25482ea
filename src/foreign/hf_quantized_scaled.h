// Quantized Hugging Face checkpoints whose weight keeps its name and whose
// scales sit beside it (`<p>.weight` + `<p>.weight_scale...`): each layer
// becomes one libztensor.block_scaled/1 object `<p>.weight`
// (docs/profiles/libztensor.block_scaled-1.md), the tensors' bytes unchanged.
// Internal to foreign/hf_quantized.cpp's scheme table.
//
//   "fp8" (DeepSeek-V3, transformers' FineGrainedFP8): `<p>.weight` F8_E4M3
//     [R, C], `<p>.weight_scale_inv` F32/BF16 [ceil(R / b0), ceil(C / b1)],
//     quantization_config.weight_block_size [b0, b1]; value = w x scale.
//   "modelopt", quant_algo "NVFP4": `<p>.weight` U8 [R, C / 2] (E2M1 pairs,
//     low nibble first), `<p>.weight_scale` F8_E4M3 [R, C / 16],
//     `<p>.weight_scale_2` F32 (one value), `<p>.input_scale` (kept);
//     value = w x weight_scale x weight_scale_2.
//   "compressed-tensors", format "float-quantized" or "int-quantized":
//     `<p>.weight` F8_E4M3 or I8 [R, C], `<p>.weight_scale` of one value
//     (tensor), [R, 1] (channel) or the blocks of the config group's
//     block_structure, `<p>.input_scale` (kept); value = w x scale.
#pragma once

#include <string>
#include <string_view>

#include "foreign/foreign.h"

namespace zt::foreign {

// Whether `name` is `suffix` after a non-empty stem (a layer's tensor).
inline bool has_suffix(std::string_view name, std::string_view suffix) {
  return name.size() > suffix.size() && name.ends_with(suffix);
}

Result<void> group_fp8_blocks(const std::string& config, const nlohmann::json& qc, ForeignFile& f);
Result<void> group_modelopt(const std::string& config, const nlohmann::json& qc, ForeignFile& f);
Result<void> group_compressed_tensors(const std::string& config, const nlohmann::json& qc,
                                      ForeignFile& f);

}  // namespace zt::foreign
