// Every bound libztensor enforces on untrusted input, in one place.
// Each can be overridden at build time (-DZT_MAX_...=N), like sqlite's
// sqliteLimit.h. All are checked before any allocation sized by the input.
// An override must be an integer expression the preprocessor can evaluate
// (no casts): the checks after the defaults refuse, with #error, a value
// past a bound the code relies on.
//
// The public header (include/ztensor.h) cannot include this file, so its
// comments name these macros and quote their defaults, as SECURITY.md
// ("Limits") does: a default changed here is changed there too.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

// Spec: a manifest larger than 1 GiB MUST be refused.
#ifndef ZT_MAX_MANIFEST_BYTES
#define ZT_MAX_MANIFEST_BYTES (UINT64_C(1) << 30)
#endif

// Largest decoded (uncompressed) size of one component. Refused before
// decompressing; also the cap for legacy zstd components without a size.
#ifndef ZT_MAX_DECODED_BYTES
#define ZT_MAX_DECODED_BYTES (UINT64_C(1) << 36)
#endif

// Nesting depth of CBOR containers in a manifest (root map is depth 1).
#ifndef ZT_MAX_CBOR_DEPTH
#define ZT_MAX_CBOR_DEPTH 128
#endif

// Number of dimensions of one shape.
#ifndef ZT_MAX_RANK
#define ZT_MAX_RANK 64
#endif

// Objects in one file, components in one object.
#ifndef ZT_MAX_OBJECTS
#define ZT_MAX_OBJECTS (UINT64_C(1) << 24)
#endif
#ifndef ZT_MAX_COMPONENTS
#define ZT_MAX_COMPONENTS 1024
#endif

// Bytes in one object name or component role.
#ifndef ZT_MAX_NAME_BYTES
#define ZT_MAX_NAME_BYTES (UINT64_C(1) << 16)
#endif

// CBOR data items in one manifest (each costs one node of ~40 bytes).
#ifndef ZT_MAX_CBOR_ITEMS
#define ZT_MAX_CBOR_ITEMS (UINT64_C(1) << 26)
#endif

// Threads one writer compresses on (zt_writer_options.threads is clamped).
#ifndef ZT_MAX_THREADS
#define ZT_MAX_THREADS 256
#endif

// Largest zstd frame a writer makes (zt_writer_options.frame_size): a
// reader holds one decoded frame per thread, and larger frames buy nothing.
#ifndef ZT_MAX_FRAME_SIZE
#define ZT_MAX_FRAME_SIZE (UINT64_C(1) << 28)
#endif

// Foreign formats (read with allow_foreign; the byte budgets of
// zt_open_options.max_decoded_bytes apply on top).
// A .safetensors header (its JSON), and a sharded checkpoint's index file:
// 100 MB, the bound the safetensors library itself applies.
#ifndef ZT_MAX_SAFETENSORS_HEADER_BYTES
#define ZT_MAX_SAFETENSORS_HEADER_BYTES UINT64_C(100000000)
#endif
#ifndef ZT_MAX_HF_INDEX_BYTES
#define ZT_MAX_HF_INDEX_BYTES UINT64_C(100000000)
#endif
// A .npy header (numpy writes tens of bytes; it allows up to 4 GiB).
#ifndef ZT_MAX_NPY_HEADER_BYTES
#define ZT_MAX_NPY_HEADER_BYTES (UINT64_C(1) << 20)
#endif
// The pickle machine of PyTorch checkpoints: values it makes (also the
// stack, memo and mark counts; containers get 4 entries a value), bytes of
// one string or integer, bytes of one GLOBAL line, and its byte budget:
// PER_BYTE x the pickle's size + BASE bytes of values (#42 item 5).
#ifndef ZT_MAX_PICKLE_VALUES
#define ZT_MAX_PICKLE_VALUES (UINT64_C(1) << 21)
#endif
#ifndef ZT_MAX_PICKLE_TEXT_BYTES
#define ZT_MAX_PICKLE_TEXT_BYTES (UINT64_C(1) << 24)
#endif
#ifndef ZT_MAX_PICKLE_GLOBAL_LINE
#define ZT_MAX_PICKLE_GLOBAL_LINE 4096
#endif
#ifndef ZT_PICKLE_BUDGET_PER_BYTE
#define ZT_PICKLE_BUDGET_PER_BYTE 32
#endif
#ifndef ZT_PICKLE_BUDGET_BASE
#define ZT_PICKLE_BUDGET_BASE (UINT64_C(64) << 20)
#endif
// ONNX key/value lists (external_data, metadata_props, opset_import): each
// entry costs more memory than its bytes in the file.
#ifndef ZT_MAX_ONNX_ENTRIES
#define ZT_MAX_ONNX_ENTRIES 4096
#endif
// GGUF: arrays nested in metadata values, and the general.alignment a
// written file honours (larger ones mean gigabytes of padding).
#ifndef ZT_MAX_GGUF_ARRAY_NESTING
#define ZT_MAX_GGUF_ARRAY_NESTING 4
#endif
#ifndef ZT_MAX_GGUF_ALIGNMENT
#define ZT_MAX_GGUF_ALIGNMENT 65536
#endif

// Remote reads: one header line of a multipart part, and the framing a
// multipart body may carry beyond the bytes asked for.
#ifndef ZT_MAX_HTTP_HEADER_LINE
#define ZT_MAX_HTTP_HEADER_LINE (UINT64_C(8) << 10)
#endif
#ifndef ZT_MAX_HTTP_BODY_SLACK
#define ZT_MAX_HTTP_BODY_SLACK (UINT64_C(64) << 10)
#endif

// Hard bounds on the overrides.

// The spec: a manifest larger than 1 GiB MUST be refused.
#if ZT_MAX_MANIFEST_BYTES < 1 || ZT_MAX_MANIFEST_BYTES > (UINT64_C(1) << 30)
#error "ZT_MAX_MANIFEST_BYTES must be 1 to 2^30: the spec refuses manifests over 1 GiB"
#endif

#if ZT_MAX_DECODED_BYTES < 1
#error "ZT_MAX_DECODED_BYTES must be at least 1"
#endif

// A 1.x manifest holds its component maps at depth 5 (root, "objects",
// object, "components", component), and the writer subtracts 3 from the
// depth for object attributes. Limits::cbor_depth is an unsigned.
#if ZT_MAX_CBOR_DEPTH < 5 || ZT_MAX_CBOR_DEPTH > UINT_MAX
#error "ZT_MAX_CBOR_DEPTH must be 5 to UINT_MAX: a 1.x manifest nests 5 deep"
#endif

// cbor::Node keeps the index one past a node's subtree in 27 bits.
#if ZT_MAX_CBOR_ITEMS < 1 || ZT_MAX_CBOR_ITEMS >= (UINT64_C(1) << 27)
#error "ZT_MAX_CBOR_ITEMS must be 1 to 2^27 - 1: node indexes fit the 27 bits of Node::end"
#endif

// sparse_csr shapes have two dimensions. Limits::rank is an unsigned.
#if ZT_MAX_RANK < 2 || ZT_MAX_RANK > UINT_MAX
#error "ZT_MAX_RANK must be 2 to UINT_MAX: sparse_csr shapes have 2 dimensions"
#endif

// The name index (manifest/manifest.h) stores objects[i] as i + 1 in a
// uint32_t, 0 marking an empty slot.
#if ZT_MAX_OBJECTS < 1 || ZT_MAX_OBJECTS > UINT32_MAX
#error "ZT_MAX_OBJECTS must be 1 to UINT32_MAX: the name index holds index + 1 in 32 bits"
#endif

// sparse_csr and quantized_group objects have three components.
#if ZT_MAX_COMPONENTS < 3
#error "ZT_MAX_COMPONENTS must be at least 3: sparse_csr and quantized_group have 3 components"
#endif

#if ZT_MAX_NAME_BYTES < 1
#error "ZT_MAX_NAME_BYTES must be at least 1"
#endif

// A writer runs at least one thread; Limits::threads is an unsigned.
#if ZT_MAX_THREADS < 1 || ZT_MAX_THREADS > UINT_MAX
#error "ZT_MAX_THREADS must be 1 to UINT_MAX"
#endif

// Below the writer's default frame size (zt::WriterOptions::frame_size,
// 1 MiB), a writer opened with default options would be refused.
#if ZT_MAX_FRAME_SIZE < (UINT64_C(1) << 20)
#error "ZT_MAX_FRAME_SIZE must be at least 2^20, the writer's default frame size"
#endif

#if ZT_MAX_SAFETENSORS_HEADER_BYTES < 2 || ZT_MAX_HF_INDEX_BYTES < 2 || ZT_MAX_NPY_HEADER_BYTES < 10
#error "the foreign header limits must allow the smallest header ({} for JSON, a dict for .npy)"
#endif
// Containers take 4 arena entries a value, counted in 64 bits.
#if ZT_MAX_PICKLE_VALUES < 1 || ZT_MAX_PICKLE_VALUES > (UINT64_C(1) << 60)
#error "ZT_MAX_PICKLE_VALUES must be 1 to 2^60"
#endif
#if ZT_MAX_PICKLE_TEXT_BYTES < 1 || ZT_MAX_PICKLE_GLOBAL_LINE < 2 || ZT_PICKLE_BUDGET_PER_BYTE < 1
#error "the pickle limits must be at least 1 (a GLOBAL line at least 2)"
#endif
#if ZT_MAX_ONNX_ENTRIES < 1 || ZT_MAX_GGUF_ARRAY_NESTING < 1 || ZT_MAX_GGUF_ARRAY_NESTING > 64
#error "ZT_MAX_ONNX_ENTRIES must be at least 1, ZT_MAX_GGUF_ARRAY_NESTING 1 to 64"
#endif
// GGUF alignments are powers of two of at least 1 (32 by default).
#if ZT_MAX_GGUF_ALIGNMENT < 32 || (ZT_MAX_GGUF_ALIGNMENT & (ZT_MAX_GGUF_ALIGNMENT - 1)) != 0
#error "ZT_MAX_GGUF_ALIGNMENT must be a power of two of at least 32, GGUF's default"
#endif
#if ZT_MAX_HTTP_HEADER_LINE < 256 || ZT_MAX_HTTP_BODY_SLACK < 1024
#error "ZT_MAX_HTTP_HEADER_LINE must be at least 256 and ZT_MAX_HTTP_BODY_SLACK 1024"
#endif

namespace zt {

struct Limits {
  static constexpr uint64_t manifest_bytes = ZT_MAX_MANIFEST_BYTES;
  static constexpr uint64_t decoded_bytes = ZT_MAX_DECODED_BYTES;
  static constexpr unsigned cbor_depth = ZT_MAX_CBOR_DEPTH;
  static constexpr uint64_t cbor_items = ZT_MAX_CBOR_ITEMS;
  static constexpr unsigned rank = ZT_MAX_RANK;
  static constexpr uint64_t objects = ZT_MAX_OBJECTS;
  static constexpr uint64_t components = ZT_MAX_COMPONENTS;
  static constexpr uint64_t name_bytes = ZT_MAX_NAME_BYTES;
  static constexpr unsigned threads = ZT_MAX_THREADS;
  static constexpr uint64_t frame_size = ZT_MAX_FRAME_SIZE;
  static constexpr uint64_t safetensors_header_bytes = ZT_MAX_SAFETENSORS_HEADER_BYTES;
  static constexpr uint64_t hf_index_bytes = ZT_MAX_HF_INDEX_BYTES;
  static constexpr uint64_t npy_header_bytes = ZT_MAX_NPY_HEADER_BYTES;
  static constexpr uint64_t pickle_values = ZT_MAX_PICKLE_VALUES;
  static constexpr uint64_t pickle_text_bytes = ZT_MAX_PICKLE_TEXT_BYTES;
  static constexpr uint64_t pickle_global_line = ZT_MAX_PICKLE_GLOBAL_LINE;
  static constexpr uint64_t pickle_budget_per_byte = ZT_PICKLE_BUDGET_PER_BYTE;
  static constexpr uint64_t pickle_budget_base = ZT_PICKLE_BUDGET_BASE;
  static constexpr size_t onnx_entries = ZT_MAX_ONNX_ENTRIES;
  static constexpr int gguf_array_nesting = ZT_MAX_GGUF_ARRAY_NESTING;
  static constexpr uint64_t gguf_alignment = ZT_MAX_GGUF_ALIGNMENT;
  static constexpr size_t http_header_line = ZT_MAX_HTTP_HEADER_LINE;
  static constexpr uint64_t http_body_slack = ZT_MAX_HTTP_BODY_SLACK;
};

}  // namespace zt
