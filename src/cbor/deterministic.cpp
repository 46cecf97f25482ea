#include "cbor/deterministic.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "cbor/cbor_heads.h"

namespace zt::cbor {
namespace {

constexpr const char* kRule = "CBOR is not in deterministic encoding (RFC 8949 §4.2.1)";

// Bytes of the shortest head that carries `argument`.
size_t shortest_head(uint64_t argument) {
  if (argument < 24) return 1;
  if (argument <= 0xFF) return 2;
  if (argument <= 0xFFFF) return 3;
  if (argument <= 0xFFFFFFFF) return 5;
  return 9;
}

// The float head at bytes[at, at + size) and its value.
Result<void> check_float(std::span<const uint8_t> bytes, size_t at, size_t size, double v) {
  if (std::isnan(v)) {
    static constexpr uint8_t kNan[] = {0xF9, 0x7E, 0x00};
    ZT_FAIL_IF(size != 3 || std::memcmp(&bytes[at], kNan, 3) != 0, format,
               "%s: a NaN at byte %zu is not 0xF9 0x7E 0x00", kRule, at);
    return {};
  }
  const bool narrower = (size == 5 && fits_half(v)) || (size == 9 && fits_single(v));
  ZT_FAIL_IF(narrower, format, "%s: the float at byte %zu fits a shorter float (%g)", kRule, at, v);
  return {};
}

// The bytes of the argument a head carries, or of the string after it.
uint64_t argument_of(const Head& h) {
  if (h.kind == Kind::text || h.kind == Kind::bytes) return h.str.size();
  return h.u;
}

// A head read at bytes[at, end): shortest form, definite, valid text.
Result<void> check_head(std::span<const uint8_t> bytes, const Head& h, size_t at, size_t end) {
  ZT_FAIL_IF(h.type == HeadType::brk || h.type == HeadType::string_start || h.indefinite, format,
             "%s: an indefinite length at byte %zu", kRule, at);
  const size_t consumed = end - at;
  if (h.type == HeadType::value) {
    switch (h.kind) {
      case Kind::float_:
        return check_float(bytes, at, consumed, h.f);
      case Kind::boolean:
      case Kind::null:
      case Kind::undefined:
      case Kind::simple:
        return {};  // one byte, or 0xF8 with a value of 32 or more: their only form
      case Kind::text:
        ZT_FAIL_IF(!is_valid_utf8(h.str), format, "%s: text at byte %zu is not valid UTF-8", kRule,
                   at);
        break;
      default:
        break;
    }
  }
  const size_t head = consumed - (h.kind == Kind::text || h.kind == Kind::bytes ? h.str.size() : 0);
  ZT_FAIL_IF(head != shortest_head(argument_of(h)), format,
             "%s: a head of %zu bytes at byte %zu has a shorter form", kRule, head, at);
  return {};
}

// One open array or map.
struct Frame {
  bool map = false;
  uint64_t left = 0;     // items still to come (a map counts keys and values)
  size_t key_start = 0;  // where the key being read started
  size_t prev_key_start = 0;
  size_t prev_key_end = 0;  // 0: no key yet (a key never ends at byte 0)
};

}  // namespace

Result<void> check_deterministic(std::span<const uint8_t> bytes, unsigned max_depth) {
  HeadReader r(bytes);
  std::vector<Frame> open;
  for (;;) {
    const size_t item_start = r.pos();
    if (!open.empty() && open.back().map && open.back().left % 2 == 0)
      open.back().key_start = item_start;
    // Tags: each head shortest, then the tagged item.
    size_t at = r.pos();
    ZT_ITEM_LET(h, r.head());
    while (h.type == HeadType::tag) {
      ZT_TRY(check_head(bytes, h, at, r.pos()));
      at = r.pos();
      auto next = r.head();
      if (!next.ok()) return std::move(next).error();
      h = next.value();
    }
    ZT_TRY(check_head(bytes, h, at, r.pos()));
    if (is_container(h.kind)) {
      ZT_FAIL_IF(open.size() + 1 > max_depth, format,
                 "CBOR: containers nested deeper than %u levels at byte %zu", max_depth, at);
      // Every item takes a byte at least, which also bounds 2 * count.
      ZT_FAIL_IF(h.u > r.left(), format,
                 "CBOR: truncated (a container at byte %zu claims %llu items, %zu bytes are left)",
                 at, static_cast<unsigned long long>(h.u), r.left());
      if (h.u > 0) {
        open.push_back(Frame{h.kind == Kind::map, h.kind == Kind::map ? 2 * h.u : h.u});
        continue;
      }
    }
    // An item is complete: close every container it completes.
    while (!open.empty()) {
      Frame& f = open.back();
      const bool was_key = f.map && f.left % 2 == 0;
      --f.left;
      if (was_key) {
        const auto key = bytes.subspan(f.key_start, r.pos() - f.key_start);
        if (f.prev_key_end != 0) {
          const auto prev = bytes.subspan(f.prev_key_start, f.prev_key_end - f.prev_key_start);
          ZT_FAIL_IF(!sorts_before(prev, key), format,
                     "%s: the map key at byte %zu %s the key before it", kRule, f.key_start,
                     std::equal(prev.begin(), prev.end(), key.begin(), key.end())
                         ? "repeats"
                         : "does not sort after");
        }
        f.prev_key_start = f.key_start;
        f.prev_key_end = r.pos();
      }
      if (f.left > 0) break;
      open.pop_back();
    }
    if (open.empty()) break;
  }
  ZT_FAIL_IF(r.left() != 0, format, "CBOR: %zu bytes after the item, at byte %zu", r.left(),
             r.pos());
  return {};
}

Result<void> check_plain_values(std::span<const uint8_t> item) {
  HeadReader r(item);
  while (r.left() > 0) {
    const size_t at = r.pos();
    ZT_ITEM_LET(h, r.head());
    ZT_FAIL_IF(h.type == HeadType::tag, invalid, "a CBOR tag (%llu) at byte %zu",
               static_cast<unsigned long long>(h.u), at);
    ZT_FAIL_IF(h.kind == Kind::undefined, invalid, "undefined at byte %zu", at);
    ZT_FAIL_IF(h.kind == Kind::simple, invalid, "simple value %llu at byte %zu",
               static_cast<unsigned long long>(h.u), at);
  }
  return {};
}

}  // namespace zt::cbor
