// GGUF (versions 2 and 3, little-endian), as llama.cpp writes it: header,
// metadata key/values, tensor infos, padding to the alignment, tensor data.
//
// Tensors become objects. GGUF lists dimensions innermost first; objects get
// them in row-major order (reversed). F32, F16, BF16, F64 and I8..I64 become
// dense objects of the matching dtype. Q8_0, Q4_0 and Q5_0 become quantized_group
// objects that dequantise to ggml's own values (foreign/ggml_quant.h). Block-quantized GGML types
// (Q4_0, Q4_K, IQ2_XS, MXFP4, NVFP4, ...: formats/ggml_types.h) are kept as raw bytes: a dense u8
// object of shape [outer dims..., bytes per row] with attributes
//   ggml_type      "Q4_K"
//   logical_shape  the tensor's shape in row-major order
// Metadata key/values become file attributes under their own keys, with
// values as JSON-like values; "gguf.types" maps each key to its GGUF type
// ("uint32", "string", "array[float32]", ...; nested arrays whose elements
// differ list each: "array[array[int32], array[string]]") so nothing is lost, and
// "gguf.version" holds the version.
//
// Checked before anything is used: magic, version, counts against the bytes
// left, string lengths, nesting of arrays, the alignment (a power of two),
// each tensor's offset (aligned, inside the file), its size from the shape
// and type (rows a whole number of blocks, no overflow), no overlaps, no
// duplicate names or keys.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "foreign/foreign.h"
#include "formats/ggml_types.h"

namespace zt::foreign {

// Tensors of a GGML type not in kGgmlTypes (formats/ggml_types.h) refuse
// the file, unless options.skip_unknown_types: then they are left out and
// listed in the file attribute "gguf.skipped" ([{name, ggml_type, shape}]).
Result<ForeignFile> read_gguf(const std::string& path, const ReadOptions& options = {});

// One metadata key/value to write: its GGUF type as read_gguf names it in
// "gguf.types" ("uint32", "array[string]", "array[array[int32], array[f..]]")
// and its value as one encoded CBOR item (ints, floats, bools, text or byte
// strings for GGUF strings, arrays).
struct GgufKeyValue {
  std::string key;
  std::string type;
  std::span<const uint8_t> value_cbor;
};

struct GgufTensorEntry {
  std::string name;
  std::vector<uint64_t> shape;  // row-major logical shape (written innermost first)
  const GgmlType* type = nullptr;
  uint64_t nbytes = 0;  // what write_tensor delivers
};

using GgufSink = std::function<Result<void>(std::span<const uint8_t>)>;

// Writes a GGUF file atomically as llama.cpp and gguf-py lay it out: header,
// key/values in the given order, tensor infos, zero padding to the
// alignment (general.alignment when present, else 32), each tensor's data
// followed by zero padding to the alignment. GGUF read by read_gguf and
// written back from the same values and bytes is byte-identical when it
// was laid out this way. Values that do not fit their type (300 as a
// uint8, a string as a float32, an array whose element types differ from
// the recorded ones) are refused as Status::argument, naming the key.
Result<void> write_gguf(const std::string& path, uint32_t version,
                        const std::vector<GgufKeyValue>& metadata,
                        const std::vector<GgufTensorEntry>& tensors,
                        const std::function<Result<void>(size_t, const GgufSink&)>& write_tensor);

}  // namespace zt::foreign
