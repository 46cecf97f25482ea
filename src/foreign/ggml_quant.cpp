#include "foreign/ggml_quant.h"

#include <algorithm>

namespace zt::foreign {

namespace {

constexpr uint64_t kBlock = 32;

struct GroupForm {
  unsigned bits;
  const char* packing;
  uint8_t zero;
};

GroupForm form_of(const GgmlType& t) {
  if (t.name == "Q8_0") return {8, "1_per_u8", 128};
  if (t.name == "Q5_0") return {5, "1_per_u8", 16};
  return {4, "2_per_u8", 8};
}

// Where a block's codes start: after d (and Q5_0's 32 high bits).
unsigned codes_at(const GgmlType& t) {
  return t.name == "Q5_0" ? 6 : 2;
}

uint32_t high_bits(const uint8_t* block) {
  return uint32_t{block[2]} | uint32_t{block[3]} << 8 | uint32_t{block[4]} << 16 |
         uint32_t{block[5]} << 24;
}

// The code of value j (0..31) of a block, as quantized_group stores it.
uint8_t code_of(const GgmlType& t, const uint8_t* block, unsigned j) {
  if (t.name == "Q8_0") return static_cast<uint8_t>(block[2 + j] ^ 0x80);  // int8 + 128
  const uint8_t byte = block[codes_at(t) + (j % 16)];
  const uint8_t low = j < 16 ? byte & 0x0F : byte >> 4;
  if (t.name == "Q4_0") return low;
  return static_cast<uint8_t>(low | (((high_bits(block) >> j) & 1) << 4));  // Q5_0: bit j of qh
}

}  // namespace

bool ggml_group_type(const GgmlType& t) {
  return t.name == "Q8_0" || t.name == "Q4_0" || t.name == "Q5_0";
}

ForeignObject ggml_blocks_to_group(const GgmlType& t, std::span<const uint8_t> blocks,
                                   std::vector<uint64_t> shape, ForeignFile& f) {
  const GroupForm g = form_of(t);
  const uint64_t k = shape.back();
  const uint64_t groups = k / kBlock;
  const uint64_t n = blocks.size() / (groups * t.bytes);
  const unsigned per_word = 8 / g.bits;
  std::vector<uint8_t> packed(k / per_word * n, 0), scales(groups * n * 2),
      zeros(groups * n, g.zero);
  for (uint64_t row = 0; row < n; ++row) {
    for (uint64_t b = 0; b < groups; ++b) {
      const uint8_t* block = blocks.data() + (row * groups + b) * t.bytes;
      scales[(b * n + row) * 2] = block[0];
      scales[(b * n + row) * 2 + 1] = block[1];
      for (unsigned j = 0; j < kBlock; ++j) {
        const uint64_t col = b * kBlock + j;
        packed[(col / per_word) * n + row] |=
            static_cast<uint8_t>(code_of(t, block, j) << ((col % per_word) * g.bits));
      }
    }
  }
  ForeignObject o;
  o.format = "quantized_group";
  o.shape = std::move(shape);
  o.attributes["bits"] = g.bits;
  o.attributes["group_size"] = kBlock;
  o.attributes["packing"] = g.packing;
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
  add("zeros", DType::u8, std::move(zeros));
  return o;
}

Result<void> ggml_group_to_blocks(
    const GgmlType& t, uint64_t rows, uint64_t k, std::span<const uint8_t> packed,
    std::span<const uint8_t> scales, std::span<const uint8_t> zeros,
    const std::function<Result<void>(std::span<const uint8_t>)>& sink) {
  const GroupForm g = form_of(t);
  const unsigned per_word = 8 / g.bits;
  const uint64_t groups = k / kBlock;
  ZT_FAIL_IF(k % kBlock != 0 || packed.size() != k / per_word * rows ||
                 scales.size() != groups * rows * 2 || zeros.size() != groups * rows,
             argument, "its components are not the sizes a %s tensor of %llu x %llu has",
             std::string(t.name).c_str(), static_cast<unsigned long long>(rows),
             static_cast<unsigned long long>(k));
  const auto bad_zero =
      std::find_if(zeros.begin(), zeros.end(), [&](uint8_t z) { return z != g.zero; });
  ZT_FAIL_IF(bad_zero != zeros.end(), argument, "a zero point of %u (a %s block has %u)",
             unsigned{*bad_zero}, std::string(t.name).c_str(), unsigned{g.zero});
  const uint8_t mask = static_cast<uint8_t>((1u << g.bits) - 1);
  std::vector<uint8_t> row_bytes(groups * t.bytes);
  for (uint64_t row = 0; row < rows; ++row) {
    std::fill(row_bytes.begin(), row_bytes.end(), 0);
    for (uint64_t b = 0; b < groups; ++b) {
      uint8_t* block = row_bytes.data() + b * t.bytes;
      block[0] = scales[(b * rows + row) * 2];
      block[1] = scales[(b * rows + row) * 2 + 1];
      for (unsigned j = 0; j < kBlock; ++j) {
        const uint64_t col = b * kBlock + j;
        const uint8_t q =
            (packed[(col / per_word) * rows + row] >> ((col % per_word) * g.bits)) & mask;
        if (t.name == "Q8_0") {
          block[2 + j] = q ^ 0x80;
          continue;
        }
        block[codes_at(t) + (j % 16)] |= static_cast<uint8_t>(j < 16 ? q & 0x0F : (q & 0x0F) << 4);
        if (q & 0x10) block[2 + j / 8] |= static_cast<uint8_t>(1u << (j % 8));  // Q5_0's qh
      }
    }
    ZT_TRY(sink(row_bytes));
  }
  return {};
}

}  // namespace zt::foreign
