// "quantized_group" (GPTQ-style): packed_weight, scales and zeros, read
// with the attributes bits, group_size and packing (layout in quantized_group_layout.h).
#include "formats/quantized_group_layout.h"
#include "manifest/object_format.h"
#include "views/views.h"

namespace zt {

namespace {

// Without one of its parameters the object is stored as the reader lists
// it: not dequantisable, its sizes unchecked, so that a file that opens and
// verifies can always be copied. Parameters present but wrong are refused.
Result<void> check_written_quantized(const Object& o, const OpenWindows&) {
  auto q = quant_layout(o);
  if (!q && q.error().status == Status::not_found) return {};
  ZT_TRY(q);
  std::vector<uint64_t> sizes;
  for (const Component& c : o.components) sizes.push_back(*decoded_size(c));
  return check_quantized_sizes(o, *q, sizes);
}

template <typename T>
Result<void> dequantized_whole(const Reader& r, size_t object, std::span<T> dst) {
  auto v = quant_view(r, object);
  ZT_TRY(v);
  dequantize(*v, dst);
  return {};
}

template <typename T>
Result<void> dequantized_chunks(const Reader& r, size_t object, uint64_t, uint64_t chunk,
                                const ValueSink<T>& sink) {
  auto v = quant_view(r, object);
  ZT_TRY(v);
  return by_rows<T>(v->layout.n, v->layout.k, chunk, sink,
                    [&](uint64_t r0, uint64_t r1, std::span<T> dst) {
                      dequantize_rows(*v, r0, r1, dst);
                      return Result<void>{};
                    });
}

constexpr std::string_view kQuantizedGroupRequired[] = {"packed_weight", "scales", "zeros"};
// group_size -1 is one group a row (GPTQ's per-channel quantisation).
constexpr ListedAttribute kQuantizedGroupListed[] = {{"int", "bits"},
                                                     {" g", "group_size", {}, " channel"}};

}  // namespace

const ObjectFormat kQuantizedGroupFormat = {
    .name = "quantized_group",
    .layout_ids = {},  // zt.quant_group/1 means something else (docs/v2.md §3)
    .v1 = true,
    .required_roles = kQuantizedGroupRequired,
    .optional_roles = {},
    .index_roles = {},
    .value_role = "",
    .listed_role = "packed_weight",
    .sized_by_shape = false,
    .content_needs_whole_components = true,
    .content_rules = "quantized_group layout",
    .decoded_as = "dequantized",
    .check_structure = nullptr,
    .check_content = check_quantized_layout,
    .check_written = check_written_quantized,
    .listed_attributes = kQuantizedGroupListed,
    .to_f32 = {dequantized_whole<float>, dequantized_chunks<float>},
    .to_f64 = {dequantized_whole<double>, dequantized_chunks<double>},
};

}  // namespace zt
