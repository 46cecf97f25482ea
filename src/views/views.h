// Typed views of objects: numbers out of any component (integers, bool,
// f16, bf16, FP8, complex) as f32 or f64; CSR, COO and quantized_group
// views over the reader's decoded components; dequantisation; one decode of
// any object into a dense array; row slices of dense objects that decode
// only what covers the rows.
//
// Everything here is a free function over a const Reader: stateless, so as
// thread-safe as the Reader. Pointers and spans handed out view the mapping
// or the reader's decode cache and live as long as the Reader.
//
// Output element types are float and double (the templates are instantiated
// for those two only).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "base/error.h"
#include "manifest/manifest.h"
#include "manifest/object_format.h"
#include "read/reader.h"
#include "views/fp_convert.h"

namespace zt {

// How the numbers of one component are stored: its dtype, the FP8 type for
// u8 components typed f8_*, 2 storage elements per complex element, and
// v2's f4_e2m1: two values per u8 byte, low nibble first.
struct NumericFormat {
  DType dtype = DType::u8;
  Fp8 fp8 = Fp8::none;
  unsigned ratio = 1;
  bool f4 = false;
};

// Plain f64 values (no logical type). Scales or zero points stored so make
// an f32 read of quantized values compute at f64 and round once (GGUF
// Q4_1's zero points, -m/d, need it to give ggml's values): the rule of
// both quantized decoders, 1.2's quantized_group and v2's quant_group.
inline bool is_plain_f64(const NumericFormat& f) {
  return f.dtype == DType::f64 && f.fp8 == Fp8::none && !f.f4 && f.ratio == 1;
}

// The bytes that hold n values of format f (n storage elements; for
// f4_e2m1, n nibbles from a byte's low nibble).
inline uint64_t value_bytes(const NumericFormat& f, uint64_t n) {
  return f.f4 ? n / 2 + n % 2 : n * dtype_width(f.dtype);
}

// The numeric format of a component. Status::unsupported for a logical type
// this library does not know (its bytes can still be mapped).
Result<NumericFormat> numeric_format(const Object& o, const Component& c);

// Converts `n` storage elements of format `f` at `src` (little-endian, any
// alignment) into dst[0..n). One switch per call, then a tight loop per
// source type: FP8 through 256-entry tables, f16 and bf16 by bit operations,
// integers by value, bool bytes as 0 / 1 (any non-zero byte is 1: callers
// hold the bytes to 0 and 1 first where the generation asks it,
// check_bool_values), f64 to
// f32 rounded to nearest. For complex formats `n` counts storage elements
// (two per complex number) and the output is interleaved (real, imag).
// f4_e2m1 values are nibbles: value i is nibble i of src, low nibble first.
template <typename T>
void convert_values(const uint8_t* src, const NumericFormat& f, uint64_t n, T* dst);

// n f4_e2m1 values from nibble `first` of src (a row that starts mid-byte).
template <typename T>
void convert_f4_values(const uint8_t* src, uint64_t first, uint64_t n, T* dst);

// Status::unsupported (naming the object) unless this library can interpret
// the object's data: refuses 0.1.x sparse layouts, which no spec describes,
// and formats it does not know.
Result<void> require_interpretable(const Object& o);

// product(shape): the logical element count (1 for a scalar).
// Status::limit if it overflows 64 bits (possible for sparse shapes).
Result<uint64_t> element_count(const Object& o);

// The number of values decode_object_as writes for an object: product(shape),
// times 2 when the data (dense), values (sparse) are complex.
// Status::unsupported for formats or types that cannot be decoded.
Result<uint64_t> decoded_value_count(const Reader& r, size_t object);

// The values decode_object_as<T> writes (value_bytes = sizeof(T)), checked
// as it checks them before decoding anything: the dense output is one
// decode that the caller holds whole, so value count x value_bytes over the
// reader's max_decoded_bytes is Status::limit (a sparse shape that a few
// bytes of file claim would otherwise size the caller's allocation).
Result<uint64_t> decode_capacity(const Reader& r, size_t object, size_t value_bytes);

// A component's decoded bytes as seen by a view.
struct ComponentView {
  const Component* component = nullptr;
  std::span<const uint8_t> bytes;  // little-endian elements of component->dtype
  uint64_t count = 0;              // storage elements (bytes.size() / width)
  bool zero_copy = false;          // bytes point into the file mapping
};

// The "data" component of a dense object through Reader::map. A logical
// type unknown to this library still gives a view of the raw elements
// (format is then empty and the size is not checked against the shape).
struct DenseView {
  uint64_t elements = 0;  // product(shape)
  std::optional<NumericFormat> format;
  ComponentView data;
};
Result<DenseView> dense_view(const Reader& r, size_t object);

// sparse_csr: row i holds values[indptr[i] .. indptr[i+1]) at columns
// indices[...]. Structure checked (check_content) before it is returned.
struct CsrView {
  uint64_t rows = 0, cols = 0, nnz = 0;
  NumericFormat values_format;
  ComponentView values, indices, indptr;
};
Result<CsrView> csr_view(const Reader& r, size_t object);

// sparse_coo: entry k sits at (coords[0*nnz + k], coords[1*nnz + k], ...).
// Structure checked before it is returned.
struct CooView {
  std::span<const uint64_t> shape;
  uint64_t nnz = 0;
  NumericFormat values_format;
  ComponentView values, coords;
};
Result<CooView> coo_view(const Reader& r, size_t object);

// Dense output of a view, row-major over the object's shape. dst must hold
// exactly the value count (sparse duplicates are summed, as scipy does).
template <typename T>
void materialize(const CsrView& v, std::span<T> dst);
template <typename T>
void materialize(const CooView& v, std::span<T> dst);
// materialize in whole rows, at most max(chunk_values, one row) values each.
template <typename T>
Result<void> materialize_rows(const CsrView& v, uint64_t chunk_values, const ValueSink<T>& sink);
// materialize in chunks of at most max(chunk_values, 1 element) values: the
// entries are sorted by position (16 bytes each), then written in order.
template <typename T>
Result<void> materialize_in_order(const CooView& v, uint64_t elements, uint64_t chunk_values,
                                  const ValueSink<T>& sink);

// `rows` rows of `row_values` values each, as many rows per chunk as fit in
// chunk_values (at least one), filled by fill(first_row, end_row, dst) into
// one reused buffer and handed to `sink`.
template <typename T, typename Fill>
Result<void> by_rows(uint64_t rows, uint64_t row_values, uint64_t chunk_values,
                     const ValueSink<T>& sink, Fill&& fill) {
  const uint64_t rows_per = std::max<uint64_t>(1, chunk_values / std::max<uint64_t>(1, row_values));
  std::vector<T> buf;
  for (uint64_t r0 = 0; r0 < rows; r0 += rows_per) {
    const uint64_t r1 = std::min(rows, r0 + rows_per);
    buf.assign((r1 - r0) * row_values, T{0});
    ZT_TRY(fill(r0, r1, std::span<T>(buf)));
    ZT_TRY(sink(buf));
  }
  return {};
}

// Values [0, values) a chunk of at most `chunk` at a time (chunk >= 1):
// fill(first, dst) computes values [first, first + dst.size()).
template <typename T, typename Fill>
Result<void> by_ranges(uint64_t values, uint64_t chunk, const ValueSink<T>& sink, Fill&& fill) {
  std::vector<T> buf;
  for (uint64_t first = 0; first < values; first += chunk) {
    buf.resize(std::min(chunk, values - first));
    ZT_TRY(fill(first, std::span<T>(buf)));
    ZT_TRY(sink(buf));
  }
  return {};
}

// A format's DenseDecoder from one function that computes any range of its
// values, Values(r, object, first, dst): values [first, first + dst.size()).
template <typename T, auto Values>
Result<void> whole_by_range(const Reader& r, size_t object, std::span<T> dst) {
  return Values(r, object, 0, dst);
}
template <typename T, auto Values>
Result<void> chunks_by_range(const Reader& r, size_t object, uint64_t values, uint64_t chunk,
                             const ValueSink<T>& sink) {
  return by_ranges<T>(values, chunk, sink, [&](uint64_t first, std::span<T> dst) {
    return Values(r, object, first, dst);
  });
}

// Converts the "data" of a dense object into dst (no caching: decoded bytes
// of encoded data are freed on return). Returns the value count.
// Status::argument if dst is too small (nothing written).
template <typename T>
Result<uint64_t> read_dense_as(const Reader& r, size_t object, std::span<T> dst);

// Converts any component with a numeric format into dst (no caching).
template <typename T>
Result<uint64_t> read_component_as(const Reader& r, size_t object, size_t component,
                                   std::span<T> dst);

// Any object (dense of any numeric type, sparse_csr, sparse_coo,
// quantized_group) as a dense row-major array. Returns the value count.
template <typename T>
Result<uint64_t> decode_object_as(const Reader& r, size_t object, std::span<T> dst);

// decode_object_as in consecutive chunks of at most max(chunk_values, one
// row) values, handed to `sink` in order: how an output far larger than
// memory is written in bounded memory. Besides the chunk, memory is what
// the object's components take (raw ones are mapped or read in place, zstd
// dense data is decoded frame by frame where its frames allow), plus 16
// bytes per stored value of a sparse_coo object (its values in row-major
// order). Returns the value count.
template <typename T>
Result<uint64_t> decode_object_chunked(const Reader& r, size_t object, uint64_t chunk_values,
                                       const ValueSink<T>& sink);

// Rows [begin, end) of a dense object along its first dimension, as
// little-endian bytes of the data's dtype (end - begin rows of
// product(shape[1:]) x element size bytes).
//
// dense_rows_map: raw little-endian data without a copy (a view into the
// mapping); other data through the reader's decode cache (the whole
// component is decoded once).
Result<std::span<const uint8_t>> dense_rows_map(const Reader& r, size_t object, uint64_t begin,
                                                uint64_t end);
// dense_rows: into dst, touching only what covers the rows: raw data is
// read at its offset; zstd stored as several frames that record their
// content sizes is decoded frame by frame, only the frames that overlap the
// rows; other zstd data is decoded whole, through the reader's cache.
// Status::argument if dst is too small. Returns the byte count.
Result<uint64_t> dense_rows(const Reader& r, size_t object, uint64_t begin, uint64_t end,
                            std::span<uint8_t> dst);
// dense_rows converted to T. Returns the value count.
template <typename T>
Result<uint64_t> dense_rows_as(const Reader& r, size_t object, uint64_t begin, uint64_t end,
                               std::span<T> dst);

// The box [begin[d], end[d]) in every dimension d of a dense object
// (begin and end hold one entry per dimension; none for a scalar), row-major,
// as little-endian bytes of the data's dtype. Touches only the box: its runs
// (contiguous along the trailing dimensions it covers whole) are copied from
// the mapping, read at their offsets (copy mode), or taken from the zstd
// frames that hold them (several frames with recorded sizes; otherwise the
// component is decoded whole, once, through the reader's cache).
// Status::argument if dst is too small or the box is not within the shape.
// f4_e2m1 data has a byte form only for ranges of whole rows
// (Status::unsupported otherwise). Returns the byte count.
Result<uint64_t> dense_slice(const Reader& r, size_t object, std::span<const uint64_t> begin,
                             std::span<const uint64_t> end, std::span<uint8_t> dst);
// dense_slice converted to T. Returns the value count.
template <typename T>
Result<uint64_t> dense_slice_as(const Reader& r, size_t object, std::span<const uint64_t> begin,
                                std::span<const uint64_t> end, std::span<T> dst);

}  // namespace zt
