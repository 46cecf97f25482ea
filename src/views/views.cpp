// The typed views (dense, CSR, COO, quantized_group) over the reader's
// decoded components, and one-off conversions of a dense object or of any
// component into caller buffers.
#include <algorithm>
#include <string>

#include "base/growing_bytes.h"
#include "manifest/object_format.h"
#include "read/content.h"
#include "views/kernels.h"

namespace zt {

using namespace zt::views;
using ull = unsigned long long;

namespace {

// Decoded bytes for a one-off conversion: the mapping when raw, otherwise a
// fresh buffer (not the reader's cache, so a converted copy does not keep a
// second decoded copy alive until zt_close).
struct Fetched {
  std::span<const uint8_t> mapped;
  GrowingBytes owned;
  bool is_owned = false;
  std::span<const uint8_t> bytes() const { return is_owned ? owned.bytes() : mapped; }
};

Result<Fetched> fetch(const Reader& r, size_t object, size_t k) {
  const Component& c = r.manifest().objects[object].components[k];
  Fetched f;
  const auto in_place = r.mapped_in_place(c);
  ZT_TRY(in_place);
  if (*in_place) {
    auto m = r.map(object, k);
    ZT_TRY(m);
    f.mapped = *m;
    return f;
  }
  auto d = r.decode(object, k);
  ZT_TRY(d);
  f.owned = std::move(*d);
  f.is_owned = true;
  return f;
}

}  // namespace

// A component through the reader's map (zero-copy or cached).
Result<ComponentView> views::view_of(const Reader& r, size_t object, const Component& c) {
  const Object& o = r.manifest().objects[object];
  auto m = r.map(object, index_of(o, &c));
  ZT_TRY(m);
  ZT_FAIL_IF(m->size() % c.width() != 0, invalid,
             "%s: %zu decoded bytes are not a whole number of %u-byte elements",
             component_where(o, c).c_str(), m->size(), c.width());
  return ComponentView{&c, *m, m->size() / c.width(), r.maps_file(c)};
}

Result<NumericFormat> views::scalar_format(const Object& o, const Component& c) {
  auto f = numeric_format(o, c);
  ZT_TRY(f);
  ZT_FAIL_IF(f->ratio != 1, unsupported, "%s: complex %s are not supported",
             component_where(o, c).c_str(), c.role.c_str());
  return f;
}

// Runs the content rules of zt_verify over the components already mapped.
Result<void> views::check_structure(const Reader& r, const Object& o,
                                    std::initializer_list<const ComponentView*> views) {
  std::vector<std::span<const uint8_t>> decoded(o.components.size());
  for (const ComponentView* v : views) decoded[index_of(o, v->component)] = v->bytes;
  return check_content(lenient_bools(r.manifest().generation), o, decoded);
}

Result<const Object*> views::object_of_format(const Reader& r, size_t object, const ObjectFormat& f,
                                              const char* hint) {
  const Object& o = r.manifest().objects[object];
  ZT_TRY(require_interpretable(o));
  ZT_FAIL_IF(o.format != f.name, argument, "%s has format \"%s\", not \"%.*s\"%s",
             object_where(o).c_str(), o.format.c_str(), static_cast<int>(f.name.size()),
             f.name.data(), hint);
  return &o;
}

Result<void> require_interpretable(const Object& o) {
  ZT_FAIL_IF(!o.unsupported.empty(), unsupported, "%s", o.unsupported.c_str());
  ZT_FAIL_IF(!format_of(o), unsupported, "%s: format \"%s\" is not one this library can decode",
             object_where(o).c_str(), o.format.c_str());
  return {};
}

Result<uint64_t> element_count(const Object& o) {
  const auto n = shape_product(o.shape);
  ZT_FAIL_IF(!n, limit, "%s: the product of the shape overflows 64 bits", object_where(o).c_str());
  return *n;
}

Result<uint64_t> decoded_value_count(const Reader& r, size_t object) {
  const Object& o = r.manifest().objects[object];
  ZT_TRY(require_interpretable(o));
  auto n = element_count(o);
  ZT_TRY(n);
  unsigned ratio = 1;
  const std::string_view role = format_of(o)->value_role;
  if (const Component* c = role.empty() ? nullptr : o.find(role)) {
    auto f = numeric_format(o, *c);
    ZT_TRY(f);
    ratio = f->ratio;
  }
  const auto total = checked_mul(*n, ratio);
  ZT_FAIL_IF(!total, limit, "%s: the value count overflows 64 bits", object_where(o).c_str());
  return *total;
}

Result<uint64_t> decode_capacity(const Reader& r, size_t object, size_t value_bytes) {
  auto n = decoded_value_count(r, object);
  ZT_TRY(n);
  const auto bytes = checked_mul(*n, value_bytes);
  const Object& o = r.manifest().objects[object];
  ZT_FAIL_IF(!bytes || *bytes > r.max_decoded_bytes(), limit,
             "%s: decoded as a dense array, %llu values of %zu bytes exceed the decode limit %llu",
             object_where(o).c_str(), static_cast<unsigned long long>(*n), value_bytes,
             static_cast<unsigned long long>(r.max_decoded_bytes()));
  return *n;
}

Result<DenseView> dense_view(const Reader& r, size_t object) {
  auto o = object_of_format(r, object, kDenseFormat, "");
  ZT_TRY(o);
  const Component& c = *(*o)->find("data");
  DenseView v;
  auto n = element_count(**o);
  ZT_TRY(n);
  v.elements = *n;
  auto data = view_of(r, object, c);
  ZT_TRY(data);
  v.data = *data;
  if (c.type && !c.known_type) return v;
  auto f = numeric_format(**o, c);
  ZT_TRY(f);
  v.format = *f;
  // Storage elements: f4_e2m1 keeps two values in each of its u8 elements.
  const uint64_t want = f->f4 ? value_bytes(*f, v.elements) : v.elements * f->ratio;
  ZT_FAIL_IF(v.data.count != want, invalid, "%s: %llu decoded elements, the shape needs %llu",
             component_where(**o, c).c_str(), static_cast<ull>(v.data.count),
             static_cast<ull>(want));
  if (f->f4 && !v.data.bytes.empty())
    ZT_TRY(check_f4_tail(**o, c, v.elements, v.data.bytes.back()));
  ZT_TRY(check_bool_values(r.manifest().generation, **o, c, v.data.bytes));
  return v;
}

Result<CsrView> csr_view(const Reader& r, size_t object) {
  auto o = object_of_format(r, object, kSparseCsrFormat, "");
  ZT_TRY(o);
  const Object& obj = **o;
  CsrView v;
  auto f = numeric_format(obj, *obj.find("values"));
  ZT_TRY(f);
  v.values_format = *f;
  auto values = view_of(r, object, *obj.find("values"));
  ZT_TRY(values);
  auto indices = view_of(r, object, *obj.find("indices"));
  ZT_TRY(indices);
  auto indptr = view_of(r, object, *obj.find("indptr"));
  ZT_TRY(indptr);
  v.values = *values, v.indices = *indices, v.indptr = *indptr;
  ZT_TRY(check_structure(r, obj, {&v.values, &v.indices, &v.indptr}));
  v.rows = obj.shape[0], v.cols = obj.shape[1];
  // f4_e2m1 values hold two to a byte: nnz is the index count (check_structure
  // checked the values' size and spare nibble against it).
  v.nnz = v.values_format.f4 ? v.indices.count : v.values.count / v.values_format.ratio;
  return v;
}

Result<CooView> coo_view(const Reader& r, size_t object) {
  auto o = object_of_format(r, object, kSparseCooFormat, "");
  ZT_TRY(o);
  const Object& obj = **o;
  CooView v;
  auto f = numeric_format(obj, *obj.find("values"));
  ZT_TRY(f);
  v.values_format = *f;
  auto values = view_of(r, object, *obj.find("values"));
  ZT_TRY(values);
  auto coords = view_of(r, object, *obj.find("coords"));
  ZT_TRY(coords);
  v.values = *values, v.coords = *coords;
  ZT_TRY(check_structure(r, obj, {&v.values, &v.coords}));
  v.shape = obj.shape;
  v.nnz = v.values_format.f4 && !v.shape.empty() ? v.coords.count / v.shape.size()
                                                 : v.values.count / v.values_format.ratio;
  return v;
}

template <typename T>
Result<uint64_t> read_dense_as(const Reader& r, size_t object, std::span<T> dst) {
  auto o = object_of_format(r, object, kDenseFormat, " (zt_object_decode_* reads every format)");
  ZT_TRY(o);
  const Component& c = *(*o)->find("data");
  const size_t k = index_of(**o, &c);
  auto f = numeric_format(**o, c);
  ZT_TRY(f);
  auto count = decode_capacity(r, object, sizeof(T));  // as decode_object_as refuses it
  ZT_TRY(count);
  const uint64_t n = *count;
  ZT_TRY(fits(component_where(**o, c), n, dst));
  const auto in_place = r.mapped_in_place(c);
  ZT_TRY(in_place);
  if (c.dtype == kNativeDType<T> && !*in_place) {
    // Same type: decode straight into the caller's buffer.
    auto got = r.read(object, k,
                      std::span<uint8_t>(reinterpret_cast<uint8_t*>(dst.data()), n * sizeof(T)));
    ZT_TRY(got);
    ZT_FAIL_IF(*got != n * sizeof(T), invalid, "%s: decoded %llu bytes, the shape needs %llu",
               component_where(**o, c).c_str(), static_cast<ull>(*got),
               static_cast<ull>(n * sizeof(T)));
    return n;
  }
  auto bytes = fetch(r, object, k);
  ZT_TRY(bytes);
  const auto b = bytes->bytes();
  ZT_FAIL_IF(b.size() != value_bytes(*f, n), invalid, "%s: decoded %zu bytes, the shape needs %llu",
             component_where(**o, c).c_str(), b.size(), static_cast<ull>(value_bytes(*f, n)));
  if (f->f4 && !b.empty()) ZT_TRY(check_f4_tail(**o, c, n, b.back()));
  ZT_TRY(check_bool_values(r.manifest().generation, **o, c, b));
  convert_values(b.data(), *f, n, dst.data());
  return n;
}

namespace {

// An f4_e2m1 part: its bytes do not say how many values they hold (an odd
// count leaves a spare nibble), the layout does (decision 14 of docs/v2.md).
template <typename T>
Result<uint64_t> read_f4_component_as(const Reader& r, size_t object, size_t component,
                                      const NumericFormat& f, std::span<T> dst) {
  const Object& o = r.manifest().objects[object];
  const Component& c = o.components[component];
  const auto n = packed_value_count(o, c);
  ZT_FAIL_IF(!n, unsupported,
             "%s: the value count of an f4_e2m1 part comes from its layout, and this one's "
             "(\"%s\") gives none here",
             component_where(o, c).c_str(), o.layout.c_str());
  ZT_TRY(fits(component_where(o, c), *n, dst));
  auto bytes = fetch(r, object, component);
  ZT_TRY(bytes);
  const auto b = bytes->bytes();
  ZT_FAIL_IF(b.size() != value_bytes(f, *n), invalid,
             "%s: decoded %zu bytes, %llu values need %llu", component_where(o, c).c_str(),
             b.size(), static_cast<ull>(*n), static_cast<ull>(value_bytes(f, *n)));
  if (!b.empty()) ZT_TRY(check_f4_tail(o, c, *n, b.back()));
  convert_values(b.data(), f, *n, dst.data());
  return *n;
}

}  // namespace

template <typename T>
Result<uint64_t> read_component_as(const Reader& r, size_t object, size_t component,
                                   std::span<T> dst) {
  const Object& o = r.manifest().objects[object];
  const Component& c = o.components[component];
  const std::string w = component_where(o, c);
  // Components of any format convert on their own; the blob of a 0.1.x
  // sparse layout holds parts of unknown structure and does not.
  ZT_FAIL_IF(!o.unsupported.empty(), unsupported, "%s", o.unsupported.c_str());
  auto f = numeric_format(o, c);
  ZT_TRY(f);
  if (f->f4) return read_f4_component_as(r, object, component, *f, dst);
  if (const auto known = r.known_decoded_size(object, component))
    ZT_TRY(fits(w, *known / c.width(), dst));
  auto bytes = fetch(r, object, component);
  ZT_TRY(bytes);
  ZT_FAIL_IF(bytes->bytes().size() % c.width() != 0, invalid,
             "%s: %zu decoded bytes are not a whole number of %u-byte elements", w.c_str(),
             bytes->bytes().size(), c.width());
  const uint64_t n = bytes->bytes().size() / c.width();
  ZT_TRY(fits(w, n, dst));
  ZT_TRY(check_bool_values(r.manifest().generation, o, c, bytes->bytes()));
  convert_values(bytes->bytes().data(), *f, n, dst.data());
  return n;
}

template Result<uint64_t> read_dense_as<float>(const Reader&, size_t, std::span<float>);
template Result<uint64_t> read_dense_as<double>(const Reader&, size_t, std::span<double>);
template Result<uint64_t> read_component_as<float>(const Reader&, size_t, size_t, std::span<float>);
template Result<uint64_t> read_component_as<double>(const Reader&, size_t, size_t,
                                                    std::span<double>);

}  // namespace zt
