// The typed view of quantized_group objects (layout in formats/quantized_group_layout.h)
// and their dequantisation: per-word and bitstream packings, [G, N] or
// packed zeros.
#include <algorithm>
#include <type_traits>

#include "formats/quantized_group_layout.h"
#include "views/kernels.h"

namespace zt {

using namespace zt::views;
using ull = unsigned long long;

Result<QuantView> quant_view(const Reader& r, size_t object) {
  auto o = object_of_format(r, object, kQuantizedGroupFormat, "");
  ZT_TRY(o);
  const Object& obj = **o;
  auto layout = quant_layout(obj);
  if (!layout && layout.error().status == Status::not_found)
    return make_error(Status::unsupported, "%s; it cannot be dequantised without it",
                      layout.error().message.c_str());
  ZT_TRY(layout);
  QuantView v;
  v.layout = std::move(*layout);
  auto sf = scalar_format(obj, *obj.find("scales"));
  ZT_TRY(sf);
  auto zf = scalar_format(obj, *obj.find("zeros"));
  ZT_TRY(zf);
  v.scales_format = *sf, v.zeros_format = *zf;
  auto packed = view_of(r, object, *obj.find("packed_weight"));
  ZT_TRY(packed);
  auto scales = view_of(r, object, *obj.find("scales"));
  ZT_TRY(scales);
  auto zeros = view_of(r, object, *obj.find("zeros"));
  ZT_TRY(zeros);
  v.packed_weight = *packed, v.scales = *scales, v.zeros = *zeros;
  ZT_TRY(check_structure(r, obj, {&v.packed_weight, &v.scales, &v.zeros}));
  const QuantLayout& q = v.layout;
  // check_structure accepted the zeros either as [G, N] values or as
  // integer words packed along N that fit vpe fields of `bits`.
  v.zeros_packed = v.zeros.count != q.groups * q.n;
  ZT_FAIL_IF(v.zeros_packed && v.zeros_format.fp8 != Fp8::none, invalid,
             "%s: packed zeros must be plain integer words",
             component_where(obj, *v.zeros.component).c_str());
  return v;
}

template <typename T>
void dequantize(const QuantView& v, std::span<T> dst) {
  dequantize_rows(v, 0, v.layout.n, dst);
}

namespace {

// (q - zero) x scale computed in C, written as T. C is at least as wide as
// the output and as the stored scales and zeros: an f64 zero point (GGUF's
// Q4_1 holds -m/d there) is applied at f64 and the result rounded once.
template <typename T, typename C>
void dequantize_rows_in(const QuantView& v, uint64_t n_begin, uint64_t n_end, std::span<T> dst) {
  const QuantLayout& q = v.layout;
  const uint64_t n_out = q.n, k_in = q.k, g = q.group_size;
  // No values: return before walking the other dimension, which an empty
  // object may claim to be 2^62 long.
  if (n_out == 0 || k_in == 0 || n_begin >= n_end) return;
  const std::vector<C> scale = converted<C>(v.scales, v.scales_format, v.scales.count);
  const uint64_t mask = (uint64_t{1} << q.bits) - 1;
  std::vector<C> zero;
  if (v.zeros_packed) {
    // GPTQ qzeros: zero(gi, n) is field n % vpe of word [gi, n / vpe].
    const unsigned zw = v.zeros.component->width();
    const uint64_t words_per_group = ceil_div(n_out, q.values_per_word);
    zero.resize(q.groups * n_out);
    for (uint64_t gi = 0; gi < q.groups; ++gi)
      for (uint64_t n = 0; n < n_out; ++n) {
        const uint64_t word =
            word_at(v.zeros.bytes, zw, gi * words_per_group + n / q.values_per_word);
        zero[gi * n_out + n] = static_cast<C>((word >> ((n % q.values_per_word) * q.bits)) & mask);
      }
  } else {
    zero = converted<C>(v.zeros, v.zeros_format, v.zeros.count);
  }
  const unsigned width = v.packed_weight.component->width();
  // Blocks of 16 output rows: a block reads the packed words of a word row
  // as one run (16 adjacent words) and writes 16 output rows in order.
  // Within a segment of k where both the word and the group stay the same,
  // the field position and the group's scale and zero are fixed, so the
  // inner loop is shifts, a subtraction and a product.
  constexpr uint64_t kBlock = 16;
  with_word_type(width, [&](auto tag) {
    using W = decltype(tag);
    const uint8_t* words = v.packed_weight.bytes.data();
    auto word = [&](uint64_t row, uint64_t n) -> uint64_t {
      return load_unaligned<W>(words + (row * n_out + n) * sizeof(W));
    };
    for (uint64_t n0 = n_begin; n0 < n_end; n0 += kBlock) {
      const uint64_t n1 = std::min(n_end, n0 + kBlock);
      if (!q.bitstream) {
        const unsigned vpe = q.values_per_word;
        for (uint64_t k = 0; k < k_in;) {
          const uint64_t gi = k / g, row = k / vpe, j = k % vpe;
          const uint64_t end = std::min({k_in, (gi + 1) * g, (row + 1) * vpe});
          for (uint64_t n = n0; n < n1; ++n) {
            const C s = scale[gi * n_out + n], z = zero[gi * n_out + n];
            uint64_t bits = word(row, n) >> (j * q.bits);
            T* out = dst.data() + (n - n_begin) * k_in;
            for (uint64_t i = k; i < end; ++i, bits >>= q.bits)
              out[i] = static_cast<T>((static_cast<C>(bits & mask) - z) * s);
          }
          k = end;
        }
        continue;
      }
      // bitstream: column n's words, read in order, form one little-endian
      // bit string; q(n, k) is its bits [k * bits, (k + 1) * bits).
      constexpr unsigned kWordBits = sizeof(W) * 8;
      for (uint64_t gi = 0; gi < q.groups; ++gi) {
        const uint64_t k_end = std::min(k_in, (gi + 1) * g);
        for (uint64_t n = n0; n < n1; ++n) {
          const C s = scale[gi * n_out + n], z = zero[gi * n_out + n];
          T* out = dst.data() + (n - n_begin) * k_in;
          for (uint64_t k = gi * g; k < k_end; ++k) {
            const uint64_t bit = k * q.bits;
            const uint64_t row = bit / kWordBits;
            const unsigned off = static_cast<unsigned>(bit % kWordBits);
            uint64_t field = word(row, n) >> off;
            if (off + q.bits > kWordBits) field |= word(row + 1, n) << (kWordBits - off);
            out[k] = static_cast<T>((static_cast<C>(field & mask) - z) * s);
          }
        }
      }
    }
  });
}

}  // namespace

template <typename T>
void dequantize_rows(const QuantView& v, uint64_t n_begin, uint64_t n_end, std::span<T> dst) {
  if constexpr (std::is_same_v<T, float>) {
    if (is_plain_f64(v.scales_format) || (!v.zeros_packed && is_plain_f64(v.zeros_format)))
      return dequantize_rows_in<float, double>(v, n_begin, n_end, dst);
  }
  dequantize_rows_in<T, T>(v, n_begin, n_end, dst);
}

template void dequantize<float>(const QuantView&, std::span<float>);
template void dequantize<double>(const QuantView&, std::span<double>);
template void dequantize_rows<float>(const QuantView&, uint64_t, uint64_t, std::span<float>);
template void dequantize_rows<double>(const QuantView&, uint64_t, uint64_t, std::span<double>);

}  // namespace zt
