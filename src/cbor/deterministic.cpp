#include "cbor/deterministic.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "cbor/cbor_encode.h"
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

// Whether IEEE binary16 holds v exactly: at most 65504 in magnitude, and a
// multiple of its unit in the last place (11 significant bits, never finer
// than the smallest subnormal 2^-24).
bool fits_half(double v) {
  if (v == 0 || std::isinf(v)) return true;
  const double a = std::fabs(v);
  if (a > 65504.0) return false;
  int e = 0;
  std::frexp(a, &e);
  const int quantum = std::max(e - 11, -24);
  const double scaled = std::ldexp(a, -quantum);
  return scaled == std::trunc(scaled);
}

bool fits_single(double v) {
  if (std::isinf(v)) return true;
  if (std::fabs(v) > FLT_MAX) return false;
  return static_cast<double>(static_cast<float>(v)) == v;
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

// Whether the encoded key a sorts strictly before the encoded key b.
bool sorts_before(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  const size_t n = std::min(a.size(), b.size());
  const int c = std::memcmp(a.data(), b.data(), n);
  return c < 0 || (c == 0 && a.size() < b.size());
}

// A float in the narrowest of half, single and double that holds it.
void write_float(double v, CborWriter& w) {
  if (std::isnan(v) || fits_half(v))
    w.f16(static_cast<float>(v));
  else if (fits_single(v))
    w.f32(static_cast<float>(v));
  else
    w.f64(v);
}

struct Pair {
  std::vector<uint8_t> key, value;
};

Result<void> canonical_item(HeadReader& r, CborWriter& w, unsigned depth, unsigned max_depth);

// The items of the container h (its head just read) into `items`, each
// encoded alone; returns how many.
template <typename Each>
Result<void> canonical_children(HeadReader& r, const Head& h, unsigned depth, unsigned max_depth,
                                Each&& each) {
  const uint64_t n = h.kind == Kind::map ? 2 * h.u : h.u;
  for (uint64_t i = 0; h.indefinite || i < n; ++i) {
    if (h.indefinite && r.left() > 0 && r.bytes()[r.pos()] == 0xFF) {
      ZT_FAIL_IF(h.kind == Kind::map && i % 2 == 1, format,
                 "CBOR: a map key without a value at byte %zu", r.pos());
      ZT_TRY(r.head());  // the break
      break;
    }
    CborWriter one;
    ZT_TRY(canonical_item(r, one, depth + 1, max_depth));
    each(one.take());
  }
  return {};
}

Result<void> canonical_item(HeadReader& r, CborWriter& w, unsigned depth, unsigned max_depth) {
  const size_t at = r.pos();
  ZT_FAIL_IF(r.left() > 0 && (r.bytes()[at] >> 5) == 6, invalid, "a CBOR tag at byte %zu", at);
  std::string joined;
  ZT_ITEM_LET(h, r.item(&joined, false));
  switch (h.kind) {
    case Kind::uint:
      w.uint(h.u);
      return {};
    case Kind::negint:
      w.negint(h.u);
      return {};
    case Kind::text:
      w.text(h.str);
      return {};
    case Kind::bytes:
      w.bytes(h.str);
      return {};
    case Kind::boolean:
      w.boolean(h.flag);
      return {};
    case Kind::null:
      w.null();
      return {};
    case Kind::float_:
      write_float(h.f, w);
      return {};
    case Kind::undefined:
      return make_error(Status::invalid, "undefined at byte %zu", at);
    case Kind::simple:
      return make_error(Status::invalid, "simple value %llu at byte %zu",
                        static_cast<unsigned long long>(h.u), at);
    case Kind::array:
    case Kind::map:
      break;
    case Kind::encoded:
      return make_error(Status::format, "CBOR: an unexpected head at byte %zu", at);
  }
  ZT_FAIL_IF(depth > max_depth, limit, "CBOR: containers nested deeper than %u levels at byte %zu",
             max_depth, at);
  ZT_FAIL_IF(!h.indefinite && h.u > r.left(), format,
             "CBOR: truncated (a container at byte %zu claims %llu items)", at,
             static_cast<unsigned long long>(h.u));
  std::vector<std::vector<uint8_t>> items;
  ZT_TRY(canonical_children(r, h, depth, max_depth,
                            [&](std::vector<uint8_t> b) { items.push_back(std::move(b)); }));
  if (h.kind == Kind::array) {
    w.array(items.size());
    for (const auto& i : items) w.raw(i);
    return {};
  }
  std::vector<Pair> pairs(items.size() / 2);
  for (size_t i = 0; i < pairs.size(); ++i)
    pairs[i] = Pair{std::move(items[2 * i]), std::move(items[2 * i + 1])};
  std::sort(pairs.begin(), pairs.end(),
            [](const Pair& a, const Pair& b) { return sorts_before(a.key, b.key); });
  for (size_t i = 1; i < pairs.size(); ++i)
    ZT_FAIL_IF(pairs[i - 1].key == pairs[i].key, invalid,
               "two keys of the map at byte %zu encode the same", at);
  w.map(pairs.size());
  for (const auto& p : pairs) {
    w.raw(p.key);
    w.raw(p.value);
  }
  return {};
}

}  // namespace

Result<std::vector<uint8_t>> canonical_encoding(std::span<const uint8_t> item, unsigned max_depth) {
  HeadReader r(item);
  CborWriter w;
  ZT_TRY(canonical_item(r, w, 1, max_depth));
  return w.take();
}

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
