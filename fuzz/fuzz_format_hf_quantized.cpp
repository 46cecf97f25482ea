// libFuzzer target: a Hugging Face checkpoint whose config.json names a
// quantization scheme, so that the quantized-layer recogniser
// (foreign/hf_quantized.cpp) groups what the safetensors reader hands out;
// then the writer and the walk of every foreign target (fuzz/foreign_walk.h).
// The first byte picks the config (mxfp4, GPTQ, GPTQ v2 at 2 bits with
// act-order, AWQ GEMM, FP8 blocks, NVFP4, compressed-tensors with block
// scales, compressed-tensors pack-quantized symmetric in groups of 8 and
// asymmetric by channel); the rest is the model.safetensors.
#include <iterator>
#include <string_view>

#include "foreign_walk.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static constexpr std::string_view kConfigs[] = {
      R"({"quantization_config": {"quant_method": "mxfp4"}})",
      R"({"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 32}})",
      R"({"quantization_config": {"quant_method": "gptq", "bits": 2, "group_size": -1,
          "desc_act": true, "checkpoint_format": "gptq_v2"}})",
      R"({"quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 16,
          "version": "gemm"}})",
      R"({"quantization_config": {"quant_method": "fp8", "weight_block_size": [2, 3]}})",
      R"({"quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4"}})",
      R"({"quantization_config": {"quant_method": "compressed-tensors", "format": "float-quantized",
          "config_groups": {"g": {"weights": {"block_structure": [2, 2]}}}}})",
      R"({"quantization_config": {"quant_method": "compressed-tensors", "format": "pack-quantized",
          "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int", "symmetric": true,
          "strategy": "group", "group_size": 8}}}}})",
      R"({"quantization_config": {"quant_method": "compressed-tensors", "format": "pack-quantized",
          "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int", "symmetric": false,
          "strategy": "channel"}}}}})",
  };
  if (size == 0) return 0;
  const std::string_view config = kConfigs[data[0] % std::size(kConfigs)];
  FUZZ_CHECK(zt::fuzz::write_file(zt::fuzz::scratch_dir() + "/config.json",
                                  reinterpret_cast<const uint8_t*>(config.data()), config.size()),
             "cannot write config.json");
  zt::fuzz::walk_foreign(data + 1, size - 1, ".safetensors");
  return 0;
}
