#include "cbor/cbor_heads.h"

#include <cbor.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <utility>

#include "cbor/cbor_item.h"

namespace zt::cbor {
namespace {

// The context of one cbor_stream_decode call: the callback fills `head`.
struct Decoded {
  Head head;
  bool got = false;
};

Decoded& ctx(void* x) {
  return *static_cast<Decoded*>(x);
}
void set(void* x, HeadType type, Kind kind, uint64_t u) {
  Decoded& d = ctx(x);
  d.head.type = type;
  d.head.kind = kind;
  d.head.u = u;
  d.got = true;
}
void set_value(void* x, Kind kind, uint64_t u) {
  set(x, HeadType::value, kind, u);
}
void set_float(void* x, double v) {
  set_value(x, Kind::float_, 0);
  ctx(x).head.f = v;
}
void set_string(void* x, Kind kind, cbor_data data, size_t len) {
  set_value(x, kind, 0);
  ctx(x).head.str = std::string_view(reinterpret_cast<const char*>(data), len);
}
void set_container(void* x, Kind kind, uint64_t count, bool indefinite) {
  set_value(x, kind, count);
  ctx(x).head.indefinite = indefinite;
}

const cbor_callbacks& callbacks() {
  static const cbor_callbacks cb = [] {
    // Starting from libcbor's no-op table: a null entry would be called.
    cbor_callbacks c = cbor_empty_callbacks;
    c.uint8 = [](void* x, uint8_t v) { set_value(x, Kind::uint, v); };
    c.uint16 = [](void* x, uint16_t v) { set_value(x, Kind::uint, v); };
    c.uint32 = [](void* x, uint32_t v) { set_value(x, Kind::uint, v); };
    c.uint64 = [](void* x, uint64_t v) { set_value(x, Kind::uint, v); };
    c.negint8 = [](void* x, uint8_t v) { set_value(x, Kind::negint, v); };
    c.negint16 = [](void* x, uint16_t v) { set_value(x, Kind::negint, v); };
    c.negint32 = [](void* x, uint32_t v) { set_value(x, Kind::negint, v); };
    c.negint64 = [](void* x, uint64_t v) { set_value(x, Kind::negint, v); };
    c.byte_string = [](void* x, cbor_data d, size_t n) { set_string(x, Kind::bytes, d, n); };
    c.byte_string_start = [](void* x) { set(x, HeadType::string_start, Kind::bytes, 0); };
    c.string = [](void* x, cbor_data d, size_t n) { set_string(x, Kind::text, d, n); };
    c.string_start = [](void* x) { set(x, HeadType::string_start, Kind::text, 0); };
    c.array_start = [](void* x, size_t n) { set_container(x, Kind::array, n, false); };
    c.indef_array_start = [](void* x) { set_container(x, Kind::array, 0, true); };
    c.map_start = [](void* x, size_t n) { set_container(x, Kind::map, n, false); };
    c.indef_map_start = [](void* x) { set_container(x, Kind::map, 0, true); };
    c.tag = [](void* x, uint64_t v) { set(x, HeadType::tag, Kind::null, v); };
    c.float2 = [](void* x, float v) { set_float(x, v); };
    c.float4 = [](void* x, float v) { set_float(x, v); };
    c.float8 = [](void* x, double v) { set_float(x, v); };
    c.undefined = [](void* x) { set_value(x, Kind::undefined, 0); };
    c.null = [](void* x) { set_value(x, Kind::null, 0); };
    c.boolean = [](void* x, bool v) {
      set_value(x, Kind::boolean, 0);
      ctx(x).head.flag = v;
    };
    c.indef_break = [](void* x) { set(x, HeadType::brk, Kind::null, 0); };
    return c;
  }();
  return cb;
}

}  // namespace

Result<Head> HeadReader::head() {
  ZT_FAIL_IF(pos_ >= bytes_.size(), format, "CBOR item: truncated at byte %zu", pos_);
  if (const auto un = unassigned_head(bytes_, pos_)) {
    ZT_FAIL_IF(un->malformed && pos_ + 1 >= bytes_.size(), format,
               "CBOR item: truncated at byte %zu", pos_);
    ZT_FAIL_IF(un->malformed, format, "CBOR item: a simple value below 32 in two bytes at byte %zu",
               pos_);
    Head h;
    if (un->is_tag) {
      h.type = HeadType::tag;
      h.u = bytes_[pos_] - 0xC0u;
    } else {
      h.kind = Kind::simple;
      h.u = un->simple;
    }
    pos_ += un->consumed;
    return h;
  }
  Decoded d;
  const cbor_decoder_result r =
      cbor_stream_decode(bytes_.data() + pos_, bytes_.size() - pos_, &callbacks(), &d);
  ZT_FAIL_IF(r.status == CBOR_DECODER_NEDATA, format, "CBOR item: truncated at byte %zu", pos_);
  ZT_FAIL_IF(r.status != CBOR_DECODER_FINISHED || r.read == 0 || r.read > left() || !d.got, format,
             "CBOR item: malformed head 0x%02x at byte %zu", bytes_[pos_], pos_);
  pos_ += r.read;
  return d.head;
}

Result<Head> HeadReader::item(std::string* joined, bool allow_break) {
  const size_t start = pos_;
  bool tagged = false;
  for (;;) {
    const size_t at = pos_;
    ZT_ITEM_LET(h, head());
    h.start = start;
    switch (h.type) {
      case HeadType::tag:
        tagged = true;
        continue;
      case HeadType::brk:
        ZT_FAIL_IF(tagged, format, "CBOR item: a tag without an item at byte %zu", start);
        ZT_FAIL_IF(!allow_break, format,
                   "CBOR item: a break byte outside an indefinite-length item at byte %zu", at);
        return std::move(h);
      case HeadType::string_start:
        ZT_TRY(join(h, joined));
        return std::move(h);
      case HeadType::value:
        ZT_FAIL_IF(h.kind == Kind::text && !is_valid_utf8(h.str), format,
                   "CBOR item: a text string at byte %zu is not valid UTF-8", at);
        return std::move(h);
    }
  }
}

// The chunks of the indefinite-length string h starts, up to its break.
Result<void> HeadReader::join(Head& h, std::string* joined) {
  if (joined) joined->clear();
  for (;;) {
    const size_t at = pos_;
    ZT_ITEM_LET(c, head());
    if (c.type == HeadType::brk) break;
    ZT_FAIL_IF(c.type != HeadType::value || c.kind != h.kind, format,
               "CBOR item: a chunk of an indefinite-length string at byte %zu is not a definite "
               "string of its major type",
               at);
    // RFC 8949: each chunk of a text string is valid UTF-8 on its own.
    ZT_FAIL_IF(c.kind == Kind::text && !is_valid_utf8(c.str), format,
               "CBOR item: a chunk of a text string at byte %zu is not valid UTF-8", at);
    if (joined) joined->append(c.str);
  }
  h.type = HeadType::value;
  h.indefinite = true;
  h.str = joined ? std::string_view(*joined) : std::string_view();
  return {};
}

// IEEE binary16 holds v exactly when it is at most 65504 in magnitude and a
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

bool sorts_before(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  const size_t n = std::min(a.size(), b.size());
  const int c = std::memcmp(a.data(), b.data(), n);
  return c < 0 || (c == 0 && a.size() < b.size());
}

}  // namespace zt::cbor
