// "zt.mx/1" (v2 only): OCP Microscaling blocks. `data` holds the elements
// (MXFP4, MXFP8 or MXINT8) in the object's order, `scales` one f8_e8m0
// exponent per block of `block_size` elements along `axis`. The rules are
// the profile's metadata rules with docs/v2.md decisions 20-21; the profile
// has no data rules (a scale byte 0xFF is a NaN, not an error).
#include <optional>
#include <string>

#include "formats/object_format.h"
#include "formats/profile_rules.h"

namespace zt {

namespace {

using ull = unsigned long long;

// The registered MX element types (the profile's table), stored as u8.
bool is_mx_type(std::string_view t) {
  return t == "f4_e2m1" || t == "f8_e4m3fn" || t == "f8_e5m2";
}

Result<void> check_data_type(const Object& o, const Component& data) {
  // A type this library does not know may be a future MX element type: the
  // object opens and is not decoded (decision 21, v2 spec §4.2).
  if (data.type && !data.known_type) return {};
  const bool ok = data.type ? data.dtype == DType::u8 && is_mx_type(*data.type)
                            : data.dtype == DType::i8;  // MXINT8
  ZT_FAIL_IF(!ok, invalid,
             "%s: part \"data\" is %s%s%s; MX elements are u8 of type f4_e2m1, f8_e4m3fn or "
             "f8_e5m2, or i8 with no type",
             layout_where(o).c_str(), std::string(dtype_name(data.dtype)).c_str(),
             data.type ? " of type " : " with no type", data.type ? data.type->c_str() : "");
  return {};
}

Result<void> check_mx(const Object& o) {
  const std::string w = layout_where(o);
  // Blocks run along an axis; a scalar has none (decision 20).
  ZT_FAIL_IF(o.shape.empty(), invalid, "%s: the shape must have rank 1 or more", w.c_str());
  const ProfileAttributes a(o);
  auto block_size = a.required_uint("block_size");
  ZT_TRY(block_size);
  ZT_FAIL_IF(*block_size < 2, invalid, "%s must be at least 2, not %llu",
             a.where("block_size").c_str(), static_cast<ull>(*block_size));
  auto axis_or = a.uint_("axis");
  ZT_TRY(axis_or);
  const uint64_t axis = axis_or->value_or(o.shape.size() - 1);
  ZT_FAIL_IF(axis >= o.shape.size(), invalid, "%s is %llu, not below the rank %zu",
             a.where("axis").c_str(), static_cast<ull>(axis), o.shape.size());
  auto scale_form = a.required_text("scale_form");
  ZT_TRY(scale_form);
  ZT_FAIL_IF(*scale_form != "e8m0_exponent", invalid, "%s must be \"e8m0_exponent\", not \"%s\"",
             a.where("scale_form").c_str(), scale_form->c_str());
  ZT_FAIL_IF(o.shape[axis] % *block_size != 0, invalid,
             "%s: block_size %llu does not divide shape[%llu] = %llu (no partial blocks)",
             w.c_str(), static_cast<ull>(*block_size), static_cast<ull>(axis),
             static_cast<ull>(o.shape[axis]));

  const Component& scales = *o.find("scales");
  ZT_FAIL_IF(
      scales.dtype != DType::u8 || !scales.known_type || scales.known_type->name != "f8_e8m0",
      invalid, "%s: part \"scales\" must be u8 of type f8_e8m0", w.c_str());
  const Component& data = *o.find("data");
  ZT_TRY(check_data_type(o, data));

  const uint64_t elements = *shape_product(o.shape);  // v2 shapes do not overflow
  if (data.element_size_known())
    ZT_TRY(check_part_size(o, data, element_bytes(data, elements),
                           "the type's size at product(shape)"));
  return check_part_size(o, scales, elements / *block_size, "product(shape) / block_size");
}

constexpr std::string_view kLayoutIds[] = {"zt.mx/1"};
constexpr std::string_view kRequired[] = {"data", "scales"};

}  // namespace

const ObjectFormat kMxFormat = {
    .name = "zt.mx/1",
    .layout_ids = kLayoutIds,
    .v1 = false,
    .required_roles = kRequired,
    .optional_roles = {},
    .index_roles = {},
    .value_role = "",
    .listed_role = "data",
    .sized_by_shape = false,
    .content_needs_whole_components = false,
    .content_rules = "",
    .decoded_as = "",
    .check_structure = check_mx,
    .check_content = nullptr,
    .check_written = nullptr,
    .listed_attributes = {},
    // Decoding (2^(s-127) x element) comes with the v2 views.
    .to_f32 = {not_decoded_whole<float>, not_decoded_chunks<float>},
    .to_f64 = {not_decoded_whole<double>, not_decoded_chunks<double>},
};

}  // namespace zt
