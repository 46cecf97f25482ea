#include "cbor/cbor_item.h"

#include <cbor.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <utility>

#include "base/json_text.h"
#include "base/zt_limits.h"
#include "cbor/cbor_heads.h"

namespace zt::cbor {

std::optional<UnassignedHead> unassigned_head(std::span<const uint8_t> bytes, size_t pos) {
  if (pos >= bytes.size()) return std::nullopt;
  const uint8_t b = bytes[pos];
  if (b >= 0xC6 && b <= 0xD4) return UnassignedHead{true, 0, 1, false};
  if (b >= 0xE0 && b <= 0xF3)
    return UnassignedHead{false, static_cast<uint8_t>(b - 0xE0), 1, false};
  if (b == 0xF8) {
    if (pos + 1 >= bytes.size()) return UnassignedHead{false, 0, 1, true};
    const uint8_t v = bytes[pos + 1];
    return UnassignedHead{false, v, 2, v < 32};
  }
  return std::nullopt;
}

Scalar& Scalar::operator=(const Scalar& o) {
  if (this == &o) return *this;
  const bool views_joined = o.str.data() == o.joined.data();
  kind = o.kind;
  u = o.u;
  f = o.f;
  flag = o.flag;
  indefinite = o.indefinite;
  joined = o.joined;
  str = views_joined ? std::string_view(joined) : o.str;
  return *this;
}

Scalar& Scalar::operator=(Scalar&& o) noexcept {
  if (this == &o) return *this;
  const bool views_joined = o.str.data() == o.joined.data();
  kind = o.kind;
  u = o.u;
  f = o.f;
  flag = o.flag;
  indefinite = o.indefinite;
  joined = std::move(o.joined);
  str = views_joined ? std::string_view(joined) : o.str;
  return *this;
}

namespace {

// Every item takes a byte at least: a definite container whose count is
// beyond the bytes left after its head is truncated, refused before walking.
Result<void> check_count(const HeadReader& r, const Head& h) {
  if (!is_container(h.kind) || h.indefinite) return {};
  const uint64_t left = r.left();
  ZT_FAIL_IF(
      h.u > left || (h.kind == Kind::map && 2 * h.u > left), format,
      "CBOR item: truncated (a container at byte %zu claims %llu items, %llu bytes are left)",
      h.start, static_cast<unsigned long long>(h.u), static_cast<unsigned long long>(left));
  return {};
}

// Calls f(child, index) with the first head of each item of the container
// whose head h was just read (depth: its nesting depth, the item's outermost
// container being 1); f consumes the rest of the child. Map keys (even
// indexes) must be text; their indefinite strings are joined into *key_buf,
// those of other items into *val_buf (null: not joined), each valid until
// the next item read into the same buffer.
template <typename F>
Result<void> for_children(HeadReader& r, const Head& h, unsigned depth, std::string* key_buf,
                          std::string* val_buf, F&& f) {
  ZT_FAIL_IF(depth > Limits::cbor_depth, limit,
             "CBOR item: containers nested deeper than the limit of %u at byte %zu",
             Limits::cbor_depth, h.start);
  const bool is_map = h.kind == Kind::map;
  ZT_TRY(check_count(r, h));
  auto child = [&](uint64_t i, bool allow_break) -> Result<Head> {
    const bool key = is_map && i % 2 == 0;
    ZT_ITEM_LET(c, r.item(key ? key_buf : val_buf, allow_break));
    ZT_FAIL_IF(key && c.type == HeadType::value && c.kind != Kind::text, format,
               "CBOR item: a map key at byte %zu is not a text string", c.start);
    return std::move(c);
  };
  if (!h.indefinite) {
    const uint64_t n = is_map ? 2 * h.u : h.u;
    for (uint64_t i = 0; i < n; ++i) {
      ZT_ITEM_LET(c, child(i, false));
      ZT_TRY(f(c, i));
    }
    return {};
  }
  for (uint64_t i = 0;; ++i) {
    ZT_ITEM_LET(c, child(i, true));
    if (c.type == HeadType::brk) {
      ZT_FAIL_IF(is_map && i % 2 == 1, format, "CBOR item: a map key without a value at byte %zu",
                 r.pos() - 1);
      return {};
    }
    ZT_TRY(f(c, i));
  }
}

// Consumes (and checks) the rest of the item whose first head h was read.
Result<void> skip_rest(HeadReader& r, const Head& h, unsigned depth) {
  if (!is_container(h.kind)) return {};
  return for_children(r, h, depth, nullptr, nullptr,
                      [&](const Head& c, uint64_t) { return skip_rest(r, c, depth + 1); });
}

// Consumes (and checks) the rest of the item whose first head h was read;
// its nesting depth: 0 for a scalar, 1 + its deepest item's for a container.
Result<size_t> depth_rest(HeadReader& r, const Head& h, unsigned depth) {
  if (!is_container(h.kind)) return size_t{0};
  size_t deepest = 0;
  ZT_TRY(for_children(r, h, depth, nullptr, nullptr, [&](const Head& c, uint64_t) -> Result<void> {
    ZT_ITEM_LET(d, depth_rest(r, c, depth + 1));
    deepest = std::max(deepest, d);
    return {};
  }));
  return deepest + 1;
}

// Consumes the rest of the item h, counting every item in it (h's own
// counted by the caller) as the manifest decoder counts them against
// ZT_MAX_CBOR_ITEMS: keys and values, containers and scalars, an
// indefinite-length string once, tags and breaks not at all.
Result<void> items_rest(HeadReader& r, const Head& h, unsigned depth, uint64_t& n) {
  if (!is_container(h.kind)) return {};
  return for_children(r, h, depth, nullptr, nullptr, [&](const Head& c, uint64_t) {
    ++n;
    return items_rest(r, c, depth + 1, n);
  });
}

// Consumes the rest of the container h and counts its items (map: pairs).
Result<uint64_t> count_rest(HeadReader& r, const Head& h, unsigned depth) {
  uint64_t n = 0;
  ZT_TRY(for_children(r, h, depth, nullptr, nullptr, [&](const Head& c, uint64_t) {
    ++n;
    return skip_rest(r, c, depth + 1);
  }));
  return h.kind == Kind::map ? n / 2 : n;
}

// Strings being joined: map keys and other items apart, so that a key is
// still there while its value is read.
struct Buffers {
  std::string key;
  std::string value;
};

// How an item is written again: as decoded (transcode) or in core
// deterministic encoding (canonical_encoding). One walker serves both so
// that the two forms differ only where this says.
struct Form {
  bool deterministic = false;  // narrowest floats, sorted distinct keys, plain values only
  unsigned max_depth = Limits::cbor_depth;
};

// A float in the narrowest of half, single and double that holds it.
void write_narrowest_float(double v, CborWriter& w) {
  if (std::isnan(v) || fits_half(v))
    w.f16(static_cast<float>(v));
  else if (fits_single(v))
    w.f32(static_cast<float>(v));
  else
    w.f64(v);
}

Result<void> reencode_rest(HeadReader& r, const Head& h, unsigned depth, const Form& form,
                           CborWriter& w, Buffers& b);

// The deterministic form of the map h (its head just read): each key and
// value encoded alone, then written in the bytewise order of the keys.
Result<void> reencode_sorted_map(HeadReader& r, const Head& h, unsigned depth, const Form& form,
                                 CborWriter& w, Buffers& b) {
  struct Pair {
    std::vector<uint8_t> key, value;
  };
  std::vector<Pair> pairs;
  ZT_TRY(
      for_children(r, h, depth, &b.key, &b.value, [&](const Head& c, uint64_t i) -> Result<void> {
        if (i % 2 == 0) pairs.emplace_back();
        CborWriter one;
        ZT_TRY(reencode_rest(r, c, depth + 1, form, one, b));
        (i % 2 == 0 ? pairs.back().key : pairs.back().value) = one.take();
        return {};
      }));
  std::sort(pairs.begin(), pairs.end(),
            [](const Pair& x, const Pair& y) { return sorts_before(x.key, y.key); });
  for (size_t i = 1; i < pairs.size(); ++i)
    ZT_FAIL_IF(pairs[i - 1].key == pairs[i].key, invalid,
               "two keys of the map at byte %zu encode the same", h.start);
  w.map(pairs.size());
  for (const auto& p : pairs) {
    w.raw(p.key);
    w.raw(p.value);
  }
  return {};
}

Result<void> reencode_rest(HeadReader& r, const Head& h, unsigned depth, const Form& form,
                           CborWriter& w, Buffers& b) {
  if (form.deterministic) {
    ZT_FAIL_IF((r.bytes()[h.start] >> 5) == 6, invalid, "a CBOR tag at byte %zu", h.start);
    ZT_FAIL_IF(h.kind == Kind::undefined, invalid, "undefined at byte %zu", h.start);
    ZT_FAIL_IF(h.kind == Kind::simple, invalid, "simple value %llu at byte %zu",
               static_cast<unsigned long long>(h.u), h.start);
  }
  switch (h.kind) {
    case Kind::null:
      w.null();
      return {};
    case Kind::undefined:
      w.undefined();
      return {};
    case Kind::simple:
      w.simple(static_cast<uint8_t>(h.u));
      return {};
    case Kind::boolean:
      w.boolean(h.flag);
      return {};
    case Kind::uint:
      w.uint(h.u);
      return {};
    case Kind::negint:
      w.negint(h.u);
      return {};
    case Kind::float_:
      if (form.deterministic)
        write_narrowest_float(h.f, w);
      else
        w.f64(h.f);
      return {};
    case Kind::text:
      w.text(h.str);
      return {};
    case Kind::bytes:
      w.bytes(h.str);
      return {};
    case Kind::array:
    case Kind::map: {
      ZT_FAIL_IF(depth > form.max_depth, limit,
                 "CBOR: containers nested deeper than %u levels at byte %zu", form.max_depth,
                 h.start);
      if (h.kind == Kind::map && form.deterministic)
        return reencode_sorted_map(r, h, depth, form, w, b);
      uint64_t n = h.u;
      if (h.indefinite) {
        // The definite head needs the count first: a walk of a copy.
        HeadReader probe = r;
        ZT_ITEM_LET(counted, count_rest(probe, h, depth));
        n = counted;
      } else {
        ZT_TRY(check_count(r, h));  // before the head is written
      }
      if (h.kind == Kind::map)
        w.map(n);
      else
        w.array(n);
      return for_children(r, h, depth, &b.key, &b.value, [&](const Head& c, uint64_t) {
        return reencode_rest(r, c, depth + 1, form, w, b);
      });
    }
    default:
      return make_error(Status::format, "CBOR item: an unexpected item at byte %zu", h.start);
  }
}

Result<void> reencode(std::span<const uint8_t> item, const Form& form, CborWriter& w) {
  HeadReader r(item);
  Buffers b;
  ZT_ITEM_LET(h, r.item(&b.value, false));
  return reencode_rest(r, h, 1, form, w, b);
}

// Where a pretty-printed container's items start: a new line, indented one
// level deeper than `level`.
void json_break(const JsonStyle& style, unsigned level, std::string& out) {
  if (style.indent < 0) return;
  out += '\n';
  out.append(static_cast<size_t>(style.indent) * level, ' ');
}

void json_number(uint64_t v, std::string& out) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

Result<void> json_rest(HeadReader& r, const Head& h, unsigned depth, std::string& out, Buffers& b,
                       const JsonStyle& style, size_t stop_at) {
  ZT_FAIL_IF(out.size() > stop_at, limit, "CBOR item: JSON text longer than %zu bytes",
             style.max_bytes);
  constexpr size_t kDrainAt = size_t{1} << 16;
  if (style.drain && out.size() >= kDrainAt) style.drain(out);
  const unsigned level = style.base_level + depth - 1;
  switch (h.kind) {
    case Kind::null:
      out += "null";
      return {};
    case Kind::undefined:
      out += style.diagnostic_specials ? "undefined" : "null";
      return {};
    case Kind::simple:
      out += style.diagnostic_specials ? "simple(" + std::to_string(h.u) + ")" : "null";
      return {};
    case Kind::boolean:
      out += h.flag ? "true" : "false";
      return {};
    case Kind::uint:
      json_number(h.u, out);
      return {};
    case Kind::negint:
      // -1 - u, exactly, down to -2^64 (JSON numbers have no range; a
      // double here rounded -2^63 - 3 to -2^63).
      out += '-';
      if (h.u == UINT64_MAX)
        out += "18446744073709551616";
      else
        json_number(h.u + 1, out);
      return {};
    case Kind::float_:
      if (style.diagnostic_specials && !std::isfinite(h.f))
        out += std::isnan(h.f) ? "NaN" : h.f > 0 ? "Infinity" : "-Infinity";
      else
        out += dump_json(Json(h.f));  // NaN, infinities: null
      return {};
    case Kind::text:
      out += dump_json(Json(std::string(h.str)));
      return {};
    case Kind::bytes:
      out += "{";
      json_break(style, level + 1, out);
      out += style.indent < 0 ? "\"$bytes\":" : "\"$bytes\": ";
      out += dump_json(Json(base64_encode(h.str)));
      json_break(style, level, out);
      out += '}';
      return {};
    case Kind::array: {
      out += '[';
      bool any = false;
      ZT_TRY(for_children(r, h, depth, &b.key, &b.value, [&](const Head& c, uint64_t i) {
        if (i > 0) out += ',';
        any = true;
        json_break(style, level + 1, out);
        return json_rest(r, c, depth + 1, out, b, style, stop_at);
      }));
      if (any) json_break(style, level, out);
      out += ']';
      return {};
    }
    case Kind::map: {
      out += '{';
      bool any = false;
      ZT_TRY(for_children(r, h, depth, &b.key, &b.value,
                          [&](const Head& c, uint64_t i) -> Result<void> {
                            if (i % 2 == 1)
                              return json_rest(r, c, depth + 1, out, b, style, stop_at);
                            if (i > 0) out += ',';
                            any = true;
                            json_break(style, level + 1, out);
                            out += dump_json(Json(std::string(c.str)));
                            out += style.indent < 0 ? ":" : ": ";
                            return {};
                          }));
      if (any) json_break(style, level, out);
      out += '}';
      return {};
    }
    default:
      return make_error(Status::format, "CBOR item: an unexpected item at byte %zu", h.start);
  }
}

}  // namespace

Result<size_t> item_size(std::span<const uint8_t> bytes) {
  HeadReader r(bytes);
  ZT_ITEM_LET(h, r.item(nullptr, false));
  ZT_TRY(skip_rest(r, h, 1));
  return r.pos();
}

Result<size_t> item_depth(std::span<const uint8_t> bytes) {
  HeadReader r(bytes);
  ZT_ITEM_LET(h, r.item(nullptr, false));
  return depth_rest(r, h, 1);
}

Result<uint64_t> item_count(std::span<const uint8_t> bytes) {
  HeadReader r(bytes);
  ZT_ITEM_LET(h, r.item(nullptr, false));
  uint64_t n = 1;
  ZT_TRY(items_rest(r, h, 1, n));
  return n;
}

Result<Scalar> scalar(std::span<const uint8_t> item) {
  HeadReader r(item);
  Scalar s;
  ZT_ITEM_LET(h, r.item(&s.joined, false));
  ZT_TRY(check_count(r, h));
  s.kind = h.kind;
  s.u = h.u;
  s.f = h.f;
  s.flag = h.flag;
  s.indefinite = h.indefinite;
  s.str = h.str;  // views `item` or s.joined
  return s;
}

Result<void> for_each_entry(
    std::span<const uint8_t> map,
    const std::function<Result<void>(std::string_view key, std::span<const uint8_t> value)>& f) {
  HeadReader r(map);
  ZT_ITEM_LET(h, r.item(nullptr, false));
  ZT_FAIL_IF(h.kind != Kind::map, invalid, "CBOR item: not a map");
  std::string key_buf;
  std::string_view key;
  return for_children(r, h, 1, &key_buf, nullptr, [&](const Head& c, uint64_t i) -> Result<void> {
    if (i % 2 == 0) {
      key = c.str;  // views `map` or key_buf, which values (read unjoined) leave alone
      return {};
    }
    ZT_TRY(skip_rest(r, c, 2));
    return f(key, map.subspan(c.start, r.pos() - c.start));
  });
}

Result<void> for_each_item(std::span<const uint8_t> array,
                           const std::function<Result<void>(std::span<const uint8_t> item)>& f) {
  HeadReader r(array);
  ZT_ITEM_LET(h, r.item(nullptr, false));
  ZT_FAIL_IF(h.kind != Kind::array, invalid, "CBOR item: not an array");
  return for_children(r, h, 1, nullptr, nullptr, [&](const Head& c, uint64_t) -> Result<void> {
    ZT_TRY(skip_rest(r, c, 2));
    return f(array.subspan(c.start, r.pos() - c.start));
  });
}

Result<std::optional<std::span<const uint8_t>>> find_entry(std::span<const uint8_t> map,
                                                           std::string_view key) {
  std::optional<std::span<const uint8_t>> found;
  ZT_TRY(for_each_entry(map, [&](std::string_view k, std::span<const uint8_t> v) -> Result<void> {
    if (!found && k == key) found = v;
    return {};
  }));
  return found;
}

Result<uint64_t> container_count(std::span<const uint8_t> item) {
  HeadReader r(item);
  ZT_ITEM_LET(h, r.item(nullptr, false));
  ZT_FAIL_IF(!is_container(h.kind), invalid, "CBOR item: not an array or a map");
  return count_rest(r, h, 1);
}

Result<void> transcode(std::span<const uint8_t> item, CborWriter& w) {
  return reencode(item, Form{}, w);
}

Result<std::vector<uint8_t>> canonical_encoding(std::span<const uint8_t> item, unsigned max_depth) {
  CborWriter w;
  ZT_TRY(reencode(item, Form{true, max_depth}, w));
  return w.take();
}

Result<void> append_json(std::span<const uint8_t> item, std::string& out, const JsonStyle& style) {
  HeadReader r(item);
  Buffers b;
  ZT_ITEM_LET(h, r.item(&b.value, false));
  const size_t stop_at =
      style.max_bytes > SIZE_MAX - out.size() ? SIZE_MAX : out.size() + style.max_bytes;
  ZT_TRY(json_rest(r, h, 1, out, b, style, stop_at));
  ZT_FAIL_IF(out.size() > stop_at, limit, "CBOR item: JSON text longer than %zu bytes",
             style.max_bytes);
  return {};
}

}  // namespace zt::cbor
