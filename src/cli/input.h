// One view of every file `zt` reads, through the core Reader: a .zt file,
// or a foreign file (safetensors, GGUF, npy, npz, PyTorch, a sharded
// checkpoint) read by src/foreign and opened as a Reader over what it holds
// (foreign/foreign_reader.h), as zt_open_ex with allow_foreign does.
// Objects and components are described alike; bytes are fetched on
// demand, decoded, little-endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/byte_windows.h"
#include "base/growing_bytes.h"
#include "foreign/foreign.h"
#include "manifest/json.h"
#include "manifest/object_format.h"
#include "read/reader.h"

namespace zt::cli {

struct Part {
  std::string role;
  DType dtype = DType::u8;
  std::optional<std::string> type;
  const LogicalType* known_type = nullptr;  // the type as the file's generation knows it
  std::string encoding = "raw";       // as stored
  uint64_t stored = 0;                // bytes on disk
  std::optional<uint64_t> decoded;    // decoded bytes, when known without decoding
  std::optional<std::string> digest;  // "algo:hex"
};

// A component's decoded bytes a window at a time (bounded memory).
using Windows = ByteWindows;

struct Item {
  std::string name;
  std::string format;                        // as the C ABI presents it (docs/v2.md §2)
  const ObjectFormat* descriptor = nullptr;  // nullptr: a format this library does not know
  std::vector<uint64_t> shape;
  bool has_attributes = false;
  std::vector<uint8_t> attributes_cbor;  // one encoded CBOR map, exact (empty: none)
  std::vector<Part> parts;
  // Which file of a sharded input holds it: a sharded checkpoint's shard
  // (in name order), or for a sharded v2 model its first part's shard + 1
  // (0: the root). Always 0 for a single file.
  uint32_t input_shard = 0;

  const Part* find(std::string_view role) const;
  std::optional<size_t> index_of(std::string_view role) const;
};

// Decoded bytes: a view into a mapping, or an owned buffer.
struct Buffer {
  std::span<const uint8_t> view;
  GrowingBytes owned;  // Reader::decode's bytes as they come (no copy)

  Buffer() = default;
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
};

// Blocks of exactly `size` bytes cut from a stream of windows (fewer only
// at its end): a view into the window when it holds the block, else the
// block assembled in a buffer. How a component is walked in pieces of whole
// elements or rows, whatever its windows' sizes.
class Blocks {
 public:
  explicit Blocks(std::unique_ptr<Windows> w) : w_(std::move(w)) {}
  // The next `size` bytes (valid until the following call); fewer at the
  // end, empty after it.
  Result<std::span<const uint8_t>> take(size_t size);

 private:
  std::span<const uint8_t> cut(size_t size);
  std::unique_ptr<Windows> w_;
  std::span<const uint8_t> rest_;
  std::vector<uint8_t> carry_;
};

class Input {
 public:
  // Opens by extension: .zt through the Reader (also any file that is not a
  // known foreign type), the others through src/foreign. What a foreign
  // reader leaves out on request (GGUF tensors of unknown types) is listed
  // on stderr.
  static Result<std::unique_ptr<Input>> open(const std::string& path,
                                             const foreign::ReadOptions& options = {});
  virtual ~Input() = default;

  // Decoded bytes of one component (no decode cache kept).
  virtual Result<Buffer> bytes(size_t item, size_t part) const = 0;
  // The same a window at a time: for .zt inputs in bounded memory whatever
  // the component decodes to; foreign files hold their bytes already.
  virtual Result<std::unique_ptr<Windows>> windows(size_t item, size_t part) const;
  // The check every copy passes before its bytes go into another file:
  // digests over the stored bytes and the content rules (bool bytes,
  // sparse indices, quantized sizes), as zt verify checks them
  // (Reader::verify_object; a foreign file has no digests, its reader
  // checked its own rules as it read it).
  virtual Result<void> check(size_t /*item*/) const { return {}; }
  // The Reader (never nullptr for an open Input).
  virtual const Reader* reader() const { return nullptr; }

  std::string path;  // what messages call the input (a URL without user info or query)
  foreign::FileKind kind = foreign::FileKind::zt;  // zt, or the foreign format
  std::string version;  // the .zt version, or the foreign kind
  bool has_attributes = false;
  std::vector<uint8_t> attributes_cbor;  // one encoded CBOR map, exact (empty: none)
  std::vector<Item> items;
  uint64_t file_size = 0;
  // What the model occupies: its files (this one, v2 shards, a sharded
  // checkpoint's shards) and their bytes together.
  size_t model_files = 1;
  uint64_t model_size = 0;

  std::optional<size_t> find(std::string_view name) const;

 protected:
  void index_names();

 private:
  std::unordered_map<std::string_view, size_t> by_name_;
};

// A component's element width and count of logical elements per element of
// its dtype (2 for complex).
unsigned part_ratio(const Part& p);

// Attributes for people. Each value is read from its CBOR as it is shown
// (cbor_item.h), never built as a tree, so showing attributes costs what the
// longest value's text does, whatever the attributes hold.
using AttributeVisitor = std::function<Result<void>(std::string_view key, std::span<const uint8_t> value)>;
Result<void> for_each_attribute(std::span<const uint8_t> attributes_cbor, const AttributeVisitor& f);
// A value as JSON text (NaN and infinities as null, bytes as {"$bytes": ..});
// text beyond max_bytes is not made (the result is then longer than
// max_bytes, for the caller to clip).
std::string attribute_text(std::span<const uint8_t> value, size_t max_bytes = SIZE_MAX);

}  // namespace zt::cli
