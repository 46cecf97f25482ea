// What the v2 layout profiles' rules share (zt.sparse_csr/1 and _coo/1,
// zt.quant_group/1, zt.mx/1, gguf.<type>/1): how their messages name the
// object, size equations of parts, and reading the attributes a profile
// defines, each as the one CBOR kind the profile gives it.
// The profiles' attribute tables are typed ("uint", "text", "map"), so a
// value of another kind is refused rather than converted: an integral float
// 4.0 is not the uint 4 (v2 keeps floats as floats, docs/v2.md decision 4).
// Every failure is Status::invalid and names the object, its layout and the
// attribute: object "w": layout "zt.mx/1": attribute "block_size" ...
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"
#include "manifest/manifest.h"
#include "views/views.h"

namespace zt {

// object "w": layout "zt.mx/1": how the profile rules start their messages.
std::string layout_where(const Object& o);

// A part's decoded size against the profile's size equation (`equation`
// says it in words; `want` nullopt: it overflowed). Nothing is checked when
// the decoded size is unknown (an unknown encoding).
Result<void> check_part_size(const Object& o, const Component& c, std::optional<uint64_t> want,
                             const char* equation);

// Groups (blocks) of `group` consecutive elements along one axis of a
// row-major shape, and where element i's per-group entry (scale, zero
// point) sits: those entries are row-major over the shape with shape[axis]
// replaced by the group count (docs/v2.md decisions 18 and 20).
struct AxisGroups {
  uint64_t along = 1;  // shape[axis]
  uint64_t inner = 1;  // product(shape[axis + 1:])
  uint64_t group = 1;  // elements per group along the axis (along when one group spans it)

  static AxisGroups of(std::span<const uint64_t> shape, uint64_t axis, uint64_t group) {
    AxisGroups g;
    g.along = shape[axis];
    for (uint64_t d = axis + 1; d < shape.size(); ++d) g.inner *= shape[d];
    g.group = group;
    return g;
  }
  uint64_t entry_of(uint64_t i) const {
    const uint64_t outer = i / (along * inner), j = i / inner % along, k = i % inner;
    return (outer * (along / group) + j / group) * inner + k;
  }
};

// Values [first, first + dst.size()) of the part `data` of object `object`,
// which holds `elements` values of format `f` in order (f4_e2m1: nibbles,
// low first): mapped, its decoded size checked against the count, an odd
// f4 count's spare nibble checked, converted into dst. The element reading
// of the profiles whose data part holds product(shape) values.
template <typename T>
Result<void> element_values(const Reader& r, size_t object, const Component& data,
                            const NumericFormat& f, uint64_t elements, uint64_t first,
                            std::span<T> dst);

// A packing's storage word by its name ("u8", "u16", "u32", "u64"), or
// nullopt.
std::optional<DType> word_dtype(std::string_view name);

// The unsigned integer of the same width (the word a signed part's bits are
// read as); other dtypes as they are.
DType unsigned_of(DType d);

// One attribute map of a v2 object: its attributes, or a map held by one of
// them ("packing", "zero_point"), whose entries are named "packing.word".
class ProfileAttributes {
 public:
  // The object's own attributes; an object without any has no entries.
  explicit ProfileAttributes(const Object& o);

  // Each getter gives nullopt when the entry is absent, an error when it has
  // another kind (or, for int_, a value outside int64).
  Result<std::optional<uint64_t>> uint_(std::string_view key) const;
  Result<std::optional<int64_t>> int_(std::string_view key) const;
  Result<std::optional<std::string>> text(std::string_view key) const;
  Result<std::optional<ProfileAttributes>> map(std::string_view key) const;
  // An array of unsigned integers (at most `max_items` of them).
  Result<std::optional<std::vector<uint64_t>>> uint_list(std::string_view key,
                                                         size_t max_items) const;

  // The same for entries the profile requires: absent is an error too.
  Result<uint64_t> required_uint(std::string_view key) const;
  Result<std::string> required_text(std::string_view key) const;
  Result<ProfileAttributes> required_map(std::string_view key) const;

  // `object "w": layout "L": attribute "packing.word"`, for messages.
  std::string where(std::string_view key) const;

 private:
  ProfileAttributes(const Object& o, std::span<const uint8_t> map, std::string path)
      : o_(&o), map_(map), path_(std::move(path)) {}
  Result<std::optional<std::span<const uint8_t>>> item(std::string_view key) const;
  Error wrong_kind(std::string_view key, const char* want) const;
  Error missing(std::string_view key) const;

  const Object* o_;
  std::span<const uint8_t> map_;  // empty: no attributes
  std::string path_;              // "" or "packing."
};

}  // namespace zt
