// quantized_group (GPTQ-style) layout, as views/dequantize.cpp dequantises it (the
// same text, for users, is in ztensor.h at zt_quant_info).
//
// An object of shape [..., K] (N = product of the other dimensions, 1 for a
// rank-1 shape; K = the input dimension, as in a PyTorch Linear weight
// [out, in]) with attributes bits (1..16), group_size (g; -1 is GPTQ's
// per-channel quantisation, read as g = K) and packing.
// G = ceil(K / g) groups run along K.
//   packed_weight  integer words (their bit pattern: signed words too), an
//                  array [W, N] row-major (the GPTQ qweight layout).
//                  packing "<vpe>_per_<dtype>" (e.g. "8_per_i32" for 4 bits,
//                  "4_per_i32" for 8 bits, "2_per_u8" nibbles, "10_per_i32"
//                  3 bits with 2 padding bits): W = ceil(K / vpe), q(n, k) is
//                  bits [j * bits, (j + 1) * bits) of word [k / vpe, n],
//                  j = k % vpe, counted from the least significant bit;
//                  vpe * bits <= word bits, <dtype> = packed_weight's dtype.
//                  packing "bitstream" (GPTQ's 3-bit packing, 32 values in 3
//                  words): the words of column n, [0, n], [1, n], ...,
//                  [W - 1, n], form one little-endian bit string (word w
//                  holds its bits [w * B, (w + 1) * B), B = word bits);
//                  q(n, k) is its bits [k * bits, (k + 1) * bits);
//                  W = ceil(K * bits / B).
//   scales         float [G, N]: scale(g', n) at g' * N + n.
//   zeros          float or integer [G, N] (zero(g', n) at g' * N + n), or,
//                  for per-word packings, integer words packed along N like
//                  GPTQ qzeros, [G, ceil(N / vpe)]: zero(g', n) is field
//                  n % vpe of word [g', n / vpe]. The element count tells
//                  them apart; [G, N] wins when both counts agree (N = 1 or
//                  vpe = 1). Zero-points are used as stored (no "+1" of GPTQ
//                  v1 checkpoints, which store zero - 1).
//   w[n, k] = (q(n, k) - zero(k / g, n)) * scale(k / g, n), at n * K + k.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "base/error.h"
#include "manifest/manifest.h"
#include "views/views.h"

namespace zt {

struct QuantLayout {
  unsigned bits = 0;
  uint64_t group_size = 0;
  std::string packing;
  bool bitstream = false;
  unsigned values_per_word = 0;  // fields per packed element (per-word packing)
  uint64_t n = 0, k = 0;         // output and input dimension
  uint64_t groups = 0;           // ceil(K / group_size)
  uint64_t packed_count = 0;     // expected packed_weight elements
  bool zeros_packed = false;     // zeros are words packed along N
};

// Reads bits, group_size and packing from the object's attributes and
// computes the expected component counts. Status::invalid on bad values,
// Status::not_found if an attribute is missing.
Result<QuantLayout> quant_layout(const Object& o);

// Decoded component sizes (bytes, in o.components order) against the layout.
Result<void> check_quantized_sizes(const Object& o, const QuantLayout& q,
                                   std::span<const uint64_t> sizes);

// Component sizes against the layout (verify). Objects without the three
// attributes are left alone: they cannot be dequantised but are not wrong.
Result<void> check_quantized_layout(const Object& o,
                                    std::span<const std::span<const uint8_t>> decoded);

// A quantized_group object's components as typed views, their sizes
// checked against the layout (formats/quantized_group_view.cpp).
struct QuantView {
  QuantLayout layout;
  bool zeros_packed = false;  // zeros are integer words packed along N
  NumericFormat scales_format, zeros_format;
  ComponentView packed_weight, scales, zeros;
};
Result<QuantView> quant_view(const Reader& r, size_t object);

// w[n, k] = (q(n, k) - zero[k / g, n]) * scale[k / g, n], dst of N x K.
template <typename T>
void dequantize(const QuantView& v, std::span<T> dst);
// Rows [n_begin, n_end) of the same: dst of (n_end - n_begin) x K.
template <typename T>
void dequantize_rows(const QuantView& v, uint64_t n_begin, uint64_t n_end, std::span<T> dst);

}  // namespace zt
