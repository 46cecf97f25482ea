#include "read/content.h"

#include <string>

#include "base/byte_order.h"
#include "manifest/object_format.h"

namespace zt {

Result<void> check_bool(const Object& o, const Component& c, std::span<const uint8_t> bytes,
                        uint64_t first) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] > 1) {
      return make_error(
          Status::invalid, "%s: bool byte 0x%02x at element %llu is neither 0x00 nor 0x01",
          component_where(o, c).c_str(), bytes[i], static_cast<unsigned long long>(first + i));
    }
  }
  return {};
}

Result<void> check_bool_values(Generation g, const Object& o, const Component& c,
                               std::span<const uint8_t> bytes, uint64_t first) {
  if (!c.holds_bools() || lenient_bools(g)) return {};
  return check_bool(o, c, bytes, first);
}

std::optional<uint64_t> packed_value_count(const Object& o, const Component& c) {
  const ObjectFormat* f = format_of(o);
  if (!c.known_type || !c.known_type->per_byte || !f || !f->values_in) return std::nullopt;
  return f->values_in(o, c);
}

Result<void> check_f4_tail(const Object& o, const Component& c, uint64_t n, uint8_t last) {
  ZT_FAIL_IF(n % 2 == 1 && (last >> 4) != 0, invalid,
             "%s: %s holds an odd count of %llu values, so the high nibble of its last byte "
             "must be 0 (it is 0x%x)",
             component_where(o, c).c_str(), c.type.value_or("").c_str(),
             static_cast<unsigned long long>(n), unsigned{last} >> 4);
  return {};
}

bool content_needs_whole_components(const Object& o) {
  const ObjectFormat* f = format_of(o);
  return f && f->content_needs_whole_components;
}

__int128 load_index(std::span<const uint8_t> bytes, DType dtype, uint64_t k) {
  const uint8_t* p = bytes.data() + k * dtype_width(dtype);
  switch (dtype) {
    case DType::i8:
      return load_unaligned<int8_t>(p);
    case DType::i16:
      return load_unaligned<int16_t>(p);
    case DType::i32:
      return load_unaligned<int32_t>(p);
    case DType::i64:
      return load_unaligned<int64_t>(p);
    case DType::u8:
      return load_unaligned<uint8_t>(p);
    case DType::u16:
      return load_unaligned<uint16_t>(p);
    case DType::u32:
      return load_unaligned<uint32_t>(p);
    case DType::u64:
      return load_unaligned<uint64_t>(p);
    default:
      return -1;
  }
}

Result<void> check_content(bool legacy, const Object& o,
                           std::span<const std::span<const uint8_t>> decoded) {
  for (size_t k = 0; k < o.components.size(); ++k) {
    const Component& c = o.components[k];
    if (c.holds_bools() && !legacy) ZT_TRY(check_bool(o, c, decoded[k]));
    if (const auto n = packed_value_count(o, c); n && !decoded[k].empty())
      ZT_TRY(check_f4_tail(o, c, *n, decoded[k].back()));
  }
  const ObjectFormat* f = format_of(o);
  return f && f->check_content ? f->check_content(o, decoded) : Result<void>{};
}

}  // namespace zt
