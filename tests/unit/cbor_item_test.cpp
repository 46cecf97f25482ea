// One encoded CBOR item read in place (cbor_item.h): sizes, scalars, map
// entries, counts, re-encoding and JSON, over definite and indefinite forms,
// tags, simple values, floats and integers at their extremes; malformed and
// too deeply nested input; and random items checked against cbor::decode
// followed by encode_value and cbor_to_json.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cbor/cbor_encode.h"
#include "cbor/cbor_item.h"
#include "cbor/cbor_value.h"
#include "manifest/json.h"
#include "test_files.h"
#include "base/zt_limits.h"

namespace zt::test {
namespace {

using cbor::Kind;

const Bytes kMaxU64 = {0x1B, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};  // 2^64 - 1
const Bytes kMinNeg = {0x3B, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};  // -2^64

Bytes plus(Bytes b, std::initializer_list<uint8_t> tail) {
  b.insert(b.end(), tail.begin(), tail.end());
  return b;
}

// What transcode writes; empty (and a failure) on error.
Bytes transcoded(std::span<const uint8_t> item) {
  CborWriter w;
  const auto r = cbor::transcode(item, w);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? w.take() : Bytes{};
}

std::string json_of(std::span<const uint8_t> item) {
  std::string out;
  const auto r = cbor::append_json(item, out);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return out;
}

// The oracle append_json is checked against: a decoded Document's value as
// nlohmann JSON (byte strings as {"$bytes": "<base64>"}, tags dropped,
// undefined and other simple values null, as are NaN and infinities). The
// library has one CBOR -> JSON converter, append_json; this one lives here.
Json cbor_to_json(const cbor::Document& doc, uint32_t i) {
  const cbor::Node& n = doc.node(i);
  switch (n.kind) {
    case cbor::Kind::null:
    case cbor::Kind::undefined:
    case cbor::Kind::simple:
      return nullptr;
    case cbor::Kind::boolean:
      return n.flag;
    case cbor::Kind::uint:
      return n.u;
    case cbor::Kind::negint:
      if (n.u <= static_cast<uint64_t>(INT64_MAX)) return -1 - static_cast<int64_t>(n.u);
      return -1.0 - static_cast<double>(n.u);
    case cbor::Kind::float_:
      return n.f;  // nlohmann renders NaN and infinities as null
    case cbor::Kind::text:
      return std::string(n.str);
    case cbor::Kind::bytes:
      return Json{{"$bytes", base64_encode(n.str)}};
    case cbor::Kind::array: {
      Json a = Json::array();
      uint32_t c = cbor::Document::first_child(i);
      for (uint32_t k = 0; k < n.count; ++k, c = doc.next(c)) a.push_back(cbor_to_json(doc, c));
      return a;
    }
    case cbor::Kind::encoded: {
      std::string text;
      if (!cbor::append_json(
              std::span(reinterpret_cast<const uint8_t*>(n.str.data()), n.str.size()), text))
        return nullptr;
      return Json::parse(text);
    }
    case cbor::Kind::map: {
      Json m = Json::object();
      uint32_t c = cbor::Document::first_child(i);
      for (uint32_t k = 0; k < n.count; ++k) {
        const uint32_t v = doc.next(c);
        m[std::string(doc.node(c).str)] = cbor_to_json(doc, v);
        c = doc.next(v);
      }
      return m;
    }
  }
  return nullptr;
}

// The same through a Document: cbor::decode, then encode_value / cbor_to_json.
Bytes reencoded(std::span<const uint8_t> item) {
  const auto doc = cbor::decode(item);
  EXPECT_TRUE(doc.ok()) << doc.error().message;
  if (!doc.ok()) return {};
  CborWriter w;
  encode_value(*doc, 0, w);
  return w.take();
}

// append_json's text with its integers below -2^63 (exact there) as the
// doubles nlohmann holds them as, for comparison with the oracle.
std::string as_oracle_has_it(const std::string& json) {
  return dump_json(Json::parse(json));
}

std::string decoded_json(std::span<const uint8_t> item) {
  const auto doc = cbor::decode(item);
  EXPECT_TRUE(doc.ok()) << doc.error().message;
  return doc.ok() ? dump_json(cbor_to_json(*doc, 0)) : std::string();
}

// The keys for_each_entry visits, in order.
std::vector<std::string> keys_of(std::span<const uint8_t> map) {
  std::vector<std::string> keys;
  const auto r = cbor::for_each_entry(map, [&](std::string_view k, std::span<const uint8_t>) -> Result<void> {
    keys.emplace_back(k);
    return {};
  });
  EXPECT_TRUE(r.ok()) << r.error().message;
  return keys;
}

// k nested one-item arrays around an empty array: [[...[]...]].
Bytes nested_arrays(size_t k) {
  Bytes b(k - 1, 0x81);
  b.push_back(0x80);
  return b;
}

Bytes bytes_of_span(std::span<const uint8_t> s) { return Bytes(s.begin(), s.end()); }

// ---------------------------------------------------------------------------

TEST(CborItem, UnassignedHeads) {
  const auto tag = [](const Bytes& b, size_t pos = 0) { return cbor::unassigned_head(b, pos); };
  for (const uint8_t b : std::initializer_list<uint8_t>{0xC6, 0xCD, 0xD4}) {
    const auto u = tag(Bytes{b, 0x01});
    ASSERT_TRUE(u) << int{b};
    EXPECT_TRUE(u->is_tag);
    EXPECT_EQ(u->consumed, 1u);
    EXPECT_FALSE(u->malformed);
  }
  for (const uint8_t b : std::initializer_list<uint8_t>{0xE0, 0xE7, 0xF3}) {
    const auto u = tag(Bytes{b});
    ASSERT_TRUE(u);
    EXPECT_FALSE(u->is_tag);
    EXPECT_EQ(u->simple, b - 0xE0);
    EXPECT_EQ(u->consumed, 1u);
    EXPECT_FALSE(u->malformed);
  }
  for (const uint8_t v : std::initializer_list<uint8_t>{32, 100, 255}) {
    const auto u = tag(Bytes{0xF8, v});
    ASSERT_TRUE(u);
    EXPECT_FALSE(u->is_tag);
    EXPECT_EQ(u->simple, v);
    EXPECT_EQ(u->consumed, 2u);
    EXPECT_FALSE(u->malformed);
  }
  const auto below32 = tag(Bytes{0xF8, 0x1F});
  ASSERT_TRUE(below32);
  EXPECT_TRUE(below32->malformed);
  EXPECT_EQ(below32->consumed, 2u);
  const auto truncated = tag(Bytes{0xF8});
  ASSERT_TRUE(truncated);
  EXPECT_TRUE(truncated->malformed);
  // Heads libcbor decodes itself, and positions past the end.
  for (const uint8_t b : std::initializer_list<uint8_t>{0x00, 0x7F, 0xC0, 0xC5, 0xD5, 0xD7, 0xD8, 0xF4, 0xF7, 0xF9, 0xFF})
    EXPECT_FALSE(tag(Bytes{b, 0x00, 0x00})) << int{b};
  EXPECT_FALSE(tag(Bytes{0xC6}, 1));
  EXPECT_FALSE(tag(Bytes{}, 0));
  const auto second = tag(Bytes{0x00, 0xE5}, 1);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->simple, 5);
}

TEST(CborItem, ItemSize) {
  const std::vector<Bytes> items = {
      {0x00},
      {0x17},
      {0x18, 0xFF},
      {0x19, 0x01, 0x00},
      kMaxU64,
      kMinNeg,
      {0x20},
      {0xF4},
      {0xF5},
      {0xF6},
      {0xF7},
      {0xE0},
      {0xF3},
      {0xF8, 0xFF},
      {0xF9, 0x7E, 0x00},
      {0xFA, 0x7F, 0x80, 0x00, 0x00},
      {0xFB, 0x7F, 0xF8, 0, 0, 0, 0, 0, 0},
      {0x60},
      {0x63, 'a', 'b', 'c'},
      {0x43, 1, 2, 3},
      {0x7F, 0xFF},
      {0x5F, 0xFF},
      {0x7F, 0x61, 'a', 0x60, 0x62, 'b', 'c', 0xFF},
      {0x5F, 0x41, 1, 0x42, 2, 3, 0xFF},
      {0x80},
      {0xA0},
      {0x9F, 0xFF},
      {0xBF, 0xFF},
      {0x83, 0x01, 0x82, 0x02, 0x03, 0x9F, 0x04, 0xFF},
      {0xBF, 0x61, 'a', 0xA1, 0x61, 'b', 0x80, 0x7F, 0x61, 'c', 0xFF, 0x9F, 0x9F, 0xFF, 0xFF, 0xFF},
      // Tags, stacked, on items and on keys; 0xC6..0xD4 included.
      {0xC6, 0x01},
      {0xC1, 0xD8, 0x20, 0xD4, 0xDB, 0, 0, 0, 0, 0, 0, 0, 1, 0x82, 0xC6, 0x01, 0xCD, 0xE5},
      {0xA1, 0xC6, 0xC0, 0x61, 'k', 0xD5, 0xF8, 0x20},
  };
  for (const Bytes& item : items) {
    // Trailing bytes are not the item's.
    const auto n = cbor::item_size(plus(item, {0x00, 0xFF, 0x1C}));
    ASSERT_TRUE(n.ok()) << n.error().message;
    EXPECT_EQ(*n, item.size());
  }
}

// A writer counts its manifest's items as the decoder does against
// ZT_MAX_CBOR_ITEMS: one node each (an indefinite string joined into one,
// tags none).
TEST(CborItem, ItemCountIsTheDecodersNodeCount) {
  const std::vector<std::pair<Bytes, uint64_t>> items = {
      {{0x00}, 1},
      {{0x80}, 1},
      {{0x83, 0x01, 0x82, 0x02, 0x03, 0x9F, 0x04, 0xFF}, 7},
      {{0x7F, 0x61, 'a', 0x60, 0x62, 'b', 'c', 0xFF}, 1},
      {{0xBF, 0x61, 'a', 0xA1, 0x61, 'b', 0x80, 0x7F, 0x61, 'c', 0xFF, 0x9F, 0x9F, 0xFF, 0xFF,
        0xFF},
       8},
      {{0xA1, 0xC6, 0xC0, 0x61, 'k', 0xD5, 0xF8, 0x20}, 3},
      {{0xC1, 0xD8, 0x20, 0xD4, 0xDB, 0, 0, 0, 0, 0, 0, 0, 1, 0x82, 0xC6, 0x01, 0xCD, 0xE5}, 3},
  };
  for (const auto& [item, want] : items) {
    const auto n = cbor::item_count(plus(item, {0x00, 0xFF}));
    ASSERT_TRUE(n.ok()) << n.error().message;
    EXPECT_EQ(*n, want);
    const auto doc = cbor::decode(item);
    ASSERT_TRUE(doc.ok()) << doc.error().message;
    EXPECT_EQ(doc->size(), want);
  }
  EXPECT_FALSE(cbor::item_count(Bytes{0x82, 0x01}).ok());  // truncated
}

TEST(CborItem, ScalarIntegersAtTheExtremes) {
  const auto s = [](const Bytes& b) {
    auto r = cbor::scalar(b);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? std::move(r).value() : cbor::Scalar{};
  };
  EXPECT_EQ(s(kMaxU64).kind, Kind::uint);
  EXPECT_EQ(s(kMaxU64).u, UINT64_MAX);
  EXPECT_EQ(s(kMinNeg).kind, Kind::negint);
  EXPECT_EQ(s(kMinNeg).u, UINT64_MAX);
  EXPECT_EQ(s({0x00}).u, 0u);
  EXPECT_EQ(s({0x18, 0x18}).u, 24u);
  EXPECT_EQ(s({0x1B, 0, 0, 0, 0, 0, 0, 0, 5}).u, 5u);  // not the shortest form
  EXPECT_EQ(s({0x20}).kind, Kind::negint);
  EXPECT_EQ(s({0x20}).u, 0u);
  EXPECT_EQ(s({0x3B, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}).u, uint64_t{INT64_MAX});
  // Through JSON: every integer exactly, -2^64 included.
  EXPECT_EQ(json_of(kMaxU64), "18446744073709551615");
  EXPECT_EQ(json_of(Bytes{0x3B, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}), "-9223372036854775808");
  EXPECT_EQ(json_of(kMinNeg), "-18446744073709551616");
  EXPECT_EQ(as_oracle_has_it(json_of(kMinNeg)), decoded_json(kMinNeg));
  EXPECT_EQ(transcoded(kMaxU64), kMaxU64);
  EXPECT_EQ(transcoded(kMinNeg), kMinNeg);
}

TEST(CborItem, ScalarFloats) {
  const auto f = [](const Bytes& b) {
    const auto r = cbor::scalar(b);
    EXPECT_TRUE(r.ok()) << r.error().message;
    if (!r.ok()) return 0.0;
    EXPECT_EQ(r->kind, Kind::float_);
    return r->f;
  };
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(f({0xF9, 0x3C, 0x00}), 1.0);
  EXPECT_EQ(f({0xF9, 0x00, 0x01}), std::ldexp(1.0, -24));  // smallest subnormal half
  EXPECT_TRUE(std::signbit(f({0xF9, 0x80, 0x00})));
  EXPECT_TRUE(std::isnan(f({0xF9, 0x7E, 0x00})));
  EXPECT_EQ(f({0xF9, 0x7C, 0x00}), inf);
  EXPECT_EQ(f({0xF9, 0xFC, 0x00}), -inf);
  EXPECT_EQ(f({0xFA, 0x3F, 0xC0, 0x00, 0x00}), 1.5);
  EXPECT_TRUE(std::isnan(f({0xFA, 0x7F, 0xC0, 0x00, 0x00})));
  EXPECT_EQ(f({0xFA, 0x7F, 0x80, 0x00, 0x00}), inf);
  EXPECT_EQ(f({0xFA, 0xFF, 0x80, 0x00, 0x00}), -inf);
  EXPECT_EQ(f({0xFB, 0x3F, 0xF1, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9A}), 1.1);
  EXPECT_TRUE(std::isnan(f({0xFB, 0x7F, 0xF8, 0, 0, 0, 0, 0, 0})));
  EXPECT_EQ(f({0xFB, 0x7F, 0xF0, 0, 0, 0, 0, 0, 0}), inf);
  EXPECT_EQ(f({0xFB, 0xFF, 0xF0, 0, 0, 0, 0, 0, 0}), -inf);
  EXPECT_EQ(f({0xC6, 0xC1, 0xF9, 0x3E, 0x00}), 1.5);  // tags skipped
  // Re-encoded as doubles, NaN and infinities included; JSON has them null.
  const Bytes floats = {0x85, 0xF9, 0x3C, 0x00, 0xF9, 0x7E, 0x00, 0xFA, 0x7F, 0x80, 0x00, 0x00,
                        0xF9, 0xFC, 0x00, 0xFA, 0x3F, 0xC0, 0x00, 0x00};
  const Bytes t = transcoded(floats);
  EXPECT_EQ(t, reencoded(floats));
  EXPECT_EQ(t.size(), 1 + 5 * 9u);
  EXPECT_EQ(json_of(floats), "[1.0,null,null,null,1.5]");
  EXPECT_EQ(json_of(floats), decoded_json(floats));
}

TEST(CborItem, ScalarKindsTagsAndSimpleValues) {
  struct Case {
    Bytes item;
    Kind kind;
    uint64_t u;
  };
  const std::vector<Case> cases = {
      {{0xF6}, Kind::null, 0},
      {{0xF7}, Kind::undefined, 0},
      {{0xE0}, Kind::simple, 0},
      {{0xF3}, Kind::simple, 19},
      {{0xF8, 0x20}, Kind::simple, 32},
      {{0xF8, 0xFF}, Kind::simple, 255},
      {{0xC6, 0x07}, Kind::uint, 7},
      {{0xD4, 0xC0, 0xD8, 0x99, 0x27}, Kind::negint, 7},
      {{0xD5, 0xE5}, Kind::simple, 5},
      {{0x82, 0x01, 0x02}, Kind::array, 2},
      {{0xA1, 0x61, 'a', 0x01}, Kind::map, 1},
      {{0xCD, 0x80}, Kind::array, 0},
  };
  for (const Case& c : cases) {
    const auto s = cbor::scalar(c.item);
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(s->kind, c.kind);
    EXPECT_EQ(s->u, c.u);
    EXPECT_FALSE(s->indefinite);
  }
  const auto t = cbor::scalar(Bytes{0xF5});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->kind, Kind::boolean);
  EXPECT_TRUE(t->flag);
  const auto f = cbor::scalar(Bytes{0xF4});
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->flag);
  // Simple values and undefined: null in JSON, themselves in CBOR.
  const Bytes simples = {0x84, 0xF7, 0xE0, 0xF8, 0xFF, 0xC6, 0xF3};
  EXPECT_EQ(json_of(simples), "[null,null,null,null]");
  EXPECT_EQ(transcoded(simples), (Bytes{0x84, 0xF7, 0xE0, 0xF8, 0xFF, 0xF3}));
  EXPECT_EQ(transcoded(simples), reencoded(simples));
}

TEST(CborItem, ScalarStringsDefiniteAndJoined) {
  const Bytes definite = {0x63, 'a', 'b', 'c', 0x00};
  const auto d = cbor::scalar(definite);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->kind, Kind::text);
  EXPECT_EQ(d->str, "abc");
  EXPECT_EQ(reinterpret_cast<const uint8_t*>(d->str.data()), definite.data() + 1);  // in place

  const Bytes chunked = {0xC6, 0x7F, 0x62, 'a', 'b', 0x60, 0x63, 'c', 0xC3, 0xA9, 0xFF};
  auto j = cbor::scalar(chunked);
  ASSERT_TRUE(j.ok()) << j.error().message;
  EXPECT_EQ(j->kind, Kind::text);
  EXPECT_TRUE(j->indefinite);
  EXPECT_EQ(j->str, "abcé");
  // Copies and moves keep the view on their own storage.
  std::vector<cbor::Scalar> copies;
  for (int i = 0; i < 50; ++i) copies.push_back(*j);
  cbor::Scalar moved = std::move(j).value();
  for (const cbor::Scalar& c : copies) {
    EXPECT_EQ(c.str, "abcé");
    EXPECT_EQ(c.str.data(), c.joined.data());
  }
  EXPECT_EQ(moved.str, "abcé");
  cbor::Scalar assigned;
  assigned = copies.front();
  EXPECT_EQ(assigned.str.data(), assigned.joined.data());

  const auto empty = cbor::scalar(Bytes{0x5F, 0xFF});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->kind, Kind::bytes);
  EXPECT_EQ(empty->str, "");
  const auto bytes = cbor::scalar(Bytes{0x5F, 0x41, 0x00, 0x42, 0xFF, 0x01, 0xFF});
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes->str, std::string("\x00\xFF\x01", 3));
  EXPECT_EQ(json_of(Bytes{0x5F, 0x41, 0x00, 0x42, 0xFF, 0x01, 0xFF}), "{\"$bytes\":\"AP8B\"}");
  EXPECT_EQ(json_of(chunked), "\"abcé\"");
  EXPECT_EQ(transcoded(chunked), (Bytes{0x65, 'a', 'b', 'c', 0xC3, 0xA9}));
}

TEST(CborItem, ScalarOfContainersReadsOnlyTheirHead) {
  const auto a = cbor::scalar(Bytes{0x9F, 0x01});  // unterminated, but only the head is read
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->kind, Kind::array);
  EXPECT_TRUE(a->indefinite);
  EXPECT_EQ(a->u, 0u);
  const auto m = cbor::scalar(Bytes{0xBF, 0xFF});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->kind, Kind::map);
  EXPECT_TRUE(m->indefinite);
  // Only the head: nesting far beyond the limit is not seen.
  const auto deep = cbor::scalar(Bytes(100000, 0x81));
  ASSERT_TRUE(deep.ok());
  EXPECT_EQ(deep->kind, Kind::array);
  EXPECT_EQ(deep->u, 1u);
  const auto claims = cbor::scalar(Bytes{0x83, 0x01, 0x02});  // three items in two bytes
  ASSERT_FALSE(claims.ok());
  EXPECT_EQ(claims.error().status, Status::format);
}

TEST(CborItem, ForEachEntryDefiniteAndIndefinite) {
  const Json j = {{"one", 1}, {"two", Json::array({1, "x", Json::object({{"in", -1}})})}, {"", nullptr},
                  {"blob", Json::binary({1, 2})}, {"é\"", 1.5}};
  for (const Bytes& map : {cbor(j), cbor_indefinite(j)}) {
    EXPECT_EQ(keys_of(map), (std::vector<std::string>{"one", "two", "", "blob", "é\""}));
    const auto doc = cbor::decode(map);
    ASSERT_TRUE(doc.ok());
    // Each value is its encoded bytes: transcoding one gives encode_value of its node.
    uint32_t k = cbor::Document::first_child(0);
    std::vector<Bytes> want;
    for (uint32_t p = 0; p < doc->root().count; ++p) {
      const uint32_t v = doc->next(k);
      CborWriter w;
      encode_value(*doc, v, w);
      want.push_back(w.take());
      k = doc->next(v);
    }
    std::vector<Bytes> got;
    const auto r = cbor::for_each_entry(map, [&](std::string_view, std::span<const uint8_t> v) -> Result<void> {
      got.push_back(transcoded(v));
      return {};
    });
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(got, want);
    ASSERT_EQ(cbor::container_count(map).ok(), true);
    EXPECT_EQ(*cbor::container_count(map), 5u);
  }
  // Values keep their tags; keys may be tagged and chunked.
  const Bytes tagged = {0xBF, 0xC6, 0x7F, 0x61, 'a', 0x61, 'b', 0xFF, 0xC1, 0x01, 0x61, 'c', 0xD8, 0x20, 0x9F, 0xFF, 0xFF};
  std::vector<std::pair<std::string, Bytes>> entries;
  ASSERT_TRUE(cbor::for_each_entry(tagged, [&](std::string_view k, std::span<const uint8_t> v) -> Result<void> {
                entries.emplace_back(std::string(k), bytes_of_span(v));
                return {};
              }).ok());
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].first, "ab");
  EXPECT_EQ(entries[0].second, (Bytes{0xC1, 0x01}));
  EXPECT_EQ(entries[1].first, "c");
  EXPECT_EQ(entries[1].second, (Bytes{0xD8, 0x20, 0x9F, 0xFF}));
  EXPECT_TRUE(keys_of(Bytes{0xA0}).empty());
  EXPECT_TRUE(keys_of(Bytes{0xBF, 0xFF}).empty());
}

TEST(CborItem, ForEachEntryStopsAtTheFirstErrorAndChecksTheRest) {
  const Bytes map = cbor(Json{{"a", 1}, {"b", 2}, {"c", 3}});
  int calls = 0;
  const auto r = cbor::for_each_entry(map, [&](std::string_view k, std::span<const uint8_t>) -> Result<void> {
    ++calls;
    if (k == "b") return make_error(Status::state, "stop at b");
    return {};
  });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().status, Status::state);
  EXPECT_EQ(r.error().message, "stop at b");
  EXPECT_EQ(calls, 2);
  // A malformed entry after good ones: they were seen, the error is returned.
  calls = 0;
  const auto bad = cbor::for_each_entry(Bytes{0xA2, 0x61, 'a', 0x01, 0x61, 'b', 0x1C},
                                        [&](std::string_view, std::span<const uint8_t>) -> Result<void> {
                                          ++calls;
                                          return {};
                                        });
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().status, Status::format);
  EXPECT_EQ(calls, 1);
}

TEST(CborItem, ForEachEntryRefusesNonTextKeysAndNonMaps) {
  const auto none = [](std::string_view, std::span<const uint8_t>) -> Result<void> { return {}; };
  for (const Bytes& map : {Bytes{0xA1, 0x01, 0x02}, Bytes{0xA1, 0x41, 'a', 0x02}, Bytes{0xBF, 0x80, 0x01, 0xFF},
                           Bytes{0xA1, 0xC6, 0xF6, 0x01}, Bytes{0xA1, 0x5F, 0x41, 'a', 0xFF, 0x01}}) {
    const auto r = cbor::for_each_entry(map, none);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().status, Status::format) << r.error().message;
    EXPECT_FALSE(cbor::item_size(map).ok());
  }
  for (const Bytes& other : {Bytes{0x80}, Bytes{0x01}, Bytes{0x9F, 0xFF}, Bytes{0x61, 'a'}}) {
    const auto r = cbor::for_each_entry(other, none);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().status, Status::invalid);
    const auto f = cbor::find_entry(other, "a");
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.error().status, Status::invalid);
  }
}

TEST(CborItem, FindEntry) {
  const Json j = {{"a", 1}, {"nested", Json::object({{"a", 2}})}, {"z", "last"}};
  for (const Bytes& map : {cbor(j), cbor_indefinite(j)}) {
    const auto a = cbor::find_entry(map, "a");
    ASSERT_TRUE(a.ok());
    ASSERT_TRUE(a->has_value());
    EXPECT_EQ(bytes_of_span(**a), (Bytes{0x01}));
    const auto z = cbor::find_entry(map, "z");
    ASSERT_TRUE(z.ok() && z->has_value());
    EXPECT_EQ(transcoded(**z), cbor(Json("last")));
    const auto nested = cbor::find_entry(map, "nested");
    ASSERT_TRUE(nested.ok() && nested->has_value());
    const auto inner = cbor::find_entry(**nested, "a");
    ASSERT_TRUE(inner.ok() && inner->has_value());
    EXPECT_EQ(bytes_of_span(**inner), (Bytes{0x02}));
    const auto absent = cbor::find_entry(map, "b");
    ASSERT_TRUE(absent.ok());
    EXPECT_FALSE(absent->has_value());
  }
  // The whole map is checked even when the key comes first.
  EXPECT_FALSE(cbor::find_entry(Bytes{0xA2, 0x61, 'a', 0x01, 0x61, 'b'}, "a").ok());
  const auto empty = cbor::find_entry(Bytes{0xA0}, "");
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->has_value());
}

TEST(CborItem, ContainerCount) {
  const auto count = [](const Bytes& b) {
    const auto r = cbor::container_count(b);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? *r : UINT64_MAX;
  };
  EXPECT_EQ(count({0x80}), 0u);
  EXPECT_EQ(count({0xA0}), 0u);
  EXPECT_EQ(count({0x9F, 0xFF}), 0u);
  EXPECT_EQ(count({0xBF, 0xFF}), 0u);
  EXPECT_EQ(count({0x83, 0x01, 0x9F, 0x02, 0x03, 0xFF, 0x7F, 0xFF}), 3u);
  EXPECT_EQ(count({0x9F, 0x01, 0x9F, 0x02, 0x03, 0xFF, 0xC6, 0x7F, 0x61, 'x', 0xFF, 0xFF}), 3u);
  EXPECT_EQ(count({0xBF, 0x61, 'a', 0x9F, 0xFF, 0x61, 'b', 0xF8, 0x40, 0xFF}), 2u);
  EXPECT_EQ(count({0xC6, 0xA1, 0x61, 'a', 0x01}), 1u);
  Bytes big = {0x9F};
  for (int i = 0; i < 10000; ++i) big.push_back(0x01);
  big.push_back(0xFF);
  EXPECT_EQ(count(big), 10000u);
  for (const Bytes& scalar : {Bytes{0x01}, Bytes{0x61, 'a'}, Bytes{0xF6}, Bytes{0x7F, 0xFF}}) {
    const auto r = cbor::container_count(scalar);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().status, Status::invalid);
  }
}

TEST(CborItem, TranscodeExamples) {
  struct Case {
    Bytes in, out;
  };
  const std::vector<Case> cases = {
      {{0x9F, 0x01, 0xF9, 0x3C, 0x00, 0xFF}, {0x82, 0x01, 0xFB, 0x3F, 0xF0, 0, 0, 0, 0, 0, 0}},
      {{0xBF, 0x7F, 0x61, 'a', 0x61, 'b', 0xFF, 0xC6, 0xF8, 0xFF, 0xFF}, {0xA1, 0x62, 'a', 'b', 0xF8, 0xFF}},
      {plus({0xC1, 0xD8, 0x20, 0xC6}, {0x1B, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}), kMaxU64},
      {{0x18, 0x05}, {0x05}},
      {{0x39, 0x00, 0x00}, {0x20}},
      {{0x98, 0x01, 0x5F, 0xFF}, {0x81, 0x40}},
      {{0x9F, 0x9F, 0x9F, 0xFF, 0xFF, 0xBF, 0xFF, 0xFF}, {0x82, 0x81, 0x80, 0xA0}},
      {{0xE0}, {0xE0}},
      {{0xF7}, {0xF7}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(transcoded(c.in), c.out);
    EXPECT_EQ(transcoded(c.in), reencoded(c.in));
  }
}

TEST(CborItem, AppendJsonExamples) {
  const Bytes item = cbor(Json{{"a", Json::array({1, -1, 1.5, nullptr, true})}, {"b", Json::binary({1, 2})}});
  std::string out = "prefix:";
  ASSERT_TRUE(cbor::append_json(item, out).ok());
  EXPECT_EQ(out, "prefix:{\"a\":[1,-1,1.5,null,true],\"b\":{\"$bytes\":\"AQI=\"}}");
  EXPECT_EQ(json_of(Bytes{0x80}), "[]");
  EXPECT_EQ(json_of(Bytes{0xA0}), "{}");
  EXPECT_EQ(json_of(Bytes{0x9F, 0xFF}), "[]");
  EXPECT_EQ(json_of(Bytes{0xBF, 0xFF}), "{}");
  EXPECT_EQ(json_of(Bytes{0x40}), "{\"$bytes\":\"\"}");
  EXPECT_EQ(json_of(Bytes{0xF9, 0x3E, 0x00}), "1.5");
  // Negative integers below -2^63 exactly (they went through a double:
  // -2^63 - 3 became -9.223372036854776e+18).
  EXPECT_EQ(json_of(Bytes{0x3B, 0x80, 0, 0, 0, 0, 0, 0, 0x02}), "-9223372036854775811");
  EXPECT_EQ(json_of(Bytes{0x3B, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}),
            "-9223372036854775808");
  EXPECT_EQ(json_of(kMinNeg), "-18446744073709551616");
  const Bytes escaped = cbor(Json("q\"b\\n\n\x01\x7f é€😀"));
  EXPECT_EQ(json_of(escaped), decoded_json(escaped));
  EXPECT_EQ(json_of(escaped), "\"q\\\"b\\\\n\\n\\u0001\x7f é€😀\"");
  // Keys in file order (not sorted), escaped like strings.
  const Bytes keys = cbor(Json{{"z", 1}, {"a\n", 2}, {"m", 3}});
  EXPECT_EQ(json_of(keys), "{\"z\":1,\"a\\n\":2,\"m\":3}");
  EXPECT_EQ(json_of(keys), decoded_json(keys));
}

// RFC 8949 allows a tag on an indefinite-length string. (cbor::decode
// refuses one as "a tag without an item" when this is written, so the
// random items below tag only definite strings.)
TEST(CborItem, TaggedIndefiniteStrings) {
  const Bytes text = {0xC6, 0xC1, 0x7F, 0x61, 'a', 0x61, 'b', 0xFF};
  EXPECT_EQ(*cbor::item_size(text), text.size());
  EXPECT_EQ(transcoded(text), (Bytes{0x62, 'a', 'b'}));
  EXPECT_EQ(json_of(text), "\"ab\"");
  const Bytes map = {0xA1, 0xD8, 0x20, 0x7F, 0x61, 'k', 0xFF, 0xD4, 0x5F, 0x41, 0x01, 0xFF};
  EXPECT_EQ(keys_of(map), std::vector<std::string>{"k"});
  EXPECT_EQ(transcoded(map), (Bytes{0xA1, 0x61, 'k', 0x41, 0x01}));
  EXPECT_EQ(json_of(map), "{\"k\":{\"$bytes\":\"AQ==\"}}");
}

// ---------------------------------------------------------------------------
// Malformed input: an error from every function, never a crash.

struct Malformed {
  const char* what;
  Bytes bytes;
  bool head_ok;  // scalar() reads only the head of a container: it may succeed
};

std::vector<Malformed> malformed_items() {
  return {
      {"empty", {}, false},
      {"truncated uint", {0x19, 0x01}, false},
      {"truncated uint64", {0x1B, 0x01, 0x02}, false},
      {"truncated float", {0xFB, 0x3F}, false},
      {"truncated text", {0x63, 'a', 'b'}, false},
      {"truncated length", {0x5A, 0x00}, false},
      {"huge string length", {0x5B, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x00}, false},
      {"huge text length", {0x7B, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x00}, false},
      {"truncated array", {0x83, 0x01, 0x02}, false},
      {"truncated map", {0xA2, 0x61, 'a', 0x01}, false},
      {"huge array count", {0x9B, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}, false},
      {"huge map count", {0xBB, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x01}, false},
      {"truncated nested array", {0x82, 0x81, 0x01}, true},
      {"unterminated indefinite array", {0x9F, 0x01}, true},
      {"unterminated indefinite map", {0xBF, 0x61, 'a', 0x01}, true},
      {"unterminated indefinite string", {0x7F, 0x61, 'a'}, false},
      {"lone break", {0xFF}, false},
      {"break in a definite array", {0x82, 0x01, 0xFF}, true},
      {"break in a definite map", {0xA1, 0x61, 'a', 0xFF}, true},
      {"break after a key", {0xBF, 0x61, 'a', 0xFF}, true},
      {"break after a tag", {0x9F, 0xC6, 0xFF}, true},
      {"tag without an item", {0xC1}, false},
      {"tags without an item", {0xC6, 0xD8, 0x20}, false},
      {"chunk of another type", {0x7F, 0x41, 'a', 0xFF}, false},
      {"indefinite chunk", {0x5F, 0x5F, 0xFF, 0xFF}, false},
      {"integer chunk", {0x5F, 0x01, 0xFF}, false},
      {"tagged chunk", {0x7F, 0xC1, 0x61, 'a', 0xFF}, false},
      {"unassigned tag on a chunk", {0x7F, 0xC6, 0x61, 'a', 0xFF}, false},
      {"reserved uint", {0x1C}, false},
      {"indefinite uint", {0x1F}, false},
      {"reserved negint", {0x3E}, false},
      {"reserved bytes", {0x5C}, false},
      {"reserved array", {0x9C}, false},
      {"reserved tag", {0xDC, 0x01}, false},
      {"indefinite tag", {0xDF, 0x01}, false},
      {"reserved simple", {0xFC}, false},
      {"two-byte simple below 32", {0xF8, 0x17}, false},
      {"truncated two-byte simple", {0xF8}, false},
      {"bad UTF-8", {0x61, 0xFF}, false},
      {"bad UTF-8 sequence", {0x62, 0xC3, 0x28}, false},
      {"code point split across chunks", {0x7F, 0x61, 0xC3, 0x61, 0xA9, 0xFF}, false},
      {"non-text key", {0xA1, 0x01, 0x02}, true},
      {"bad item deep inside", {0x81, 0x81, 0xA1, 0x61, 'k', 0x9F, 0x01, 0xFC, 0xFF}, true},
  };
}

TEST(CborItem, MalformedInputIsAnError) {
  for (const Malformed& m : malformed_items()) {
    SCOPED_TRACE(m.what);
    // As the whole input, and inside a map value and an array.
    const auto check = [&](std::span<const uint8_t> b) {
      const auto size = cbor::item_size(b);
      ASSERT_FALSE(size.ok());
      EXPECT_EQ(size.error().status, Status::format) << size.error().message;
      CborWriter w;
      const auto t = cbor::transcode(b, w);
      ASSERT_FALSE(t.ok());
      EXPECT_EQ(t.error().status, Status::format) << t.error().message;
      std::string out;
      const auto j = cbor::append_json(b, out);
      ASSERT_FALSE(j.ok());
      EXPECT_EQ(j.error().status, Status::format) << j.error().message;
      EXPECT_FALSE(cbor::container_count(b).ok());
      EXPECT_FALSE(cbor::for_each_entry(b, [](std::string_view, std::span<const uint8_t>) -> Result<void> {
                     return {};
                   }).ok());
      EXPECT_FALSE(cbor::find_entry(b, "k").ok());
    };
    check(m.bytes);
    EXPECT_EQ(cbor::scalar(m.bytes).ok(), m.head_ok);
    check(cat({Bytes{0xA1, 0x61, 'k'}, m.bytes}));
    check(cat({Bytes{0x81}, m.bytes}));
    // cbor::decode refuses them too.
    EXPECT_FALSE(cbor::decode(m.bytes).ok());
  }
}

TEST(CborItem, DepthLimit) {
  const size_t limit = Limits::cbor_depth;
  const Bytes at = nested_arrays(limit);
  const auto size = cbor::item_size(at);
  ASSERT_TRUE(size.ok()) << size.error().message;
  EXPECT_EQ(*size, limit);
  EXPECT_EQ(transcoded(at), at);
  EXPECT_EQ(json_of(at), std::string(limit, '[') + std::string(limit, ']'));
  EXPECT_EQ(*cbor::container_count(at), 1u);
  EXPECT_TRUE(cbor::decode(at).ok());

  const auto deeper = [](std::span<const uint8_t> b) {
    const auto s = cbor::item_size(b);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().status, Status::limit) << s.error().message;
    CborWriter w;
    const auto t = cbor::transcode(b, w);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().status, Status::limit);
    std::string out;
    const auto j = cbor::append_json(b, out);
    ASSERT_FALSE(j.ok());
    EXPECT_EQ(j.error().status, Status::limit);
  };
  const Bytes over = nested_arrays(limit + 1);
  deeper(over);
  EXPECT_EQ(cbor::container_count(over).error().status, Status::limit);
  EXPECT_EQ(cbor::decode(over).error().status, Status::limit);
  // In a map value the map is level 1; empty innermost containers count.
  const Bytes in_map = cat({Bytes{0xA1, 0x61, 'k'}, nested_arrays(limit)});
  deeper(in_map);
  EXPECT_EQ(cbor::for_each_entry(in_map, [](std::string_view, std::span<const uint8_t>) -> Result<void> {
              return {};
            }).error().status,
            Status::limit);
  EXPECT_EQ(cbor::find_entry(in_map, "k").error().status, Status::limit);
  Bytes maps;
  for (size_t i = 0; i < limit; ++i) append(maps, Bytes{0xBF, 0x61, 'k'});
  maps.push_back(0xA0);
  deeper(maps);
  // Far deeper than the limit: refused at the limit, no deep recursion.
  deeper(Bytes(1000000, 0x81));
  deeper(Bytes(1000000, 0x9F));
  // Stacked tags are a loop, not nesting.
  Bytes tags(100000, 0xC6);
  tags.push_back(0x01);
  EXPECT_EQ(*cbor::item_size(tags), tags.size());
  EXPECT_EQ(transcoded(tags), (Bytes{0x01}));
}

// ---------------------------------------------------------------------------
// Random items: every function agrees with cbor::decode + encode_value /
// cbor_to_json on the same bytes.

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  // One random value nested `depth` deep, written to `plain` in CborWriter's
  // forms (definite, shortest) and to `fancy` in others of the same value:
  // indefinite lengths, chunked strings, tags, integers in longer heads.
  void value(unsigned depth, CborWriter& plain, CborWriter& fancy) {
    tags(fancy);
    if (depth < 4 && coin(depth == 0 ? 60 : 25)) {
      if (coin(50)) map(depth, plain, fancy);
      else array(depth, plain, fancy);
      return;
    }
    switch (pick(12)) {
      case 0: {
        const uint64_t v = integer();
        plain.uint(v);
        if (coin(30)) raw(fancy, head64(0x1B, v));
        else fancy.uint(v);
        return;
      }
      case 1: {
        const uint64_t n = integer();
        plain.negint(n);
        if (coin(30)) raw(fancy, head64(0x3B, n));
        else fancy.negint(n);
        return;
      }
      case 2: {
        static constexpr uint64_t kSpecial[] = {0, 0x8000000000000000, 0x3FF8000000000000, 0x7FF0000000000000,
                                                0xFFF0000000000000, 0x7FF8000000000000, 0x7FF0000000000001,
                                                0xFFF8000000000123, 0x0000000000000001, 0x7FEFFFFFFFFFFFFF};
        const uint64_t bits = coin(50) ? kSpecial[pick(std::size(kSpecial))] : rng64();
        plain.f64(std::bit_cast<double>(bits));
        raw(fancy, head64(0xFB, bits));
        return;
      }
      case 3: {  // half float: the same bytes in both
        static constexpr uint16_t kSpecial[] = {0x3C00, 0x7E00, 0x7C00, 0xFC00, 0x0001, 0x8000, 0x7BFF, 0x7C01};
        const uint16_t bits = coin(50) ? kSpecial[pick(std::size(kSpecial))] : static_cast<uint16_t>(pick(65536));
        const Bytes b = {0xF9, static_cast<uint8_t>(bits >> 8), static_cast<uint8_t>(bits)};
        raw(plain, b);
        raw(fancy, b);
        return;
      }
      case 4: {  // single float: raw in one, widened to a double in the other
        static constexpr uint32_t kSpecial[] = {0x3FC00000, 0x7FC00000, 0x7F800000, 0xFF800000, 0x00000001, 0x80000000};
        const uint32_t bits = coin(50) ? kSpecial[pick(std::size(kSpecial))] : static_cast<uint32_t>(rng64());
        plain.f64(static_cast<double>(std::bit_cast<float>(bits)));
        Bytes b = {0xFA};
        for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(bits >> s));
        raw(fancy, b);
        return;
      }
      case 5: return text(random_text(), plain, fancy);
      case 6: return bytes(plain, fancy);
      case 7: {
        const bool b = coin(50);
        plain.boolean(b);
        fancy.boolean(b);
        return;
      }
      case 8:
        plain.null();
        fancy.null();
        return;
      case 9:
        plain.undefined();
        fancy.undefined();
        return;
      case 10: {
        const uint8_t v = coin(50) ? static_cast<uint8_t>(pick(20)) : static_cast<uint8_t>(32 + pick(224));
        plain.simple(v);
        fancy.simple(v);
        return;
      }
      default: {  // a small integer in a longer head than needed
        const uint64_t v = pick(30);
        plain.uint(v);
        raw(fancy, Bytes{0x19, 0x00, static_cast<uint8_t>(v)});
        return;
      }
    }
  }

  // A random map; `keys` receives its keys.
  void map(unsigned depth, CborWriter& plain, CborWriter& fancy, std::vector<std::string>* keys = nullptr) {
    const size_t n = pick(6);
    plain.map(n);
    const bool indefinite = coin(50);
    if (indefinite) raw(fancy, Bytes{0xBF});
    else fancy.map(n);
    for (size_t i = 0; i < n; ++i) {
      // Unique: the index ends at the first '_'.
      std::vector<std::string> key = random_text();
      key.insert(key.begin(), numbered("k", i) + "_");
      if (keys) keys->push_back(join(key));
      tags(fancy);
      text(key, plain, fancy);
      value(depth + 1, plain, fancy);
    }
    if (indefinite) raw(fancy, Bytes{0xFF});
  }

 private:
  uint64_t pick(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  bool coin(unsigned percent) { return pick(100) < percent; }
  uint64_t rng64() { return std::uniform_int_distribution<uint64_t>()(rng_); }
  static void raw(CborWriter& w, const Bytes& b) { w.raw(b); }
  static Bytes head64(uint8_t initial, uint64_t v) {
    Bytes b = {initial};
    for (int s = 56; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
    return b;
  }
  static std::string join(const std::vector<std::string>& pieces) {
    std::string s;
    for (const auto& p : pieces) s += p;
    return s;
  }

  uint64_t integer() {
    static constexpr uint64_t kSpecial[] = {0, 1, 23, 24, 255, 256, 65535, 65536, 0xFFFFFFFF, 0x100000000,
                                            0x7FFFFFFFFFFFFFFF, 0x8000000000000000, UINT64_MAX - 1, UINT64_MAX};
    return coin(70) ? kSpecial[pick(std::size(kSpecial))] : rng64() >> pick(64);
  }

  void tags(CborWriter& fancy) {
    static const Bytes kTags[] = {{0xC6}, {0xD4}, {0xCD}, {0xC0}, {0xC1}, {0xD5},
                                  {0xD8, 0x20}, {0xD9, 0x01, 0x00}, {0xDA, 0, 1, 0, 0}, {0xDB, 0, 0, 0, 0, 0, 0, 0, 1}};
    const uint64_t n = coin(70) ? 0 : 1 + pick(2);
    for (uint64_t i = 0; i < n; ++i) raw(fancy, kTags[pick(std::size(kTags))]);
    tagged_ = n > 0;
  }

  // Text as pieces that are whole code points, so chunks split between them.
  std::vector<std::string> random_text() {
    static const char* const kPieces[] = {"a", "Z", " ", "\"", "\\", "\n", "\x01", "\x7f", "é", "€", "😀", "/", "0"};
    std::vector<std::string> pieces;
    for (uint64_t n = pick(8); n > 0; --n) pieces.emplace_back(kPieces[pick(std::size(kPieces))]);
    return pieces;
  }

  void text(const std::vector<std::string>& pieces, CborWriter& plain, CborWriter& fancy) {
    const std::string s = join(pieces);
    plain.text(s);
    if (tagged_ || !coin(40)) return fancy.text(s);  // see TaggedIndefiniteStrings
    raw(fancy, Bytes{0x7F});
    std::string chunk;
    for (const auto& p : pieces) {
      chunk += p;
      if (coin(40)) {
        fancy.text(chunk);
        chunk.clear();
      }
    }
    if (!chunk.empty() || coin(30)) fancy.text(chunk);
    raw(fancy, Bytes{0xFF});
  }

  void bytes(CborWriter& plain, CborWriter& fancy) {
    std::string s;
    for (uint64_t n = pick(10); n > 0; --n) s += static_cast<char>(pick(256));
    plain.bytes(s);
    if (tagged_ || !coin(40)) return fancy.bytes(s);
    raw(fancy, Bytes{0x5F});
    size_t at = 0;
    while (at < s.size()) {
      const size_t len = std::min<size_t>(s.size() - at, pick(4));
      fancy.bytes(std::string_view(s).substr(at, len));
      at += len;
    }
    raw(fancy, Bytes{0xFF});
  }

  void array(unsigned depth, CborWriter& plain, CborWriter& fancy) {
    const size_t n = pick(6);
    plain.array(n);
    const bool indefinite = coin(50);
    if (indefinite) raw(fancy, Bytes{0x9F});
    else fancy.array(n);
    for (size_t i = 0; i < n; ++i) value(depth + 1, plain, fancy);
    if (indefinite) raw(fancy, Bytes{0xFF});
  }

  std::mt19937 rng_;
  bool tagged_ = false;  // whether tags() wrote tags before the item being written
};

// Every function on `item` against the Document cbor::decode makes of it.
void check_against_decode(const Bytes& item, const std::vector<std::string>* keys) {
  const auto doc = cbor::decode(item);
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  CborWriter w;
  encode_value(*doc, 0, w);
  EXPECT_EQ(transcoded(item), w.bytes());
  EXPECT_EQ(as_oracle_has_it(json_of(item)), dump_json(cbor_to_json(*doc, 0)));
  const auto size = cbor::item_size(plus(item, {0x00, 0xFF}));
  ASSERT_TRUE(size.ok()) << size.error().message;
  EXPECT_EQ(*size, item.size());

  const cbor::Node& root = doc->root();
  const auto s = cbor::scalar(item);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->kind, root.kind);
  switch (root.kind) {
    case Kind::uint:
    case Kind::negint:
    case Kind::simple: EXPECT_EQ(s->u, root.u); break;
    case Kind::boolean: EXPECT_EQ(s->flag, root.flag); break;
    case Kind::float_: EXPECT_EQ(std::bit_cast<uint64_t>(s->f), std::bit_cast<uint64_t>(root.f)); break;
    case Kind::text:
    case Kind::bytes: EXPECT_EQ(s->str, root.str); break;
    case Kind::array:
    case Kind::map: {
      const auto n = cbor::container_count(item);
      ASSERT_TRUE(n.ok()) << n.error().message;
      EXPECT_EQ(*n, root.count);
      break;
    }
    default: break;
  }
  if (root.kind != Kind::map) return;
  // Keys in order; each value transcodes to its node's encoding and is what find_entry finds.
  std::vector<std::string> doc_keys;
  std::vector<Bytes> doc_values;
  uint32_t k = cbor::Document::first_child(0);
  for (uint32_t p = 0; p < root.count; ++p) {
    const uint32_t v = doc->next(k);
    doc_keys.emplace_back(doc->node(k).str);
    CborWriter vw;
    encode_value(*doc, v, vw);
    doc_values.push_back(vw.take());
    k = doc->next(v);
  }
  std::vector<std::string> seen;
  const auto r = cbor::for_each_entry(item, [&](std::string_view key, std::span<const uint8_t> value) -> Result<void> {
    const size_t i = seen.size();
    seen.emplace_back(key);
    if (i < doc_values.size()) {
      EXPECT_EQ(transcoded(value), doc_values[i]);
    }
    const auto found = cbor::find_entry(item, key);
    EXPECT_TRUE(found.ok() && found->has_value() && found->value().data() == value.data() &&
                found->value().size() == value.size());
    return {};
  });
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(seen, doc_keys);
  if (keys) {
    EXPECT_EQ(seen, *keys);
  }
}

TEST(CborItem, RandomItemsMatchDecodeEncodeAndJson) {
  Generator gen(20240611);
  for (int i = 0; i < 400; ++i) {
    SCOPED_TRACE(i);
    CborWriter plain, fancy;
    std::vector<std::string> keys;
    if (i % 2 == 0) gen.map(0, plain, fancy, &keys);
    else gen.value(0, plain, fancy);
    const std::vector<std::string>* k = i % 2 == 0 ? &keys : nullptr;
    check_against_decode(plain.bytes(), k);
    check_against_decode(fancy.bytes(), k);
    // Both forms hold the same value.
    EXPECT_EQ(transcoded(plain.bytes()), transcoded(fancy.bytes()));
    EXPECT_EQ(json_of(plain.bytes()), json_of(fancy.bytes()));
    if (HasFatalFailure() || HasFailure()) break;
  }
}

// Random items with a byte changed, inserted or cut off: every function
// returns (no crash, no hang), and whatever cbor::decode accepts, the
// functions here accept too with the same value. (The converse does not
// hold: duplicate keys are not checked here.)
TEST(CborItem, MutatedItemsNeverCrashAndAgreeWithDecode) {
  Generator gen(7);
  std::mt19937 rng(11);
  const auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  int accepted = 0;
  for (int i = 0; i < 300; ++i) {
    CborWriter plain, fancy;
    gen.value(0, plain, fancy);
    for (const Bytes* item : {&plain.bytes(), &fancy.bytes()}) {
      for (int m = 0; m < 4; ++m) {
        Bytes b = *item;
        switch (pick(3)) {
          case 0: b[pick(b.size())] = static_cast<uint8_t>(pick(256)); break;
          case 1: b.insert(b.begin() + static_cast<std::ptrdiff_t>(pick(b.size() + 1)), static_cast<uint8_t>(pick(256))); break;
          default: b.resize(pick(b.size())); break;
        }
        const auto size = cbor::item_size(b);
        CborWriter w;
        const auto t = cbor::transcode(b, w);
        std::string json;
        const auto j = cbor::append_json(b, json);
        (void)cbor::scalar(b);
        (void)cbor::container_count(b);
        (void)cbor::find_entry(b, "k0_");
        size_t entries = 0;
        (void)cbor::for_each_entry(b, [&](std::string_view, std::span<const uint8_t>) -> Result<void> {
          ++entries;
          return {};
        });
        EXPECT_EQ(size.ok(), t.ok());
        EXPECT_EQ(size.ok(), j.ok());
        const auto doc = cbor::decode(b);
        if (!doc.ok()) continue;
        ++accepted;
        ASSERT_TRUE(size.ok()) << size.error().message;
        EXPECT_EQ(*size, b.size());
        CborWriter want;
        encode_value(*doc, 0, want);
        EXPECT_EQ(w.bytes(), want.bytes());
        EXPECT_EQ(as_oracle_has_it(json), dump_json(cbor_to_json(*doc, 0)));
      }
    }
    if (HasFailure()) break;
  }
  EXPECT_GT(accepted, 100);  // the check above ran on many items
}

}  // namespace
}  // namespace zt::test
