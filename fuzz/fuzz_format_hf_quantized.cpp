// libFuzzer target: fuzzed bytes as the model.safetensors of a Hugging Face
// checkpoint whose config.json says quant_method "mxfp4", so that the
// quantized-layer recogniser (foreign/hf_quantized.cpp) groups what the
// safetensors reader hands out; then the writer and the walk of every
// foreign target (fuzz/foreign_walk.h).
#include "foreign_walk.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool config = [] {
    static constexpr char kConfig[] = R"({"quantization_config": {"quant_method": "mxfp4"}})";
    return zt::fuzz::write_file(zt::fuzz::scratch_dir() + "/config.json",
                                reinterpret_cast<const uint8_t*>(kConfig), sizeof kConfig - 1);
  }();
  FUZZ_CHECK(config, "cannot write config.json");
  zt::fuzz::walk_foreign(data, size, ".safetensors");
  return 0;
}
