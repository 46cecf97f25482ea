// Foreign tensor files (safetensors, GGUF, npy, npz, PyTorch, ONNX) as the zTensor model
// sees them: named objects with a format, a shape, components of a dtype
// (and logical type) and attributes. Each reader checks its format's rules
// (bounds, overlaps, sizes against shapes, header limits) before it hands a
// byte out, so what leaves here can go straight to zt::Writer.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.h"
#include "base/error.h"
#include "base/json_text.h"
#include "base/zt_limits.h"
#include "cbor/cbor_encode.h"
#include "manifest/json.h"
#include "source/io.h"
#include "source/range_source.h"

namespace zt::foreign {

enum class FileKind { zt, safetensors, gguf, npy, npz, pytorch, hf_index, onnx, unknown };

// By extension: ".zt", ".safetensors", ".gguf", ".npy", ".npz", PyTorch's
// ".pt", ".pth", ".bin", ".ckpt", and ".onnx"; a sharded Hugging Face
// checkpoint by its index ("*.index.json").
FileKind kind_from_path(std::string_view path);
// How messages and `zt inspect` name a kind ("sharded checkpoint").
std::string_view kind_name(FileKind k);

// Bytes that stay in a remote file until read: `length` bytes at `offset`.
struct RemoteBytes {
  std::shared_ptr<const RangeCache> source;
  uint64_t offset = 0, length = 0;
};

struct ForeignComponent {
  std::string role;
  DType dtype = DType::u8;
  std::optional<std::string> type;    // logical type ("f8_e4m3fn", "complex64", ...)
  std::span<const uint8_t> bytes;     // little-endian elements; owned by the ForeignFile
  std::optional<RemoteBytes> remote;  // instead of bytes: read remotely (open_foreign_url)
  // Index into ForeignFile::crc_checks: its bytes lie in a zip member whose
  // CRC-32 is checked before they are first handed out, not at open.
  std::optional<uint32_t> crc_check;
};

// A stored zip member viewed in the mapped file before its CRC-32 was
// checked (a checkpoint's storage, an .npz array): the Reader checks it at
// the first read of a component in it; a reader that copies out of it at
// open (reordering, gathering) checks it first (checked).
struct PendingCrc {
  std::span<const uint8_t> bytes;
  uint32_t crc = 0;
  std::string where;
  bool checked = false;
};

struct ForeignObject {
  std::string name;
  std::string format = "dense";
  std::vector<uint64_t> shape;
  Json attributes = Json::object();
  std::vector<ForeignComponent> components;
  uint32_t input_file = 0;  // which of input_files (a checkpoint's shard) it came from
};

// Attributes are JSON values taken literally (an object whose one key is
// "$bytes" is such an object), with byte strings as JSON binary values;
// json_value_to_cbor turns them into the CBOR a writer stores.
struct ForeignFile {
  FileKind kind = FileKind::unknown;
  Json attributes = Json::object();
  std::vector<ForeignObject> objects;
  Source source;                           // the mapped file, when bytes are viewed in place
  std::deque<std::vector<uint8_t>> owned;  // bytes made here: unzipped, byte-swapped, transposed
  std::vector<ForeignFile>
      input_files;  // other files read: a checkpoint's shards, ONNX external data
  std::vector<PendingCrc> crc_checks;  // ForeignComponent::crc_check (an index takes its shards' own)

  ForeignFile() = default;
  ForeignFile(ForeignFile&&) = default;
  ForeignFile& operator=(ForeignFile&&) = default;
  // Releases the attributes leaves first (release_attributes).
  ~ForeignFile();

  // Frees the attributes of the file and its objects, innermost containers
  // first: nlohmann's own destructor moves every element of a container
  // onto a stack of its own first, so that dropping a GGUF tokenizer array
  // of 32 million values held 1 GB more than the array, at the end.
  void release_attributes();

  // A ForeignFile of `kind` over the file at `path`, mapped.
  static Result<ForeignFile> mapped(const std::string& path, FileKind kind);
};

struct ReadOptions {
  // GGUF tensors of a GGML type this library does not know are left out and
  // listed in the file attribute "gguf.skipped", instead of refusing the file.
  bool skip_unknown_types = false;
  // The caller's cap on one component's decoded size (zt_open_options'
  // max_decoded_bytes; 0: the build's): bytes a reader makes at open (a
  // zip member inflated, a strided view gathered, typed values widened)
  // are refused beyond it before they are allocated.
  uint64_t max_decoded_bytes = 0;
  // Whether a safetensors file's (or index's) quantized layers are grouped
  // by the config.json beside it. A checkpoint's shards are read without:
  // the index groups the whole model, whose layers may span shards.
  bool group_quantized = true;
  uint64_t decoded_limit() const {
    return max_decoded_bytes && max_decoded_bytes < Limits::decoded_bytes ? max_decoded_bytes
                                                                          : Limits::decoded_bytes;
  }
};

// One descriptor per foreign format: everything that tells it apart and
// reads it, so that adding a format is one reader and one table entry
// (foreign.cpp), not a case in every switch.
struct ForeignFormat {
  FileKind kind;
  std::string_view id;     // what zt_file_format says: "safetensors", "hf_index", ...
  std::string_view label;  // kind_name
  std::span<const std::string_view> extensions;
  Result<ForeignFile> (*read)(const std::string& path, const ReadOptions& options);
  // File attributes whose value is a map over the other attributes' keys
  // (GGUF's "gguf.types"): files merged into one make it again, each key's
  // entry from the file its value came from, or the second file's keys
  // would lose what the map says of them.
  std::span<const std::string_view> keyed_attributes = {};
};

// Whether some foreign format names `key` among its keyed_attributes.
bool is_keyed_attribute(std::string_view key);

// The descriptor of a foreign kind; nullptr for zt and unknown.
const ForeignFormat* foreign_format(FileKind k);
// Every foreign format read, in the order a path's extension is tried.
std::span<const ForeignFormat> foreign_formats();

// A Hugging Face model named by its folder or its config.json: the file
// that holds its tensors there, model.safetensors.index.json if present,
// else model.safetensors (Status::not_found naming both when neither is).
// nullopt for any other path, which names its file itself.
Result<std::optional<std::string>> model_entry(const std::string& path);

// What every reader's result must hold before it becomes objects: valid
// names (not empty, no NUL, UTF-8, within ZT_MAX_NAME_BYTES) and bool bytes
// of 0 or 1 where they are held. `path` names the file in messages.
Result<void> check_writable(const std::string& path, const ForeignFile& f);

// A JSON file's integer wider than 64 bits, refused (ZT_ERR_INVALID,
// naming file, key and number): it would become a rounded double.
Result<void> refuse_wide_integer(const char* path, const JsonTextFaults& faults);

// Reads any supported foreign file by its extension.
Result<ForeignFile> read_foreign(const std::string& path, const ReadOptions& options = {});
// The same, read as a file of `kind` whatever `path` ends in: a file a model
// names (a shard), whose kind its name gave, read at its resolved path (a
// link into blobs/ has no extension, and one that leads to another kind of
// file, the index itself say, must not be read as that kind).
Result<ForeignFile> read_foreign_as(const std::string& path, FileKind kind,
                                    const ReadOptions& options);

// A bounded little-endian cursor over untrusted bytes: every read checks
// what is left first, so no length in the input can send it past the end.
class Cursor {
 public:
  Cursor(std::span<const uint8_t> bytes, uint64_t pos = 0) : bytes_(bytes), pos_(pos) {}
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return bytes_.size() - pos_; }
  bool take(uint64_t n, std::span<const uint8_t>& out);
  template <typename T>
  bool le(T& out) {
    std::span<const uint8_t> b;
    if (!take(sizeof(T), b)) return false;
    T v = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
      v = static_cast<T>(v | static_cast<T>(T(b[i]) << (8 * i)));
    out = v;
    return true;
  }

 private:
  std::span<const uint8_t> bytes_;
  uint64_t pos_;
};

}  // namespace zt::foreign
