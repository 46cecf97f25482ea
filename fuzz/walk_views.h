// The typed-view half of the walk (fuzz/walk.h): element and value counts,
// conversions to f32 / f64 into right-size and too-small buffers, dense,
// CSR, COO and quantized views (whose structure the library promises to
// have checked: the walk indexes them as a caller would, without bounds
// checks, and ASan watches), and row slices compared with the mapping.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "ztensor.h"

namespace zt::fuzz {

// Views that convert materialise values: skip objects that would need more
// than this many (a sparse [1e6, 1e6] is a legitimate 4 TB of f32).
inline constexpr uint64_t kMaxValues = uint64_t{1} << 21;

inline unsigned dtype_width(const char* d) {
  const std::string s = d ? d : "";
  if (s == "f64" || s == "i64" || s == "u64") return 8;
  if (s == "f32" || s == "i32" || s == "u32") return 4;
  if (s == "f16" || s == "bf16" || s == "i16" || s == "u16") return 2;
  return 1;  // u8, i8, bool
}

// Element k of an integer array of dtype `d`, as the caller of a view
// would read it (unsigned; a negative index shows as a huge one).
inline uint64_t index_at(const void* base, const char* d, uint64_t k) {
  const std::string s = d;
  const auto* b = static_cast<const uint8_t*>(base);
  const unsigned w = dtype_width(d);
  uint64_t v = 0;
  std::memcpy(&v, b + k * w, w);
  const bool is_signed = s[0] == 'i';
  if (is_signed && w < 8 && (v >> (8 * w - 1)) != 0) v |= ~uint64_t{0} << (8 * w);  // sign-extend
  return v;
}

// Set while walking a reader whose parts live in shard files (fuzz_shards):
// such a file may be missing (ZT_ERR_IO) or not a zTensor file at all
// (ZT_ERR_FORMAT) at any data access. The walk is single-threaded.
inline bool g_walk_reads_shards = false;

// A failure reading files: ZT_ERR_IO in copy mode (pread), and the shard
// failures above.
inline bool file_failure(zt_status s, bool copy_mode) {
  return ((copy_mode || g_walk_reads_shards) && s == ZT_ERR_IO) ||
         (g_walk_reads_shards && s == ZT_ERR_FORMAT);
}

inline void check_view_failure(zt_status s, bool copy_mode, const char* call) {
  FUZZ_CHECK(s != ZT_OK, std::string(call));
  const bool ok = s == ZT_ERR_ARGUMENT || s == ZT_ERR_UNSUPPORTED || s == ZT_ERR_INVALID ||
                  s == ZT_ERR_LIMIT || s == ZT_ERR_NOMEM || file_failure(s, copy_mode);
  FUZZ_CHECK(ok, std::string(call) + " returned " + zt_status_name(s) + ": " + zt_last_error());
  FUZZ_CHECK(zt_last_error()[0] != '\0', std::string(call) + " failed with an empty message");
}

// Converting calls: into exactly `count` values, and into one fewer.
template <typename T, typename F>
void convert_both_ways(F&& call, uint64_t count, bool copy_mode, const char* name) {
  std::unique_ptr<T[]> dst(new T[count ? count : 1]);
  uint64_t written = 0;
  const zt_status s = call(count ? dst.get() : nullptr, count, &written);
  if (s != ZT_OK) {
    check_view_failure(s, copy_mode, name);
    return;
  }
  FUZZ_CHECK(written == count, std::string(name) + " wrote " + std::to_string(written) + " of " +
                                   std::to_string(count));
  volatile T sink = T(0);
  for (uint64_t i = 0; i < count; ++i)
    sink = sink + dst[i];  // every value initialised (MSan/valgrind)
  if (count > 0) {
    std::unique_ptr<T[]> small(new T[count - 1 ? count - 1 : 1]);
    written = 777;
    const zt_status s2 = call(count - 1 ? small.get() : nullptr, count - 1, &written);
    FUZZ_CHECK(s2 != ZT_OK,
               std::string(name) + " fitted " + std::to_string(count) + " values into one fewer");
    FUZZ_CHECK(written == 777, std::string(name) + " set *written on failure");
  }
}

// The box [begin, end) cut out of row-major data of `shape`, element by
// element (the reference for zt_dense_slice).
inline std::vector<uint8_t> cut_box(const uint8_t* data, const uint64_t* shape, size_t ndim,
                                    const std::vector<uint64_t>& begin,
                                    const std::vector<uint64_t>& end, uint64_t elem) {
  std::vector<uint8_t> out;
  uint64_t count = 1;
  for (size_t d = 0; d < ndim; ++d) count *= end[d] - begin[d];
  if (count == 0) return out;
  std::vector<uint64_t> idx(begin);
  for (uint64_t e = 0; e < count; ++e) {
    uint64_t flat = 0;
    for (size_t d = 0; d < ndim; ++d) flat = flat * shape[d] + idx[d];
    out.insert(out.end(), data + flat * elem, data + (flat + 1) * elem);
    for (size_t d = ndim; d-- > 0;) {
      if (++idx[d] < end[d]) break;
      idx[d] = begin[d];
    }
  }
  return out;
}

// N-d boxes (zt_dense_slice) against the same box cut from the dense view.
inline void walk_dense_slices(const zt_reader* r, size_t i, const zt_dense_info& v,
                              bool copy_mode) {
  size_t ndim = 0;
  const uint64_t* shape = zt_object_shape(r, i, &ndim);
  if (ndim == 0 || v.elements == 0 || v.nbytes % v.elements != 0) return;  // f4: two a byte
  const uint64_t elem = v.nbytes / v.elements;
  std::vector<uint64_t> begin(ndim), end(ndim);
  uint64_t count = 1;
  for (size_t d = 0; d < ndim; ++d) {
    begin[d] = shape[d] / 3;
    end[d] = shape[d] - shape[d] / 4;
    count *= end[d] - begin[d];
  }
  if (count > kMaxValues) return;
  const std::vector<uint8_t> want =
      cut_box(static_cast<const uint8_t*>(v.data), shape, ndim, begin, end, elem);
  std::vector<uint8_t> got(want.size() + 1);
  uint64_t written = 0;
  const zt_status s =
      zt_dense_slice(r, i, ndim, begin.data(), end.data(), got.data(), got.size(), &written);
  if (s != ZT_OK) {
    check_view_failure(s, copy_mode, "zt_dense_slice");
    return;
  }
  FUZZ_CHECK(written == want.size() && std::memcmp(got.data(), want.data(), want.size()) == 0,
             "zt_dense_slice differs from the same box of zt_dense_view");
  convert_both_ways<float>(
      [&](float* d, uint64_t c, uint64_t* w) {
        return zt_dense_slice_f32(r, i, ndim, begin.data(), end.data(), d, c, w);
      },
      count * (v.values / v.elements), copy_mode, "zt_dense_slice_f32");
  // A box past the end of a dimension is refused.
  end[ndim - 1] = shape[ndim - 1] + 1;
  if (shape[ndim - 1] < UINT64_MAX)
    FUZZ_CHECK(zt_dense_slice(r, i, ndim, begin.data(), end.data(), got.data(), got.size(),
                              &written) != ZT_OK,
               "a box past the end");
}

inline void walk_dense_view(const zt_reader* r, size_t i, bool copy_mode) {
  zt_dense_info v;
  zt_dense_info_init(&v);
  const zt_status s = zt_dense_view(r, i, &v);
  if (s != ZT_OK) {
    check_view_failure(s, copy_mode, "zt_dense_view");
    return;
  }
  FUZZ_CHECK(v.dtype != nullptr, "zt_dense_view without a dtype");
  FUZZ_CHECK(v.nbytes == v.values * dtype_width(v.dtype),
             "zt_dense_view: " + std::to_string(v.values) + " values of " + v.dtype + " in " +
                 std::to_string(v.nbytes) + " bytes");
  // Known logical types have 1 or 2 storage elements per element; an
  // unknown one says nothing (the view then describes the raw elements).
  const std::string type = v.type ? v.type : "";
  const bool known_type = type.empty() || type == "f8_e4m3fn" || type == "f8_e5m2" ||
                          type == "f8_e4m3fnuz" || type == "f8_e5m2fnuz" || type == "complex64" ||
                          type == "complex128";
  if (known_type)
    FUZZ_CHECK(v.values == (type.rfind("complex", 0) == 0 ? 2 : 1) * v.elements,
               "zt_dense_view: values vs elements");
  FUZZ_CHECK(v.data != nullptr || v.nbytes == 0, "zt_dense_view: NULL data");
  uint64_t h = 0;
  for (uint64_t b = 0; b < v.nbytes; ++b) h += static_cast<const uint8_t*>(v.data)[b];
  (void)h;

  if (known_type) walk_dense_slices(r, i, v, copy_mode);

  size_t ndim = 0;
  const uint64_t* shape = zt_object_shape(r, i, &ndim);
  if (ndim == 0) return;
  const uint64_t rows = shape[0];
  // Rows are counted in elements. f4_e2m1 packs two a byte, so a range of
  // rows of an odd length may start or end inside a byte: the byte calls
  // refuse such a range and the converting calls read it.
  const bool f4 = type == "f4_e2m1";
  const uint64_t row_elements = rows ? v.elements / rows : 0;
  const uint64_t row_bytes = rows ? v.nbytes / rows : 0;
  // A few row ranges; each slice must equal the same bytes of the view.
  const uint64_t ranges[][2] = {
      {0, rows}, {rows / 2, rows}, {0, rows / 3}, {rows ? rows - 1 : 0, rows}};
  for (const auto& range : ranges) {
    const uint64_t b = range[0], e = range[1];
    const uint64_t first = b * row_elements, last = e * row_elements;
    const bool whole_bytes = !f4 || (first % 2 == 0 && (last % 2 == 0 || e == rows));
    const uint64_t offset = f4 ? first / 2 : b * row_bytes;
    const uint64_t expect = f4 ? (last + 1) / 2 - first / 2 : (e - b) * row_bytes;
    const uint64_t values = f4 ? last - first : (v.nbytes ? expect / (v.nbytes / v.values) : 0);
    if (values <= kMaxValues)
      convert_both_ways<float>(
          [&](float* d, uint64_t c, uint64_t* w) { return zt_dense_rows_f32(r, i, b, e, d, c, w); },
          values, copy_mode, "zt_dense_rows_f32");
    const void* p = nullptr;
    uint64_t n = 0;
    const zt_status ms = zt_dense_rows_map(r, i, b, e, &p, &n);
    if (ms != ZT_OK) {
      check_view_failure(ms, copy_mode, "zt_dense_rows_map");
      continue;
    }
    const std::string what =
        "zt_dense_rows_map: rows [" + std::to_string(b) + ", " + std::to_string(e) + ")";
    FUZZ_CHECK(whole_bytes, what + " start or end inside a byte, yet were mapped");
    FUZZ_CHECK(n == expect,
               what + " gave " + std::to_string(n) + " bytes, not " + std::to_string(expect));
    FUZZ_CHECK(n == 0 || std::memcmp(p, static_cast<const uint8_t*>(v.data) + offset, n) == 0,
               "zt_dense_rows_map differs from zt_dense_view");
    std::unique_ptr<uint8_t[]> dst(new uint8_t[n ? n : 1]);
    uint64_t written = 0;
    const zt_status rs = zt_dense_rows(r, i, b, e, n ? dst.get() : nullptr, n, &written);
    if (rs != ZT_OK) {
      check_view_failure(rs, copy_mode, "zt_dense_rows");
    } else {
      FUZZ_CHECK(written == n && (n == 0 || std::memcmp(dst.get(), p, n) == 0),
                 "zt_dense_rows differs from the map");
    }
    if (n > 0) {
      written = 777;
      FUZZ_CHECK(zt_dense_rows(r, i, b, e, dst.get(), n - 1, &written) != ZT_OK && written == 777,
                 "zt_dense_rows into one byte too few");
    }
  }
  // Out of range and reversed ranges are refused.
  const void* p = nullptr;
  uint64_t n = 0;
  if (rows < UINT64_MAX)
    FUZZ_CHECK(zt_dense_rows_map(r, i, 0, rows + 1, &p, &n) != ZT_OK, "rows past the end");
  if (rows > 0)
    FUZZ_CHECK(zt_dense_rows_map(r, i, rows, rows - 1, &p, &n) != ZT_OK, "reversed rows");
}

inline void walk_csr_view(const zt_reader* r, size_t i, bool copy_mode) {
  zt_csr_info v;
  zt_csr_info_init(&v);
  const zt_status s = zt_csr_view(r, i, &v);
  if (s != ZT_OK) {
    check_view_failure(s, copy_mode, "zt_csr_view");
    return;
  }
  // The structure was checked: index it as a caller would.
  FUZZ_CHECK(index_at(v.indptr, v.indptr_dtype, 0) == 0, "indptr[0] != 0");
  for (uint64_t row = 0; row < v.rows; ++row) {
    const uint64_t lo = index_at(v.indptr, v.indptr_dtype, row),
                   hi = index_at(v.indptr, v.indptr_dtype, row + 1);
    FUZZ_CHECK(lo <= hi && hi <= v.nnz, "indptr out of order in a checked view");
    for (uint64_t k = lo; k < hi; ++k)
      FUZZ_CHECK(index_at(v.indices, v.indices_dtype, k) < v.cols,
                 "column index out of range in a checked view");
  }
  FUZZ_CHECK(index_at(v.indptr, v.indptr_dtype, v.rows) == v.nnz, "indptr[rows] != nnz");
  const unsigned w = dtype_width(v.values_dtype) *
                     (v.values_type && std::strncmp(v.values_type, "complex", 7) == 0 ? 2 : 1);
  uint64_t h = 0;
  for (uint64_t b = 0; b < v.nnz * w; ++b) h += static_cast<const uint8_t*>(v.values)[b];
  (void)h;
}

inline void walk_coo_view(const zt_reader* r, size_t i, bool copy_mode) {
  zt_coo_info v;
  zt_coo_info_init(&v);
  const zt_status s = zt_coo_view(r, i, &v);
  if (s != ZT_OK) {
    check_view_failure(s, copy_mode, "zt_coo_view");
    return;
  }
  for (uint64_t d = 0; d < v.ndim; ++d)
    for (uint64_t k = 0; k < v.nnz; ++k)
      FUZZ_CHECK(index_at(v.coords, v.coords_dtype, d * v.nnz + k) < v.shape[d],
                 "coordinate out of range in a checked view");
  const unsigned w = dtype_width(v.values_dtype) *
                     (v.values_type && std::strncmp(v.values_type, "complex", 7) == 0 ? 2 : 1);
  uint64_t h = 0;
  for (uint64_t b = 0; b < v.nnz * w; ++b) h += static_cast<const uint8_t*>(v.values)[b];
  (void)h;
}

inline void walk_quant_view(const zt_reader* r, size_t i, bool copy_mode) {
  zt_quant_info v;
  zt_quant_info_init(&v);
  const zt_status s = zt_quant_view(r, i, &v);
  if (s != ZT_OK) {
    check_view_failure(s, copy_mode, "zt_quant_view");
    return;
  }
  FUZZ_CHECK(v.bits >= 1 && v.bits <= 16 && v.group_size > 0, "quant view attributes out of range");
  FUZZ_CHECK(v.scales_count == v.groups * v.n,
             "scales count " + std::to_string(v.scales_count) + " != groups x n");
  uint64_t h = 0;
  const auto touch = [&](const void* p, uint64_t count, const char* dtype) {
    for (uint64_t b = 0; b < count * dtype_width(dtype); ++b)
      h += static_cast<const uint8_t*>(p)[b];
  };
  touch(v.packed_weight, v.packed_weight_count, v.packed_weight_dtype);
  touch(v.scales, v.scales_count, v.scales_dtype);
  touch(v.zeros, v.zeros_count, v.zeros_dtype);
  (void)h;
}

// Every view and conversion call on object i.
inline void walk_object_views(const zt_reader* r, size_t i, bool copy_mode) {
  uint64_t elements = 0;
  const zt_status es = zt_object_element_count(r, i, &elements);
  FUZZ_CHECK(es == ZT_OK || es == ZT_ERR_LIMIT,
             std::string("zt_object_element_count: ") + zt_status_name(es));
  uint64_t values = 0;
  const zt_status vs = zt_object_value_count(r, i, &values);
  if (vs != ZT_OK) check_view_failure(vs, copy_mode, "zt_object_value_count");
  if (vs == ZT_OK && values <= kMaxValues) {
    if (i % 2 == 0)
      convert_both_ways<float>(
          [&](float* d, uint64_t c, uint64_t* w) { return zt_object_decode_f32(r, i, d, c, w); },
          values, copy_mode, "zt_object_decode_f32");
    else
      convert_both_ways<double>(
          [&](double* d, uint64_t c, uint64_t* w) { return zt_object_decode_f64(r, i, d, c, w); },
          values, copy_mode, "zt_object_decode_f64");
  }
  const std::string format = zt_object_format(r, i);
  if (format == "dense") {
    walk_dense_view(r, i, copy_mode);
    if (vs == ZT_OK && values <= kMaxValues)
      convert_both_ways<double>(
          [&](double* d, uint64_t c, uint64_t* w) { return zt_object_read_f64(r, i, d, c, w); },
          values, copy_mode, "zt_object_read_f64");
  } else {
    // The calls of the other formats refuse a dense object, and vice versa.
    zt_dense_info dv;
    zt_dense_info_init(&dv);
    FUZZ_CHECK(zt_dense_view(r, i, &dv) != ZT_OK, "zt_dense_view accepted a " + format + " object");
  }
  if (format == "sparse_csr") walk_csr_view(r, i, copy_mode);
  if (format == "sparse_coo") walk_coo_view(r, i, copy_mode);
  if (format == "quantized_group") walk_quant_view(r, i, copy_mode);

  for (size_t k = 0; k < zt_component_count(r, i); ++k) {
    const char* role = zt_component_role(r, i, k);
    uint64_t nbytes = 0;
    if (zt_component_decoded_size(r, i, role, &nbytes) != ZT_OK) continue;
    const uint64_t count = nbytes / dtype_width(zt_component_dtype(r, i, role));
    if (count > kMaxValues) continue;
    convert_both_ways<float>(
        [&](float* d, uint64_t c, uint64_t* w) {
          return zt_component_read_f32(r, i, role, d, c, w);
        },
        count, copy_mode, "zt_component_read_f32");
  }
}

}  // namespace zt::fuzz
