// GGUF (versions 2 and 3, little-endian), as llama.cpp writes it: header,
// metadata key/values, tensor infos, padding to the alignment, tensor data.
//
// Tensors become objects. GGUF lists dimensions innermost first; objects get
// them in row-major order (reversed). F32, F16, BF16, F64 and I8..I64 become
// dense objects of the matching dtype. Block-quantized GGML types (Q4_0,
// Q4_K, IQ2_XS, MXFP4, NVFP4, ...: foreign/ggml_types.h) are kept as raw bytes: a dense u8 object
// of shape [outer dims..., bytes per row] with attributes
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

#include <string>

#include "foreign/foreign.h"

namespace zt::foreign {

// Tensors of a GGML type not in kGgmlTypes (foreign/ggml_types.h) refuse
// the file, unless options.skip_unknown_types: then they are left out and
// listed in the file attribute "gguf.skipped" ([{name, ggml_type, shape}]).
Result<ForeignFile> read_gguf(const std::string& path, const ReadOptions& options = {});

}  // namespace zt::foreign
