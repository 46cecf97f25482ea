// The one model of a manifest that every generation of the format is parsed
// into (0.1.0, 1.0.x, 1.1.x, 1.2.x, 2), in the 1.2.0 vocabulary. Nothing
// after this stage knows generations, except what the model states: the
// big-endian flag of 0.1.0 data, and for v2 the layout and encoding ids as
// written, shards, and digests over decoded bytes (docs/v2.md §1).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/arithmetic.h"
#include "base/dtype.h"
#include "base/error.h"
#include "base/zt_limits.h"
#include "cbor/cbor_value.h"
#include "codec/digest.h"
#include "container/generation.h"

namespace zt {

// byte_planes: v2's libztensor.byte_planes/1 (codec/byte_planes.h).
enum class Encoding : uint8_t { raw, zstd, byte_planes, unknown };

// The attributes of a file or object: one encoded CBOR map, as stored in
// the manifest (or made by the reader from an older generation's fields).
// Read on demand without building a tree (cbor_item.h), so attributes cost
// no memory beyond the manifest's own bytes, whatever they hold.
struct Attributes {
  bool present = false;
  std::span<const uint8_t> encoded;  // a CBOR map when present; views the
                                     // manifest bytes or Manifest::made
};

struct Component {
  std::string role;
  DType dtype = DType::u8;
  std::optional<std::string> type;  // logical type as written (after 1.1 upgrade)
  const LogicalType* known_type = nullptr;
  uint64_t offset = 0;
  uint64_t length = 0;
  std::optional<uint64_t> uncompressed_length;
  // 1.x: as written; v2: "zstd" for zt.zstd-seekable/1, other ids as
  // written. Absent means "raw".
  std::optional<std::string> encoding_text;
  std::optional<std::string> encoding_id;  // v2: the encoding id as written
  Encoding encoding = Encoding::raw;
  std::optional<uint32_t> shard;  // v2: index into Manifest::shards; absent: this file
  // A foreign file read as a model (foreign/foreign_reader.h): which of the
  // Reader's held buffers has the bytes, at `offset`; absent: the file.
  std::optional<uint32_t> held;
  // A foreign model's component in a zip member whose CRC-32 is checked at
  // the first read (Reader::open_held's checks), not at open.
  std::optional<uint32_t> crc_check;
  std::optional<std::string> digest;  // "algorithm:hex" (legacy checksums normalised)
  bool big_endian = false;            // 0.1.0 data_endianness "big"

  unsigned width() const { return dtype_width(dtype); }
  // Storage elements per logical element: 2 for complex, else 1.
  unsigned ratio() const { return known_type ? known_type->ratio : 1; }
  // Bytes that must be 0 or 1: 1.2's bool dtype, v2's type "bool" over u8.
  bool holds_bools() const {
    return dtype == DType::boolean || (known_type && known_type->name == "bool");
  }
  // Whether the logical element size is known (no unknown `type`).
  bool element_size_known() const { return !type || known_type; }
};

struct Object {
  std::string name;
  std::vector<uint64_t> shape;
  std::string format;  // 1.x as written; v2 the 1.2 name where one means the same
  std::string layout;  // v2: the layout id as written; empty in 1.x
  Attributes attributes;
  std::vector<Component> components;
  // Set for objects that are listed but cannot be read (0.1.x sparse
  // layouts the spec never described): the reason, given on every access.
  std::string unsupported;
  // A foreign object's input file: the shard of a sharded checkpoint it
  // came from, in name order (0 for everything else; docs/architecture.md,
  // "Foreign files in the core model").
  uint32_t input_file = 0;

  const Component* find(std::string_view role) const;
};

// Indexes of objects by name: open addressing (one allocation, at most
// half full) instead of a hash node per object; the names themselves stay
// in the objects. Each slot keeps 32 bits of its name's hash beside the
// index, so that growing the table hashes no name again and a probe reads
// an object's name only where the hashes agree (each read a cache miss in
// a model of many objects).
class NameIndex {
 public:
  void reserve(size_t n);
  // Indexes objects[i] under its name; false if the name is there already.
  bool insert(uint32_t i, const std::vector<Object>& objects);
  std::optional<size_t> find(std::string_view name, const std::vector<Object>& objects) const;

 private:
  void rehash(size_t capacity);

  // (hash's low 32 bits) << 32 | (object index + 1); 0 = empty.
  std::vector<uint64_t> table_;
  size_t used_ = 0;
};

// A v2 shard table entry (v2 spec §7.1): another file, named by a label
// and identified by its size and whole-file digest.
struct Shard {
  std::string name;
  uint64_t size = 0;
  std::string digest;  // "xxh3:..." or "sha256:..."
};

struct Manifest {
  Generation generation = Generation::v1;
  std::string version;  // as stored: "1.2.0", "1.0", "0.1.0"; "2" for v2 (the footer's)
  // Empty for a zTensor file; a foreign file read as a model names its
  // format ("safetensors", "gguf", "npy", "npz", "pytorch", "hf_index").
  std::string foreign;
  bool v11 = false;  // a 1.x file older than 1.2.0
  // Digests cover decoded bytes (v2) rather than stored bytes (1.x).
  bool digests_cover_decoded = false;
  Attributes attributes;
  std::vector<Shard> shards;
  std::vector<Object> objects;
  NameIndex by_name;
  // CBOR nodes the decoder kept of the manifest to parse it (manifest_policy;
  // objects streamed, 1.x and v2): its memory while opening, not after.
  uint32_t decoded_nodes = 0;
  // Attribute maps the reader made (a 1.0.x generator, 0.1.0 custom keys):
  // a deque, so that growing it never moves what Attributes view.
  std::deque<std::vector<uint8_t>> made;

  std::optional<size_t> find(std::string_view name) const;
};

// What the decoder keeps of a manifest of each generation: the fields the
// model reads as nodes, attributes as their encoded bytes, unknown fields
// and values of the wrong kind not at all (or encoded, for the parser to
// refuse), so that memory follows the model, not what the manifest holds.
cbor::ValuePolicy manifest_policy(Generation gen);

// Parses a decoded manifest of the given generation. Schema errors only;
// placement and size rules are validate()'s. The document may be decoded
// with or without manifest_policy.
Result<Manifest> parse_manifest(Generation gen, cbor::Document doc);

// Decodes and parses manifest bytes; the result and every error are those
// of cbor::decode + parse_manifest. For 1.x files the objects are parsed
// while the CBOR is decoded and their nodes dropped, so that the peak
// memory is the model's, not the model's plus the whole CBOR tape.
Result<Manifest> decode_manifest(Generation gen, std::span<const uint8_t> bytes);

// Product of a shape; nullopt when it overflows uint64.
std::optional<uint64_t> shape_product(std::span<const uint64_t> shape);

// Decoded byte count known from the manifest alone, if any.
std::optional<uint64_t> decoded_size(const Component& c);

// Bytes that n logical elements of c take (the type's size function);
// nullopt when it overflows. c's element size must be known.
std::optional<uint64_t> element_bytes(const Component& c, uint64_t n);

// Bytes that product(shape) logical elements of c take; nullopt if unknown
// (unknown type) or overflowing.
std::optional<uint64_t> dense_bytes(const Object& o, const Component& c);

// The rule for every name and text a manifest holds (object names, roles,
// formats, types), which the reader, the writer and the foreign readers
// share: not empty, at most Limits::name_bytes bytes, no NUL byte (C
// callers would see it cut short), valid UTF-8. Checked in that order.
// v2 names (object, part, attribute key) have a limit of their own, 1024
// bytes (v2 spec §3.5), which is a rule of the format rather than a limit.
enum class NameFault : uint8_t { none, empty, too_long, nul_byte, not_utf8 };
inline constexpr uint64_t kMaxNameBytesV2 = 1024;
// v2 manifests nest at most 32 levels deep, from the root (v2 spec §3.1).
inline constexpr unsigned kMaxDepthV2 = 32;
// v2 shapes have at most 64 dimensions (v2 spec §3.3).
inline constexpr uint64_t kMaxRankV2 = 64;
NameFault name_fault(std::string_view name, uint64_t max_bytes = Limits::name_bytes);

// "<namespace>.<name>/<version>" (v2 spec §5.2): dot-separated pieces, none
// empty, a decimal version of 1 or more without leading zeros. What v2
// layout ids other than "dense", and v2 encoding ids, must be.
bool is_v2_profile_id(std::string_view id);

// How messages name things: object "w", object "w": component "data", [2, 3].
std::string object_where(const Object& o);
std::string component_where(const Object& o, const Component& c);
std::string shape_text(std::span<const uint64_t> shape);

// The 1.2.0 manifest of `objects` (deterministic CBOR), with the file's
// attributes (one encoded CBOR map, or empty for none): what writers store.
std::vector<uint8_t> encode_manifest(std::span<const uint8_t> file_attributes,
                                     std::span<const Object> objects);

// The v2 manifest of `objects` in core deterministic encoding (v2 spec
// §3.1): maps in the order of their encoded keys, parts as blob/dtype/type/
// encoding/decoded_length/digest, the file attributes (canonical already,
// or empty for none) and each object's as given.
std::vector<uint8_t> encode_manifest_v2(std::span<const uint8_t> file_attributes,
                                        std::span<const Object> objects,
                                        std::span<const Shard> shards = {});

// The value the content digest hashes (v2 spec §6.4): ["zt.content/1",
// {object: {parts: {part: {type, dtype, digest}}, shape, layout,
// attributes}}] in deterministic encoding. UNSUPPORTED when a part has no
// digest (the content digest is then undefined).
Result<std::vector<uint8_t>> encode_content_v2(std::span<const Object> objects);

// "<algo>:<hex>" of encode_content_v2 for a v2 manifest: the model's
// identity, whatever its alignment, encodings or shards. UNSUPPORTED for
// 1.x manifests (their digests cover stored bytes), ARGUMENT for an
// algorithm other than xxh3 or sha256.
Result<std::string> content_digest(const Manifest& m, DigestAlgo algo);

// The attributes as one deterministically encoded CBOR map, every value
// exactly as the reader holds it (cbor_encode.h, encode_value): how
// attributes travel from file to file.
Result<std::vector<uint8_t>> encode_attributes(const Attributes& a);

}  // namespace zt
