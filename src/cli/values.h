// The numbers of an object (or of one of its components) ready to print or
// compare: any dtype, FP8 and complex types, and, for .zt inputs, sparse
// and quantized objects decoded through the typed views (src/views/views.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "input.h"
#include "print.h"

namespace zt::cli {

struct Values {
  std::vector<uint64_t> shape;
  CellKind kind = CellKind::real;
  Precision precision = Precision::f64;  // the float type the values came from
  std::string what;  // "f32", "u8 (f8_e4m3fn)", "sparse_csr of f32 values, densified"
  std::function<Cell(uint64_t)> at;

  Buffer buffer;                // dense bytes
  std::vector<double> decoded;  // densified values
  // What reading an element failed with (a component read as it is
  // printed): at() gives zeros after it; the caller reports it.
  std::optional<Error> failure;
  // Reads a component read as it is printed on to its end (its size checks
  // run there), after the first pass; failures go to `failure`.
  std::function<void()> finish;
};

// The core's model of a part (role, dtype, logical type), for the numeric
// conversions of views.h.
Component model_component(const Part& p);

// Values of `item`, or of its component `role` seen as a 1-D array. Objects
// that must be densified are refused above `max_values` values.
Result<std::unique_ptr<Values>> load_values(const Input& in, size_t item,
                                            const std::optional<std::string>& role,
                                            uint64_t max_values);

// One element of component k (its stored bytes, decoded), shown as cat
// shows it.
std::string element_text(const Input& in, size_t item, size_t k, std::span<const uint8_t> element);

// Densifying any object of a .zt input gives dense f32 or f64 values
// (complex interleaved); the value type follows the object's values (f64
// stays f64). The form is known before anything is decoded.
struct DenseForm {
  std::string dtype;                // "f32" or "f64"
  std::optional<std::string> type;  // "complex64" / "complex128"
  uint64_t bytes = 0;
};
Result<DenseForm> dense_form(const Input& in, size_t item);

// Writers of an object's values, piece by piece (at most a few MiB are
// held, whatever the object's size), to a sink that writes them out.
using ByteSink = std::function<Result<void>(std::span<const uint8_t>)>;
constexpr uint64_t kChunkValues = uint64_t{1} << 20;
// The dense_form values of any object (.zt inputs).
Result<void> write_densified(const Input& in, size_t item, const ByteSink& sink);
// A dense object's values converted to f32 (complex interleaved): for
// types with no numpy dtype (bf16, FP8).
Result<void> write_as_f32(const Input& in, size_t item, const ByteSink& sink);
// A dense object's "data" as stored once decoded: little-endian elements.
Result<void> write_dense_bytes(const Input& in, size_t item, const ByteSink& sink);

}  // namespace zt::cli
