#include "validate.h"

#include <algorithm>
#include <string>

#include "container.h"

namespace zt {

namespace {

std::string where(const Object& o, const Component& c) {
  return "object \"" + o.name + "\": component \"" + c.role + "\"";
}

std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

struct Blob {
  uint64_t begin, end;
  const Object* obj;
  const Component* comp;
};

using ull = unsigned long long;

Result<void> check_placement(const Object& o, const Component& c, uint64_t file_size,
                             uint64_t manifest_start, std::vector<Blob>& blobs) {
  const std::string w = where(o, c);
  ZT_FAIL_IF(c.offset % kAlignment != 0, invalid, "%s: offset %llu is not a multiple of 64", w.c_str(),
             static_cast<ull>(c.offset));
  uint64_t end = 0;
  ZT_FAIL_IF(__builtin_add_overflow(c.offset, c.length, &end) || end > file_size, invalid,
             "%s: offset %llu + length %llu exceeds the file size %llu", w.c_str(),
             static_cast<ull>(c.offset), static_cast<ull>(c.length), static_cast<ull>(file_size));
  if (c.length == 0) return {};
  ZT_FAIL_IF(c.offset < 8, invalid, "%s: blob [%llu, %llu) overlaps the header", w.c_str(),
             static_cast<ull>(c.offset), static_cast<ull>(end));
  ZT_FAIL_IF(end > manifest_start, invalid, "%s: blob [%llu, %llu) overlaps the manifest at %llu",
             w.c_str(), static_cast<ull>(c.offset), static_cast<ull>(end), static_cast<ull>(manifest_start));
  blobs.push_back(Blob{c.offset, end, &o, &c});
  return {};
}

// Blobs are either the same range (shared, allowed) or disjoint.
Result<void> check_overlaps(std::vector<Blob>& blobs) {
  std::sort(blobs.begin(), blobs.end(),
            [](const Blob& a, const Blob& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  for (size_t i = 1; i < blobs.size(); ++i) {
    const Blob& a = blobs[i - 1];
    const Blob& b = blobs[i];
    if (b.begin >= a.end || (b.begin == a.begin && b.end == a.end)) continue;
    return make_error(Status::invalid, "%s: blob [%llu, %llu) overlaps %s: blob [%llu, %llu)",
                      where(*b.obj, *b.comp).c_str(), static_cast<ull>(b.begin), static_cast<ull>(b.end),
                      where(*a.obj, *a.comp).c_str(), static_cast<ull>(a.begin), static_cast<ull>(a.end));
  }
  return {};
}

Result<void> check_dense(const Object& o) {
  const Component& c = *o.find("data");
  if (!c.element_size_known()) return {};  // unknown logical type: size unknown
  const auto want = dense_bytes(o, c);
  ZT_FAIL_IF(!want, invalid, "%s: shape %s x %u bytes overflows 64 bits", where(o, c).c_str(),
             shape_text(o.shape).c_str(), c.width() * c.ratio());
  const auto got = decoded_size(c);
  ZT_FAIL_IF(got && *got != *want, invalid, "%s: %s %llu does not match shape %s x %u bytes = %llu",
             where(o, c).c_str(), c.encoding == Encoding::raw ? "length" : "uncompressed_length",
             static_cast<ull>(*got), shape_text(o.shape).c_str(), c.width() * c.ratio(),
             static_cast<ull>(*want));
  return {};
}

Result<uint64_t> element_count(const Object& o, const Component& c, unsigned unit) {
  const uint64_t n = *decoded_size(c);
  ZT_FAIL_IF(n % unit != 0, invalid, "%s: %llu bytes is not a whole number of %u-byte elements",
             where(o, c).c_str(), static_cast<ull>(n), unit);
  return n / unit;
}

Result<void> check_sparse(const Object& o) {
  const bool csr = o.format == "sparse_csr";
  const std::vector<std::string_view> index_roles =
      csr ? std::vector<std::string_view>{"indices", "indptr"} : std::vector<std::string_view>{"coords"};
  for (const auto r : index_roles) {
    const Component& c = *o.find(r);
    // Readers are liberal: 1.2-era writers emitted i32/i64 indices.
    ZT_FAIL_IF(!dtype_is_integer(c.dtype), invalid, "%s: index dtype \"%s\" is not an integer type",
               where(o, c).c_str(), std::string(dtype_name(c.dtype)).c_str());
  }
  ZT_FAIL_IF(csr && o.shape.size() != 2, invalid, "object \"%s\": sparse_csr needs a 2-d shape, got %s",
             o.name.c_str(), shape_text(o.shape).c_str());
  const Component& values = *o.find("values");
  if (!values.element_size_known() || !decoded_size(values)) return {};
  for (const auto r : index_roles)
    if (!decoded_size(*o.find(r))) return {};
  auto nnz = element_count(o, values, values.width() * values.ratio());
  ZT_TRY(nnz);
  if (csr) {
    const Component& indices = *o.find("indices");
    const Component& indptr = *o.find("indptr");
    auto ni = element_count(o, indices, indices.width());
    ZT_TRY(ni);
    auto np = element_count(o, indptr, indptr.width());
    ZT_TRY(np);
    ZT_FAIL_IF(*ni != *nnz, invalid, "%s: %llu indices for %llu values", where(o, indices).c_str(),
               static_cast<ull>(*ni), static_cast<ull>(*nnz));
    ZT_FAIL_IF(o.shape[0] == UINT64_MAX || *np != o.shape[0] + 1, invalid,
               "%s: indptr has %llu entries, rows + 1 = %llu + 1", where(o, indptr).c_str(),
               static_cast<ull>(*np), static_cast<ull>(o.shape[0]));
    return {};
  }
  const Component& coords = *o.find("coords");
  auto nc = element_count(o, coords, coords.width());
  ZT_TRY(nc);
  const auto want = checked_mul(o.shape.size(), *nnz);
  ZT_FAIL_IF(!want || *nc != *want, invalid, "%s: coords has %llu entries, ndim * nnz = %zu * %llu",
             where(o, coords).c_str(), static_cast<ull>(*nc), o.shape.size(), static_cast<ull>(*nnz));
  return {};
}

}  // namespace

Result<void> check_whole_elements(const Object& o, const Component& c, uint64_t decoded) {
  const unsigned unit = c.width() * c.ratio();
  ZT_FAIL_IF(decoded % unit != 0, invalid,
             "%s: %llu bytes is not a whole number of %u-byte elements", where(o, c).c_str(),
             static_cast<ull>(decoded), unit);
  return {};
}

namespace {

Result<void> check_format_rules(const Object& o) {
  const auto* req = required_roles(o.format);
  if (!req) return {};  // unknown format: structural checks only
  for (const auto r : *req)
    ZT_FAIL_IF(!o.find(r), invalid, "object \"%s\": format \"%s\" requires component \"%.*s\"",
               o.name.c_str(), o.format.c_str(), static_cast<int>(r.size()), r.data());
  if (o.format == "dense") return check_dense(o);
  if (o.format == "sparse_csr" || o.format == "sparse_coo") return check_sparse(o);
  return {};
}

}  // namespace

Result<void> validate_object(const Object& o) {
  if (!o.unsupported.empty()) return {};  // listed only; refused on access
  ZT_TRY(check_format_rules(o));  // first: its messages say more (a dense size against the shape)
  // Every format, known or not: the writer stores only whole elements, so a
  // file the reader accepts can be copied.
  for (const Component& c : o.components)
    if (const auto n = decoded_size(c)) ZT_TRY(check_whole_elements(o, c, *n));
  return {};
}

const std::vector<std::string_view>* required_roles(std::string_view format) {
  static const std::vector<std::string_view> dense = {"data"};
  static const std::vector<std::string_view> csr = {"values", "indices", "indptr"};
  static const std::vector<std::string_view> coo = {"values", "coords"};
  static const std::vector<std::string_view> quant = {"packed_weight", "scales", "zeros"};
  if (format == "dense") return &dense;
  if (format == "sparse_csr") return &csr;
  if (format == "sparse_coo") return &coo;
  if (format == "quantized_group") return &quant;
  return nullptr;
}

std::optional<uint64_t> decoded_size(const Component& c) {
  switch (c.encoding) {
    case Encoding::raw:
      return c.length;
    case Encoding::zstd:
      return c.uncompressed_length;
    case Encoding::unknown:
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<uint64_t> dense_bytes(const Object& o, const Component& c) {
  if (!c.element_size_known()) return std::nullopt;
  const auto n = shape_product(o.shape);
  if (!n) return std::nullopt;
  return checked_mul(*n, static_cast<uint64_t>(c.width()) * c.ratio());
}

Result<void> validate(const Manifest& m, uint64_t file_size, uint64_t manifest_start) {
  std::vector<Blob> blobs;
  for (const Object& o : m.objects)
    for (const Component& c : o.components) ZT_TRY(check_placement(o, c, file_size, manifest_start, blobs));
  ZT_TRY(check_overlaps(blobs));
  for (const Object& o : m.objects) ZT_TRY(validate_object(o));
  return {};
}

}  // namespace zt
