// "zt.quant_group/1" (v2 only): affine group quantisation as a space of
// attribute sets (AWQ, GPTQ, MLX affine, bias-8, symmetric int8). Integer
// codes of `bits` bits packed `per_word` to a storage word, one scale (and
// optionally one zero point) per group of `group_size` codes along `axis`.
// Not the 1.2 "quantized_group", whose packing and groups differ
// (docs/v2.md §3), so the two are separate descriptors.
//
// The rules here are the profile's metadata rules and docs/v2.md decisions
// 16-19; the profile has no data rules (every bit pattern is a code).
// Decoded to dense as (code - zero) x scale, codes signed when the data's
// dtype is (decision 30).
#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "formats/profile_rules.h"
#include "manifest/object_format.h"
#include "views/kernels.h"

namespace zt {

namespace {

using ull = unsigned long long;

// What the attributes say, once each has been checked on its own.
struct QuantGroup {
  uint64_t bits = 0, group_size = 0, axis = 0, per_word = 0;
  DType word = DType::u8;
  bool msb_first = false;
  std::string scale_form, zero_form, zero_packing;
  int64_t zero_value = 0;  // zero_point.value when the form is "implied"
};

Result<QuantGroup> read_attributes(const Object& o) {
  const ProfileAttributes a(o);
  QuantGroup q;
  auto bits = a.required_uint("bits");
  ZT_TRY(bits);
  q.bits = *bits;
  constexpr uint64_t kBits[] = {2, 3, 4, 5, 6, 8};
  ZT_FAIL_IF(std::find(std::begin(kBits), std::end(kBits), q.bits) == std::end(kBits), invalid,
             "%s must be 2, 3, 4, 5, 6 or 8, not %llu", a.where("bits").c_str(),
             static_cast<ull>(q.bits));
  auto group_size = a.required_uint("group_size");
  ZT_TRY(group_size);
  q.group_size = *group_size;
  auto axis = a.required_uint("axis");
  ZT_TRY(axis);
  q.axis = *axis;
  ZT_FAIL_IF(q.axis >= o.shape.size(), invalid, "%s is %llu, not below the rank %zu",
             a.where("axis").c_str(), static_cast<ull>(q.axis), o.shape.size());

  auto packing = a.required_map("packing");
  ZT_TRY(packing);
  auto word = packing->required_text("word");
  ZT_TRY(word);
  const auto wd = word_dtype(*word);
  ZT_FAIL_IF(!wd, invalid, "%s must be \"u8\", \"u16\", \"u32\" or \"u64\", not \"%s\"",
             packing->where("word").c_str(), word->c_str());
  q.word = *wd;
  auto order = packing->required_text("order");
  ZT_TRY(order);
  ZT_FAIL_IF(*order != "lsb_first" && *order != "msb_first", invalid,
             "%s must be \"lsb_first\" or \"msb_first\", not \"%s\"",
             packing->where("order").c_str(), order->c_str());
  q.msb_first = *order == "msb_first";
  auto per_word = packing->required_uint("per_word");
  ZT_TRY(per_word);
  q.per_word = *per_word;
  // No padding bits: a packing that leaves bits unused is another profile
  // (decision 17: bits 3, 5 and 6 never divide a word).
  const uint64_t word_bits = 8ull * dtype_width(q.word);
  ZT_FAIL_IF(word_bits % q.bits != 0, invalid,
             "%s: bits %llu do not divide a %llu-bit word (\"%s\"): the profile has no padding "
             "bits",
             layout_where(o).c_str(), static_cast<ull>(q.bits), static_cast<ull>(word_bits),
             word->c_str());
  ZT_FAIL_IF(q.per_word != word_bits / q.bits, invalid,
             "%s is %llu; a %llu-bit word of %llu-bit codes holds %llu",
             packing->where("per_word").c_str(), static_cast<ull>(q.per_word),
             static_cast<ull>(word_bits), static_cast<ull>(q.bits),
             static_cast<ull>(word_bits / q.bits));

  auto scale_form = a.required_text("scale_form");
  ZT_TRY(scale_form);
  q.scale_form = std::move(*scale_form);
  ZT_FAIL_IF(q.scale_form != "f32_factors" && q.scale_form != "f16_factors" &&
                 q.scale_form != "e8m0_exponent",
             invalid,
             "%s must be \"f32_factors\", \"f16_factors\" or \"e8m0_exponent\", not "
             "\"%s\"",
             a.where("scale_form").c_str(), q.scale_form.c_str());

  auto zero_point = a.required_map("zero_point");
  ZT_TRY(zero_point);
  auto form = zero_point->required_text("form");
  ZT_TRY(form);
  q.zero_form = std::move(*form);
  // `value` and `packing` where the form does not use them are ignored: the
  // profile says "MUST be absent" only of the zeros part (decision 19).
  if (q.zero_form == "implied") {
    auto value = zero_point->int_("value");
    ZT_TRY(value);
    ZT_FAIL_IF(!*value, invalid, "%s is required when the form is \"implied\"",
               zero_point->where("value").c_str());
    q.zero_value = **value;
  } else if (q.zero_form == "tensor") {
    auto zp = zero_point->required_text("packing");
    ZT_TRY(zp);
    q.zero_packing = std::move(*zp);
    ZT_FAIL_IF(q.zero_packing != "same_as_data" && q.zero_packing != "plain", invalid,
               "%s must be \"same_as_data\" or \"plain\", not \"%s\"",
               zero_point->where("packing").c_str(), q.zero_packing.c_str());
  } else {
    ZT_FAIL_IF(q.zero_form != "none", invalid,
               "%s must be \"none\", \"implied\" or \"tensor\", not \"%s\"",
               zero_point->where("form").c_str(), q.zero_form.c_str());
  }
  return q;
}

std::string dtype_text(const Component& c) {
  std::string s(dtype_name(c.dtype));
  if (c.type) s += " of type " + *c.type;
  return s;
}

// Each part's dtype and type (the profile's and decision 19's).
Result<void> check_part_types(const Object& o, const QuantGroup& q) {
  const std::string w = layout_where(o);
  const Component& data = *o.find("data");
  ZT_FAIL_IF(!dtype_is_integer(data.dtype) || data.type || unsigned_of(data.dtype) != q.word,
             invalid,
             "%s: part \"data\" must be %s (packing.word) or its signed counterpart with no type, "
             "not %s",
             w.c_str(), std::string(dtype_name(q.word)).c_str(), dtype_text(data).c_str());
  const Component& scales = *o.find("scales");
  const DType s = scales.dtype;
  const bool half = s == DType::f16 || s == DType::bf16;
  const bool scales_ok =
      q.scale_form == "e8m0_exponent"
          ? s == DType::u8 && scales.known_type && scales.known_type->name == "f8_e8m0"
          : !scales.type &&
                (half || (q.scale_form == "f32_factors" && (s == DType::f32 || s == DType::f64)));
  ZT_FAIL_IF(!scales_ok, invalid,
             "%s: part \"scales\" is %s, which scale_form \"%s\" does not allow (it needs %s)",
             w.c_str(), dtype_text(scales).c_str(), q.scale_form.c_str(),
             q.scale_form == "e8m0_exponent" ? "u8 of type f8_e8m0"
             : q.scale_form == "f16_factors" ? "f16 or bf16, no type"
                                             : "f16, bf16, f32 or f64, no type");
  const Component* zeros = o.find("zeros");
  const bool tensor = q.zero_form == "tensor";
  ZT_FAIL_IF(tensor && !zeros, invalid, "%s: zero_point.form \"tensor\" needs the part \"zeros\"",
             w.c_str());
  ZT_FAIL_IF(!tensor && zeros, invalid,
             "%s: part \"zeros\" must be absent when zero_point.form is \"%s\"", w.c_str(),
             q.zero_form.c_str());
  if (!zeros) return {};
  ZT_FAIL_IF(zeros->type, invalid, "%s: part \"zeros\" must have no type (it has \"%s\")",
             w.c_str(), zeros->type->c_str());
  ZT_FAIL_IF(q.zero_packing == "same_as_data" && zeros->dtype != data.dtype, invalid,
             "%s: part \"zeros\" packed \"same_as_data\" must have the dtype of \"data\" (%s), "
             "not %s",
             w.c_str(), std::string(dtype_name(data.dtype)).c_str(),
             std::string(dtype_name(zeros->dtype)).c_str());
  return {};
}

Result<void> check_sizes(const Object& o, const QuantGroup& q) {
  const std::string w = layout_where(o);
  const uint64_t along = o.shape[q.axis];
  ZT_FAIL_IF(q.group_size != 0 && along % q.group_size != 0, invalid,
             "%s: group_size %llu does not divide shape[%llu] = %llu (no partial groups)",
             w.c_str(), static_cast<ull>(q.group_size), static_cast<ull>(q.axis),
             static_cast<ull>(along));
  // group_size 0 is one group spanning the axis, per lane (decision 16).
  const uint64_t groups = q.group_size == 0 ? 1 : along / q.group_size;
  std::vector<uint64_t> others = o.shape;
  others.erase(others.begin() + static_cast<std::ptrdiff_t>(q.axis));
  const auto lanes = shape_product(others);        // may overflow when shape[axis] is 0
  const uint64_t codes = *shape_product(o.shape);  // v2 shapes do not overflow
  const auto per_group = lanes ? checked_mul(groups, *lanes) : std::optional<uint64_t>();
  ZT_FAIL_IF(!per_group, invalid, "%s: groups x lanes overflows 64 bits", w.c_str());
  // Size formulas divide exactly (decision 18): no partial word.
  ZT_FAIL_IF(codes % q.per_word != 0, invalid,
             "%s: %llu codes are not a whole number of words of %llu codes", w.c_str(),
             static_cast<ull>(codes), static_cast<ull>(q.per_word));
  const unsigned word = dtype_width(q.word);
  ZT_TRY(check_part_size(o, *o.find("data"), codes / q.per_word * word,
                         "codes / per_word x width(word)"));
  const Component& scales = *o.find("scales");
  ZT_TRY(check_part_size(o, scales, checked_mul(*per_group, scales.width()),
                         "groups x lanes x width(scales.dtype)"));
  const Component* zeros = o.find("zeros");
  if (!zeros) return {};
  if (q.zero_packing == "plain")
    return check_part_size(o, *zeros, checked_mul(*per_group, zeros->width()),
                           "groups x lanes x width(zeros.dtype)");
  ZT_FAIL_IF(*per_group % q.per_word != 0, invalid,
             "%s: %llu zero points packed same_as_data are not a whole number of words of %llu",
             w.c_str(), static_cast<ull>(*per_group), static_cast<ull>(q.per_word));
  return check_part_size(o, *zeros, *per_group / q.per_word * word,
                         "groups x lanes / per_word x width(word)");
}

Result<void> check_quant_group(const Object& o) {
  auto q = read_attributes(o);
  ZT_TRY(q);
  ZT_TRY(check_part_types(o, *q));
  return check_sizes(o, *q);
}

// ---- to dense: value = (code - zero) x scale (docs/v2.md decision 30) ----

// Code i of a part packed like `data`: `bits` wide, in slot i % per_word of
// word i / per_word, slots counted from the low bits (lsb_first) or the
// high ones; two's complement when the part's dtype is signed.
struct Codes {
  std::span<const uint8_t> words;
  unsigned width = 1;
  uint64_t bits = 8, per_word = 1;
  bool msb_first = false, is_signed = false;

  int64_t at(uint64_t i) const {
    const uint64_t word = views::word_at(words, width, i / per_word);
    const uint64_t slot = i % per_word;
    const uint64_t shift = (msb_first ? per_word - 1 - slot : slot) * bits;
    const uint64_t mask = (uint64_t{1} << bits) - 1;  // bits <= 8
    const uint64_t v = (word >> shift) & mask;
    return is_signed && (v >> (bits - 1)) != 0 ? static_cast<int64_t>(v | ~mask)
                                               : static_cast<int64_t>(v);
  }
};

Codes codes_of(const QuantGroup& q, const Component& c, std::span<const uint8_t> bytes) {
  return Codes{bytes, c.width(), q.bits, q.per_word, q.msb_first, dtype_is_signed(c.dtype)};
}

// Values [first, first + dst.size()) of a quant_group object (its rules
// held at open, so sizes agree with the shape), computed in C: as in
// formats/quantized_group_view.cpp, f64 scales or zeros make an f32 read compute at f64
// and round once.
template <typename T, typename C>
Result<void> qg_values_in(const Reader& r, size_t object, uint64_t first, std::span<T> dst) {
  const Object& o = r.manifest().objects[object];
  ZT_TRY(require_interpretable(o));
  auto q = read_attributes(o);
  ZT_TRY(q);
  const Component& data = *o.find("data");
  const Component& scales = *o.find("scales");
  const Component* zeros = o.find("zeros");
  auto d = r.map(object, views::index_of(o, &data));
  ZT_TRY(d);
  auto s = r.map(object, views::index_of(o, &scales));
  ZT_TRY(s);
  auto scale_format = numeric_format(o, scales);
  ZT_TRY(scale_format);
  std::span<const uint8_t> z;
  NumericFormat zero_format;
  if (zeros) {
    auto m = r.map(object, views::index_of(o, zeros));
    ZT_TRY(m);
    z = *m;
    auto f = numeric_format(o, *zeros);
    ZT_TRY(f);
    zero_format = *f;
  }
  const bool packed_zeros = q->zero_packing == "same_as_data";
  const uint64_t along = o.shape[q->axis];
  const AxisGroups groups = AxisGroups::of(o.shape, q->axis, q->group_size ? q->group_size : along);
  // The sizes held at open against the decoded lengths; the bytes must
  // have them too.
  const uint64_t codes_n = *shape_product(o.shape);
  const uint64_t entries = along == 0 ? 0 : codes_n / groups.group;
  const uint64_t zero_bytes = !zeros         ? 0
                              : packed_zeros ? entries / q->per_word * zeros->width()
                                             : entries * zeros->width();
  ZT_FAIL_IF(d->size() != codes_n / q->per_word * data.width() ||
                 s->size() != entries * scales.width() || z.size() != zero_bytes,
             invalid, "%s: decoded part sizes do not match the shape", layout_where(o).c_str());
  const Codes codes = codes_of(*q, data, *d);
  const Codes zero_codes = zeros ? codes_of(*q, *zeros, z) : Codes{};
  for (uint64_t i = 0; i < dst.size(); ++i) {
    const uint64_t e = groups.entry_of(first + i);
    C scale{}, zero = static_cast<C>(q->zero_value);
    convert_values(s->data() + e * scales.width(), *scale_format, 1, &scale);
    if (zeros && packed_zeros)
      zero = static_cast<C>(zero_codes.at(e));
    else if (zeros)
      convert_values(z.data() + e * zeros->width(), zero_format, 1, &zero);
    dst[i] = static_cast<T>((static_cast<C>(codes.at(first + i)) - zero) * scale);
  }
  return {};
}

template <typename T>
Result<void> qg_values(const Reader& r, size_t object, uint64_t first, std::span<T> dst) {
  if constexpr (std::is_same_v<T, float>) {
    const Object& o = r.manifest().objects[object];
    const auto plain_f64 = [&](const Component* c) {
      if (!c) return false;
      const auto f = numeric_format(o, *c);
      return f && is_plain_f64(*f);
    };
    if (plain_f64(o.find("scales")) || plain_f64(o.find("zeros")))
      return qg_values_in<float, double>(r, object, first, dst);
  }
  return qg_values_in<T, T>(r, object, first, dst);
}

constexpr std::string_view kQuantGroupLayoutIds[] = {"zt.quant_group/1"};
constexpr std::string_view kQuantGroupRequired[] = {"data", "scales"};
constexpr std::string_view kQuantGroupOptional[] = {"zeros"};
constexpr ListedAttribute kQuantGroupListed[] = {{"int", "bits"}, {" g", "group_size"}};

}  // namespace

const ObjectFormat kQuantGroupFormat = {
    .name = "zt.quant_group/1",
    .layout_ids = kQuantGroupLayoutIds,
    .v1 = false,
    .required_roles = kQuantGroupRequired,
    .optional_roles = kQuantGroupOptional,
    .index_roles = {},
    .value_role = "",
    .listed_role = "data",
    .sized_by_shape = false,
    .content_needs_whole_components = false,
    .content_rules = "",
    .decoded_as = "dequantized",
    .check_structure = check_quant_group,
    .check_content = nullptr,
    .check_written = nullptr,
    .listed_attributes = kQuantGroupListed,
    .to_f32 = {whole_by_range<float, qg_values<float>>, chunks_by_range<float, qg_values<float>>},
    .to_f64 = {whole_by_range<double, qg_values<double>>,
               chunks_by_range<double, qg_values<double>>},
};

}  // namespace zt
