// "gguf.<type>/1" (v2 only, projection profiles): a GGUF block array kept
// verbatim in one u8 part "data", the object keeping its logical shape. The
// blocks are opaque here (their internals differ per type and are ggml's),
// so the descriptor checks sizes and never decodes.
#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "formats/ggml_types.h"
#include "formats/profile_rules.h"
#include "manifest/object_format.h"

namespace zt {

namespace {

using ull = unsigned long long;

// The 22 types of profiles/gguf.md, each with its ggml type, whose block
// geometry (logical elements per block, sizeof(block_<type>)) comes from
// the one table, formats/ggml_types.h. The file states both as attributes;
// a file whose attributes disagree with its id is refused, since a
// consumer that knows ggml would read the blocks by the id.
struct GgufType {
  std::string_view id;
  std::string_view ggml;
};

constexpr std::array<GgufType, 22> kTypes = {{
    {"gguf.q4_0/1", "Q4_0"},     {"gguf.q4_1/1", "Q4_1"},     {"gguf.q5_0/1", "Q5_0"},
    {"gguf.q5_1/1", "Q5_1"},     {"gguf.q8_0/1", "Q8_0"},     {"gguf.q8_1/1", "Q8_1"},
    {"gguf.q2_k/1", "Q2_K"},     {"gguf.q3_k/1", "Q3_K"},     {"gguf.q4_k/1", "Q4_K"},
    {"gguf.q5_k/1", "Q5_K"},     {"gguf.q6_k/1", "Q6_K"},     {"gguf.q8_k/1", "Q8_K"},
    {"gguf.iq1_s/1", "IQ1_S"},   {"gguf.iq1_m/1", "IQ1_M"},   {"gguf.iq2_xxs/1", "IQ2_XXS"},
    {"gguf.iq2_xs/1", "IQ2_XS"}, {"gguf.iq2_s/1", "IQ2_S"},   {"gguf.iq3_xxs/1", "IQ3_XXS"},
    {"gguf.iq3_s/1", "IQ3_S"},   {"gguf.iq4_nl/1", "IQ4_NL"}, {"gguf.iq4_xs/1", "IQ4_XS"},
    {"gguf.mxfp4/1", "MXFP4"},
}};

// Each profile type's ggml row (every one is in the table: checked at
// compile time below).
constexpr const GgmlType& ggml_of(const GgufType& t) {
  for (const GgmlType& g : kGgmlTypes)
    if (g.name == t.ggml) return g;
  throw "a gguf.* layout names a type formats/ggml_types.h lacks";
}
static_assert([] {
  for (const GgufType& t : kTypes) (void)ggml_of(t);
  return true;
}());

// The descriptor's layout ids, the table's in its order.
constexpr std::array<std::string_view, kTypes.size()> kGgufLayoutIds = [] {
  std::array<std::string_view, kTypes.size()> ids{};
  for (size_t i = 0; i < kTypes.size(); ++i) ids[i] = kTypes[i].id;
  return ids;
}();

const GgufType& type_of(const Object& o) {
  return *std::find_if(kTypes.begin(), kTypes.end(),
                       [&](const GgufType& t) { return t.id == o.layout; });
}

Result<void> check_gguf(const Object& o) {
  const std::string w = layout_where(o);
  const Component& data = *o.find("data");
  ZT_FAIL_IF(data.dtype != DType::u8 || data.type, invalid,
             "%s: part \"data\" must be u8 with no type (it is %s%s%s)", w.c_str(),
             std::string(dtype_name(data.dtype)).c_str(), data.type ? " of type " : "",
             data.type ? data.type->c_str() : "");
  const ProfileAttributes a(o);
  auto epb = a.required_uint("elems_per_block");
  ZT_TRY(epb);
  auto bb = a.required_uint("block_bytes");
  ZT_TRY(bb);
  ZT_FAIL_IF(*epb < 1, invalid, "%s must be at least 1", a.where("elems_per_block").c_str());
  ZT_FAIL_IF(*bb < 1, invalid, "%s must be at least 1", a.where("block_bytes").c_str());
  const GgmlType& g = ggml_of(type_of(o));
  ZT_FAIL_IF(*epb != g.block || *bb != g.bytes, invalid,
             "%s: elems_per_block %llu and block_bytes %llu are not ggml's %llu and %llu for "
             "this type",
             w.c_str(), static_cast<ull>(*epb), static_cast<ull>(*bb), static_cast<ull>(g.block),
             static_cast<ull>(g.bytes));
  const uint64_t elements = *shape_product(o.shape);  // v2 shapes do not overflow
  ZT_FAIL_IF(elements % *epb != 0, invalid,
             "%s: elems_per_block %llu does not divide product(shape) = %llu", w.c_str(),
             static_cast<ull>(*epb), static_cast<ull>(elements));
  // A block never spans two rows (decision 22: readers enforce it too).
  ZT_FAIL_IF(!o.shape.empty() && o.shape.back() % *epb != 0, invalid,
             "%s: elems_per_block %llu does not divide the last dimension %llu", w.c_str(),
             static_cast<ull>(*epb), static_cast<ull>(o.shape.back()));
  return check_part_size(o, data, checked_mul(elements / *epb, *bb),
                         "product(shape) / elems_per_block x block_bytes");
}

constexpr std::string_view kGgufRequired[] = {"data"};

}  // namespace

const ObjectFormat kGgufFormat = {
    .name = "gguf",
    .layout_ids = kGgufLayoutIds,
    .v1 = false,
    .required_roles = kGgufRequired,
    .optional_roles = {},
    .index_roles = {},
    .value_role = "",
    .listed_role = "data",
    .sized_by_shape = false,
    .content_needs_whole_components = false,
    .content_rules = "",
    .decoded_as = "",
    .check_structure = check_gguf,
    .check_content = nullptr,
    .check_written = nullptr,
    .listed_attributes = {},
    // Opaque: the block internals are ggml's (profiles/gguf.md).
    .to_f32 = {not_decoded_whole<float>, not_decoded_chunks<float>},
    .to_f64 = {not_decoded_whole<double>, not_decoded_chunks<double>},
};

}  // namespace zt
