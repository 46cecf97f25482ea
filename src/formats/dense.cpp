// "dense": one component "data" holding product(shape) elements, row-major.
#include "manifest/object_format.h"
#include "views/views.h"

namespace zt {

namespace {

using ull = unsigned long long;

// The data's size against the shape, when both are known.
Result<void> check_dense(const Object& o) {
  // v2's dense is exactly one part (v2 spec §5.1): check_format_rules refuses
  // any other, as it does for every profile.
  const Component& c = *o.find("data");
  if (!c.element_size_known()) return {};  // unknown logical type: size unknown
  const auto want = dense_bytes(o, c);
  // Messages are built only on failure: this runs for every object at open.
  ZT_FAIL_IF(!want, invalid, "%s: shape %s x %u bytes overflows 64 bits",
             component_where(o, c).c_str(), shape_text(o.shape).c_str(), c.width() * c.ratio());
  const auto got = decoded_size(c);
  ZT_FAIL_IF(got && *got != *want, invalid, "%s: %s %llu does not match shape %s x %u bytes = %llu",
             component_where(o, c).c_str(),
             c.encoding == Encoding::raw ? "length"
             : o.layout.empty()          ? "uncompressed_length"
                                         : "decoded_length",
             static_cast<ull>(*got), shape_text(o.shape).c_str(), c.width() * c.ratio(),
             static_cast<ull>(*want));
  return {};
}

template <typename T>
Result<void> dense_whole(const Reader& r, size_t object, std::span<T> dst) {
  auto n = read_dense_as(r, object, dst);
  ZT_TRY(n);
  return {};
}

// Whole rows at a time, decoding only the frames that cover them.
template <typename T>
Result<void> dense_chunks(const Reader& r, size_t object, uint64_t values, uint64_t chunk,
                          const ValueSink<T>& sink) {
  const uint64_t rows = r.manifest().objects[object].shape[0];
  return by_rows<T>(rows, values / rows, chunk, sink,
                    [&](uint64_t r0, uint64_t r1, std::span<T> dst) -> Result<void> {
                      auto got = dense_rows_as(r, object, r0, r1, dst);
                      ZT_TRY(got);
                      return {};
                    });
}

constexpr std::string_view kDenseRequired[] = {"data"};
constexpr std::string_view kDenseLayoutIds[] = {"dense"};

}  // namespace

const ObjectFormat kDenseFormat = {
    .name = "dense",
    .layout_ids = kDenseLayoutIds,
    .v1 = true,
    .required_roles = kDenseRequired,
    .optional_roles = {},
    .index_roles = {},
    .value_role = "data",
    .listed_role = "data",
    .sized_by_shape = true,
    .content_needs_whole_components = false,
    .content_rules = "",
    .decoded_as = "",
    .check_structure = check_dense,
    .check_content = nullptr,
    .check_written = nullptr,
    .listed_attributes = {},
    .to_f32 = {dense_whole<float>, dense_chunks<float>},
    .to_f64 = {dense_whole<double>, dense_chunks<double>},
    .values_in = shape_counted_data,
};

}  // namespace zt
