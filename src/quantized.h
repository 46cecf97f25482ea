// quantized_group (GPTQ-style) layout.
//
// An object of shape [..., K] (N = product of the other dimensions, K = the
// input dimension, as in a PyTorch Linear weight [out, in]) with attributes
// bits (2..8), group_size (g) and packing:
//   packed_weight  integer words laid out [ceil(K / vpe), N] row-major (the
//                  GPTQ qweight layout): q(n, k) is field k % vpe of word
//                  [k / vpe, n], lowest bits first. packing "<vpe>_per_<dtype>"
//                  (e.g. "8_per_i32" for 4 bits, "4_per_i32" for 8 bits,
//                  "2_per_u8" nibbles, "10_per_i32" padded 3 bits), or
//                  "bitstream" (fields packed across word boundaries, as GPTQ
//                  packs 3 bits: 32 values in 3 words).
//   scales         float [ceil(K / g), N].
//   zeros          float or integer [ceil(K / g), N], or integer words packed
//                  along N like the weights ([ceil(K / g), ceil(N / vpe)],
//                  GPTQ qzeros), holding the zero-points as stored.
//   w[n, k] = (q(n, k) - zero[k / g, n]) * scale[k / g, n]
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "error.h"
#include "manifest.h"

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
Result<QuantLayout> quant_layout(const cbor::Document& doc, const Object& o);

// Decoded component sizes (bytes, in o.components order) against the layout.
Result<void> check_quantized_sizes(const Object& o, const QuantLayout& q, std::span<const uint64_t> sizes);

// Component sizes against the layout (verify). Objects without the three
// attributes are left alone: they cannot be dequantised but are not wrong.
Result<void> check_quantized_layout(const cbor::Document& doc, const Object& o,
                                    std::span<const std::span<const uint8_t>> decoded);

}  // namespace zt
