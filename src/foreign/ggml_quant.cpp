#include "foreign/ggml_quant.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "views/fp_convert.h"

namespace zt::foreign {

namespace {

constexpr uint64_t kBlock = 32;

// Where a block's fields sit, and what quantized_group makes of them.
struct BlockForm {
  GgmlGroupForm group;
  uint8_t zero;       // the code ggml subtracts (Q8_0: its int8 shifted by 128)
  bool with_min;      // q x d + m: f16 m after d, zeros f64 -m/d
  unsigned high_at;   // the u32 of fifth bits (Q5_*), 0 when none
  unsigned codes_at;  // the codes
};

std::optional<BlockForm> block_form(const GgmlType& t) {
  if (t.name == "Q8_0") return BlockForm{{8, "1_per_u8", DType::u8}, 128, false, 0, 2};
  if (t.name == "Q4_0") return BlockForm{{4, "2_per_u8", DType::u8}, 8, false, 0, 2};
  if (t.name == "Q5_0") return BlockForm{{5, "1_per_u8", DType::u8}, 16, false, 2, 6};
  if (t.name == "Q4_1") return BlockForm{{4, "2_per_u8", DType::f64}, 0, true, 0, 4};
  if (t.name == "Q5_1") return BlockForm{{5, "1_per_u8", DType::f64}, 0, true, 4, 8};
  return std::nullopt;
}

uint16_t u16_at(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | p[1] << 8);
}

uint32_t u32_at(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// The code of value j (0..31) of a block, as quantized_group stores it.
uint8_t code_of(const BlockForm& b, const uint8_t* block, unsigned j) {
  if (b.group.bits == 8) return static_cast<uint8_t>(block[b.codes_at + j] ^ 0x80);  // int8 + 128
  const uint8_t byte = block[b.codes_at + (j % 16)];
  const uint8_t low = j < 16 ? byte & 0x0F : byte >> 4;
  if (!b.high_at) return low;
  return static_cast<uint8_t>(low | (((u32_at(block + b.high_at) >> j) & 1) << 4));
}

// m as it comes back from d and the zero point -m/d (d == 0: the zero point
// is m itself, which only +-0 can be).
uint16_t min_of(uint16_t d_bits, double zero) {
  const double d = f16_to_f32(d_bits);
  return f16_bits_of(d == 0 ? zero : -zero * d);
}

// -m/d when it reproduces the block exactly (ggml_quant.h): every code's
// value as the decoder computes it equals ggml's, and m comes back.
std::optional<double> exact_zero(uint16_t d_bits, uint16_t m_bits, unsigned bits) {
  const float d = f16_to_f32(d_bits), m = f16_to_f32(m_bits);
  if (!std::isfinite(d) || !std::isfinite(m)) return std::nullopt;
  const double zero = d == 0 ? double{m} : -double{m} / double{d};
  if (min_of(d_bits, zero) != m_bits) return std::nullopt;
  for (unsigned q = 0; q < (1u << bits); ++q) {
    const float ggml = static_cast<float>(q) * d + m;  // dequantize_row_q4_1/q5_1
    const float ours = static_cast<float>((static_cast<double>(q) - zero) * double{d});
    if (std::bit_cast<uint32_t>(ggml) != std::bit_cast<uint32_t>(ours)) return std::nullopt;
  }
  return zero;
}

}  // namespace

std::optional<GgmlGroupForm> ggml_group_form(const GgmlType& t) {
  const auto b = block_form(t);
  if (!b) return std::nullopt;
  return b->group;
}

std::optional<ForeignObject> ggml_blocks_to_group(const GgmlType& t,
                                                  std::span<const uint8_t> blocks,
                                                  std::vector<uint64_t> shape, ForeignFile& f) {
  const BlockForm form = *block_form(t);
  const unsigned bits = form.group.bits;
  const uint64_t k = shape.back();
  const uint64_t groups = k / kBlock;
  const uint64_t n = blocks.size() / (groups * t.bytes);
  const unsigned per_word = 8 / bits;
  const unsigned zero_width = dtype_width(form.group.zeros);
  std::vector<uint8_t> packed(k / per_word * n, 0), scales(groups * n * 2),
      zeros(groups * n * zero_width, form.zero);
  for (uint64_t row = 0; row < n; ++row) {
    for (uint64_t b = 0; b < groups; ++b) {
      const uint8_t* block = blocks.data() + (row * groups + b) * t.bytes;
      const uint64_t g = b * n + row;
      scales[g * 2] = block[0];
      scales[g * 2 + 1] = block[1];
      if (form.with_min) {
        const auto zero = exact_zero(u16_at(block), u16_at(block + 2), bits);
        if (!zero) return std::nullopt;
        std::memcpy(&zeros[g * zero_width], &*zero, sizeof(double));  // little-endian host
      }
      for (unsigned j = 0; j < kBlock; ++j) {
        const uint64_t col = b * kBlock + j;
        packed[(col / per_word) * n + row] |=
            static_cast<uint8_t>(code_of(form, block, j) << ((col % per_word) * bits));
      }
    }
  }
  ForeignObject o;
  o.format = "quantized_group";
  o.shape = std::move(shape);
  o.attributes["bits"] = bits;
  o.attributes["group_size"] = kBlock;
  o.attributes["packing"] = form.group.packing;
  o.attributes["ggml_type"] = t.name;
  const auto add = [&](const char* role, DType dtype, std::vector<uint8_t> bytes) {
    f.owned.push_back(std::move(bytes));
    ForeignComponent c;
    c.role = role;
    c.dtype = dtype;
    c.bytes = f.owned.back();
    o.components.push_back(std::move(c));
  };
  add("packed_weight", DType::u8, std::move(packed));
  add("scales", DType::f16, std::move(scales));
  add("zeros", form.group.zeros, std::move(zeros));
  return o;
}

Result<void> ggml_group_to_blocks(
    const GgmlType& t, uint64_t rows, uint64_t k, std::span<const uint8_t> packed,
    std::span<const uint8_t> scales, std::span<const uint8_t> zeros,
    const std::function<Result<void>(std::span<const uint8_t>)>& sink) {
  const auto found = block_form(t);
  ZT_FAIL_IF(!found, argument, "%s has no quantized_group form", std::string(t.name).c_str());
  const BlockForm& form = *found;
  const unsigned bits = form.group.bits;
  const unsigned per_word = 8 / bits;
  const unsigned zero_width = dtype_width(form.group.zeros);
  const uint64_t groups = k / kBlock;
  ZT_FAIL_IF(k % kBlock != 0 || packed.size() != k / per_word * rows ||
                 scales.size() != groups * rows * 2 || zeros.size() != groups * rows * zero_width,
             argument, "its components are not the sizes a %s tensor of %llu x %llu has",
             std::string(t.name).c_str(), static_cast<unsigned long long>(rows),
             static_cast<unsigned long long>(k));
  if (!form.with_min) {
    const auto bad_zero =
        std::find_if(zeros.begin(), zeros.end(), [&](uint8_t z) { return z != form.zero; });
    ZT_FAIL_IF(bad_zero != zeros.end(), argument, "a zero point of %u (a %s block has %u)",
               unsigned{*bad_zero}, std::string(t.name).c_str(), unsigned{form.zero});
  }
  const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
  std::vector<uint8_t> row_bytes(groups * t.bytes);
  for (uint64_t row = 0; row < rows; ++row) {
    std::fill(row_bytes.begin(), row_bytes.end(), 0);
    for (uint64_t b = 0; b < groups; ++b) {
      uint8_t* block = row_bytes.data() + b * t.bytes;
      const uint64_t g = b * rows + row;
      block[0] = scales[g * 2];
      block[1] = scales[g * 2 + 1];
      if (form.with_min) {
        double zero = 0;
        std::memcpy(&zero, &zeros[g * zero_width], sizeof(double));
        const uint16_t d = u16_at(block);
        const uint16_t m = min_of(d, zero);
        // Only a zero point that reproduces the block is one of ours; any
        // other would write a block whose values differ from the object's.
        ZT_FAIL_IF(exact_zero(d, m, bits) != zero, argument,
                   "a zero point of %.17g with scale %.9g is not the -m/d of a %s block", zero,
                   double{f16_to_f32(d)}, std::string(t.name).c_str());
        block[2] = static_cast<uint8_t>(m & 0xFF);
        block[3] = static_cast<uint8_t>(m >> 8);
      }
      for (unsigned j = 0; j < kBlock; ++j) {
        const uint64_t col = b * kBlock + j;
        const uint8_t q =
            (packed[(col / per_word) * rows + row] >> ((col % per_word) * bits)) & mask;
        if (bits == 8) {
          block[form.codes_at + j] = q ^ 0x80;
          continue;
        }
        block[form.codes_at + (j % 16)] |=
            static_cast<uint8_t>(j < 16 ? q & 0x0F : (q & 0x0F) << 4);
        if (q & 0x10) block[form.high_at + j / 8] |= static_cast<uint8_t>(1u << (j % 8));
      }
    }
    ZT_TRY(sink(row_bytes));
  }
  return {};
}

}  // namespace zt::foreign
