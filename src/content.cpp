#include "content.h"

#include <cstring>
#include <string>

#include "quantized.h"

namespace zt {

namespace {

using ull = unsigned long long;

std::string where(const Object& o, const Component& c) {
  return "object \"" + o.name + "\": component \"" + c.role + "\"";
}

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

Result<void> check_bool(const Object& o, const Component& c, std::span<const uint8_t> bytes, uint64_t first) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] > 1) {
      return make_error(Status::invalid, "%s: bool byte 0x%02x at element %llu is neither 0x00 nor 0x01",
                        where(o, c).c_str(), bytes[i], static_cast<unsigned long long>(first + i));
    }
  }
  return {};
}

bool content_needs_whole_components(const Object& o) {
  return o.format == "sparse_csr" || o.format == "sparse_coo" || o.format == "quantized_group";
}

namespace {

struct Indexed {
  const Component* c;
  std::span<const uint8_t> bytes;
  uint64_t count;
  __int128 at(uint64_t k) const { return load_index(bytes, c->dtype, k); }
};

Result<void> check_csr(const Object& o, const Indexed& indptr, const Indexed& indices, uint64_t nnz) {
  if (o.shape.size() != 2) return {};
  const uint64_t rows = o.shape[0], cols = o.shape[1];
  const std::string wp = where(o, *indptr.c);
  // rows + 1 computed without wrapping: a file may claim UINT64_MAX rows.
  ZT_FAIL_IF(rows == UINT64_MAX || indptr.count != rows + 1, invalid,
             "%s: indptr has %llu entries, rows + 1 = %llu + 1", wp.c_str(), static_cast<ull>(indptr.count),
             static_cast<ull>(rows));
  ZT_FAIL_IF(indices.count != nnz, invalid, "%s: %llu indices for %llu values", where(o, *indices.c).c_str(),
             static_cast<ull>(indices.count), static_cast<ull>(nnz));
  ZT_FAIL_IF(indptr.at(0) != 0, invalid, "%s: indptr[0] is %lld, must be 0", wp.c_str(),
             static_cast<long long>(indptr.at(0)));
  for (uint64_t i = 0; i < rows; ++i) {
    const __int128 a = indptr.at(i), b = indptr.at(i + 1);
    ZT_FAIL_IF(b < a, invalid, "%s: indptr decreases at row %llu (%lld -> %lld)", wp.c_str(),
               static_cast<ull>(i), static_cast<long long>(a), static_cast<long long>(b));
  }
  ZT_FAIL_IF(indptr.at(rows) != static_cast<__int128>(nnz), invalid, "%s: indptr[rows] is %lld, must equal nnz %llu",
             wp.c_str(), static_cast<long long>(indptr.at(rows)), static_cast<ull>(nnz));
  for (uint64_t k = 0; k < indices.count; ++k) {
    const __int128 j = indices.at(k);
    ZT_FAIL_IF(j < 0 || j >= static_cast<__int128>(cols), invalid,
               "%s: column index %lld at position %llu is out of range [0, %llu)", where(o, *indices.c).c_str(),
               static_cast<long long>(j), static_cast<ull>(k), static_cast<ull>(cols));
  }
  return {};
}

Result<void> check_coo(const Object& o, const Indexed& coords, uint64_t nnz) {
  const uint64_t nd = o.shape.size();
  const std::string w = where(o, *coords.c);
  ZT_FAIL_IF(nd != 0 && nnz > coords.count / nd, invalid, "%s: coords has %llu entries, ndim * nnz = %llu * %llu",
             w.c_str(), static_cast<ull>(coords.count), static_cast<ull>(nd), static_cast<ull>(nnz));
  ZT_FAIL_IF(coords.count != nd * nnz, invalid, "%s: coords has %llu entries, ndim * nnz = %llu * %llu", w.c_str(),
             static_cast<ull>(coords.count), static_cast<ull>(nd), static_cast<ull>(nnz));
  for (uint64_t d = 0; d < nd; ++d) {
    for (uint64_t k = 0; k < nnz; ++k) {
      const __int128 v = coords.at(d * nnz + k);
      ZT_FAIL_IF(v < 0 || v >= static_cast<__int128>(o.shape[d]), invalid,
                 "%s: coordinate %lld of dimension %llu (entry %llu) is out of range [0, %llu)", w.c_str(),
                 static_cast<long long>(v), static_cast<ull>(d), static_cast<ull>(k), static_cast<ull>(o.shape[d]));
    }
  }
  return {};
}

Result<void> check_sparse(const Object& o, std::span<const std::span<const uint8_t>> decoded) {
  auto get = [&](std::string_view role) -> std::optional<Indexed> {
    for (size_t k = 0; k < o.components.size(); ++k) {
      const Component& c = o.components[k];
      if (c.role != role) continue;
      const uint64_t unit = c.width() * (role == "values" ? c.ratio() : 1);
      return Indexed{&c, decoded[k], decoded[k].size() / unit};
    }
    return std::nullopt;
  };
  const auto values = get("values");
  if (!values || !values->c->element_size_known()) return {};
  const uint64_t unit = values->c->width() * values->c->ratio();
  ZT_FAIL_IF(values->bytes.size() % unit != 0, invalid, "%s: values are not a whole number of elements",
             where(o, *values->c).c_str());
  const bool csr = o.format == "sparse_csr";
  static constexpr std::string_view kCsrIndex[] = {"indices", "indptr"};
  static constexpr std::string_view kCooIndex[] = {"coords"};
  for (const auto role : csr ? std::span<const std::string_view>(kCsrIndex) : std::span<const std::string_view>(kCooIndex)) {
    const auto ix = get(role);
    if (!ix || !dtype_is_integer(ix->c->dtype)) return {};
    ZT_FAIL_IF(ix->bytes.size() % ix->c->width() != 0, invalid, "%s: not a whole number of %u-byte indices",
               where(o, *ix->c).c_str(), ix->c->width());
  }
  if (csr) return check_csr(o, *get("indptr"), *get("indices"), values->count);
  return check_coo(o, *get("coords"), values->count);
}

}  // namespace

__int128 load_index(std::span<const uint8_t> bytes, DType dtype, uint64_t k) {
  const uint8_t* p = bytes.data() + k * dtype_width(dtype);
  switch (dtype) {
    case DType::i8:
      return load<int8_t>(p);
    case DType::i16:
      return load<int16_t>(p);
    case DType::i32:
      return load<int32_t>(p);
    case DType::i64:
      return load<int64_t>(p);
    case DType::u8:
      return load<uint8_t>(p);
    case DType::u16:
      return load<uint16_t>(p);
    case DType::u32:
      return load<uint32_t>(p);
    case DType::u64:
      return load<uint64_t>(p);
    default:
      return -1;
  }
}

Result<void> check_content(bool legacy, const Object& o,
                           std::span<const std::span<const uint8_t>> decoded) {
  for (size_t k = 0; k < o.components.size(); ++k)
    if (o.components[k].dtype == DType::boolean && !legacy) ZT_TRY(check_bool(o, o.components[k], decoded[k]));
  if (o.format == "sparse_csr" || o.format == "sparse_coo") return check_sparse(o, decoded);
  if (o.format == "quantized_group") return check_quantized_layout(o, decoded);
  return {};
}

}  // namespace zt
