// Sparse values to dense: CSR and COO objects written out row-major,
// whole or a chunk at a time (duplicates are summed, as scipy does).
#include <algorithm>
#include <utility>

#include "read/content.h"
#include "views/kernels.h"

namespace zt {

using namespace zt::views;
using ull = unsigned long long;

template <typename T>
void materialize(const CsrView& v, std::span<T> dst) {
  std::fill(dst.begin(), dst.end(), T{0});
  const unsigned ratio = v.values_format.ratio;
  const std::vector<T> values = converted<T>(v.values, v.values_format, v.nnz * ratio);
  std::vector<uint64_t> indptr(v.rows + 1);
  for (uint64_t i = 0; i <= v.rows; ++i)
    indptr[i] = static_cast<uint64_t>(load_index(v.indptr.bytes, v.indptr.component->dtype, i));
  with_index_type(v.indices.component->dtype, [&](auto tag) {
    using I = decltype(tag);
    for (uint64_t row = 0; row < v.rows; ++row) {
      T* out = dst.data() + row * v.cols * ratio;
      for (uint64_t p = indptr[row]; p < indptr[row + 1]; ++p) {
        const auto col =
            static_cast<uint64_t>(load_unaligned<I>(v.indices.bytes.data() + p * sizeof(I)));
        for (unsigned c = 0; c < ratio; ++c) out[col * ratio + c] += values[p * ratio + c];
      }
    }
  });
}

namespace {

// Calls f(k, flat) for each COO entry k with its row-major element position
// (coordinates were checked against the shape by check_structure).
template <typename F>
void for_each_coo_position(const CooView& v, F&& f) {
  const size_t nd = v.shape.size();
  with_index_type(v.coords.component->dtype, [&](auto tag) {
    using I = decltype(tag);
    const uint8_t* coords = v.coords.bytes.data();
    for (uint64_t k = 0; k < v.nnz; ++k) {
      uint64_t flat = 0;
      for (size_t d = 0; d < nd; ++d)
        flat = flat * v.shape[d] +
               static_cast<uint64_t>(load_unaligned<I>(coords + (d * v.nnz + k) * sizeof(I)));
      f(k, flat);
    }
  });
}

}  // namespace

template <typename T>
void materialize(const CooView& v, std::span<T> dst) {
  std::fill(dst.begin(), dst.end(), T{0});
  const unsigned ratio = v.values_format.ratio;
  const std::vector<T> values = converted<T>(v.values, v.values_format, v.nnz * ratio);
  for_each_coo_position(v, [&](uint64_t k, uint64_t flat) {
    for (unsigned c = 0; c < ratio; ++c) dst[flat * ratio + c] += values[k * ratio + c];
  });
}

template <typename T>
Result<void> materialize_rows(const CsrView& v, uint64_t chunk_values, const ValueSink<T>& sink) {
  const unsigned ratio = v.values_format.ratio;
  const std::vector<T> values = converted<T>(v.values, v.values_format, v.nnz * ratio);
  const uint64_t row_values = v.cols * ratio;
  return by_rows<T>(
      v.rows, row_values, chunk_values, sink, [&](uint64_t r0, uint64_t r1, std::span<T> dst) {
        with_index_type(v.indices.component->dtype, [&](auto tag) {
          using I = decltype(tag);
          for (uint64_t row = r0; row < r1; ++row) {
            T* out = dst.data() + (row - r0) * row_values;
            const auto p0 =
                static_cast<uint64_t>(load_index(v.indptr.bytes, v.indptr.component->dtype, row));
            const auto p1 = static_cast<uint64_t>(
                load_index(v.indptr.bytes, v.indptr.component->dtype, row + 1));
            for (uint64_t p = p0; p < p1; ++p) {
              const auto col =
                  static_cast<uint64_t>(load_unaligned<I>(v.indices.bytes.data() + p * sizeof(I)));
              for (unsigned c = 0; c < ratio; ++c) out[col * ratio + c] += values[p * ratio + c];
            }
          }
        });
        return Result<void>{};
      });
}

// COO entries in row-major order (a sort of their flat positions), then
// consecutive element ranges filled from a cursor: duplicates add up as in
// materialize.
template <typename T>
Result<void> materialize_in_order(const CooView& v, uint64_t elements, uint64_t chunk_values,
                                  const ValueSink<T>& sink) {
  const unsigned ratio = v.values_format.ratio;
  const std::vector<T> values = converted<T>(v.values, v.values_format, v.nnz * ratio);
  std::vector<std::pair<uint64_t, uint64_t>> order(v.nnz);  // (flat position, entry)
  for_each_coo_position(v, [&](uint64_t k, uint64_t flat) { order[k] = {flat, k}; });
  std::sort(order.begin(), order.end());
  const uint64_t per_chunk = std::max<uint64_t>(1, chunk_values / ratio);
  std::vector<T> buf;
  size_t next = 0;
  for (uint64_t e0 = 0; e0 < elements; e0 += per_chunk) {
    const uint64_t e1 = std::min(elements, e0 + per_chunk);
    buf.assign((e1 - e0) * ratio, T{0});
    for (; next < order.size() && order[next].first < e1; ++next) {
      const auto [flat, k] = order[next];
      for (unsigned c = 0; c < ratio; ++c) buf[(flat - e0) * ratio + c] += values[k * ratio + c];
    }
    ZT_TRY(sink(buf));
  }
  return {};
}

template void materialize<float>(const CsrView&, std::span<float>);
template void materialize<double>(const CsrView&, std::span<double>);
template void materialize<float>(const CooView&, std::span<float>);
template void materialize<double>(const CooView&, std::span<double>);
template Result<void> materialize_rows<float>(const CsrView&, uint64_t, const ValueSink<float>&);
template Result<void> materialize_rows<double>(const CsrView&, uint64_t, const ValueSink<double>&);
template Result<void> materialize_in_order<float>(const CooView&, uint64_t, uint64_t,
                                                  const ValueSink<float>&);
template Result<void> materialize_in_order<double>(const CooView&, uint64_t, uint64_t,
                                                   const ValueSink<double>&);

}  // namespace zt
