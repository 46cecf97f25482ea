// libFuzzer target: fuzzed bytes as a .gguf file through the library's
// gguf reader, then through the writer (fuzz/foreign_walk.h).
#include "foreign_walk.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zt::fuzz::walk_foreign(data, size, ".gguf");
  return 0;
}
