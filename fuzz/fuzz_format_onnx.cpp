// libFuzzer target: fuzzed bytes as an .onnx model through the library's
// ONNX reader (protobuf wire format, typed fields, external data names),
// then through the writer (fuzz/foreign_walk.h).
#include "foreign_walk.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zt::fuzz::walk_foreign(data, size, ".onnx");
  return 0;
}
