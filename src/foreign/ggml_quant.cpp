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
  return t.name == "Q8_0" ? GroupForm{8, "1_per_u8", 128} : GroupForm{4, "2_per_u8", 8};
}

// The code of value j (0..31) of a block, as quantized_group stores it.
uint8_t code_of(const GgmlType& t, const uint8_t* block, unsigned j) {
  if (t.name == "Q8_0") return static_cast<uint8_t>(block[2 + j] ^ 0x80);  // int8 + 128
  const uint8_t byte = block[2 + (j % 16)];
  return j < 16 ? byte & 0x0F : byte >> 4;
}

}  // namespace

bool ggml_group_type(const GgmlType& t) {
  return t.name == "Q8_0" || t.name == "Q4_0";
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
        if (t.name == "Q8_0")
          block[2 + j] = q ^ 0x80;
        else
          block[2 + (j % 16)] |= static_cast<uint8_t>(j < 16 ? q : q << 4);
      }
    }
    ZT_TRY(sink(row_bytes));
  }
  return {};
}

}  // namespace zt::foreign
