// "zt.mx/1" (v2 only): OCP Microscaling blocks. `data` holds the elements
// (MXFP4, MXFP8 or MXINT8) in the object's order, `scales` one f8_e8m0
// exponent per block of `block_size` elements along `axis`. The rules are
// the profile's metadata rules with docs/v2.md decisions 20-21; the profile
// has no data rules (a scale byte 0xFF is a NaN, not an error). Decoded to
// dense as 2^(scale - 127) x element.
#include <optional>
#include <string>

#include "formats/profile_rules.h"
#include "manifest/object_format.h"
#include "views/kernels.h"

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

// ---- to dense: value(i) = 2^(scales[b] - 127) x element(i) ----

// Blocks along the axis: `axis` defaults to the last (check_mx held at open).
Result<AxisGroups> mx_blocks(const Object& o) {
  const ProfileAttributes a(o);
  auto block_size = a.required_uint("block_size");
  ZT_TRY(block_size);
  auto axis = a.uint_("axis");
  ZT_TRY(axis);
  return AxisGroups::of(o.shape, axis->value_or(o.shape.size() - 1), *block_size);
}

// Values [first, first + dst.size()) of an MX object (check_mx held at open).
template <typename T>
Result<void> mx_values(const Reader& r, size_t object, uint64_t first, std::span<T> dst) {
  const Object& o = r.manifest().objects[object];
  ZT_TRY(require_interpretable(o));
  const Component& data = *o.find("data");
  const Component& scales = *o.find("scales");
  auto format = numeric_format(o, data);  // an unknown element type stops here
  ZT_TRY(format);
  auto blocks = mx_blocks(o);
  ZT_TRY(blocks);
  auto elements = element_count(o);
  ZT_TRY(elements);
  auto s = r.map(object, views::index_of(o, &scales));
  ZT_TRY(s);
  ZT_FAIL_IF(s->size() != *elements / blocks->group, invalid,
             "%s: %zu decoded scales, %llu blocks need as many", component_where(o, scales).c_str(),
             s->size(), static_cast<ull>(*elements / blocks->group));
  ZT_TRY(element_values(r, object, data, *format, *elements, first, dst));
  // MXINT8 elements are two's-complement fixed point with 6 fraction bits
  // (OCP MX 1.0 §5.3; decision 21).
  const T unit = format->fp8 == Fp8::none && !format->f4 ? T(1) / T(64) : T(1);
  const float* e8m0 = fp8_table(Fp8::e8m0);
  for (uint64_t i = 0; i < dst.size(); ++i)
    dst[i] = dst[i] * unit * static_cast<T>(e8m0[(*s)[blocks->entry_of(first + i)]]);
  return {};
}

constexpr std::string_view kMxLayoutIds[] = {"zt.mx/1"};
constexpr std::string_view kMxRequired[] = {"data", "scales"};

}  // namespace

const ObjectFormat kMxFormat = {
    .name = "zt.mx/1",
    .layout_ids = kMxLayoutIds,
    .v1 = false,
    .required_roles = kMxRequired,
    .optional_roles = {},
    .index_roles = {},
    .value_role = "",
    .listed_role = "data",
    .sized_by_shape = false,
    .content_needs_whole_components = false,
    .content_rules = "",
    .decoded_as = "dequantized",
    .check_structure = check_mx,
    .check_content = nullptr,
    .check_written = nullptr,
    .listed_attributes = {},
    .to_f32 = {whole_by_range<float, mx_values<float>>, chunks_by_range<float, mx_values<float>>},
    .to_f64 = {whole_by_range<double, mx_values<double>>,
               chunks_by_range<double, mx_values<double>>},
    .values_in = shape_counted_data,
};

}  // namespace zt
