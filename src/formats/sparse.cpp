// "sparse_csr" and "sparse_coo": nnz stored values with integer index
// components. CSR (2-d): row i holds values[indptr[i] .. indptr[i+1]) at
// columns indices[...]. COO: entry k sits at (coords[0*nnz + k],
// coords[1*nnz + k], ...). The two share their value and index rules. The
// v2 profiles zt.sparse_csr/1 and zt.sparse_coo/1 are stricter subsets:
// plain u32/u64 indices, nnz counted from the index part, no duplicates.
#include <algorithm>
#include <vector>

#include "formats/profile_rules.h"
#include "manifest/object_format.h"
#include "read/content.h"
#include "read/index_cursor.h"
#include "views/views.h"

namespace zt {

namespace {

using ull = unsigned long long;

// ---- at open: the manifest alone ----

// Readers are liberal: 1.2-era writers emitted i32/i64 indices.
Result<void> check_index_dtypes(const Object& o, const ObjectFormat& f) {
  for (const auto r : f.index_roles) {
    const Component& c = *o.find(r);
    ZT_FAIL_IF(!dtype_is_integer(c.dtype), invalid, "%s: index dtype \"%s\" is not an integer type",
               component_where(o, c).c_str(), std::string(dtype_name(c.dtype)).c_str());
  }
  return {};
}

Result<uint64_t> stored_count(const Object& o, const Component& c, unsigned unit) {
  const uint64_t n = *decoded_size(c);
  ZT_FAIL_IF(n % unit != 0, invalid, "%s: %llu bytes is not a whole number of %u-byte elements",
             component_where(o, c).c_str(), static_cast<ull>(n), unit);
  return n / unit;
}

// nnz when the manifest gives every size the counts need; nullopt if not.
Result<std::optional<uint64_t>> known_nnz(const Object& o, const ObjectFormat& f) {
  const Component& values = *o.find("values");
  if (!values.element_size_known() || !decoded_size(values)) return std::optional<uint64_t>();
  for (const auto r : f.index_roles)
    if (!decoded_size(*o.find(r))) return std::optional<uint64_t>();
  auto nnz = stored_count(o, values, values.width() * values.ratio());
  ZT_TRY(nnz);
  return std::optional<uint64_t>(*nnz);
}

// ---- at open, v2: nnz comes from the index part, whose size function is
// exact (a packed f4_e2m1 values part does not invert) ----

Result<void> check_plain_index(const Object& o, const Component& c) {
  ZT_FAIL_IF((c.dtype != DType::u32 && c.dtype != DType::u64) || c.type, invalid,
             "%s: part \"%s\" must be u32 or u64 with no type (it is %s%s%s)",
             layout_where(o).c_str(), c.role.c_str(), std::string(dtype_name(c.dtype)).c_str(),
             c.type ? " of type " : "", c.type ? c.type->c_str() : "");
  return {};
}

// size(values) is the values type's size function at nnz, when both are known.
Result<void> check_values_size(const Object& o, uint64_t nnz) {
  const Component& values = *o.find("values");
  if (!values.element_size_known()) return {};  // unknown type
  return check_part_size(o, values, element_bytes(values, nnz), "the values type's size at nnz");
}

Result<void> check_csr_profile(const Object& o) {
  ZT_FAIL_IF(o.shape.size() != 2, invalid, "%s: the shape must have rank 2, got %s",
             layout_where(o).c_str(), shape_text(o.shape).c_str());
  const Component& indices = *o.find("indices");
  const Component& indptr = *o.find("indptr");
  ZT_TRY(check_plain_index(o, indices));
  ZT_FAIL_IF(indptr.dtype != indices.dtype || indptr.type, invalid,
             "%s: part \"indptr\" must have the dtype of \"indices\" (%s) and no type",
             layout_where(o).c_str(), std::string(dtype_name(indices.dtype)).c_str());
  const unsigned width = indices.width();
  ZT_TRY(check_part_size(
      o, indptr,
      o.shape[0] == UINT64_MAX ? std::optional<uint64_t>() : checked_mul(o.shape[0] + 1, width),
      "(rows + 1) x width(indices.dtype)"));
  if (!decoded_size(indices)) return {};
  auto nnz = stored_count(o, indices, width);
  ZT_TRY(nnz);
  return check_values_size(o, *nnz);
}

Result<void> check_coo_profile(const Object& o) {
  ZT_FAIL_IF(o.shape.empty(), invalid, "%s: the shape must have rank 1 or more",
             layout_where(o).c_str());
  const Component& coords = *o.find("coords");
  ZT_TRY(check_plain_index(o, coords));
  const auto nc = decoded_size(coords);
  if (!nc) return {};
  const uint64_t unit = coords.width() * o.shape.size();  // rank <= 64: no overflow
  ZT_FAIL_IF(*nc % unit != 0, invalid,
             "%s: part \"coords\" has %llu bytes, not a multiple of %u bytes x rank %zu",
             layout_where(o).c_str(), static_cast<ull>(*nc), coords.width(), o.shape.size());
  return check_values_size(o, *nc / unit);
}

Result<void> check_csr_structure(const Object& o) {
  if (!o.layout.empty()) return check_csr_profile(o);
  ZT_TRY(check_index_dtypes(o, kSparseCsrFormat));
  ZT_FAIL_IF(o.shape.size() != 2, invalid, "object \"%s\": sparse_csr needs a 2-d shape, got %s",
             o.name.c_str(), shape_text(o.shape).c_str());
  auto nnz = known_nnz(o, kSparseCsrFormat);
  ZT_TRY(nnz);
  if (!*nnz) return {};
  const Component& indices = *o.find("indices");
  const Component& indptr = *o.find("indptr");
  auto ni = stored_count(o, indices, indices.width());
  ZT_TRY(ni);
  auto np = stored_count(o, indptr, indptr.width());
  ZT_TRY(np);
  ZT_FAIL_IF(*ni != **nnz, invalid, "%s: %llu indices for %llu values",
             component_where(o, indices).c_str(), static_cast<ull>(*ni), static_cast<ull>(**nnz));
  ZT_FAIL_IF(o.shape[0] == UINT64_MAX || *np != o.shape[0] + 1, invalid,
             "%s: indptr has %llu entries, rows + 1 = %llu + 1", component_where(o, indptr).c_str(),
             static_cast<ull>(*np), static_cast<ull>(o.shape[0]));
  return {};
}

Result<void> check_coo_structure(const Object& o) {
  if (!o.layout.empty()) return check_coo_profile(o);
  ZT_TRY(check_index_dtypes(o, kSparseCooFormat));
  auto nnz = known_nnz(o, kSparseCooFormat);
  ZT_TRY(nnz);
  if (!*nnz) return {};
  const Component& coords = *o.find("coords");
  auto nc = stored_count(o, coords, coords.width());
  ZT_TRY(nc);
  const auto want = checked_mul(o.shape.size(), **nnz);
  ZT_FAIL_IF(!want || *nc != *want, invalid, "%s: coords has %llu entries, ndim * nnz = %zu * %llu",
             component_where(o, coords).c_str(), static_cast<ull>(*nc), o.shape.size(),
             static_cast<ull>(**nnz));
  return {};
}

// ---- at verify and in the writer: the decoded bytes, a window at a time
// (a written CSR of any size is checked in the memory of a few windows) ----

// An object's parts as the content rules read them: decoded sizes, and
// each part's bytes from its start (a rule may read a part more than once,
// or two side by side).
struct Parts {
  const Object& o;
  std::span<const uint64_t> sizes;  // decoded bytes of o.components[k]
  const OpenWindows& open;

  std::optional<size_t> find(std::string_view role) const {
    for (size_t k = 0; k < o.components.size(); ++k)
      if (o.components[k].role == role) return k;
    return std::nullopt;
  }
  const Component& part(std::string_view role) const { return o.components[*find(role)]; }
  uint64_t size(std::string_view role) const { return sizes[*find(role)]; }
  uint64_t count(std::string_view role) const { return size(role) / part(role).width(); }
  Result<IndexCursor> cursor(std::string_view role) const {
    const size_t k = *find(role);
    const Component& c = o.components[k];
    auto w = open(k);
    ZT_TRY(w);
    return IndexCursor(std::move(*w), c.dtype, sizes[k] / c.width(), component_where(o, c));
  }
};

// The values' count when the rules apply (values of a known type, integer
// index components), after checking that every component holds whole
// elements; nullopt when they do not apply.
Result<std::optional<uint64_t>> decoded_nnz(const Parts& p, const ObjectFormat& f) {
  const Object& o = p.o;
  if (!p.find("values") || !p.part("values").element_size_known()) return std::optional<uint64_t>();
  const Component& values = p.part("values");
  const uint64_t unit = values.width() * values.ratio();
  ZT_FAIL_IF(p.size("values") % unit != 0, invalid, "%s: values are not a whole number of elements",
             component_where(o, values).c_str());
  for (const auto role : f.index_roles) {
    if (!p.find(role) || !dtype_is_integer(p.part(role).dtype)) return std::optional<uint64_t>();
    const Component& ix = p.part(role);
    ZT_FAIL_IF(p.size(role) % ix.width() != 0, invalid, "%s: not a whole number of %u-byte indices",
               component_where(o, ix).c_str(), ix.width());
  }
  return std::optional<uint64_t>(p.size("values") / unit);
}

// v2: nnz is the index part's count (its dtype, u32 or u64, was checked at
// open); the values' size was checked against it at open.
Result<uint64_t> profile_nnz(const Parts& p, std::string_view role, uint64_t per_entry) {
  const Component& ix = p.part(role);
  const uint64_t unit = ix.width() * per_entry;
  ZT_FAIL_IF(p.size(role) % unit != 0, invalid, "%s: %llu bytes is not a multiple of %llu",
             component_where(p.o, ix).c_str(), static_cast<ull>(p.size(role)),
             static_cast<ull>(unit));
  return p.size(role) / unit;
}

// indptr starts at 0, never decreases and ends at nnz.
Result<void> check_indptr(const Parts& p, uint64_t rows, uint64_t nnz) {
  const std::string wp = component_where(p.o, p.part("indptr"));
  auto indptr = p.cursor("indptr");
  ZT_TRY(indptr);
  auto first = indptr->next();
  ZT_TRY(first);
  ZT_FAIL_IF(*first != 0, invalid, "%s: indptr[0] is %lld, must be 0", wp.c_str(),
             static_cast<long long>(*first));
  __int128 a = *first;
  for (uint64_t i = 0; i < rows; ++i) {
    auto b = indptr->next();
    ZT_TRY(b);
    ZT_FAIL_IF(*b < a, invalid, "%s: indptr decreases at row %llu (%lld -> %lld)", wp.c_str(),
               static_cast<ull>(i), static_cast<long long>(a), static_cast<long long>(*b));
    a = *b;
  }
  ZT_FAIL_IF(a != static_cast<__int128>(nnz), invalid,
             "%s: indptr[rows] is %lld, must equal nnz %llu", wp.c_str(), static_cast<long long>(a),
             static_cast<ull>(nnz));
  return {};
}

Result<void> check_columns_in_range(const Parts& p, uint64_t nnz, uint64_t cols) {
  auto indices = p.cursor("indices");
  ZT_TRY(indices);
  for (uint64_t k = 0; k < nnz; ++k) {
    auto j = indices->next();
    ZT_TRY(j);
    ZT_FAIL_IF(*j < 0 || *j >= static_cast<__int128>(cols), invalid,
               "%s: column index %lld at position %llu is out of range [0, %llu)",
               component_where(p.o, p.part("indices")).c_str(), static_cast<long long>(*j),
               static_cast<ull>(k), static_cast<ull>(cols));
  }
  return {};
}

// zt.sparse_csr/1: within a row, column indices strictly increase (1.2
// allows duplicates, which densifying sums). indptr was checked first, so
// the rows take the indices in order, from 0 to nnz.
Result<void> check_rows_strictly_increase(const Parts& p, uint64_t rows) {
  auto indptr = p.cursor("indptr");
  ZT_TRY(indptr);
  auto indices = p.cursor("indices");
  ZT_TRY(indices);
  auto start = indptr->next();
  ZT_TRY(start);
  auto a = static_cast<uint64_t>(*start);
  for (uint64_t i = 0; i < rows; ++i) {
    auto end = indptr->next();
    ZT_TRY(end);
    const auto b = static_cast<uint64_t>(*end);
    __int128 last = 0;
    for (uint64_t k = a; k < b; ++k) {
      auto j = indices->next();
      ZT_TRY(j);
      ZT_FAIL_IF(k > a && *j <= last, invalid,
                 "%s: column indices of row %llu are not strictly increasing (%lld then %lld at "
                 "position %llu)",
                 component_where(p.o, p.part("indices")).c_str(), static_cast<ull>(i),
                 static_cast<long long>(last), static_cast<long long>(*j), static_cast<ull>(k));
      last = *j;
    }
    a = b;
  }
  return {};
}

Result<void> check_csr_parts(const Parts& p) {
  const Object& o = p.o;
  const bool v2 = !o.layout.empty();
  uint64_t nnz = 0;
  if (v2) {
    if (o.shape.size() != 2) return {};  // refused at open
    auto n = profile_nnz(p, "indices", 1);
    ZT_TRY(n);
    nnz = *n;
  } else {
    auto nnz_or = decoded_nnz(p, kSparseCsrFormat);
    ZT_TRY(nnz_or);
    if (!*nnz_or || o.shape.size() != 2) return {};
    nnz = **nnz_or;
  }
  const uint64_t rows = o.shape[0], cols = o.shape[1];
  // rows + 1 computed without wrapping: a file may claim UINT64_MAX rows.
  ZT_FAIL_IF(rows == UINT64_MAX || p.count("indptr") != rows + 1, invalid,
             "%s: indptr has %llu entries, rows + 1 = %llu + 1",
             component_where(o, p.part("indptr")).c_str(), static_cast<ull>(p.count("indptr")),
             static_cast<ull>(rows));
  ZT_FAIL_IF(p.count("indices") != nnz, invalid, "%s: %llu indices for %llu values",
             component_where(o, p.part("indices")).c_str(), static_cast<ull>(p.count("indices")),
             static_cast<ull>(nnz));
  ZT_TRY(check_indptr(p, rows, nnz));
  ZT_TRY(check_columns_in_range(p, nnz, cols));
  return v2 ? check_rows_strictly_increase(p, rows) : Result<void>{};
}

// zt.sparse_coo/1: no two entries name the same cell (1.2 allows it, and
// densifying sums them). Coordinates are in range here and v2 shapes have
// a product that fits 64 bits, so each entry's row-major cell number does
// too: sorting those (nnz x 8 bytes, the one memory here that grows with
// the object) finds a repeat. One cursor a dimension reads the entries.
Result<void> check_unique_cells(const Parts& p, uint64_t nnz) {
  const Object& o = p.o;
  const uint64_t nd = o.shape.size();
  std::vector<IndexCursor> dims;
  for (uint64_t d = 0; d < nd; ++d) {
    auto c = p.cursor("coords");
    ZT_TRY(c);
    ZT_TRY(c->skip(d * nnz));
    dims.push_back(std::move(*c));
  }
  std::vector<uint64_t> cells(nnz);
  for (uint64_t k = 0; k < nnz; ++k) {
    uint64_t cell = 0;
    for (uint64_t d = 0; d < nd; ++d) {
      auto v = dims[d].next();
      ZT_TRY(v);
      cell = cell * o.shape[d] + static_cast<uint64_t>(*v);
    }
    cells[k] = cell;
  }
  std::sort(cells.begin(), cells.end());
  const auto twice = std::adjacent_find(cells.begin(), cells.end());
  if (twice == cells.end()) return {};
  std::vector<uint64_t> at(nd);
  for (uint64_t d = nd, cell = *twice; d-- > 0; cell /= o.shape[d]) at[d] = cell % o.shape[d];
  return make_error(Status::invalid, "%s: cell %s appears more than once",
                    component_where(o, p.part("coords")).c_str(), shape_text(at).c_str());
}

Result<void> check_coo_parts(const Parts& p) {
  const Object& o = p.o;
  const bool v2 = !o.layout.empty();
  const uint64_t nd = o.shape.size();
  uint64_t nnz = 0;
  if (v2) {
    if (nd == 0) return {};  // refused at open
    auto n = profile_nnz(p, "coords", nd);
    ZT_TRY(n);
    nnz = *n;
  } else {
    auto nnz_or = decoded_nnz(p, kSparseCooFormat);
    ZT_TRY(nnz_or);
    if (!*nnz_or) return {};
    nnz = **nnz_or;
  }
  const std::string w = component_where(o, p.part("coords"));
  const uint64_t count = p.count("coords");
  ZT_FAIL_IF(nd != 0 && nnz > count / nd, invalid,
             "%s: coords has %llu entries, ndim * nnz = %llu * %llu", w.c_str(),
             static_cast<ull>(count), static_cast<ull>(nd), static_cast<ull>(nnz));
  ZT_FAIL_IF(count != nd * nnz, invalid, "%s: coords has %llu entries, ndim * nnz = %llu * %llu",
             w.c_str(), static_cast<ull>(count), static_cast<ull>(nd), static_cast<ull>(nnz));
  auto coords = p.cursor("coords");
  ZT_TRY(coords);
  for (uint64_t d = 0; d < nd; ++d) {
    for (uint64_t k = 0; k < nnz; ++k) {
      auto v = coords->next();
      ZT_TRY(v);
      ZT_FAIL_IF(*v < 0 || *v >= static_cast<__int128>(o.shape[d]), invalid,
                 "%s: coordinate %lld of dimension %llu (entry %llu) is out of range [0, %llu)",
                 w.c_str(), static_cast<long long>(*v), static_cast<ull>(d), static_cast<ull>(k),
                 static_cast<ull>(o.shape[d]));
    }
  }
  return v2 ? check_unique_cells(p, nnz) : Result<void>{};
}

// The rules over bytes already decoded (verify, views).
template <Result<void> (*Check)(const Parts&)>
Result<void> check_decoded(const Object& o, DecodedComponents decoded) {
  std::vector<uint64_t> sizes(decoded.size());
  for (size_t k = 0; k < decoded.size(); ++k) sizes[k] = decoded[k].size();
  const OpenWindows open = [&](size_t k) -> Result<std::unique_ptr<ByteWindows>> {
    return std::unique_ptr<ByteWindows>(std::make_unique<SpanWindows>(decoded[k]));
  };
  return Check(Parts{o, sizes, open});
}

// ---- in the writer: u64 indices in 1.x (spec 1.2.0; v2 takes u32 too,
// checked at open), then every content rule on the bytes read back a
// window at a time ----

template <Result<void> (*Check)(const Parts&)>
Result<void> check_written_sparse(const Object& o, const OpenWindows& open) {
  const ObjectFormat& f = *format_of(o);
  if (o.layout.empty())
    for (const Component& c : o.components)
      ZT_FAIL_IF(is_index_role(f, c.role) && c.dtype != DType::u64, invalid,
                 "object \"%s\": component \"%s\": sparse index components must be u64 (spec "
                 "1.2.0), not %s",
                 o.name.c_str(), c.role.c_str(), std::string(dtype_name(c.dtype)).c_str());
  std::vector<uint64_t> sizes;
  for (const Component& c : o.components) sizes.push_back(decoded_size(c).value_or(0));
  const Parts p{o, sizes, open};
  return Check(p);
}

// ---- values_in: v2 values hold nnz values, nnz from the index part's
// size in the manifest (a packed f4_e2m1 values part cannot say it) ----

std::optional<uint64_t> nnz_from(const Object& o, std::string_view index_role, uint64_t per_entry) {
  const Component* ix = o.find(index_role);
  const auto size = ix ? decoded_size(*ix) : std::nullopt;
  const uint64_t unit = ix ? uint64_t{ix->width()} * per_entry : 0;
  if (o.layout.empty() || !size || unit == 0 || *size % unit != 0) return std::nullopt;
  return *size / unit;
}

std::optional<uint64_t> csr_values_in(const Object& o, const Component& c) {
  return c.role == "values" ? nnz_from(o, "indices", 1) : std::nullopt;
}

std::optional<uint64_t> coo_values_in(const Object& o, const Component& c) {
  return c.role == "values" ? nnz_from(o, "coords", o.shape.size()) : std::nullopt;
}

// ---- to dense: duplicates are summed, as scipy does ----

template <typename T>
Result<void> csr_whole(const Reader& r, size_t object, std::span<T> dst) {
  auto v = csr_view(r, object);
  ZT_TRY(v);
  materialize(*v, dst);
  return {};
}

template <typename T>
Result<void> csr_chunks(const Reader& r, size_t object, uint64_t, uint64_t chunk,
                        const ValueSink<T>& sink) {
  auto v = csr_view(r, object);
  ZT_TRY(v);
  return materialize_rows(*v, chunk, sink);
}

template <typename T>
Result<void> coo_whole(const Reader& r, size_t object, std::span<T> dst) {
  auto v = coo_view(r, object);
  ZT_TRY(v);
  materialize(*v, dst);
  return {};
}

template <typename T>
Result<void> coo_chunks(const Reader& r, size_t object, uint64_t values, uint64_t chunk,
                        const ValueSink<T>& sink) {
  auto v = coo_view(r, object);
  ZT_TRY(v);
  return materialize_in_order(*v, values / v->values_format.ratio, chunk, sink);
}

constexpr std::string_view kCsrRequired[] = {"values", "indices", "indptr"};
constexpr std::string_view kCsrIndex[] = {"indices", "indptr"};
constexpr std::string_view kCooRequired[] = {"values", "coords"};
constexpr std::string_view kCooIndex[] = {"coords"};
constexpr std::string_view kCsrLayoutIds[] = {"zt.sparse_csr/1"};
constexpr std::string_view kCooLayoutIds[] = {"zt.sparse_coo/1"};

}  // namespace

const ObjectFormat kSparseCsrFormat = {
    .name = "sparse_csr",
    .layout_ids = kCsrLayoutIds,
    .v1 = true,
    .required_roles = kCsrRequired,
    .optional_roles = {},
    .index_roles = kCsrIndex,
    .value_role = "values",
    .listed_role = "values",
    .sized_by_shape = false,
    .content_needs_whole_components = true,
    .content_rules = "CSR structure",
    .decoded_as = "densified",
    .check_structure = check_csr_structure,
    .check_content = check_decoded<check_csr_parts>,
    .check_written = check_written_sparse<check_csr_parts>,
    .listed_attributes = {},
    .to_f32 = {csr_whole<float>, csr_chunks<float>},
    .to_f64 = {csr_whole<double>, csr_chunks<double>},
    .values_in = csr_values_in,
};

const ObjectFormat kSparseCooFormat = {
    .name = "sparse_coo",
    .layout_ids = kCooLayoutIds,
    .v1 = true,
    .required_roles = kCooRequired,
    .optional_roles = {},
    .index_roles = kCooIndex,
    .value_role = "values",
    .listed_role = "values",
    .sized_by_shape = false,
    .content_needs_whole_components = true,
    .content_rules = "COO coordinates",
    .decoded_as = "densified",
    .check_structure = check_coo_structure,
    .check_content = check_decoded<check_coo_parts>,
    .check_written = check_written_sparse<check_coo_parts>,
    .listed_attributes = {},
    .to_f32 = {coo_whole<float>, coo_chunks<float>},
    .to_f64 = {coo_whole<double>, coo_chunks<double>},
    .values_in = coo_values_in,
};

}  // namespace zt
