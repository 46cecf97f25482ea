// One descriptor per object format ("dense", "sparse_csr", "sparse_coo",
// "quantized_group", the v2 profiles zt.quant_group/1, zt.mx/1 and
// gguf.<type>/1, and this project's libztensor.packed_group/1 and libztensor.block_scaled/1):
// everything the library knows about a format, in one place, the way ggml keeps one type_traits
// entry per tensor type. The stages ask the descriptor instead of comparing names: validate (its
// rules at open), content (its rules at verify), the writer (what it checks of a written object),
// the views (how it decodes to dense) and the CLI (how it names it). A format not in the table is
// listed and its components are served as bytes, but nothing is checked beyond placement and whole
// elements, and it cannot be decoded to dense.
//
// This header is the plug-ins' interface, below every stage that asks a
// descriptor; the descriptors and their table live above read/ and views/
// in src/formats/ (docs/architecture.md, "Folder dependencies").
// Adding a format: one file beside formats/dense.cpp defining its
// descriptor, one line in formats/object_format.cpp's table, its tests
// (docs/architecture.md has the whole checklist).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/byte_windows.h"
#include "base/error.h"
#include "manifest/manifest.h"

namespace zt {

class Reader;

// Decoded bytes of an object's components: decoded[k] for components[k].
using DecodedComponents = std::span<const std::span<const uint8_t>>;

// Receives dense values in order, a chunk at a time.
template <typename T>
using ValueSink = std::function<Result<void>(std::span<const T>)>;

// The decoded bytes of o.components[k] from their start, a window at a
// time: what a writer reads back of an object it wrote. A rule may open a
// part more than once, or several side by side.
using OpenWindows = std::function<Result<std::unique_ptr<ByteWindows>>(size_t k)>;

// How a format decodes to a dense row-major array of T (float or double).
// Both are called only after decoded_value_count (views.h) gave `values`.
template <typename T>
struct DenseDecoder {
  // Writes exactly dst.size() == values values.
  Result<void> (*whole)(const Reader& r, size_t object, std::span<T> dst);
  // The same values in consecutive chunks of at most max(chunk, one row)
  // values, for an object of rank >= 1 with more than `chunk` values.
  Result<void> (*chunks)(const Reader& r, size_t object, uint64_t values, uint64_t chunk,
                         const ValueSink<T>& sink);
};

// An object of a v2-only layout as a 1.x file holds it, where a 1.x format
// means exactly the same (a gptq_v2 layer as 1.2's quantized_group): the
// bytes of every part unchanged, only names and attributes restated.
struct V1Form {
  std::string_view format;  // the 1.x format's name
  // The object's attributes: these keys dropped (the layout's own), these
  // added (key, one encoded CBOR value), every other one carried unchanged.
  std::vector<std::string_view> dropped_attributes;
  std::vector<std::pair<std::string, std::vector<uint8_t>>> added_attributes;
  // Parts whose role changes (the layout's role, the 1.x role); the others
  // keep theirs (a 1.x reader carries components its format does not name).
  std::vector<std::pair<std::string_view, std::string_view>> renamed_roles;
};

struct ListedAttribute {
  std::string_view prefix;
  std::string_view key;
  std::string_view when_zero = {};  // the text instead of prefix and value when it is 0 (if set)
  std::string_view when_negative = {};  // the same, when it is negative (if set)
};

struct ObjectFormat {
  std::string_view name;  // as written in a 1.x manifest (v1), else a name for messages
  // The v2 layout ids (v2 spec §5) that mean this format: a v2 object with
  // one of them is checked by this descriptor, and shown under `name` when
  // v1 (docs/v2.md §2), else under the id as written. Empty: none does.
  std::span<const std::string_view> layout_ids;
  // `name` is also a 1.x format name. False for v2-only descriptors, so that
  // a 1.2 file whose format text happens to be "zt.mx/1" stays unknown.
  bool v1 = true;
  // Components the format needs. In 1.x others may be present and are
  // carried along; a v2 object has no part outside these and optional_roles
  // (every profile says "exactly").
  std::span<const std::string_view> required_roles;
  std::span<const std::string_view> optional_roles;
  // Integer index components: stored as u64 by writers (1.0.x files do not
  // say their dtype: it is u64), any integer dtype accepted from readers.
  std::span<const std::string_view> index_roles;
  // The component whose numeric type the decoded values take (its complex
  // ratio doubles the value count); empty when the values are computed
  // (dequantised) rather than stored.
  std::string_view value_role;
  // The component whose dtype a listing shows as the object's.
  std::string_view listed_role;
  // The value_role's decoded size is product(shape) x element size, known
  // without its uncompressed_length.
  bool sized_by_shape = false;
  // The content rules read whole decoded components; other formats are
  // verified a window at a time.
  bool content_needs_whole_components = false;
  // What `zt verify` calls the rules check_content applies; empty if none.
  std::string_view content_rules;
  // What decoding it to dense does, in words ("densified", "dequantized").
  std::string_view decoded_as;

  // The rules of the manifest alone, at open and in the writer; the
  // required roles are present when it is called.
  Result<void> (*check_structure)(const Object& o) = nullptr;
  // The rules of the decoded bytes, at verify and before a view is handed
  // out; nullptr when there are none.
  Result<void> (*check_content)(const Object& o, DecodedComponents decoded) = nullptr;
  // What the writer checks of an object it wrote beyond check_structure
  // (the reader accepts more: older writers' index dtypes), reading parts
  // back a window at a time so that memory stays bounded whatever they
  // decode to; nullptr: none.
  Result<void> (*check_written)(const Object& o, const OpenWindows& open) = nullptr;
  // The object's type in listings, made of attributes ("int" bits, " g"
  // group_size: "int4 g128") when it has them all; else the listed_role's
  // dtype.
  std::span<const ListedAttribute> listed_attributes;

  DenseDecoder<float> to_f32;
  DenseDecoder<double> to_f64;

  // How many values part c holds, from the manifest alone (dense and
  // zt.mx/1 data: product(shape); v2 CSR/COO values: nnz from the index
  // part): where a packed type's count comes from, since f4_e2m1's size
  // function does not invert. nullptr, or nullopt: the layout does not say.
  std::optional<uint64_t> (*values_in)(const Object& o, const Component& c) = nullptr;

  // v2-only layouts: the object's 1.x form, where one says exactly the same
  // (it may read parts, such as a group map, to tell); Status::unsupported
  // with the reason in words where there is none. nullptr: never one.
  Result<V1Form> (*v1_form)(const Reader& r, size_t object) = nullptr;

  template <typename T>
  const DenseDecoder<T>& decoder() const {
    if constexpr (std::is_same_v<T, float>)
      return to_f32;
    else
      return to_f64;
  }
};

// The formats this library knows.
extern const ObjectFormat kDenseFormat;
extern const ObjectFormat kSparseCsrFormat;
extern const ObjectFormat kSparseCooFormat;
extern const ObjectFormat kQuantizedGroupFormat;
extern const ObjectFormat kQuantGroupFormat;  // zt.quant_group/1 (v2 only)
extern const ObjectFormat kMxFormat;          // zt.mx/1 (v2 only)
extern const ObjectFormat kGgufFormat;        // gguf.<type>/1 (v2 only)
extern const ObjectFormat kPackedGroupFormat;  // libztensor.packed_group/1 (v2 only)
extern const ObjectFormat kBlockScaledFormat;  // libztensor.block_scaled/1 (v2 only)

// values_in of formats whose "data" part holds product(shape) values.
std::optional<uint64_t> shape_counted_data(const Object& o, const Component& c);

// Every known format, in the order above.
std::span<const ObjectFormat* const> object_formats();

// The descriptor of a 1.x format name (v1 descriptors only); nullptr for a
// format this library does not know.
const ObjectFormat* find_object_format(std::string_view name);
// The descriptor serving a v2 layout id; nullptr for an unknown layout.
const ObjectFormat* find_layout_format(std::string_view layout);
// A v2 object is known by its layout, a 1.x object by its format name.
inline const ObjectFormat* format_of(const Object& o) {
  return o.layout.empty() ? find_object_format(o.format) : find_layout_format(o.layout);
}

// What the C ABI calls a v2 layout: the 1.2 name of the format it means
// (a v1 descriptor's), else the id as written.
std::string presented_format(std::string_view layout);

// Decoders of a format that is not decoded to dense (opaque, or not yet):
// Status::unsupported naming the object and its layout.
template <typename T>
Result<void> not_decoded_whole(const Reader& r, size_t object, std::span<T> dst);
template <typename T>
Result<void> not_decoded_chunks(const Reader& r, size_t object, uint64_t values, uint64_t chunk,
                                const ValueSink<T>& sink);

// Whether `role` is one of f's index components.
bool is_index_role(const ObjectFormat& f, std::string_view role);
// Whether a v2 object of format f may have a part called `role`.
bool is_allowed_role(const ObjectFormat& f, std::string_view role);

}  // namespace zt
