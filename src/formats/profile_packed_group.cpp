// "libztensor.packed_group/1" (v2 only, this project's profile,
// docs/profiles/libztensor.packed_group-1.md): a 2-D weight [R, C] of
// integer codes packed into words along one axis, stored rows first or
// columns first, the codes' slots in a word in a stated order; one scale
// (and optionally one zero point) per (group, row), a column's group given
// by an optional group map (`g_idx`) or by group_size. GPTQ, AWQ's GEMM
// layout and compressed-tensors' pack-quantized are attribute sets of it,
// their checkpoint tensors the parts unchanged. Decoded to dense as
// (code - zero) x scale.
#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "base/arithmetic.h"
#include "cbor/cbor_encode.h"
#include "formats/profile_rules.h"
#include "manifest/object_format.h"
#include "read/content.h"
#include "read/reader.h"
#include "views/kernels.h"

namespace zt {

namespace {

using ull = unsigned long long;

constexpr size_t kMaxPerWord = 32;  // u64 words of 2-bit codes

// How a matrix of codes [A0, A1] sits in words: `axis`'s extent is divided
// by per_word, the words' array is [A0', A1'] (rows first) or [A1', A0'].
struct Packing {
  DType word = DType::u32;
  uint64_t bits = 0, per_word = 0, axis = 0;
  bool rows_first = true;
  std::array<uint8_t, kMaxPerWord> slot_of{};  // position in the run -> slot

  // The words' extents for a matrix [a0, a1].
  std::array<uint64_t, 2> words_extent(uint64_t a0, uint64_t a1) const {
    return axis == 0 ? std::array{a0 / per_word, a1} : std::array{a0, a1 / per_word};
  }
};

// What the attributes say, each checked on its own.
struct PackedGroup {
  uint64_t bits = 0, groups = 0, group_size = 0;
  Packing data;
  bool scales_groups_first = true;
  std::string zero_form;  // none, implied, packed, plain
  int64_t zero_value = 0, zero_offset = 0;
  Packing zeros;                   // zero_form "packed"
  bool zeros_groups_first = true;  // zero_form "plain"
};

Result<bool> read_first(const ProfileAttributes& a, std::string_view key, std::string_view first,
                        std::string_view second) {
  auto v = a.required_text(key);
  ZT_TRY(v);
  ZT_FAIL_IF(*v != first && *v != second, invalid, "%s must be \"%s\" or \"%s\", not \"%s\"",
             a.where(key).c_str(), std::string(first).c_str(), std::string(second).c_str(),
             v->c_str());
  return *v == first;
}

Result<Packing> read_packing(const ProfileAttributes& a, uint64_t bits) {
  Packing p;
  p.bits = bits;
  auto word = a.required_text("word");
  ZT_TRY(word);
  const auto wd = word_dtype(*word);
  ZT_FAIL_IF(!wd, invalid, "%s must be \"u8\", \"u16\", \"u32\" or \"u64\", not \"%s\"",
             a.where("word").c_str(), word->c_str());
  p.word = *wd;
  const uint64_t word_bits = 8ull * dtype_width(p.word);
  auto per_word = a.required_uint("per_word");
  ZT_TRY(per_word);
  p.per_word = *per_word;
  ZT_FAIL_IF(word_bits < bits || p.per_word != word_bits / bits, invalid,
             "%s is %llu; a %llu-bit word holds %llu codes of %llu bits",
             a.where("per_word").c_str(), static_cast<ull>(p.per_word), static_cast<ull>(word_bits),
             static_cast<ull>(word_bits / bits), static_cast<ull>(bits));
  auto axis = a.required_uint("axis");
  ZT_TRY(axis);
  ZT_FAIL_IF(*axis > 1, invalid, "%s must be 0 or 1, not %llu", a.where("axis").c_str(),
             static_cast<ull>(*axis));
  p.axis = *axis;
  auto rows_first = read_first(a, "stored", "rows_first", "columns_first");
  ZT_TRY(rows_first);
  p.rows_first = *rows_first;
  auto slots = a.uint_list("slots", kMaxPerWord);
  ZT_TRY(slots);
  ZT_FAIL_IF(!*slots, invalid, "%s is required by the profile", a.where("slots").c_str());
  std::array<bool, kMaxPerWord> seen{};
  bool permutation = (*slots)->size() == p.per_word;
  for (size_t s = 0; permutation && s < (*slots)->size(); ++s) {
    const uint64_t position = (**slots)[s];
    permutation = position < p.per_word && !seen[position];
    if (permutation) {
      seen[position] = true;
      p.slot_of[position] = static_cast<uint8_t>(s);
    }
  }
  ZT_FAIL_IF(!permutation, invalid, "%s must list each of 0 .. %llu once (per_word items)",
             a.where("slots").c_str(), static_cast<ull>(p.per_word - 1));
  return p;
}

Result<PackedGroup> read_packed_group(const Object& o) {
  const ProfileAttributes a(o);
  PackedGroup q;
  auto bits = a.required_uint("bits");
  ZT_TRY(bits);
  ZT_FAIL_IF(*bits != 2 && *bits != 4 && *bits != 8, invalid, "%s must be 2, 4 or 8, not %llu",
             a.where("bits").c_str(), static_cast<ull>(*bits));
  q.bits = *bits;
  auto groups = a.required_uint("groups");
  ZT_TRY(groups);
  ZT_FAIL_IF(*groups == 0, invalid, "%s must be at least 1", a.where("groups").c_str());
  q.groups = *groups;
  auto group_size = a.required_uint("group_size");
  ZT_TRY(group_size);
  q.group_size = *group_size;
  auto packing = a.required_map("packing");
  ZT_TRY(packing);
  auto data = read_packing(*packing, q.bits);
  ZT_TRY(data);
  q.data = *data;
  auto scales_first = read_first(a, "scales_stored", "groups_first", "rows_first");
  ZT_TRY(scales_first);
  q.scales_groups_first = *scales_first;
  auto zero_point = a.required_map("zero_point");
  ZT_TRY(zero_point);
  auto form = zero_point->required_text("form");
  ZT_TRY(form);
  q.zero_form = *form;
  if (q.zero_form == "implied") {
    auto value = zero_point->int_("value");
    ZT_TRY(value);
    ZT_FAIL_IF(!*value, invalid, "%s is required when the form is \"implied\"",
               zero_point->where("value").c_str());
    q.zero_value = **value;
  } else if (q.zero_form == "packed" || q.zero_form == "plain") {
    auto offset = zero_point->int_("offset");
    ZT_TRY(offset);
    ZT_FAIL_IF(!*offset, invalid, "%s is required when the form is \"%s\"",
               zero_point->where("offset").c_str(), q.zero_form.c_str());
    q.zero_offset = **offset;
    if (q.zero_form == "packed") {
      auto zp = zero_point->required_map("packing");
      ZT_TRY(zp);
      auto zeros = read_packing(*zp, q.bits);
      ZT_TRY(zeros);
      q.zeros = *zeros;
    } else {
      auto first = read_first(*zero_point, "stored", "groups_first", "rows_first");
      ZT_TRY(first);
      q.zeros_groups_first = *first;
    }
  } else {
    ZT_FAIL_IF(q.zero_form != "none", invalid,
               "%s must be \"none\", \"implied\", \"packed\" or \"plain\", not \"%s\"",
               zero_point->where("form").c_str(), q.zero_form.c_str());
  }
  return q;
}

// A packed part's dtype (its word or the signed counterpart, no type) and
// its decoded size for a code matrix [a0, a1].
Result<void> check_packed_part(const Object& o, const Component& c, const Packing& p, uint64_t a0,
                               uint64_t a1, const char* matrix) {
  const std::string w = layout_where(o);
  ZT_FAIL_IF(!dtype_is_integer(c.dtype) || c.type || unsigned_of(c.dtype) != p.word, invalid,
             "%s: part \"%s\" must be %s (its packing's word) or the signed counterpart, with no "
             "type",
             w.c_str(), c.role.c_str(), std::string(dtype_name(p.word)).c_str());
  const uint64_t along = p.axis == 0 ? a0 : a1;
  ZT_FAIL_IF(along % p.per_word != 0, invalid,
             "%s: part \"%s\": %s's axis %llu has %llu codes, not a multiple of %llu a word",
             w.c_str(), c.role.c_str(), matrix, static_cast<ull>(p.axis), static_cast<ull>(along),
             static_cast<ull>(p.per_word));
  const auto e = p.words_extent(a0, a1);
  const auto words = checked_mul(e[0], e[1]);
  return check_part_size(o, c, words ? checked_mul(*words, dtype_width(p.word)) : std::nullopt,
                         "words x width(word)");
}

Result<void> check_packed_group(const Object& o) {
  const std::string w = layout_where(o);
  ZT_FAIL_IF(o.shape.size() != 2, invalid, "%s: the shape must be [rows, columns], not rank %zu",
             w.c_str(), o.shape.size());
  auto q = read_packed_group(o);
  ZT_TRY(q);
  const uint64_t rows = o.shape[0], cols = o.shape[1];
  const Component* g_idx = o.find("g_idx");
  if (!g_idx) {
    const uint64_t want =
        q->group_size == 0 ? 1 : std::max<uint64_t>(1, ceil_div(cols, q->group_size));
    ZT_FAIL_IF(q->groups != want, invalid,
               "%s: without a part \"g_idx\", groups must be %llu (ceil(columns / group_size), "
               "1 for group_size 0), not %llu",
               w.c_str(), static_cast<ull>(want), static_cast<ull>(q->groups));
  } else {
    ZT_FAIL_IF(!dtype_is_integer(g_idx->dtype) || g_idx->type, invalid,
               "%s: part \"g_idx\" must be an integer dtype with no type", w.c_str());
    ZT_TRY(check_part_size(o, *g_idx, checked_mul(cols, g_idx->width()),
                           "columns x width(g_idx.dtype)"));
  }
  ZT_TRY(check_packed_part(o, *o.find("data"), q->data, rows, cols, "the weight [rows, columns]"));
  const Component& scales = *o.find("scales");
  const DType s = scales.dtype;
  ZT_FAIL_IF(
      scales.type || (s != DType::f16 && s != DType::bf16 && s != DType::f32 && s != DType::f64),
      invalid, "%s: part \"scales\" must be f16, bf16, f32 or f64 with no type", w.c_str());
  const auto entries = checked_mul(rows, q->groups);
  ZT_FAIL_IF(!entries, invalid, "%s: rows x groups overflows 64 bits", w.c_str());
  ZT_TRY(check_part_size(o, scales, checked_mul(*entries, scales.width()),
                         "rows x groups x width(scales.dtype)"));
  const Component* zeros = o.find("zeros");
  const bool has_zeros = q->zero_form == "packed" || q->zero_form == "plain";
  ZT_FAIL_IF(has_zeros != (zeros != nullptr), invalid,
             "%s: part \"zeros\" must be there exactly when zero_point.form is \"packed\" or "
             "\"plain\" (it is \"%s\")",
             w.c_str(), q->zero_form.c_str());
  if (!zeros) return {};
  if (q->zero_form == "packed")
    return check_packed_part(o, *zeros, q->zeros, rows, q->groups,
                             "the zero points [rows, groups]");
  ZT_FAIL_IF(!dtype_is_integer(zeros->dtype) || zeros->type, invalid,
             "%s: part \"zeros\" must be an integer dtype with no type", w.c_str());
  return check_part_size(o, *zeros, checked_mul(*entries, zeros->width()),
                         "rows x groups x width(zeros.dtype)");
}

// ---- reading codes, groups and entries ----

// Code (i0, i1) of a matrix [a0, a1] packed per `p` in `words`.
struct PackedCodes {
  std::span<const uint8_t> words;
  const Packing* p = nullptr;
  uint64_t e0 = 0, e1 = 0;  // the words' extents [A0', A1']

  PackedCodes(std::span<const uint8_t> w, const Packing& packing, uint64_t a0, uint64_t a1)
      : words(w), p(&packing) {
    const auto e = packing.words_extent(a0, a1);
    e0 = e[0];
    e1 = e[1];
  }
  uint64_t at(uint64_t i0, uint64_t i1) const {
    uint64_t position = 0;
    if (p->axis == 0) {
      position = i0 % p->per_word;
      i0 /= p->per_word;
    } else {
      position = i1 % p->per_word;
      i1 /= p->per_word;
    }
    const uint64_t index = p->rows_first ? i0 * e1 + i1 : i1 * e0 + i0;
    const uint64_t word = views::word_at(words, dtype_width(p->word), index);
    return (word >> (p->slot_of[position] * p->bits)) & ((uint64_t{1} << p->bits) - 1);
  }
};

// The g_idx part's group of every column, each checked against `groups`.
Result<std::vector<uint64_t>> column_groups(const Object& o, const PackedGroup& q,
                                            std::span<const uint8_t> g_idx, DType dtype) {
  const uint64_t cols = o.shape[1];
  std::vector<uint64_t> out(cols);
  for (uint64_t c = 0; c < cols; ++c) {
    const __int128 g = load_index(g_idx, dtype, c);
    ZT_FAIL_IF(g < 0 || g >= static_cast<__int128>(q.groups), invalid,
               "%s: part \"g_idx\": column %llu names group %lld, not one of the %llu groups",
               layout_where(o).c_str(), static_cast<ull>(c), static_cast<long long>(g),
               static_cast<ull>(q.groups));
    out[c] = static_cast<uint64_t>(g);
  }
  return out;
}

Result<void> check_packed_group_content(const Object& o, DecodedComponents decoded) {
  auto q = read_packed_group(o);
  ZT_TRY(q);
  for (size_t k = 0; k < o.components.size(); ++k) {
    if (o.components[k].role != "g_idx") continue;
    auto groups = column_groups(o, *q, decoded[k], o.components[k].dtype);
    ZT_TRY(groups);
  }
  return {};
}

// A written object's group map, read back: a writer refuses what every
// decode would refuse. The map has one entry a column, so it is read whole.
Result<void> check_written_group_map(const Object& o, const OpenWindows& open) {
  const Component* g_idx = o.find("g_idx");
  if (!g_idx) return {};
  auto q = read_packed_group(o);
  ZT_TRY(q);
  auto windows = open(views::index_of(o, g_idx));
  ZT_TRY(windows);
  std::vector<uint8_t> bytes;
  for (;;) {
    auto w = (*windows)->next();
    ZT_TRY(w);
    if (w->empty()) break;
    bytes.insert(bytes.end(), w->begin(), w->end());
  }
  auto groups = column_groups(o, *q, bytes, g_idx->dtype);
  ZT_TRY(groups);
  return {};
}

// Values [first, first + dst.size()) of the object, row-major over [R, C].
template <typename T>
Result<void> pg_values(const Reader& r, size_t object, uint64_t first, std::span<T> dst) {
  const Object& o = r.manifest().objects[object];
  ZT_TRY(require_interpretable(o));
  auto q = read_packed_group(o);
  ZT_TRY(q);
  const uint64_t rows = o.shape[0], cols = o.shape[1];
  const auto part = [&](const char* role) -> Result<std::span<const uint8_t>> {
    const Component* c = o.find(role);
    if (!c) return std::span<const uint8_t>();
    return r.map(object, views::index_of(o, c));
  };
  auto d = part("data");
  ZT_TRY(d);
  auto s = part("scales");
  ZT_TRY(s);
  auto z = part("zeros");
  ZT_TRY(z);
  auto g = part("g_idx");
  ZT_TRY(g);
  const Component& scales = *o.find("scales");
  const Component* zeros = o.find("zeros");
  const Component* g_idx = o.find("g_idx");
  // The sizes held at open against the decoded lengths.
  const bool packed_zeros = zeros && q->zero_form == "packed";
  const auto e = q->data.words_extent(rows, cols);
  // (a packing is read only for the "packed" form: per_word is 0 otherwise)
  const auto packed_bytes = [&] {
    const auto ze = q->zeros.words_extent(rows, q->groups);
    return ze[0] * ze[1] * dtype_width(q->zeros.word);
  };
  const uint64_t zero_bytes = !zeros         ? 0
                              : packed_zeros ? packed_bytes()
                                             : rows * q->groups * zeros->width();
  ZT_FAIL_IF(d->size() != e[0] * e[1] * dtype_width(q->data.word) ||
                 s->size() != rows * q->groups * scales.width() || z->size() != zero_bytes ||
                 (g_idx && g->size() != cols * g_idx->width()),
             invalid, "%s: decoded part sizes do not match the shape", layout_where(o).c_str());
  std::vector<uint64_t> group_of;
  if (g_idx) {
    auto groups = column_groups(o, *q, *g, g_idx->dtype);
    ZT_TRY(groups);
    group_of = std::move(*groups);
  }
  auto scale_format = numeric_format(o, scales);
  ZT_TRY(scale_format);
  const PackedCodes codes(*d, q->data, rows, cols);
  std::optional<PackedCodes> zero_codes;
  NumericFormat zero_format;
  if (packed_zeros) {
    zero_codes.emplace(*z, q->zeros, rows, q->groups);
  } else if (zeros) {
    auto f = numeric_format(o, *zeros);
    ZT_TRY(f);
    zero_format = *f;
  }
  for (uint64_t i = 0; i < dst.size(); ++i) {
    const uint64_t row = (first + i) / cols, col = (first + i) % cols;
    const uint64_t grp = g_idx ? group_of[col] : q->group_size ? col / q->group_size : 0;
    const uint64_t scale_at = q->scales_groups_first ? grp * rows + row : row * q->groups + grp;
    T scale{}, zero = static_cast<T>(q->zero_value);
    convert_values(s->data() + scale_at * scales.width(), *scale_format, 1, &scale);
    if (zero_codes) {
      zero = static_cast<T>(static_cast<int64_t>(zero_codes->at(row, grp)) + q->zero_offset);
    } else if (zeros) {
      const uint64_t at = q->zeros_groups_first ? grp * rows + row : row * q->groups + grp;
      convert_values(z->data() + at * zeros->width(), zero_format, 1, &zero);
      zero += static_cast<T>(q->zero_offset);
    }
    dst[i] = (static_cast<T>(codes.at(row, col)) - zero) * scale;
  }
  return {};
}

// ---- the 1.2 form: quantized_group, where it says the same ----

// A packing whose words are [run index, other axis] of codes in slot order:
// GPTQ's qweight down the input axis, its qzeros down the rows.
bool gptq_words(const Packing& p, uint64_t axis) {
  if (p.axis != axis || p.rows_first) return false;
  for (uint64_t s = 0; s < p.per_word; ++s)
    if (p.slot_of[s] != s) return false;
  return true;
}

Error no_v1_form(const Object& o, const char* why) {
  return make_error(Status::unsupported, "%s: no zTensor 1.2 form: %s", layout_where(o).c_str(),
                    why);
}

std::vector<uint8_t> cbor_uint(uint64_t v) {
  CborWriter w;
  w.uint(v);
  return w.take();
}

// 1.2's quantized_group (quantized_group_layout.h) reads packed_weight as
// words [W, N] of codes down K in slot order, scales [G, N], zeros as words
// [G, N / vpe] packed along N, used as stored, and groups of group_size
// consecutive columns. That is this profile with GPTQ's packing, offset 0
// (gptq_v2 checkpoints) and no group map other than c / group_size. The
// group map, if present, is carried as a component 1.2 does not name: it
// says nothing a 1.2 reader does not already assume, and a conversion back
// to the checkpoint gives it back.
Result<V1Form> packed_group_v1_form(const Reader& r, size_t object) {
  const Object& o = r.manifest().objects[object];
  auto q = read_packed_group(o);
  ZT_TRY(q);
  const Component* data = o.find("data");
  const Component* zeros = o.find("zeros");
  const Component* g_idx = o.find("g_idx");
  if (!gptq_words(q->data, 1))
    return no_v1_form(o, "quantized_group packs codes down the input axis, words [C / n, R]");
  if (!dtype_is_integer(data->dtype))
    return no_v1_form(o, "quantized_group's packed words are integers");
  if (!q->scales_groups_first) return no_v1_form(o, "quantized_group's scales are [G, R]");
  if (q->zero_form != "packed" || !zeros || !gptq_words(q->zeros, 0) ||
      zeros->width() != data->width() || !dtype_is_integer(zeros->dtype))
    return no_v1_form(o, "quantized_group's zero points are packed down the rows like the codes");
  if (q->zero_offset != 0)
    return no_v1_form(o,
                      "quantized_group uses zero points as stored; these are stored with an "
                      "offset (GPTQ's original checkpoint format stores zero - 1)");
  const uint64_t cols = o.shape[1];
  const uint64_t size = q->group_size ? q->group_size : cols;
  if (q->groups != ceil_div(cols, size))
    return no_v1_form(o, "quantized_group has ceil(C / group_size) groups");
  if (g_idx) {
    auto map = r.map(object, views::index_of(o, g_idx));
    ZT_TRY(map);
    ZT_FAIL_IF(map->size() != cols * g_idx->width(), invalid,
               "%s: part \"g_idx\" holds %zu bytes, not %llu", layout_where(o).c_str(), map->size(),
               static_cast<ull>(cols * g_idx->width()));
    for (uint64_t c = 0; c < cols; ++c)
      if (load_index(*map, g_idx->dtype, c) != static_cast<__int128>(c / size))
        return no_v1_form(o,
                          "its group map is not c / group_size (act-order): quantized_group "
                          "has none");
  }
  V1Form f;
  f.format = kQuantizedGroupFormat.name;
  f.dropped_attributes = {"bits", "groups", "group_size", "packing", "scales_stored", "zero_point"};
  CborWriter group_size;
  if (q->group_size)
    group_size.uint(q->group_size);
  else
    group_size.integer(-1);  // GPTQ's one group a row, as quantized_group says it
  CborWriter packing;
  packing.text(std::to_string(q->data.per_word) + "_per_" + std::string(dtype_name(data->dtype)));
  f.added_attributes = {
      {"bits", cbor_uint(q->bits)}, {"group_size", group_size.take()}, {"packing", packing.take()}};
  f.renamed_roles = {{"data", "packed_weight"}};
  return f;
}

constexpr std::string_view kPackedGroupLayoutIds[] = {"libztensor.packed_group/1"};
constexpr std::string_view kPackedGroupRequired[] = {"data", "scales"};
constexpr std::string_view kPackedGroupOptional[] = {"zeros", "g_idx"};
// group_size 0 is one group a row: per-channel scales.
constexpr ListedAttribute kPackedGroupListed[] = {{"int", "bits"},
                                                  {" g", "group_size", " channel"}};

}  // namespace

const ObjectFormat kPackedGroupFormat = {
    .name = "libztensor.packed_group/1",
    .layout_ids = kPackedGroupLayoutIds,
    .v1 = false,
    .required_roles = kPackedGroupRequired,
    .optional_roles = kPackedGroupOptional,
    .index_roles = {},
    .value_role = "",
    .listed_role = "data",
    .sized_by_shape = false,
    .content_needs_whole_components = true,
    .content_rules = "group map (g_idx), where there is one, within the groups",
    .decoded_as = "dequantized",
    .check_structure = check_packed_group,
    .check_content = check_packed_group_content,
    .check_written = check_written_group_map,
    .listed_attributes = kPackedGroupListed,
    .to_f32 = {whole_by_range<float, pg_values<float>>, chunks_by_range<float, pg_values<float>>},
    .to_f64 = {whole_by_range<double, pg_values<double>>,
               chunks_by_range<double, pg_values<double>>},
    .v1_form = packed_group_v1_form,
};

}  // namespace zt
