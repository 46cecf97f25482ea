// Every bound libztensor enforces on untrusted input, in one place.
// Each can be overridden at build time (-DZT_MAX_...=N), like sqlite's
// sqliteLimit.h. All are checked before any allocation sized by the input.
#pragma once

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
};

}  // namespace zt
