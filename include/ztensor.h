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
 *  - Calls that share work out over threads (zt_decode_many,
 *    zt_decode_ranges, multi-frame zstd and byte-planes reads) use the
 *    library's helper threads besides the caller's: started when first
 *    needed, parked between calls, never stopped while the process lives
 *    (a child of fork() starts its own); "all cores" is zt_cpu_count().
 *    The writer's compression threads are its own and end with it.
 *  - Option and view structs begin with `uint32_t struct_size`; fill them
 *    with the matching *_init() call, an inline function that passes the
 *    header's sizeof to the library's *_init_sized() (the call for FFI
 *    users): a library newer than the header writes only the bytes the
 *    caller's struct has, and reads only the fields it says it has.
 *    The one exception is zt_decode_request: it is an array element, whose
 *    size is the array's stride, so its layout is frozen (a new field means
 *    a new struct), its struct_size must be this header's sizeof, and it has
 *    no *_init_sized().
 *  - Limits on untrusted input are fixed when the library is built (the
 *    ZT_MAX_* macros of its private src/base/zt_limits.h; SECURITY.md,
 *    "Limits", lists them). This header names each by its macro and quotes
 *    its default; a build may have set another value.
 *  - No C++ exception ever crosses this boundary.
 *
 * ABI (docs/abi.md; checked by abidiff against abi/ on every change)
 *  - libztensor.so.1 keeps every 1.x program running. A minor version may add
 *    functions, append zt_status values and other enumerators, and append
 *    fields at the end of structs that begin with struct_size (except
 *    zt_decode_request). Treat an unknown zt_status as a failure.
 *  - Removing a function, changing a parameter or return type, moving,
 *    retyping or removing a struct field, or changing an enumerator or macro
 *    value needs a new soname (libztensor.so.2).
 *  - ZT_VERSION_MAJOR is the soname's number; MINOR moves with additions,
 *    PATCH with fixes that leave the declarations alone.
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

/* Library version: the header's (macros) and the linked library's (call).
   These three macros are the one source of the version: the build reads them
   for the soname, zt.pc and the CMake package, and zt_version() is made from
   them. */
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
  ZT_ERR_LIMIT = 6,       /* a safety limit (ZT_MAX_*, see Conventions): manifest size
                             (ZT_MAX_MANIFEST_BYTES, default 1 GiB), decoded size
                             (ZT_MAX_DECODED_BYTES, default 64 GiB), rank (ZT_MAX_RANK,
                             default 64), counts of objects, components, CBOR items */
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

/* The linked library's version as "MAJOR.MINOR.PATCH" (static storage, never
   NULL), and as ZT_VERSION_NUMBER computes it. Compare with the macros to
   tell the header a program was built with from the library it runs with. */
ZT_API const char* zt_version(void);
ZT_API unsigned zt_version_number(void);

/* What messages show of a file's location: an http:// or https:// URL
   without its user info, query string and fragment (where passwords,
   tokens and pre-signed signatures travel); any other text (a local path)
   as it is. The library's own messages already name URLs this way; this is
   for a program's own messages, so that none prints a secret. Copies the
   text, NUL-terminated and cut short to fit, into `out` (`size` bytes; out
   may be NULL when size is 0) and returns the whole text's length without
   the NUL, as snprintf does. NULL location: 0, and "" in out. */
ZT_API size_t zt_url_for_messages(const char* location, char* out, size_t size);

/* ------------------------------------------------------------------------ */
/* Reading                                                                    */

typedef struct zt_reader zt_reader;

/* Opens a file: checks the container and the whole manifest (magic, footer,
   CBOR, schema, bounds, alignment, overlaps, sizes against shapes) without
   reading any data byte, then serves data from a read-only memory mapping.
   Reads files of the 1.x and 0.1 generations (1.2, 1.1, 1.0, 0.1); they
   appear upgraded to the 1.2.0 vocabulary. zTensor v2 files ("ZT2" magic)
   appear through the same calls: zt_file_version gives "2", layouts with a
   1.2 meaning keep the 1.2 name ("dense", "sparse_csr", "sparse_coo"; others
   as written, e.g. "zt.mx/1"), parts are components, encoding
   "zt.zstd-seekable/1" is "zstd", and digests cover the decoded bytes
   (docs/v2.md §2). A sharded v2 model is opened by its root file: a part
   stored in shard `name` is read from `<stem>-<name>.zt` in the root's
   directory (root `<stem>.zt`, or a root name without ".zt" as the stem),
   opened on the first access that needs it and checked then (v2 magic,
   footer version 2, size equal to the shard table's: ZT_ERR_IO if missing,
   ZT_ERR_FORMAT, ZT_ERR_UNSUPPORTED or ZT_ERR_INVALID otherwise); zt_open
   itself reads the root alone. zt_verify checks each shard's whole-file
   digest.
   Fails with ZT_ERR_ARGUMENT (NULL), ZT_ERR_IO, ZT_ERR_FORMAT, ZT_ERR_INVALID,
   ZT_ERR_UNSUPPORTED, ZT_ERR_DIGEST (v2 manifest hash differs), ZT_ERR_LIMIT or
   ZT_ERR_NOMEM. *out is set only on success; release it with zt_close(). */
ZT_API zt_status zt_open(const char* path, zt_reader** out);

/* As zt_open, over `size` bytes of memory that the caller keeps alive and
   unchanged until zt_close(). Parts in shard files cannot be found from
   memory: reading them fails with ZT_ERR_UNSUPPORTED. */
ZT_API zt_status zt_open_memory(const void* data, size_t size, zt_reader** out);

/* How a reader gets at data bytes. */
typedef enum zt_io_mode {
  ZT_IO_MAP = 0, /* memory-map the file (default): zero-copy raw components;
                    copies of 64 KiB or more (zt_component_read, zt_decode_many
                    and zt_decode_ranges of raw data) use pread(2), one read of
                    the bytes being faster so. A file truncated by someone else
                    while mapped raises SIGBUS on access. */
  ZT_IO_COPY = 1 /* pread(2) into owned buffers: for files that may change while
                    open; errors come back as ZT_ERR_IO instead of a signal. */
} zt_io_mode;

typedef struct zt_open_options {
  uint32_t struct_size;       /* sizeof(zt_open_options), set by zt_open_options_init */
  uint32_t io_mode;           /* zt_io_mode */
  uint64_t max_decoded_bytes; /* cap on one component's decoded size; 0 = the build's
                                 ZT_MAX_DECODED_BYTES (default 64 GiB) */
  uint32_t allow_foreign;     /* 0 (default): zTensor files only. Non-zero: a path
                                 ending in .safetensors, .gguf, .npy, .npz, .pt, .pth,
                                 .bin, .ckpt, .onnx or .index.json (a sharded Hugging Face
                                 checkpoint) is read by that format's reader, and a
                                 Hugging Face model's folder or its config.json by
                                 the reader of model.safetensors.index.json, else
                                 model.safetensors, there (ZT_ERR_NOT_FOUND when it
                                 holds neither); see "Foreign files" below. */
  /* Remote readers (zt_open_source, zt_open_url): */
  uint64_t cache_bytes;      /* zt_open_source, zt_open_url: fetched ranges kept for
                                reuse (reads up to a quarter of it are kept, least
                                recently used dropped first), by the reader and
                                all its shard files together; 0 = 64 MiB */
  const char* http_headers;  /* zt_open_url: extra request headers, "Name: value"
                                lines separated by '\n' (for example
                                "Authorization: Bearer TOKEN"); NULL = none. Copied
                                at open. See zt_open_url for ZT_HTTP_BEARER_TOKEN. */
  uint32_t http_timeout_ms;  /* zt_open_url: connect timeout, and the longest a
                                transfer may run below 1 KiB/s (a stall, or a
                                server trickling bytes); 0 = 30000 */
  uint32_t http_retries;     /* zt_open_url: retries of a request after a 5xx answer
                                or a connection error, waiting 100 ms, 200 ms, ...;
                                zt_open_options_init sets 3 */
  uint32_t http_connections; /* zt_open_url: connections kept open to the server for
                                reads running at once (zt_decode_many); 0 = 4 */
} zt_open_options;

/* Fills *opt with the defaults. */
ZT_API void zt_open_options_init_sized(zt_open_options* opt, size_t size);
static inline void zt_open_options_init(zt_open_options* opt) { zt_open_options_init_sized(opt, sizeof *opt); }

/* zt_open with options (NULL = defaults). ZT_ERR_ARGUMENT if
   opt->struct_size is not one this library knows, or if path is an
   http:// or https:// URL (zt_open_url reads those; the message shows the
   URL without user info or query).

   Foreign files (allow_foreign set): the file is read by its format's own
   reader, which checks that format's rules (bounds, overlaps, sizes against
   shapes, header and pickle limits; a PyTorch pickle is interpreted, never
   executed: any global outside the allow-list fails with
   ZT_ERR_UNSUPPORTED naming it) and the file appears as an ordinary,
   read-only zt_reader: the same calls as for a .zt file, the model that
   `zt convert` would write (docs/cli.md: names, dtypes, attributes;
   GGUF Q8_0/Q4_0/Q5_0/Q4_1/Q5_1 as quantized_group, other GGML block types as u8
   bytes with a "ggml_type" attribute). Unlike zt_open, a foreign file's
   reader reads its data while opening where its format requires it
   (stored npz and PyTorch zip members are checked against their CRC-32 to
   be viewed in place; big-endian and strided tensors are copied out).
   Bytes stored raw and little-endian are served from a memory mapping of
   the file, zero-copy (io_mode is not consulted); deflated npz members
   over 64 KiB are inflated as they are read (their CRC-32 checked by a
   read that reaches their end: a whole read, zt_verify); others from
   buffers the reader owns. There are no digests: zt_verify checks the content rules
   and counts every component unchecked. zt_file_format names the format;
   zt_file_version is "". */
ZT_API zt_status zt_open_ex(const char* path, const zt_open_options* opt, zt_reader** out);

/* ---- Readers over any byte source ------------------------------------ */

/* A file that is not on this machine: the library asks for byte ranges.
   Fill with zt_source_init, then set ctx and the callbacks. */
enum {
  ZT_SOURCE_CONCURRENT = 1
}; /* zt_source.flags: read_at may run on several
      threads at once (else the library calls it
      from one thread at a time) */
typedef struct zt_source {
  uint32_t struct_size; /* sizeof(zt_source), set by zt_source_init */
  uint32_t flags;       /* ZT_SOURCE_CONCURRENT or 0 */
  void* ctx;            /* passed to every callback */
  /* Reads up to `length` bytes at `offset` into buf and stores how many in
     *done. Fewer than asked is a short read: the library asks again from
     where it stopped; 0 bytes with ZT_OK means the data ended before the
     size said, which fails the read with ZT_ERR_IO. Any status other than
     ZT_OK fails the read with that status (ZT_ERR_IO is the usual one).
     The library only asks for ranges inside [0, size). Required. */
  zt_status (*read_at)(void* ctx, uint64_t offset, size_t length, void* buf, size_t* done);
  /* Stores the file's size in bytes; called once, at open. Required. */
  zt_status (*size)(void* ctx, uint64_t* size);
  /* Called exactly once when the library is done with ctx: at zt_close, or
     before zt_open_source returns an error. May be NULL. */
  void (*close)(void* ctx);
  const char* name; /* what messages call the source (a URL, a key); NULL =
                       "source". Copied at open; an http(s) URL is shown as
                       zt_url_for_messages shows it. */
} zt_source;

ZT_API void zt_source_init_sized(zt_source* src, size_t size);
static inline void zt_source_init(zt_source* src) {
  zt_source_init_sized(src, sizeof *src);
}

/* Opens a zTensor file read through `src` (any generation; foreign formats
   are not read this way). The open reads the last 64 KiB, then the header
   magic with whatever of the manifest those did not hold: two calls to
   read_at for any manifest (more only when short reads split them), and it
   validates all structure, as zt_open does. Later calls read exactly the
   ranges they need; reads up to a quarter of opt->cache_bytes are kept.
   Every reader call works. There is no mapping: zt_component_map and the
   views copy data into buffers the reader owns (decoded once, kept until
   zt_close), zt_component_read and zt_dense_slice read only their ranges.
   A v2 root's shards cannot be found through a callback source
   (ZT_ERR_UNSUPPORTED when a part in a shard is read). The source's
   callbacks are used until zt_close. Errors: ZT_ERR_ARGUMENT (a NULL or
   unknown struct, a missing callback), the status read_at or size
   returned (ZT_ERR_IO for one this library does not know), and those of
   zt_open. On every error but a NULL src or an unknown src->struct_size,
   `close` has been called before the return. */
ZT_API zt_status zt_open_source(const zt_source* src, const zt_open_options* opt, zt_reader** out);

/* Opens the zTensor file at an http:// or https:// URL (docs/remote.md),
   as zt_open_source does for a callback source, through libcurl with
   Range requests. The open costs two requests: the last 64 KiB (which
   also gives the size and the ETag), then the header magic with whatever
   of the manifest the tail did not hold (one multipart/byteranges
   request). Later calls fetch only their ranges; ranges of one call that
   lie within 256 bytes of each other are fetched as one, and up to 128
   ranges go in one request (zt_dense_slice's runs, for one). Calls on several threads
   (zt_decode_many) use up to opt->http_connections connections at once.
   - The file is pinned at open by its ETag (or Last-Modified): a later
     request finds it replaced -> ZT_ERR_IO "changed on the server".
   - A server that answers a Range request with the whole body (HTTP 200)
     is refused after its headers (ZT_ERR_IO), its body never read; a file
     of at most 64 KiB is taken whole.
   - 5xx answers, 429 and connection failures are retried
     opt->http_retries times, waiting 100 ms, 200 ms, 400 ms, ...; other
     statuses fail at once: ZT_ERR_IO with the HTTP status and reason.
   - Redirects are followed (at most 5, http and https only, never from
     https down to plain http). TLS
     certificates are verified. opt->http_headers are sent with every
     request to the URL's own origin (scheme, host, port), never to a host
     a redirect leads to; the environment variable ZT_HTTP_BEARER_TOKEN adds
     "Authorization: Bearer <token>" unless those headers have an
     Authorization line, over https only (or plain http to this machine:
     localhost, 127.0.0.0/8, ::1). A pre-signed URL works as it is.
   - Messages name the URL without user info, query or fragment.
   A v2 root's shards are fetched from URLs beside the root's (the
   positional convention, without the root's query string) when a part in
   them is first read. With opt->allow_foreign, a URL whose path ends in
   .safetensors is read as that format (its header at open, each tensor
   when read), and one ending in .index.json as a sharded safetensors
   checkpoint (shards beside it); other foreign formats are refused over
   HTTP (ZT_ERR_UNSUPPORTED: their readers need the whole file). Errors:
   ZT_ERR_ARGUMENT (not an http(s) URL, a header line without ':'),
   ZT_ERR_IO, and those of zt_open. */
ZT_API zt_status zt_open_url(const char* url, const zt_open_options* opt, zt_reader** out);

/* Closes a reader and frees everything it handed out. NULL is a no-op. */
ZT_API void zt_close(zt_reader* r);

/* The version the file states: "1.2.0", "1.1.0", "1.0", "0.1.0"; "" for a
   foreign file. */
ZT_API const char* zt_file_version(const zt_reader* r);

/* What the reader reads: "zt" for a zTensor file of any generation, else
   the foreign format (zt_open_options.allow_foreign): "safetensors",
   "gguf", "npy", "npz", "pytorch" or "hf_index". NULL if r is NULL. */
ZT_API const char* zt_file_format(const zt_reader* r);

/* The whole manifest as one JSON document in the 1.2.0 vocabulary:
   {"version", "attributes", "objects": {name: {"shape", "format",
   "attributes", "components": {role: {"dtype", "type", "offset", "length",
   "uncompressed_length", "encoding", "digest"}}}}}. Absent optional fields
   are omitted; CBOR byte strings appear as {"$bytes": "<base64>"}. Built on
   first call. NULL only if r is NULL or memory runs out. */
ZT_API const char* zt_manifest_json(const zt_reader* r);

/* The attributes of the file, or of object `object`, as one encoded CBOR
   map, exactly as the file stores it (for 0.1.0 and 1.0 files, the map the
   reader derives from their extra fields, as in zt_manifest_json). Every
   value is there as written: NaN, infinities, integers from -2^64 to
   2^64 - 1, byte strings, undefined and other simple values (which the JSON
   of zt_manifest_json cannot tell apart); tags and indefinite lengths as
   stored. Decode it with any CBOR library. *data points into memory the
   reader owns, valid until zt_close; *size is its byte count. Without
   attributes: ZT_OK, *data NULL and *size 0. Fails with ZT_ERR_ARGUMENT
   (a NULL argument) or ZT_ERR_NOT_FOUND (object out of range). */
ZT_API zt_status zt_file_attributes_cbor(const zt_reader* r, const void** data, size_t* size);
ZT_API zt_status zt_object_attributes_cbor(const zt_reader* r, size_t object, const void** data,
                                           size_t* size);

/* Objects in manifest order. Out-of-range indexes give NULL / 0. */
ZT_API size_t zt_object_count(const zt_reader* r);
ZT_API const char* zt_object_name(const zt_reader* r, size_t i);
/* Index of the object called `name`: ZT_ERR_NOT_FOUND if none. */
ZT_API zt_status zt_object_find(const zt_reader* r, const char* name, size_t* index);
/* "dense", "sparse_csr", "sparse_coo", "quantized_group", or any other text.
   For a v2 object: the 1.2 name of a layout that means the same ("dense",
   "zt.sparse_csr/1" -> "sparse_csr", "zt.sparse_coo/1" -> "sparse_coo"),
   otherwise the layout id as written ("zt.mx/1"). */
ZT_API const char* zt_object_format(const zt_reader* r, size_t i);
/* The object's layout exactly as written: a v2 layout id ("dense",
   "zt.sparse_csr/1", "gguf.q4_0/1", "acme.paged/1"), or for a 1.x file the
   format as written (as zt_object_format). NULL if the index is out of
   range. Valid until zt_close. */
ZT_API const char* zt_object_layout(const zt_reader* r, size_t i);
/* The shape; *ndim gets its rank (0 for a scalar, whose pointer may be non-NULL). */
ZT_API const uint64_t* zt_object_shape(const zt_reader* r, size_t i, size_t* ndim);

/* Components of object `object` ("data", "values", "scales", ...). */
ZT_API size_t zt_component_count(const zt_reader* r, size_t object);
ZT_API const char* zt_component_role(const zt_reader* r, size_t object, size_t k);
/* Storage dtype ("f32", ...) and logical type ("f8_e4m3fn", ... or NULL if none). */
ZT_API const char* zt_component_dtype(const zt_reader* r, size_t object, const char* role);
ZT_API const char* zt_component_type(const zt_reader* r, size_t object, const char* role);
/* Encoding ("raw", "zstd", or as written; v2's "zt.zstd-seekable/1" is
   "zstd"), stored byte count, and the decoded byte count if known without
   decoding (else ZT_ERR_UNSUPPORTED). */
ZT_API const char* zt_component_encoding(const zt_reader* r, size_t object, const char* role);
/* The v2 encoding id exactly as written ("zt.zstd-seekable/1"); NULL for a
   raw part, for every component of a 1.x file, and for bad arguments. */
ZT_API const char* zt_component_encoding_id(const zt_reader* r, size_t object, const char* role);
/* The name of the v2 shard (another file of the model, v2 spec §7) whose
   bytes the part references; NULL when they are in this file (every 1.x
   component) and for bad arguments. */
ZT_API const char* zt_component_shard(const zt_reader* r, size_t object, const char* role);
ZT_API zt_status zt_component_stored_size(const zt_reader* r, size_t object, const char* role,
                                          uint64_t* nbytes);
ZT_API zt_status zt_component_decoded_size(const zt_reader* r, size_t object, const char* role,
                                           uint64_t* nbytes);
/* Where a component's stored bytes lie in what the reader was opened on
   (the file; zt_open_memory's buffer; the URL's resource; the bytes of a
   zt_open_source): *offset from its first byte, and *nbytes (as
   zt_component_stored_size). For a program that reads or maps those bytes
   itself: a copy-on-write mapping of its own, O_DIRECT reads, a range
   request. They are stored bytes, encoded as zt_component_encoding says
   (big-endian elements in a 0.1.0 file). Reads nothing, but for a stored
   zip member whose CRC-32 was not checked yet (a torch.save checkpoint's
   storage, an .npz array: checked at the first read of their bytes, not at
   open), whose check runs first: bytes a program maps itself are those a
   read would hand out. Fails with ZT_ERR_ARGUMENT (NULL reader, role or
   output), ZT_ERR_NOT_FOUND (no such object or role), ZT_ERR_DIGEST (that
   CRC-32 does not hold), or ZT_ERR_UNSUPPORTED where they are not in it: a v2
   part in another shard file (zt_component_shard), a tensor of a foreign
   model held in another of its files, or one whose bytes its reader
   changed into memory of its own at open (big-endian elements reordered, a
   strided view or a Fortran-order array gathered, a zip member inflated).
   So a foreign file's tensor that has an extent lies there as it decodes:
   raw little-endian elements. */
ZT_API zt_status zt_component_extent(const zt_reader* r, size_t object, const char* role,
                                     uint64_t* offset, uint64_t* nbytes);

/* zt_component_extent and zt_component_encoding of component `role` of
   objects first .. first + count - 1, in one call: what a loader that maps
   or reads a model's bytes itself plans from (asked object by object, a
   binding pays its per-call cost for each: a mapped load of 20,000 small
   tensors took twice as long as copying them). offsets[k] and nbytes[k]
   get object first + k's extent and, where encodings is not NULL,
   encodings[k] its encoding (the reader's text, valid until zt_close).
   Where zt_component_extent would refuse an object (it has no component
   `role`; its bytes are not in this file), offsets[k] is UINT64_MAX,
   nbytes[k] is 0, and encodings[k] is as zt_component_encoding says (NULL
   without such a component); an object in a zip member whose CRC-32 does
   not hold is marked too. Reads nothing but the pending CRC-32 checks of
   those objects (zt_component_extent), run on every core. Fails with ZT_ERR_ARGUMENT
   (NULL reader or role; NULL offsets or nbytes with count > 0) or
   ZT_ERR_NOT_FOUND (the objects run past the last one), writing nothing
   then. */
ZT_API zt_status zt_component_extents(const zt_reader* r, const char* role, size_t first,
                                      size_t count, uint64_t* offsets, uint64_t* nbytes,
                                      const char** encodings);

/* Where component `role` of objects first .. first + count - 1 lies among
   the files of the model, in one call: for a loader that maps a sharded
   model's files itself (a v2 model's shards, a sharded checkpoint's .index.json,
   ONNX external data), as zt_component_extents serves one file. files[k]
   gets the path of the file holding object first + k's stored bytes as
   the reader opened it (the reader's text, valid until zt_close; one
   pointer a file, so that equal pointers mean one file), offsets[k] and
   nbytes[k] where they lie in it, and devices[k] and inodes[k] (each
   array may be NULL) that file's st_dev and st_ino when the reader opened
   it: a program that opens the path must compare them with fstat(2) of
   what it opened, which may be another file by then. The bytes are stored
   bytes, encoded as zt_component_encoding says (big-endian in a 0.1.0
   file); a foreign file's tensor in a file lies there as it decodes.
   Where they are in no file (the object has no component `role`; a
   reader of memory, a URL or a source; bytes a foreign reader reordered,
   gathered or inflated into memory of its own at open; a v2 shard that
   cannot be opened, whose read fails as zt_decode_many says), files[k] is
   NULL, offsets[k] UINT64_MAX and nbytes[k], devices[k], inodes[k] 0.
   Opens the v2 shards that hold any of the objects' parts, once each, and
   runs their pending CRC-32 checks as zt_component_extents does (an object
   whose check fails is marked).
   Fails with ZT_ERR_ARGUMENT (NULL reader or role; NULL files, offsets or
   nbytes with count > 0) or ZT_ERR_NOT_FOUND (the objects run past the
   last one), writing nothing then. */
ZT_API zt_status zt_component_files(const zt_reader* r, const char* role, size_t first,
                                    size_t count, const char** files, uint64_t* offsets,
                                    uint64_t* nbytes, uint64_t* devices, uint64_t* inodes);

/* Many objects at a glance, in one call: what a loader needs to plan
   reading a whole model (a binding that asks field by field pays its
   per-call cost for each, and a model of many small tensors loads at that
   cost). Like zt_decode_request it comes as an array, so its layout is
   frozen and struct_size must be sizeof(zt_object_summary), as
   zt_object_summary_init sets it. Strings and shapes are the reader's,
   valid until zt_close. */
typedef struct zt_object_summary {
  uint32_t struct_size;  /* sizeof(zt_object_summary), set by zt_object_summary_init */
  uint32_t ndim;         /* rank of shape (0 for a scalar) */
  const char* name;      /* as zt_object_name */
  const char* format;    /* as zt_object_format ("dense", ...) */
  const char* layout;    /* as zt_object_layout */
  const uint64_t* shape; /* ndim values, as zt_object_shape */
  const char* dtype;     /* storage dtype of the "data" component; NULL if the object has none */
  const char* type;      /* logical type of the "data" component; NULL if none */
  uint64_t components;   /* number of components, as zt_component_count */
  uint64_t
      attributes_size; /* bytes of the object's attributes (zt_object_attributes_cbor), 0 if none */
} zt_object_summary;

/* Fills *s with the defaults (all NULL and 0) and sets struct_size. */
ZT_API void zt_object_summary_init(zt_object_summary* s);

/* Fills summaries[0 .. count) for objects first .. first + count - 1, in
   manifest order, from the manifest alone (no data byte is read). Fails
   with ZT_ERR_ARGUMENT (NULL reader, NULL summaries with count > 0, a
   struct_size this library does not know) or ZT_ERR_NOT_FOUND (the objects
   run past the last one), writing nothing then. */
ZT_API zt_status zt_object_summaries(const zt_reader* r, size_t first, zt_object_summary* summaries,
                                     size_t count);

/* Decoded bytes of one component, little-endian elements of its dtype.
   raw + little-endian: a pointer into the mapping, no copy.
   zstd, or legacy big-endian data, or any data in copy mode or from a
   URL: decoded once (on every core, as zt_component_read decodes), cached,
   owned by the reader; from 4 MiB in memory advised for transparent huge
   pages. Valid until zt_close. Fails with ZT_ERR_ARGUMENT, ZT_ERR_NOT_FOUND (no such
   object or role), ZT_ERR_UNSUPPORTED (unknown encoding), ZT_ERR_LIMIT
   (decoded size over zt_open_options.max_decoded_bytes, by default
   ZT_MAX_DECODED_BYTES), ZT_ERR_INVALID (corrupt or wrongly sized
   zstd data), ZT_ERR_NOMEM, ZT_ERR_IO (copy mode). */
ZT_API zt_status zt_component_map(const zt_reader* r, size_t object, const char* role,
                                  const void** data, uint64_t* nbytes);

/* Decode into a caller buffer (no caching); *written gets the byte count.
   ZT_ERR_ARGUMENT if capacity is too small (nothing is written then).
   A large component is read on every core: raw bytes of a file or of
   memory from 16 MiB in 8 MiB slices, a multi-frame zstd stream frame by
   frame (zt_decode_many takes a thread count). */
ZT_API zt_status zt_component_read(const zt_reader* r, size_t object, const char* role, void* dst,
                                   uint64_t capacity, uint64_t* written);

/* The capacity zt_component_read needs: the component's decoded byte count,
   checked as the read checks it before anything is decoded. Reads nothing.
   A program (or binding) that allocates the output itself asks this first,
   so that a size a file claims beyond the reader's cap is refused with the
   read's own status and message instead of by the allocator. Unlike
   zt_component_decoded_size (what the file states, for listings) it applies
   zt_open_options.max_decoded_bytes. Fails with ZT_ERR_ARGUMENT (NULL
   reader or nbytes), ZT_ERR_NOT_FOUND (no such object or role),
   ZT_ERR_UNSUPPORTED (an object or encoding this library does not read, or
   a size not known without decoding: zt_component_map then sizes it),
   ZT_ERR_LIMIT (over the cap), ZT_ERR_INVALID (legacy big-endian data that
   is not a whole number of elements). */
ZT_API zt_status zt_component_read_size(const zt_reader* r, size_t object, const char* role,
                                        uint64_t* nbytes);

/* Deep check of the whole file: for a sharded v2 model, first every shard
   file of the table (found, of its size, hashed whole against its digest:
   ZT_ERR_DIGEST naming the shard); then decode every component, check every digest,
   and check the content rules that zt_open leaves alone because they need
   the data bytes (CSR/COO index structure, bool bytes, decoded sizes,
   quantized_group sizes). *checked / *unchecked count components whose
   digest was verified / was absent or of an unknown algorithm (either
   pointer may be NULL). ZT_ERR_DIGEST names the first digest mismatch,
   ZT_ERR_INVALID the first content rule broken. */
ZT_API zt_status zt_verify(const zt_reader* r, uint64_t* checked, uint64_t* unchecked);

/* Room for any content digest text with its NUL ("sha256:" + 64 hex + 1). */
#define ZT_CONTENT_DIGEST_SIZE 72

/* The content digest of a zTensor v2 model (v2 spec §6.4): the identity of
   its tensors, "<algorithm>:<lowercase hex>" over the manifest's objects
   reduced to their shape, layout, attributes and each part's dtype, type and
   digest. It stays the same when the model is re-encoded (raw <-> zstd),
   aligned differently or split into shards, and changes with any tensor's
   bytes (through the part digests). Computed from the manifest alone: no
   data byte is read, and the part digests are taken as stated (zt_verify
   checks them). algorithm: "sha256" or "xxh3" (NULL: "sha256"). Writes
   the NUL-terminated text into out (out_size >= ZT_CONTENT_DIGEST_SIZE).
   Fails with ZT_ERR_UNSUPPORTED for a 1.x file (its digests cover stored
   bytes) and when a part carries no digest (the content digest is then
   undefined, never approximated), ZT_ERR_ARGUMENT for another algorithm, a
   NULL argument or a short buffer. */
ZT_API zt_status zt_content_digest(const zt_reader* r, const char* algorithm, char* out,
                                   size_t out_size);

/* Hints for the pages of one component's stored bytes (madvise WILLNEED /
   DONTNEED on the mapping of the file holding them, a shard's opened if need
   be; no-ops in copy mode, for memory readers, and for a shard that cannot
   be opened, whose reads then report why). ZT_ERR_NOT_FOUND for an unknown
   role. */
ZT_API zt_status zt_prefetch(const zt_reader* r, size_t object, const char* role);
ZT_API zt_status zt_evict(const zt_reader* r, size_t object, const char* role);

/* ------------------------------------------------------------------------ */
/* Writing                                                                    */

typedef struct zt_writer zt_writer;

/* What a failed writer call leaves. A refusal of what the call was given
   (ZT_ERR_ARGUMENT, ZT_ERR_INVALID, ZT_ERR_LIMIT, ZT_ERR_STATE for a call
   out of order) is rolled back: a refused piece or component end drops
   that component (its object stays open), a refused zt_writer_end_object
   drops the object, and the writer stays usable. A failure of the file
   itself (ZT_ERR_IO) or of an allocation (ZT_ERR_NOMEM) may leave the
   writer failed: every later call but zt_writer_abort then returns
   ZT_ERR_STATE naming the first failure. zt_writer_finish spends the
   writer whatever it returns; when it fails, the target is left as it was
   (a sharded model too: shards published by the failed finish are
   removed). */

/* Writes to a temporary file beside path; zt_writer_finish renames it into
   place, so a crash or an abort never leaves a half-written file at path.
   A symbolic link at path is followed (the file it names is replaced, the
   link stays); a directory, device, FIFO or socket at path, or a link
   that leads nowhere, fails ZT_ERR_IO before anything is written. A file
   replaced keeps its mode, and its owner and group where permitted. A v2
   model of shard files replaced by a file written here loses them: the
   shard files its root names by the positional convention
   (<stem>-<name>.zt beside it) are removed once the new file is in place. */
ZT_API zt_status zt_writer_open(const char* path, zt_writer** out);

typedef enum zt_digest_algo {
  ZT_DIGEST_XXH3 = 0, /* default: "xxh3:" + 16 hex digits (XXH3-64, canonical) */
  ZT_DIGEST_SHA256 = 1,
  ZT_DIGEST_NONE = 2
} zt_digest_algo;

typedef struct zt_writer_options {
  uint32_t struct_size;     /* sizeof(zt_writer_options), set by zt_writer_options_init */
  int32_t zstd_level;       /* default 3 */
  uint32_t threads;         /* compression threads (zstd and byte-planes frames; with 2 or
                               more, a raw component of 8 MiB or more is hashed on a
                               second thread while it is written); 0 = all cores
                               (default); more than the build's ZT_MAX_THREADS (default
                               256) are clamped to it. The bytes written do not depend
                               on it */
  uint32_t digest;          /* zt_digest_algo; default ZT_DIGEST_XXH3 */
  uint64_t frame_size;      /* bytes of input per zstd frame; default 1 MiB, from 1 KiB to the
                               build's ZT_MAX_FRAME_SIZE (default 256 MiB); ZT_ERR_ARGUMENT
                               outside */
  double auto_min_ratio;    /* encoding "auto": keep zstd (or byte planes) only if stored <= ratio *
                               raw; default 0.9 */
  uint32_t file_version;    /* the container written: 0 = spec 1.2.0 (default), 2 = zTensor v2
                               (layouts by id, "zstd" as zt.zstd-seekable/1 with frames of at
                               most 16 MiB, digests over the decoded bytes, bool as u8 + type
                               "bool"; format "quantized_group" has no v2 form and is refused
                               with ZT_ERR_UNSUPPORTED; names at most 1024 bytes; attributes
                               stored in deterministic CBOR, tags and undefined refused) */
  uint64_t alignment;       /* v2 only: blob alignment, a multiple of 4096; 0 = 65536 (the
                               canonical placement, default) */
  uint32_t canonical;       /* non-zero: v2 canonical form (v2 spec §6.3), so that the same
                               tensors always give the same bytes: every part raw with an xxh3
                               digest at 65536-byte placement, parts of identical bytes sharing
                               one blob (compared byte for byte), names and attribute keys in
                               Unicode NFC (others are refused, not normalised). Objects must be
                               begun in bytewise name order and each object's components in
                               bytewise role order (ZT_ERR_ARGUMENT otherwise); encoding "zstd"
                               is refused and "auto" writes raw. Needs file_version 2, alignment
                               0 or 65536 and digest ZT_DIGEST_XXH3. Default 0. */
  uint64_t shard_bytes;     /* v2 only, 0 = one file (default): split the model (v2 spec §7).
                               Blobs go to data shards named after their place and content,
                               "00001-" and 12 hex digits of the shard's sha256, ..., written
                               beside the target as <stem>-<name>.zt (root <stem>.zt; the
                               positional convention zt_open resolves), each at most shard_bytes long
                               unless one part is larger (it gets a shard of its own; zstd parts
                               count by their decoded size, so incompressible ones may take a
                               shard past it by their framing). The target becomes the root: the
                               manifest with a shard table of sizes and sha256 digests. Shards
                               are published before the root, whose rename switches models; an
                               older model's shards are removed only after, and a failed write
                               leaves that model whole. At least two alignments; not
                               with canonical, nor through a symbolic link at the target
                               (shards are found beside the name a model is opened by)
                               (ZT_ERR_ARGUMENT). */
} zt_writer_options;

/* Fills *opt with the defaults. */
ZT_API void zt_writer_options_init_sized(zt_writer_options* opt, size_t size);
static inline void zt_writer_options_init(zt_writer_options* opt) { zt_writer_options_init_sized(opt, sizeof *opt); }

/* zt_writer_open with options (NULL = defaults). */
ZT_API zt_status zt_writer_open_ex(const char* path, const zt_writer_options* opt, zt_writer** out);

/* Opens an existing zTensor v2 file to append to it (v2 spec §2.5): the
   same writer calls add objects after its bytes, and zt_writer_finish
   writes a new manifest and footer. The file's objects and attributes stay
   (zt_writer_set_file_attributes_* replaces the attributes); an object
   begun under the name of one of the file's own objects replaces it when
   it ends, its old blobs staying in the file unreferenced. Earlier bytes are
   never changed: the file is copied into a temporary file beside it, the
   new generation written after the copy, and the result renamed over the
   file at zt_writer_finish, so a crash, a failure or zt_writer_abort leave
   the previous generation as it was (the copy costs one read and one write
   of the file). The root of a sharded model keeps its shard table and the
   parts in its shards, which are not touched; new blobs go into the root.
   opt as for zt_writer_open_ex (NULL = defaults); its file_version must be
   0 or 2, canonical and shard_bytes 0 (ZT_ERR_ARGUMENT). Fails with
   ZT_ERR_UNSUPPORTED for 1.x files, and as zt_open for a file that does not
   open. */
ZT_API zt_status zt_writer_open_append(const char* path, const zt_writer_options* opt,
                                       zt_writer** out);

/* One call for the common case: a dense object with one "data" component.
   encoding is "raw", "zstd", "auto" or, in v2 files, "planes" (byte planes,
   libztensor.byte_planes/1: docs/profiles/) (NULL = "raw"). "auto" tries
   the first frame's bytes: zstd where it saves enough (auto_min_ratio),
   else raw; in a v2 file an f16, bf16, f32 or f64 component takes byte
   planes instead where they store at most 95% of zstd's bytes (a reader
   must know that profile: use "zstd" for files other v2 readers decode). The bytes are
   little-endian elements of dtype; nbytes must equal product(shape) x width.
   Fails with ZT_ERR_ARGUMENT (bad name, dtype, encoding, size, duplicate
   name, rank over ZT_MAX_RANK), ZT_ERR_LIMIT (more objects than
   ZT_MAX_OBJECTS), ZT_ERR_STATE (inside an object, or on a failed writer),
   ZT_ERR_IO, ZT_ERR_NOMEM. */
ZT_API zt_status zt_writer_add_dense(zt_writer* w, const char* name, const char* dtype,
                                     const uint64_t* shape, size_t ndim, const void* data,
                                     uint64_t nbytes, const char* encoding);

/* One dense object for zt_writer_add_dense_many: zt_writer_add_dense's
   arguments as an array element. Fill it with zt_dense_item_init. Like
   zt_decode_request, it comes as an array, so its layout is frozen and
   struct_size must be sizeof(zt_dense_item). */
typedef struct zt_dense_item {
  uint32_t struct_size;  /* sizeof(zt_dense_item), set by zt_dense_item_init */
  uint32_t ndim;         /* rank (at most ZT_MAX_RANK) */
  const char* name;      /* NUL-terminated, as zt_writer_add_dense's name */
  const char* dtype;     /* e.g. "bf16" */
  const uint64_t* shape; /* ndim dimensions (NULL only if ndim is 0) */
  const void* data;      /* nbytes little-endian elements (NULL only if nbytes is 0) */
  uint64_t nbytes;       /* product(shape) x the dtype's width */
} zt_dense_item;

/* Fills *item with the defaults (a rank-0 object with no name). */
ZT_API void zt_dense_item_init(zt_dense_item* item);

/* Adds items[0], items[1], ... in order, each as zt_writer_add_dense(w,
   name, dtype, shape, ndim, data, nbytes, encoding) would (same rules,
   same bytes in the file), in one call: a model of many small tensors
   costs a binding one foreign call, not one a tensor. Stops at the first
   item that fails and returns its status (zt_last_error() names the
   object); the items before it stay added, as separate calls would have
   left them, and *added (NULL: not told) says how many those are (count
   on success). Fails with ZT_ERR_ARGUMENT, adding nothing, for a NULL
   writer, NULL items with count > 0, or a struct_size this library does
   not know; otherwise as zt_writer_add_dense. The writer copies nothing
   it keeps: the buffers need to live only through the call. */
ZT_API zt_status zt_writer_add_dense_many(zt_writer* w, const zt_dense_item* items, size_t count,
                                          const char* encoding, size_t* added);

/* General objects (sparse, quantized, anything): begin, add components, end.
   zt_writer_end_object checks the object against its format (dense size,
   CSR/COO structure, quantized_group sizes and attributes) and fails with
   ZT_ERR_INVALID, dropping the object, if it breaks a rule. Sparse index
   components are u64 in a 1.2.0 file; u32 or u64 in a v2 file (one dtype
   for all of an object's index parts). The parts a rule needs (sparse
   indices, a group map) are read back from the file a window at a time, so
   the check holds a few MiB whatever they decode to (a v2 COO object: one
   read a dimension, and 8 bytes an entry to find a repeated cell). A
   quantized_group missing one of its attributes "bits", "group_size" and
   "packing" is stored unchecked, as readers list it: not dequantisable
   (zt_quant_view fails with ZT_ERR_UNSUPPORTED), so that every file a
   reader opens can be copied. */
ZT_API zt_status zt_writer_begin_object(zt_writer* w, const char* name, const char* format,
                                        const uint64_t* shape, size_t ndim);
ZT_API zt_status zt_writer_add_component(zt_writer* w, const char* role, const char* dtype,
                                         const char* type /* NULL = none */, const void* data,
                                         uint64_t nbytes, const char* encoding);
ZT_API zt_status zt_writer_end_object(zt_writer* w);
/* Drops the object begun last, with every component added to it so far (its
   bytes are cut off the file). ZT_ERR_STATE if no object is begun. */
ZT_API zt_status zt_writer_cancel_object(zt_writer* w);

/* Streaming: a component of any size written in pieces; the writer's own
   memory stays under about 4 x frame_size x threads whatever the component's
   size (two frames in flight a thread, each with its compressed copy; a raw
   component goes to the file as it comes). decoded_size is the total byte
   count the pieces will add up to (checked at zt_writer_end_component). */
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
/* The same as one encoded CBOR map of `size` bytes, stored byte for byte:
   every CBOR value survives exactly (NaN, infinities, integers to +-2^64,
   byte strings, simple values), which JSON text cannot carry. The bytes
   must be one well-formed CBOR map with text keys (valid UTF-8), no
   duplicate key, nested no deeper than readers accept there
   (ZT_MAX_CBOR_DEPTH - 1 levels for file attributes, ZT_MAX_CBOR_DEPTH - 3
   for object attributes: 127 and 125 with the default of 128):
   ZT_ERR_ARGUMENT otherwise (ZT_ERR_LIMIT when too deep). Object
   attributes apply to the object begun last. The bytes are copied; the
   caller keeps ownership of `cbor`. */
ZT_API zt_status zt_writer_set_file_attributes_cbor(zt_writer* w, const void* cbor, size_t size);
ZT_API zt_status zt_writer_set_object_attributes_cbor(zt_writer* w, const void* cbor, size_t size);

/* Manifest, footer, fsync, rename, fsync of the directory; frees w. On
   failure the temporary file is removed and the target left as it was.
   The directory's fsync is asked for, its failure not reported: the file
   is in place by then (some file systems refuse fsync on a directory),
   and only a crash of the machine in that moment could lose the rename. */
ZT_API zt_status zt_writer_finish(zt_writer* w);
/* Removes the temporary file; frees w. NULL is a no-op. */
ZT_API void zt_writer_abort(zt_writer* w);

/* ------------------------------------------------------------------------ */
/* Batch decode                                                               */

/* One component for zt_decode_many: which one, where to put it, and (out)
   how it went. Fill it with zt_decode_request_init, then set the fields.
   The exception to the struct_size rule (see Conventions): requests come as
   an array, whose stride is this struct's size, so its layout is frozen; a
   new field means a new struct. struct_size must be
   sizeof(zt_decode_request), as zt_decode_request_init sets it. */
typedef struct zt_decode_request {
  uint32_t struct_size; /* sizeof(zt_decode_request), set by zt_decode_request_init */
  uint32_t status;      /* out: the zt_status of this request */
  size_t object;        /* object index */
  const char* role;     /* component role, e.g. "data" */
  void* dst;            /* caller's buffer of `capacity` bytes (NULL only if capacity is 0) */
  uint64_t capacity;
  uint64_t written;     /* out: decoded bytes written to dst */
} zt_decode_request;

/* Fills *req with the defaults (no object, no buffer). */
ZT_API void zt_decode_request_init(zt_decode_request* req);

/* Decodes many components into caller buffers on up to `threads` threads
   (0 = all cores; a component decoded whole inside the call, byte planes
   or a multi-frame stream, shares its frames out no wider than `threads`
   either), each as zt_component_read would (same rules, same
   statuses, no cache). The work is shared out by zstd frame and by slices of
   raw data, so a whole file, a list of names, or one large multi-frame
   component all use every thread; where a zstd stream's frames lie is found
   by one thread while the others decode the frames found so far (from a
   cold file, the data is decoded as it is read). Small raw components
   (under 1 MiB) are read together in file order: from a file, one
   preadv(2) per run of neighbours; from a URL, one range request for up to
   1,024 of them; from a zt_source, one read_at call per run of
   neighbours. From a URL or a zt_source, the stored bytes of small zstd
   components are fetched together the same way before they are decoded. Every request is attempted and gets its own status and written count. Returns ZT_OK if
   all succeeded, otherwise the status of the first failed request in array
   order, whose message zt_last_error() gives. Fails with ZT_ERR_ARGUMENT (NULL reader, NULL reqs
   with count > 0, a struct_size this library does not know) before any
   request is attempted. Buffers must not overlap one another. */
ZT_API zt_status zt_decode_many(const zt_reader* r, zt_decode_request* reqs, size_t count, unsigned threads);

/* A byte range of one component's decoded bytes for zt_decode_ranges: bytes
   [offset, offset + length) go to dst. Fill it with zt_decode_range_init.
   Like zt_decode_request, it comes as an array, so its layout is frozen
   and struct_size must be sizeof(zt_decode_range). */
typedef struct zt_decode_range {
  uint32_t struct_size; /* sizeof(zt_decode_range), set by zt_decode_range_init */
  uint32_t status;      /* out: the zt_status of this range */
  size_t object;        /* object index */
  const char* role;     /* component role, e.g. "data" */
  uint64_t offset;      /* first decoded byte wanted */
  void* dst;            /* caller's buffer of `length` bytes (NULL only if length is 0) */
  uint64_t length;      /* bytes wanted */
  uint64_t written;     /* out: `length` on success, else 0 */
} zt_decode_range;

/* Fills *range with the defaults (no object, no buffer). */
ZT_API void zt_decode_range_init(zt_decode_range* range);

/* Told of each range as it completes: `index` into the array, and its
   status. Called once per range, from whichever thread finished it (a
   worker, or the caller's for ranges refused before any work), possibly on
   several threads at once; it must be thread-safe and return promptly,
   and it must not free the reader or the array. The range's dst is final
   when it is called with ZT_OK. */
typedef void (*zt_decode_done_fn)(void* ctx, size_t index, zt_status status);

/* zt_decode_many for parts of components: each range's decoded bytes
   [offset, offset + length) are written to its dst, on up to `threads`
   threads (0 = all cores), work shared out by slices of raw data and by
   zstd frames. Only what holds a range is read: the raw bytes at its
   place, the zstd or byte-planes frames that cover it (a frame it takes
   part of is decoded whole into a scratch buffer of one frame), found from
   the seek table or index, or a 1.x stream's frame headers up to the
   range's end; not mapped (copy mode, a remote file), only those frames
   are fetched. A range checks the decoding of what it reads (frames,
   their sizes and checksums): a stream damaged only in frames the range
   does not reach gives its bytes, in every mode (a whole read and
   zt_verify refuse it). It hands out bytes as zt_component_read does: bool
   bytes other than 0 or 1 and an f4_e2m1 part's padding nibble are not
   checked (zt_dense_rows and the converting calls check them), and no
   digest is (a part of a component cannot be: zt_verify checks digests). A component that
   is one zstd frame, frames that do not record their sizes, or big-endian
   data is decoded as a stream to its end (checked whole), in memory of one
   window. A range not within the decoded bytes fails ZT_ERR_ARGUMENT. `done` (may be NULL) is
   called as each range completes, so a program can start copying finished
   bytes (to a GPU, say) while others decode.

   The loading pattern it exists for (docs/bindings.md, "Loading to a
   device"): cut the tensors into ranges that fill a staging buffer (small
   tensors batched, large ones split), decode one buffer's ranges with one
   call, start the device copy of that buffer, and decode the next batch
   into a second buffer while the copy runs; host memory stays the staging
   buffers, whatever the model's size.

   Returns ZT_OK if all succeeded, otherwise the status of the first failed
   range in array order (its message from zt_last_error()); fails with
   ZT_ERR_ARGUMENT before any work for a NULL reader, NULL ranges with
   count > 0, or an unknown struct_size. Buffers must not overlap. */
ZT_API zt_status zt_decode_ranges(const zt_reader* r, zt_decode_range* ranges, size_t count,
                                  unsigned threads, zt_decode_done_fn done, void* ctx);

/* How many threads "all cores" (threads = 0) means in this library's calls:
   the CPUs this process may run on (its affinity mask: taskset, a cpuset
   of Slurm or Docker), bounded by the CPU quota of its cgroup and the
   cgroup's ancestors (cgroup v1 or v2: Docker's --cpus, a Kubernetes CPU
   limit; a quota of 1.5 CPUs counts 2), at least 1. More threads than that
   would only queue for the same CPUs, and under a quota the kernel stops
   the whole process for the rest of each period once the quota is spent.
   The environment variable ZT_THREADS, where it holds a whole number from
   1 to 1024, is the count instead (other values are ignored): for
   processes that load on one machine at once, such as the ranks of one
   job, to share its CPUs. Found once per process, at the first call that
   needs it: later changes of affinity, quota or ZT_THREADS are not seen
   (pass a thread count of your own then). Never fails. */
ZT_API unsigned zt_cpu_count(void);

/* ------------------------------------------------------------------------ */
/* Typed views: numbers out of any object                                     */
/*
 * Converting calls (zt_object_read_f32, zt_component_read_f32,
 * zt_object_decode_f32, zt_dense_rows_f32 and their f64 twins) turn the
 * stored elements into numbers as follows:
 *  - f64, f32, f16, bf16: exact when widening (subnormals, -0, infinities
 *    and NaN kept); f64 to f32 rounds to nearest even.
 *  - integers: by value; magnitudes beyond 2^24 (f32) or 2^53 (f64) round
 *    to the nearest representable value.
 *  - bool: 0 or 1 (any non-zero byte is 1).
 *  - u8 with type f8_e4m3fn, f8_e5m2, f8_e4m3fnuz or f8_e5m2fnuz: the FP8
 *    value, exactly. Sign S, exponent field e, mantissa m of M bits, bias B;
 *    e = 0 is subnormal, (-1)^S * 2^(1-B) * m/2^M, otherwise
 *    (-1)^S * 2^(e-B) * (1 + m/2^M).
 *      f8_e4m3fn   (OCP E4M3)  M=3 B=7:  no infinities; S.1111.111 is NaN; max 448.
 *      f8_e5m2     (OCP E5M2)  M=2 B=15: S.11111.00 is +-inf, S.11111.xx NaN; max 57344.
 *      f8_e4m3fnuz (AMD)       M=3 B=8:  0x80 is the only NaN; no inf, no -0; max 240.
 *      f8_e5m2fnuz (AMD)       M=2 B=16: 0x80 is the only NaN; no inf, no -0; max 57344.
 *  - complex64 / complex128: interleaved (real, imag) pairs, so an object
 *    of E elements gives 2E values.
 *  - any other logical type: ZT_ERR_UNSUPPORTED (zt_component_map still
 *    hands out the raw elements).
 * Capacities of the converting calls count values (floats or doubles),
 * not bytes.
 * A buffer that is too small gives ZT_ERR_ARGUMENT and nothing is written.
 *
 * Objects that cannot be interpreted give ZT_ERR_UNSUPPORTED from every
 * call of this section but zt_object_element_count (and zt_component_read_*
 * still converts single components of formats it does not know): formats
 * this library does not know, and the sparse
 * layouts of 0.1.x files (entries whose "layout", "format", "encoding" or
 * "dtype" names a sparse layout - contains "sparse", or is "csr", "coo" or
 * "csc" - or that carry a "sparse_format" key; other values of "layout",
 * such as "NHWC", stay attributes of a dense tensor). Those
 * are listed like any object: format as the file names it ("sparse",
 * "sparsecsr", ...; "sparse" when the file says "sparse_csr"/"sparse_coo",
 * whose 1.x components it lacks), every key other than name, offset,
 * size, shape, encoding and checksum in the attributes, and their blob as
 * one u8 component "data", listed but never handed out: no spec says what
 * its bytes are, so every call that reads them (zt_component_map, reads,
 * views, zt_verify) gives ZT_ERR_UNSUPPORTED naming the 0.1.0 sparse
 * layout.
 *
 * Calling a view of one format on an object of another (zt_csr_view on a
 * dense object, zt_object_read_f32 on a sparse one) gives ZT_ERR_ARGUMENT.
 * Pointers in view structs are owned by the reader and stay valid, unchanged,
 * until zt_close(); they point into the file mapping when the component is
 * raw little-endian (zero-copy) and into the reader's decode cache
 * otherwise (decoded once, on first use). Mapped data starts at a multiple
 * of 64 bytes from the start of the file, so it is aligned for its dtype in
 * files opened with zt_open (zt_open_memory: as aligned as the caller's
 * buffer). Dtype strings ("f32", "u64", ...) are static.
 *
 * View structs (zt_*_info) begin with `uint32_t struct_size`: fill it with the
 * matching *_init() call. The library writes only the fields that fit in
 * struct_size and fails with ZT_ERR_ARGUMENT if struct_size is smaller than
 * the first version of the struct.
 */

/* product(shape) of object `object`: its logical element count (1 for a
   scalar). ZT_ERR_NOT_FOUND for a bad index, ZT_ERR_LIMIT if the product
   overflows 64 bits (a huge sparse shape). */
ZT_API zt_status zt_object_element_count(const zt_reader* r, size_t object, uint64_t* count);

/* The number of values zt_object_decode_f32/f64 write for an object:
   product(shape), doubled when the data (dense) or values (sparse) are
   complex. ZT_ERR_UNSUPPORTED for objects that cannot be decoded,
   ZT_ERR_LIMIT on overflow. */
ZT_API zt_status zt_object_value_count(const zt_reader* r, size_t object, uint64_t* count);

/* The capacity, in values, that zt_object_decode_f32 (value_bytes 4) or
   zt_object_decode_f64 (value_bytes 8) needs for an object, and
   zt_object_read_f32/f64 for a dense one: its value count, checked as
   those calls check it before decoding anything. The
   dense array is one decoded result the caller holds whole, so value count
   x value_bytes over zt_open_options.max_decoded_bytes is ZT_ERR_LIMIT:
   a sparse object of a few hundred bytes may claim a shape of 2^50
   values. A program (or binding) that allocates the output asks this
   first, as zt_component_read_size for component reads. Reads nothing.
   Fails with ZT_ERR_ARGUMENT (NULL reader or count, value_bytes 0),
   ZT_ERR_NOT_FOUND (bad index), ZT_ERR_UNSUPPORTED (an object that cannot
   be decoded), ZT_ERR_LIMIT (over the cap, or overflow). */
ZT_API zt_status zt_object_decode_capacity(const zt_reader* r, size_t object, size_t value_bytes,
                                           uint64_t* count);

/* Converts the "data" of a dense object of any numeric type into dst
   (capacity counts values); *written gets the value count. Decodes without
   caching: a zstd component's decoded bytes are freed on return (decoded
   straight into dst when the data already is f32, resp. f64). Fails with
   ZT_ERR_ARGUMENT (NULL, not dense, capacity too small), ZT_ERR_NOT_FOUND,
   ZT_ERR_UNSUPPORTED (unknown type, encoding or 0.1.x sparse layout),
   ZT_ERR_INVALID (corrupt data), ZT_ERR_LIMIT (the values' bytes over
   max_decoded_bytes: zt_object_decode_capacity), ZT_ERR_NOMEM, ZT_ERR_IO. */
ZT_API zt_status zt_object_read_f32(const zt_reader* r, size_t object, float* dst, uint64_t capacity,
                                    uint64_t* written);
ZT_API zt_status zt_object_read_f64(const zt_reader* r, size_t object, double* dst, uint64_t capacity,
                                    uint64_t* written);

/* Converts one component of any object ("scales", "values", ...) into dst:
   one value per stored element (two per complex element). An f4_e2m1 part
   (v2) holds two values a byte, and its value count comes from the layout
   (product(shape) for dense and zt.mx/1 data, nnz for sparse values;
   ZT_ERR_UNSUPPORTED where the layout gives none).
   Errors as for zt_object_read_f32; ZT_ERR_NOT_FOUND for an unknown role. */
ZT_API zt_status zt_component_read_f32(const zt_reader* r, size_t object, const char* role, float* dst,
                                       uint64_t capacity, uint64_t* written);
ZT_API zt_status zt_component_read_f64(const zt_reader* r, size_t object, const char* role, double* dst,
                                       uint64_t capacity, uint64_t* written);

/* Any object as a dense row-major array of product(shape) values (x2 for
   complex; see zt_object_value_count):
    - dense: converted as described above;
    - sparse_csr / sparse_coo: zeros everywhere but at the stored
      coordinates; values at the same coordinates are summed (as scipy
      does); the index structure is checked first (ZT_ERR_INVALID as in
      zt_verify);
    - quantized_group: dequantised, see zt_quant_view.
   Fails as zt_object_read_f32, and with ZT_ERR_LIMIT when the dense size
   overflows 64 bits or its bytes exceed zt_open_options.max_decoded_bytes
   (zt_object_decode_capacity tells both before anything is allocated). */
ZT_API zt_status zt_object_decode_f32(const zt_reader* r, size_t object, float* dst, uint64_t capacity,
                                      uint64_t* written);
ZT_API zt_status zt_object_decode_f64(const zt_reader* r, size_t object, double* dst, uint64_t capacity,
                                      uint64_t* written);

/* A dense object at a glance. */
typedef struct zt_dense_info {
  uint32_t struct_size;  /* sizeof(zt_dense_info), set by zt_dense_info_init */
  uint32_t zero_copy;    /* 1: data points into the file mapping; 0: into the decode cache */
  uint64_t elements;     /* product(shape) */
  uint64_t values;       /* storage elements: elements x 2 for complex, ceil(elements / 2)
                            u8 for f4_e2m1 (two values a byte, low nibble first), else
                            elements */
  const char* dtype;     /* storage dtype of the elements: "f32", "u8", ... */
  const char* type;      /* logical type ("f8_e4m3fn", "complex64", ...) or NULL */
  const void* data;      /* `values` little-endian elements of dtype */
  uint64_t nbytes;       /* values x width of dtype */
} zt_dense_info;

/* Fills *v with zeros and sets struct_size. */
ZT_API void zt_dense_info_init_sized(zt_dense_info* v, size_t size);
static inline void zt_dense_info_init(zt_dense_info* v) { zt_dense_info_init_sized(v, sizeof *v); }

/* Fills *v for a dense object (decoding zstd data into the cache, as
   zt_component_map does). A logical type unknown to this library is
   allowed here: dtype and data describe the raw elements. Fails with
   ZT_ERR_ARGUMENT (NULL, bad struct_size, not dense), ZT_ERR_NOT_FOUND,
   ZT_ERR_UNSUPPORTED, ZT_ERR_INVALID, ZT_ERR_LIMIT, ZT_ERR_NOMEM, ZT_ERR_IO. */
ZT_API zt_status zt_dense_view(const zt_reader* r, size_t object, zt_dense_info* v);

/* sparse_csr of shape [rows, cols]: row i holds values[indptr[i] ..
   indptr[i+1]) at columns indices[...]. */
typedef struct zt_csr_info {
  uint32_t struct_size;  /* sizeof(zt_csr_info), set by zt_csr_info_init */
  uint32_t zero_copy;    /* 1 if all three arrays point into the file mapping */
  uint64_t rows, cols;
  uint64_t nnz;          /* stored entries */
  const void* values;    /* nnz elements (nnz x 2 storage elements for complex) */
  const char* values_dtype;
  const char* values_type; /* logical type or NULL */
  const void* indices;   /* nnz column indices */
  const char* indices_dtype; /* "u64" in spec 1.2.0 files, "u32" or "u64" in v2; any integer
                                type in older ones */
  const void* indptr;    /* rows + 1 row pointers */
  const char* indptr_dtype;
} zt_csr_info;

ZT_API void zt_csr_info_init_sized(zt_csr_info* v, size_t size);
static inline void zt_csr_info_init(zt_csr_info* v) { zt_csr_info_init_sized(v, sizeof *v); }

/* Fills *v after checking the structure, as zt_verify does (indptr[0] = 0,
   non-decreasing, indptr[rows] = nnz, rows + 1 entries, nnz indices, every
   column < cols): a view handed out can be indexed without bounds checks.
   The check is linear in rows + nnz and runs on every call. Fails with
   ZT_ERR_INVALID for a broken structure, ZT_ERR_UNSUPPORTED for values of
   an unknown logical type, otherwise as zt_dense_view. Materialise with
   zt_object_decode_f32. */
ZT_API zt_status zt_csr_view(const zt_reader* r, size_t object, zt_csr_info* v);

/* sparse_coo: entry k sits at (coords[0 * nnz + k], coords[1 * nnz + k],
   ..., coords[(ndim - 1) * nnz + k]) (all row indices first, then all
   column indices, ...). */
typedef struct zt_coo_info {
  uint32_t struct_size;  /* sizeof(zt_coo_info), set by zt_coo_info_init */
  uint32_t zero_copy;    /* 1 if both arrays point into the file mapping */
  uint64_t ndim;
  const uint64_t* shape; /* ndim dimensions (the object's shape) */
  uint64_t nnz;
  const void* values;    /* nnz elements (x 2 storage elements for complex) */
  const char* values_dtype;
  const char* values_type;
  const void* coords;    /* ndim x nnz indices */
  const char* coords_dtype;
} zt_coo_info;

ZT_API void zt_coo_info_init_sized(zt_coo_info* v, size_t size);
static inline void zt_coo_info_init(zt_coo_info* v) { zt_coo_info_init_sized(v, sizeof *v); }

/* Fills *v after checking the structure (ndim x nnz coordinates, each
   within its dimension). Errors as zt_csr_view. */
ZT_API zt_status zt_coo_view(const zt_reader* r, size_t object, zt_coo_info* v);

/* quantized_group (GPTQ-style), as libztensor reads it.
 *
 * The object has shape [..., K]: K is the input dimension (the last one),
 * N the product of the others (1 for a rank-1 shape), as in a PyTorch
 * Linear weight [out = N, in = K]. Attributes: "bits" (1..16; 2, 3, 4 and 8
 * in practice), "group_size" g (> 0, or -1 as GPTQ writes per-channel
 * quantisation: one group over all of K, reported as g = K) and "packing".
 * G = ceil(K / g) groups run along the input dimension.
 *
 *  packed_weight  integer words (u8 ... i64; the bit pattern counts, signed
 *                 words too), a [W, N] row-major array (the GPTQ qweight
 *                 layout, transposed with respect to the weight):
 *    "<vpe>_per_<dtype>" (e.g. "8_per_i32" for 4 bits, "4_per_i32" for 8,
 *        "16_per_i32" for 2, "10_per_i32" for 3 bits with 2 bits of padding,
 *        "2_per_u8" for 4 bits): W = ceil(K / vpe); q(n, k) is bits
 *        [j * bits, (j + 1) * bits) of word [k / vpe, n] with j = k % vpe,
 *        counted from the least significant bit; vpe x bits <= word bits,
 *        higher bits are padding. <dtype> must be the packed_weight dtype.
 *    "bitstream" (GPTQ's 3-bit packing, 32 values in 3 i32 words): the
 *        words of column n, [0, n], [1, n], ..., [W - 1, n], read as one
 *        little-endian bit string (word w holds bits [w * B, (w + 1) * B),
 *        B the word size in bits); q(n, k) is its bits [k * bits,
 *        (k + 1) * bits), and W = ceil(K * bits / B).
 *  scales         floats (f16, bf16, f32, f64), [G, N]: scale of (g', n)
 *                 at g' * N + n.
 *  zeros          either [G, N] values, floats or integers, at g' * N + n,
 *                 or integer words packed along N as GPTQ's qzeros,
 *                 [G, ceil(N / vpe)]: zero(g', n) is field n % vpe of word
 *                 [g', n / vpe] (per-word packings only). The element count
 *                 tells the two apart; [G, N] wins when both fit (N = 1 or
 *                 vpe = 1). The zero-points are used as stored: GPTQ v1
 *                 checkpoints that store zero - 1 need the +1 applied by
 *                 whoever writes the file.
 *
 *  w[n, k] = (q(n, k) - zero(k / g, n)) * scale(k / g, n), written at
 *  n * K + k (the object's row-major shape). Group reordering (GPTQ
 *  act-order g_idx) is not part of the layout. The float32 calls compute
 *  in float32, except when scales or [G, N] zeros are stored as f64: then
 *  in f64, rounded once (how GGUF's Q4_1/Q5_1, q x d + m, keep ggml's
 *  values with zero = -m/d).
 */
typedef struct zt_quant_info {
  uint32_t struct_size;      /* sizeof(zt_quant_info), set by zt_quant_info_init */
  uint32_t bits;
  uint64_t group_size;
  uint64_t n;                /* output dimension: product of all but the last dimension */
  uint64_t k;                /* input dimension: the last dimension */
  uint64_t groups;           /* ceil(k / group_size) */
  uint32_t values_per_word;  /* vpe of "<vpe>_per_<dtype>"; 0 for "bitstream" */
  uint32_t bitstream;        /* 1 for packing "bitstream" */
  uint32_t zeros_packed;     /* 1 if zeros are words packed along n */
  uint32_t zero_copy;        /* 1 if all three arrays point into the file mapping */
  const void* packed_weight; /* packed_weight_count words */
  uint64_t packed_weight_count;
  const char* packed_weight_dtype;
  const void* scales;        /* scales_count elements */
  uint64_t scales_count;
  const char* scales_dtype;
  const void* zeros;         /* zeros_count elements */
  uint64_t zeros_count;
  const char* zeros_dtype;
  const char* zeros_type;    /* logical type of zeros or NULL */
} zt_quant_info;

ZT_API void zt_quant_info_init_sized(zt_quant_info* v, size_t size);
static inline void zt_quant_info_init(zt_quant_info* v) { zt_quant_info_init_sized(v, sizeof *v); }

/* Fills *v after checking the attributes and the component sizes against
   them (as zt_verify does). Dequantise with zt_object_decode_f32. Fails
   with ZT_ERR_UNSUPPORTED if bits, group_size or packing is missing (or
   scales/zeros are complex), ZT_ERR_INVALID for bad attribute values or
   sizes, otherwise as zt_dense_view. */
ZT_API zt_status zt_quant_view(const zt_reader* r, size_t object, zt_quant_info* v);

/* Row slices of a dense object: rows [row_begin, row_end) along the first
 * dimension, i.e. (row_end - row_begin) x product(shape[1:]) elements,
 * little-endian bytes of the data's dtype (x 2 storage elements for
 * complex). row_begin == row_end is an empty slice. ZT_ERR_ARGUMENT for a
 * scalar, a range outside [0, shape[0]], or an object that is not dense.
 * f4_e2m1 data (v2) packs two values a byte: rows of an odd length that do
 * not start and end on a byte are ZT_ERR_UNSUPPORTED for the byte calls,
 * and convert through zt_dense_rows_f32/f64.
 */

/* Zero-copy slice: *data points at the rows and *nbytes gets their size.
   Raw little-endian data: a pointer into the file mapping. Other data (zstd,
   big-endian 0.1.0 data, copy mode): into the reader's decode cache, which
   decodes the whole component once (a whole read: damage anywhere in it is
   refused). Valid until zt_close(). */
ZT_API zt_status zt_dense_rows_map(const zt_reader* r, size_t object, uint64_t row_begin, uint64_t row_end,
                                   const void** data, uint64_t* nbytes);

/* Copies the rows into dst (capacity in bytes; *written gets the byte
   count), decoding only what covers them: raw data is read at its offset;
   zstd data stored as several frames that record their content sizes (as
   this library writes it), and byte planes, have only the overlapping
   frames decoded, without caching; other zstd data is decoded whole, once,
   into the reader's cache. Rows check what they read (the seek table or
   index, the frames holding them, a 1.x stream's frame headers up to them),
   mapped or not, as zt_decode_ranges does: damage in frames they do not
   reach is refused by whole reads and zt_verify, not by them.
   ZT_ERR_ARGUMENT if capacity is too small (nothing written). */
ZT_API zt_status zt_dense_rows(const zt_reader* r, size_t object, uint64_t row_begin, uint64_t row_end,
                               void* dst, uint64_t capacity, uint64_t* written);

/* zt_dense_rows converted to f32 / f64 (capacity and *written count values). */
ZT_API zt_status zt_dense_rows_f32(const zt_reader* r, size_t object, uint64_t row_begin, uint64_t row_end,
                                   float* dst, uint64_t capacity, uint64_t* written);
ZT_API zt_status zt_dense_rows_f64(const zt_reader* r, size_t object, uint64_t row_begin, uint64_t row_end,
                                   double* dst, uint64_t capacity, uint64_t* written);

/* N-d slices of a dense object: the box [begin[d], end[d]) in every
 * dimension d < ndim, where ndim is the object's rank (begin and end may be
 * NULL for a scalar, ndim 0), written row-major: product(end - begin)
 * elements, little-endian bytes of the data's dtype (x 2 storage elements
 * for complex). A box with an empty extent is empty (*written 0). Only the
 * box is touched: it is a series of runs, contiguous along the trailing
 * dimensions it covers whole; raw data is copied run by run from the file
 * mapping (copy mode: read at each run's offset), zstd data stored as
 * several frames that record their content sizes (as this library writes
 * it) has only the frames holding a run decoded, without caching; other
 * zstd data is decoded whole, once, into the reader's cache.
 * Fails with ZT_ERR_ARGUMENT (ndim is not the rank, a NULL begin or end, a
 * range outside [0, shape[d]], not a dense object, capacity too small:
 * nothing written), otherwise as zt_dense_rows. f4_e2m1 data (v2) has a
 * byte form only for a range of whole rows (ZT_ERR_UNSUPPORTED otherwise);
 * zt_dense_slice_f32/f64 read any box of it.
 */
ZT_API zt_status zt_dense_slice(const zt_reader* r, size_t object, size_t ndim,
                                const uint64_t* begin, const uint64_t* end, void* dst,
                                uint64_t capacity, uint64_t* written);

/* zt_dense_slice converted to f32 / f64 (capacity and *written count values). */
ZT_API zt_status zt_dense_slice_f32(const zt_reader* r, size_t object, size_t ndim,
                                    const uint64_t* begin, const uint64_t* end, float* dst,
                                    uint64_t capacity, uint64_t* written);
ZT_API zt_status zt_dense_slice_f64(const zt_reader* r, size_t object, size_t ndim,
                                    const uint64_t* begin, const uint64_t* end, double* dst,
                                    uint64_t capacity, uint64_t* written);

#ifdef __cplusplus
}
#endif

#endif /* ZTENSOR_H */
