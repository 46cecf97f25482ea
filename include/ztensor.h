/*
 * ztensor.h - the C ABI of libztensor, a reader and writer of zTensor (.zt)
 * files: named tensors that are dense, sparse (CSR, COO), group-quantized,
 * FP8 or complex, optionally zstd-compressed, with digests.
 *
 * Conventions
 *  - Every fallible call returns zt_status (ZT_OK = 0). Results come back
 *    through out parameters, which are left untouched on failure unless said
 *    otherwise. New status codes may be added in later versions.
 *  - zt_last_error() explains the last failure in the calling thread, naming
 *    the object, component, rule and numbers involved.
 *  - Handles are opaque. Strings and pointers returned by a reader are owned
 *    by it and stay valid, unchanged, until zt_close().
 *  - A zt_reader may be used from many threads at once. A zt_writer belongs
 *    to one thread at a time.
 *  - Option structs begin with `uint32_t struct_size`; set it with the
 *    matching *_init() call so that the library can grow them compatibly.
 *  - No C++ exception ever crosses this boundary.
 */
#ifndef ZTENSOR_H
#define ZTENSOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define ZT_API
#elif defined(__GNUC__)
#define ZT_API __attribute__((visibility("default")))
#else
#define ZT_API
#endif

/* Library version: the header's (macros) and the linked library's (call). */
#define ZT_VERSION_MAJOR 1
#define ZT_VERSION_MINOR 0
#define ZT_VERSION_PATCH 0
#define ZT_VERSION_NUMBER (ZT_VERSION_MAJOR * 10000 + ZT_VERSION_MINOR * 100 + ZT_VERSION_PATCH)

typedef enum zt_status {
  ZT_OK = 0,
  ZT_ERR_IO = 1,          /* open/read/write/mmap/rename failed (errno text in the message) */
  ZT_ERR_FORMAT = 2,      /* not a zTensor file, bad magic, truncated, undecodable CBOR */
  ZT_ERR_INVALID = 3,     /* well-formed but breaks a rule of the spec: bounds, alignment,
                             overlap, size/shape mismatch, bad sparse structure, bad digest text */
  ZT_ERR_UNSUPPORTED = 4, /* unknown encoding, format or dtype that the operation needs */
  ZT_ERR_DIGEST = 5,      /* stored digest does not match the bytes */
  ZT_ERR_LIMIT = 6,       /* a safety limit: manifest > 1 GiB, decompressed size cap, rank cap */
  ZT_ERR_NOT_FOUND = 7,   /* no object / component / attribute of that name */
  ZT_ERR_ARGUMENT = 8,    /* NULL pointer, wrong buffer size, bad dtype string, duplicate name */
  ZT_ERR_STATE = 9,       /* call not valid in this state (writer already finished or failed) */
  ZT_ERR_NOMEM = 10
} zt_status;

/* The name of a status ("ZT_ERR_INVALID"); "ZT_ERR_UNKNOWN" for other values. */
ZT_API const char* zt_status_name(zt_status s);

/* The message of the last failing call in this thread ("" if none). Valid
   until the next call of this library in the same thread. Never NULL. */
ZT_API const char* zt_last_error(void);

/* The linked library's version, "1.0.0", and as ZT_VERSION_NUMBER. */
ZT_API const char* zt_version(void);
ZT_API unsigned zt_version_number(void);

/* ------------------------------------------------------------------------ */
/* Reading                                                                    */

typedef struct zt_reader zt_reader;

/* Opens a file: checks the container and the whole manifest (magic, footer,
   CBOR, schema, bounds, alignment, overlaps, sizes against shapes) without
   reading any data byte, then serves data from a read-only memory mapping.
   Reads files of every format generation (1.2, 1.1, 1.0, 0.1); they appear
   upgraded to the 1.2.0 vocabulary.
   Fails with ZT_ERR_ARGUMENT (NULL), ZT_ERR_IO, ZT_ERR_FORMAT, ZT_ERR_INVALID,
   ZT_ERR_UNSUPPORTED, ZT_ERR_LIMIT or ZT_ERR_NOMEM. *out is set only on
   success; release it with zt_close(). */
ZT_API zt_status zt_open(const char* path, zt_reader** out);

/* As zt_open, over `size` bytes of memory that the caller keeps alive and
   unchanged until zt_close(). */
ZT_API zt_status zt_open_memory(const void* data, size_t size, zt_reader** out);

/* How a reader gets at data bytes. */
typedef enum zt_io_mode {
  ZT_IO_MAP = 0, /* memory-map the file (default): zero-copy raw components. A file
                    truncated by someone else while mapped raises SIGBUS on access. */
  ZT_IO_COPY = 1 /* pread(2) into owned buffers: for files that may change while
                    open; errors come back as ZT_ERR_IO instead of a signal. */
} zt_io_mode;

typedef struct zt_open_options {
  uint32_t struct_size;       /* sizeof(zt_open_options), set by zt_open_options_init */
  uint32_t io_mode;           /* zt_io_mode */
  uint64_t max_decoded_bytes; /* cap on one component's decoded size; 0 = build default (64 GiB) */
} zt_open_options;

/* Fills *opt with the defaults. */
ZT_API void zt_open_options_init(zt_open_options* opt);

/* zt_open with options (NULL = defaults). ZT_ERR_ARGUMENT if
   opt->struct_size is not one this library knows. */
ZT_API zt_status zt_open_ex(const char* path, const zt_open_options* opt, zt_reader** out);

/* Closes a reader and frees everything it handed out. NULL is a no-op. */
ZT_API void zt_close(zt_reader* r);

/* The version the file states: "1.2.0", "1.1.0", "1.0", "0.1.0". */
ZT_API const char* zt_file_version(const zt_reader* r);

/* The whole manifest as one JSON document in the 1.2.0 vocabulary:
   {"version", "attributes", "objects": {name: {"shape", "format",
   "attributes", "components": {role: {"dtype", "type", "offset", "length",
   "uncompressed_length", "encoding", "digest"}}}}}. Absent optional fields
   are omitted; CBOR byte strings appear as {"$bytes": "<base64>"}. Built on
   first call. NULL only if r is NULL or memory runs out. */
ZT_API const char* zt_manifest_json(const zt_reader* r);

/* Objects in manifest order. Out-of-range indexes give NULL / 0. */
ZT_API size_t zt_object_count(const zt_reader* r);
ZT_API const char* zt_object_name(const zt_reader* r, size_t i);
/* Index of the object called `name`: ZT_ERR_NOT_FOUND if none. */
ZT_API zt_status zt_object_find(const zt_reader* r, const char* name, size_t* index);
/* "dense", "sparse_csr", "sparse_coo", "quantized_group", or any other text. */
ZT_API const char* zt_object_format(const zt_reader* r, size_t i);
/* The shape; *ndim gets its rank (0 for a scalar, whose pointer may be non-NULL). */
ZT_API const uint64_t* zt_object_shape(const zt_reader* r, size_t i, size_t* ndim);

/* Components of object `object` ("data", "values", "scales", ...). */
ZT_API size_t zt_component_count(const zt_reader* r, size_t object);
ZT_API const char* zt_component_role(const zt_reader* r, size_t object, size_t k);
/* Storage dtype ("f32", ...) and logical type ("f8_e4m3fn", ... or NULL if none). */
ZT_API const char* zt_component_dtype(const zt_reader* r, size_t object, const char* role);
ZT_API const char* zt_component_type(const zt_reader* r, size_t object, const char* role);
/* Encoding ("raw", "zstd", or as written), stored byte count, and the decoded
   byte count if known without decoding (else ZT_ERR_UNSUPPORTED). */
ZT_API const char* zt_component_encoding(const zt_reader* r, size_t object, const char* role);
ZT_API zt_status zt_component_stored_size(const zt_reader* r, size_t object, const char* role,
                                          uint64_t* nbytes);
ZT_API zt_status zt_component_decoded_size(const zt_reader* r, size_t object, const char* role,
                                           uint64_t* nbytes);

/* Decoded bytes of one component, little-endian elements of its dtype.
   raw + little-endian: a pointer into the mapping, no copy.
   zstd, or legacy big-endian data: decoded once, cached, owned by the reader.
   Valid until zt_close. Fails with ZT_ERR_ARGUMENT, ZT_ERR_NOT_FOUND (no such
   object or role), ZT_ERR_UNSUPPORTED (unknown encoding), ZT_ERR_LIMIT
   (decoded size over the cap), ZT_ERR_INVALID (corrupt or wrongly sized
   zstd data), ZT_ERR_NOMEM, ZT_ERR_IO (copy mode). */
ZT_API zt_status zt_component_map(const zt_reader* r, size_t object, const char* role,
                                  const void** data, uint64_t* nbytes);

/* Decode into a caller buffer (no caching); *written gets the byte count.
   ZT_ERR_ARGUMENT if capacity is too small (nothing is written then). */
ZT_API zt_status zt_component_read(const zt_reader* r, size_t object, const char* role, void* dst,
                                   uint64_t capacity, uint64_t* written);

/* Deep check of the whole file: decode every component, check every digest,
   and check the content rules that zt_open leaves alone because they need
   the data bytes (CSR/COO index structure, bool bytes, decoded sizes,
   quantized_group sizes). *checked / *unchecked count components whose
   digest was verified / was absent or of an unknown algorithm (either
   pointer may be NULL). ZT_ERR_DIGEST names the first digest mismatch,
   ZT_ERR_INVALID the first content rule broken. */
ZT_API zt_status zt_verify(const zt_reader* r, uint64_t* checked, uint64_t* unchecked);

/* Hints for the pages of one component's stored bytes (madvise WILLNEED /
   DONTNEED on the mapping; no-ops in copy mode or for memory readers). */
ZT_API zt_status zt_prefetch(const zt_reader* r, size_t object, const char* role);
ZT_API zt_status zt_evict(const zt_reader* r, size_t object, const char* role);

/* ------------------------------------------------------------------------ */
/* Writing                                                                    */

typedef struct zt_writer zt_writer;

/* Writes to a temporary file beside path; zt_writer_finish renames it into
   place, so a crash or an abort never leaves a half-written file at path. */
ZT_API zt_status zt_writer_open(const char* path, zt_writer** out);

typedef enum zt_digest_algo {
  ZT_DIGEST_XXH3 = 0, /* default: "xxh3:" + 16 hex digits (XXH3-64, canonical) */
  ZT_DIGEST_SHA256 = 1,
  ZT_DIGEST_NONE = 2
} zt_digest_algo;

typedef struct zt_writer_options {
  uint32_t struct_size;     /* sizeof(zt_writer_options), set by zt_writer_options_init */
  int32_t zstd_level;       /* default 3 */
  uint32_t threads;         /* compression threads; 0 = all cores (default) */
  uint32_t digest;          /* zt_digest_algo; default ZT_DIGEST_XXH3 */
  uint64_t frame_size;      /* bytes of input per zstd frame; default 1 MiB */
  double auto_min_ratio;    /* encoding "auto": keep zstd only if stored <= ratio * raw; default 0.9 */
} zt_writer_options;

/* Fills *opt with the defaults. */
ZT_API void zt_writer_options_init(zt_writer_options* opt);

/* zt_writer_open with options (NULL = defaults). */
ZT_API zt_status zt_writer_open_ex(const char* path, const zt_writer_options* opt, zt_writer** out);

/* One call for the common case: a dense object with one "data" component.
   encoding is "raw", "zstd" or "auto" (NULL = "raw"). The bytes are
   little-endian elements of dtype; nbytes must equal product(shape) x width.
   Fails with ZT_ERR_ARGUMENT (bad name, dtype, encoding, size, duplicate
   name), ZT_ERR_STATE (inside an object, or after a failure), ZT_ERR_IO. */
ZT_API zt_status zt_writer_add_dense(zt_writer* w, const char* name, const char* dtype,
                                     const uint64_t* shape, size_t ndim, const void* data,
                                     uint64_t nbytes, const char* encoding);

/* General objects (sparse, quantized, anything): begin, add components, end.
   zt_writer_end_object checks the object against its format (dense size,
   CSR/COO structure, quantized_group sizes and attributes) and fails with
   ZT_ERR_INVALID, dropping the object, if it breaks a rule. */
ZT_API zt_status zt_writer_begin_object(zt_writer* w, const char* name, const char* format,
                                        const uint64_t* shape, size_t ndim);
ZT_API zt_status zt_writer_add_component(zt_writer* w, const char* role, const char* dtype,
                                         const char* type /* NULL = none */, const void* data,
                                         uint64_t nbytes, const char* encoding);
ZT_API zt_status zt_writer_end_object(zt_writer* w);

/* Streaming: a component of any size written in pieces; peak memory stays
   at about frame_size x threads. decoded_size is the total byte count the
   pieces will add up to (checked at zt_writer_end_component). */
ZT_API zt_status zt_writer_begin_component(zt_writer* w, const char* role, const char* dtype,
                                           const char* type, const char* encoding,
                                           uint64_t decoded_size);
ZT_API zt_status zt_writer_write(zt_writer* w, const void* data, uint64_t nbytes);
ZT_API zt_status zt_writer_end_component(zt_writer* w);

/* Attributes as a JSON object text, stored as CBOR (integers stay integers,
   floats floats; strings, booleans, null, arrays, maps).
   Object attributes apply to the object begun last. */
ZT_API zt_status zt_writer_set_file_attributes_json(zt_writer* w, const char* json);
ZT_API zt_status zt_writer_set_object_attributes_json(zt_writer* w, const char* json);

/* Manifest, footer, fsync, rename, fsync of the directory; frees w. On
   failure the temporary file is removed and the target left as it was. */
ZT_API zt_status zt_writer_finish(zt_writer* w);
/* Removes the temporary file; frees w. NULL is a no-op. */
ZT_API void zt_writer_abort(zt_writer* w);

#ifdef __cplusplus
}
#endif

#endif /* ZTENSOR_H */
