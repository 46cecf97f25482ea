// Quantized Hugging Face checkpoints as the composite objects they are.
// A checkpoint's config.json (beside the safetensors file or index) names
// its scheme in "quantization_config"; the scheme's loose tensors of one
// layer (packed values, scales, ...) become one object whose layout says
// what it is, named as the unquantized model names the weight. One
// descriptor per scheme (quant_method); a checkpoint of a method without
// one keeps its tensors as they are.
//
// Schemes today: "mxfp4" (gpt-oss: `<p>_blocks` u8 [..., B, 16] of E2M1
// pairs, low nibble first, and `<p>_scales` u8 [..., B] of E8M0 exponents,
// 32 values a block) becomes `<p>`, a zt.mx/1 object of shape [..., B x 32]
// with parts data (f4_e2m1) and scales (f8_e8m0), the bytes unchanged;
// "gptq" and "awq" (`<p>.qweight`, `.qzeros`, `.scales`, GPTQ's `.g_idx`)
// and compressed-tensors' "pack-quantized" (`<p>.weight_packed`,
// `.weight_scale`, `.weight_zero_point`, `.weight_shape`) become
// `<p>.weight` [out, in], a libztensor.packed_group/1 object
// (docs/profiles/libztensor.packed_group-1.md) of those tensors' bytes;
// "fp8", "modelopt" (NVFP4) and "compressed-tensors" (float / int
// quantized) keep `<p>.weight` as a libztensor.block_scaled/1 object with
// its scales as parts (hf_quantized_scaled.h).
// A layer that breaks its scheme's rules (a half without the other, shapes
// that do not match) is refused (Status::invalid) naming the layer and the
// rule, before anything is handed out. Each object records the checkpoint
// tensor of each part (attribute "hf.tensors") and the file keeps
// config.json's text ("hf.config"), for the way back (zt convert --hf).
#pragma once

#include <string>

#include "foreign/foreign.h"
#include "source/range_source.h"

namespace zt::foreign {

// Groups the quantized layers of `f`, read from `model_path`, by the
// config.json beside it (none, or one without "quantization_config": `f`
// is left as it is). config.json is read only from the model's folder.
Result<void> group_quantized_layers(const std::string& model_path, ForeignFile& f);
// The same for a checkpoint read over HTTP: config.json is fetched beside
// `model` (the safetensors file or the index, as its shards are); a server
// without one (HTTP 404 or 410) leaves `f` as it is. Parts stay remote, so
// g_idx entries are checked when decoded or written, not here.
Result<void> group_quantized_layers_remote(const RangeSource& model, ForeignFile& f);

// Whether the config.json of the checkpoint folder `dir` names a
// quantization scheme ("quantization_config"); false without a config.json.
// A config that breaks the reading rules (size, nesting, a key twice, an
// integer wider than 64 bits) is refused as it is when a model is read.
Result<bool> folder_config_is_quantized(const std::string& dir);

}  // namespace zt::foreign
