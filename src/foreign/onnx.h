// ONNX models (.onnx): the graph's initializers (the weights an exporter
// stored) as dense objects, the model's identity as file attributes.
//
// The file is one protobuf ModelProto (onnx.proto). libprotobuf's
// CodedInputStream reads the wire format; only the path ModelProto.graph.
// initializer is decoded, nodes and everything else are skipped unparsed,
// so memory follows the initializers' data, not the size of the graph.
// raw_data is viewed in place (little-endian, as ONNX stores it); the typed
// fields (float_data, int32_data, ...) are converted to little-endian bytes
// after their count is checked against dims; external data (data_location
// EXTERNAL: "location", "offset", "length") is viewed in its file, which
// must be a relative path inside the model's directory.
//
// Types: FLOAT, DOUBLE, FLOAT16, BFLOAT16, (U)INT8..64, BOOL, COMPLEX64/128
// (f32/f64 + complex64/complex128) and the four FP8 types (u8 + f8_*).
// STRING, INT4/UINT4, FLOAT4E2M1 and later types, segmented tensors and
// sparse initializers are refused by name (ZT_ERR_UNSUPPORTED). Initializers
// of subgraphs and functions are not read: a converted file holds the
// weights of the main graph, not the graph itself.
#pragma once

#include <string>

#include "foreign/foreign.h"

namespace zt::foreign {

// Typed values widened beyond `limit` bytes (the caller's cap on a
// component) are refused before they are allocated.
Result<ForeignFile> read_onnx(const std::string& path, uint64_t limit = Limits::decoded_bytes);

}  // namespace zt::foreign
