#include "manifest/object_format.h"

#include <algorithm>

#include "read/reader.h"

namespace zt {

namespace {

// The table every lookup goes through; a new format adds one line here.
constexpr const ObjectFormat* kFormats[] = {
    &kDenseFormat,          &kSparseCsrFormat,   &kSparseCooFormat,
    &kQuantizedGroupFormat, &kQuantGroupFormat,  &kMxFormat,
    &kGgufFormat,           &kPackedGroupFormat, &kBlockScaledFormat};

bool contains(std::span<const std::string_view> set, std::string_view s) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

}  // namespace

std::optional<uint64_t> shape_counted_data(const Object& o, const Component& c) {
  return c.role == "data" ? shape_product(o.shape) : std::nullopt;
}

std::span<const ObjectFormat* const> object_formats() {
  return kFormats;
}

const ObjectFormat* find_object_format(std::string_view name) {
  for (const ObjectFormat* f : kFormats)
    if (f->v1 && f->name == name) return f;
  return nullptr;
}

const ObjectFormat* find_layout_format(std::string_view layout) {
  for (const ObjectFormat* f : kFormats)
    if (contains(f->layout_ids, layout)) return f;
  return nullptr;
}

std::string presented_format(std::string_view layout) {
  const ObjectFormat* f = find_layout_format(layout);
  return f && f->v1 ? std::string(f->name) : std::string(layout);
}

template <typename T>
Result<void> not_decoded_whole(const Reader& r, size_t object, std::span<T>) {
  const Object& o = r.manifest().objects[object];
  return make_error(Status::unsupported,
                    "%s: layout \"%s\" is not decoded by this library; read its parts as bytes",
                    object_where(o).c_str(), o.layout.c_str());
}

template <typename T>
Result<void> not_decoded_chunks(const Reader& r, size_t object, uint64_t, uint64_t,
                                const ValueSink<T>&) {
  return not_decoded_whole<T>(r, object, {});
}

template Result<void> not_decoded_whole<float>(const Reader&, size_t, std::span<float>);
template Result<void> not_decoded_whole<double>(const Reader&, size_t, std::span<double>);
template Result<void> not_decoded_chunks<float>(const Reader&, size_t, uint64_t, uint64_t,
                                                const ValueSink<float>&);
template Result<void> not_decoded_chunks<double>(const Reader&, size_t, uint64_t, uint64_t,
                                                 const ValueSink<double>&);

bool is_index_role(const ObjectFormat& f, std::string_view role) {
  return contains(f.index_roles, role);
}

bool is_allowed_role(const ObjectFormat& f, std::string_view role) {
  return contains(f.required_roles, role) || contains(f.optional_roles, role);
}

}  // namespace zt
