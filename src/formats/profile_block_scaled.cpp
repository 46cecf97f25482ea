// "libztensor.block_scaled/1" (v2 only, this project's profile,
// docs/profiles/libztensor.block_scaled-1.md): a 2-D weight [R, C] of
// low-precision elements (FP8, FP4, ...) times one scale per block of
// [block_rows, block_columns] elements, times an optional global scale.
// DeepSeek-V3's FP8 with 128 x 128 block scales, compressed-tensors'
// per-channel and per-tensor FP8 and ModelOpt's NVFP4 (two levels) are
// attribute sets of it, their checkpoint tensors the parts unchanged.
// Decoded to dense as element x scale(block) x global.
#include <optional>
#include <string>
#include <vector>

#include "base/arithmetic.h"
#include "formats/profile_rules.h"
#include "manifest/object_format.h"
#include "views/kernels.h"

namespace zt {

namespace {

using ull = unsigned long long;

struct Blocks {
  uint64_t rows = 1, cols = 1;  // elements a block covers
  uint64_t across = 0;          // blocks a row of blocks holds: ceil(C / cols)
};

Result<Blocks> read_blocks(const Object& o) {
  const ProfileAttributes a(o);
  auto block = a.uint_list("block", 2);
  ZT_TRY(block);
  ZT_FAIL_IF(!*block, invalid, "%s is required by the profile", a.where("block").c_str());
  ZT_FAIL_IF((*block)->size() != 2 || (**block)[0] == 0 || (**block)[1] == 0, invalid,
             "%s must be [rows, columns] of a block, both at least 1", a.where("block").c_str());
  Blocks b{(**block)[0], (**block)[1], 0};
  b.across = o.shape.size() == 2 ? ceil_div(o.shape[1], b.cols) : 0;
  return b;
}

bool is_float_type(const Component& c, std::initializer_list<std::string_view> types) {
  if (!c.type) return c.dtype == DType::f16 || c.dtype == DType::bf16 || c.dtype == DType::f32;
  if (c.dtype != DType::u8 || !c.known_type) return false;
  for (const std::string_view t : types)
    if (c.known_type->name == t) return true;
  return false;
}

// A part of `n` values, each of a float type (f16, bf16, f32, or u8 typed
// as one of `types`).
Result<void> check_scale_part(const Object& o, const Component& c, uint64_t n,
                              std::initializer_list<std::string_view> types, const char* equation) {
  ZT_FAIL_IF(!is_float_type(c, types), invalid,
             "%s: part \"%s\" must be f16, bf16 or f32 with no type%s", layout_where(o).c_str(),
             c.role.c_str(), types.size() ? ", or u8 of type f8_e4m3fn or f8_e8m0" : "");
  return check_part_size(o, c, checked_mul(n, c.width()), equation);
}

Result<void> check_block_scaled(const Object& o) {
  const std::string w = layout_where(o);
  ZT_FAIL_IF(o.shape.size() != 2, invalid, "%s: the shape must be [rows, columns], not rank %zu",
             w.c_str(), o.shape.size());
  auto b = read_blocks(o);
  ZT_TRY(b);
  const Component& data = *o.find("data");
  // An element type this library does not know: the object opens and is
  // not decoded (as zt.mx/1, v2 spec §4.2).
  if (!data.type || data.known_type) {
    const bool ok = data.type ? data.dtype == DType::u8 && data.known_type->name != "bool"
                              : data.dtype == DType::f16 || data.dtype == DType::bf16 ||
                                    data.dtype == DType::f32 || data.dtype == DType::i8;
    ZT_FAIL_IF(!ok, invalid,
               "%s: part \"data\" must be f16, bf16, f32 or i8 with no type, or u8 of an FP8 or "
               "FP4 type",
               w.c_str());
    ZT_TRY(check_part_size(o, data, element_bytes(data, o.shape[0] * o.shape[1]),
                           "the type's size at rows x columns"));
  }
  const uint64_t down = ceil_div(o.shape[0], b->rows);
  const auto blocks = checked_mul(down, b->across);
  ZT_FAIL_IF(!blocks, invalid, "%s: the block count overflows 64 bits", w.c_str());
  ZT_TRY(check_scale_part(o, *o.find("scales"), *blocks, {"f8_e4m3fn", "f8_e8m0"},
                          "ceil(rows / block[0]) x ceil(columns / block[1]) x width"));
  for (const char* role : {"global_scale", "input_scale"})
    if (const Component* c = o.find(role)) ZT_TRY(check_scale_part(o, *c, 1, {}, "one value"));
  return {};
}

// ---- to dense: value = element x scale(block) x global ----

template <typename T>
Result<T> one_value(const Reader& r, size_t object, const Component* c) {
  if (!c) return T(1);
  const Object& o = r.manifest().objects[object];
  auto bytes = r.map(object, views::index_of(o, c));
  ZT_TRY(bytes);
  auto f = numeric_format(o, *c);
  ZT_TRY(f);
  ZT_FAIL_IF(bytes->size() != c->width(), invalid, "%s: %zu decoded bytes for one value",
             component_where(o, *c).c_str(), bytes->size());
  T v{};
  convert_values(bytes->data(), *f, 1, &v);
  return v;
}

template <typename T>
Result<void> bs_values(const Reader& r, size_t object, uint64_t first, std::span<T> dst) {
  const Object& o = r.manifest().objects[object];
  ZT_TRY(require_interpretable(o));
  const Component& data = *o.find("data");
  const Component& scales = *o.find("scales");
  auto format = numeric_format(o, data);  // an unknown element type stops here
  ZT_TRY(format);
  auto scale_format = numeric_format(o, scales);
  ZT_TRY(scale_format);
  auto b = read_blocks(o);
  ZT_TRY(b);
  const uint64_t rows = o.shape[0], cols = o.shape[1];
  auto s = r.map(object, views::index_of(o, &scales));
  ZT_TRY(s);
  const uint64_t blocks = ceil_div(rows, b->rows) * b->across;
  ZT_FAIL_IF(s->size() != blocks * scales.width(), invalid,
             "%s: %zu decoded bytes of scales, %llu blocks need %llu",
             component_where(o, scales).c_str(), s->size(), static_cast<ull>(blocks),
             static_cast<ull>(blocks * scales.width()));
  auto global = one_value<T>(r, object, o.find("global_scale"));
  ZT_TRY(global);
  ZT_TRY(element_values(r, object, data, *format, rows * cols, first, dst));
  // One scale per block: converted once a row of blocks, not per value.
  std::vector<T> scale_row(b->across);
  uint64_t scale_row_of = UINT64_MAX;
  for (uint64_t i = 0; i < dst.size(); ++i) {
    const uint64_t row = (first + i) / cols, col = (first + i) % cols;
    if (row / b->rows != scale_row_of) {
      scale_row_of = row / b->rows;
      convert_values(s->data() + scale_row_of * b->across * scales.width(), *scale_format,
                     b->across, scale_row.data());
    }
    dst[i] = dst[i] * scale_row[col / b->cols] * *global;
  }
  return {};
}

constexpr std::string_view kBlockScaledLayoutIds[] = {"libztensor.block_scaled/1"};
constexpr std::string_view kBlockScaledRequired[] = {"data", "scales"};
constexpr std::string_view kBlockScaledOptional[] = {"global_scale", "input_scale"};

}  // namespace

const ObjectFormat kBlockScaledFormat = {
    .name = "libztensor.block_scaled/1",
    .layout_ids = kBlockScaledLayoutIds,
    .v1 = false,
    .required_roles = kBlockScaledRequired,
    .optional_roles = kBlockScaledOptional,
    .index_roles = {},
    .value_role = "",
    .listed_role = "data",
    .sized_by_shape = false,
    .content_needs_whole_components = false,
    .content_rules = "",
    .decoded_as = "dequantized",
    .check_structure = check_block_scaled,
    .check_content = nullptr,
    .check_written = nullptr,
    .listed_attributes = {},
    .to_f32 = {whole_by_range<float, bs_values<float>>, chunks_by_range<float, bs_values<float>>},
    .to_f64 = {whole_by_range<double, bs_values<double>>,
               chunks_by_range<double, bs_values<double>>},
    .values_in = shape_counted_data,
};

}  // namespace zt
