// The manifest's CBOR: definite and indefinite lengths, duplicate keys,
// nesting depth, trailing bytes, key types, UTF-8, and the heads libcbor 0.8
// refuses although RFC 8949 allows them (tags 6..20, unassigned simple values).
#include <gtest/gtest.h>
#include <xxhash.h>

#include <string>
#include <tuple>
#include <unordered_map>

#include "base/zt_limits.h"
#include "cbor/cbor_encode.h"
#include "cbor/cbor_value.h"
#include "test_files.h"

namespace zt::test {
namespace {

// A file with one dense f32 object "w" of two elements.
FileBuilder one_object() {
  FileBuilder b;
  b.dense("w", "f32", {2}, le<float>({3.0f, 4.0f}));
  return b;
}

// The manifest of `b` with a file "attributes" entry whose value is given
// as raw CBOR bytes.
Bytes with_raw_attributes(const FileBuilder& b, std::span<const uint8_t> attributes) {
  CborWriter w;
  w.map(3);
  w.text("version");
  w.text(b.manifest.at("version").get<std::string>());
  w.text("objects");
  w.raw(cbor(b.manifest.at("objects")));
  w.text("attributes");
  w.raw(attributes);
  return b.build(w.take());
}

// A map of one entry {key: value} with the value as raw CBOR.
Bytes map_of(std::string_view key, std::span<const uint8_t> value) {
  return cat({Bytes{0xA1}, cbor_text(key), value});
}

// k nested one-item arrays around an empty array: [[...[]...]].
Bytes nested_arrays(size_t k) {
  Bytes b(k - 1, 0x81);
  b.push_back(0x80);
  return b;
}

Json attributes_json(const zt_reader* r) {
  const Json j = Json::parse(zt_manifest_json(r));
  return j.at("attributes");
}

TEST(Cbor, DefiniteLengthsOpen) {
  const FileBuilder b = one_object();
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_EQ(map_component(o.get(), "w", "data").bytes, le<float>({3.0f, 4.0f}));
}

TEST(Cbor, IndefiniteMapsArraysAndStringsOpen) {
  FileBuilder b = one_object();
  b.manifest["attributes"] = Json{{"note", "chunked é text"},
                                  {"blob", Json::binary({1, 2, 3, 4, 5})},
                                  {"list", Json::array({1, "two", Json::array({3})})}};
  const Bytes definite = b.build();
  const Bytes indefinite = b.build(cbor_indefinite(b.manifest));
  ASSERT_NE(definite, indefinite);
  const Opened d = open_memory(definite);
  const Opened i = open_memory(indefinite);
  ASSERT_EQ(d.status, ZT_OK) << d.error;
  ASSERT_EQ(i.status, ZT_OK) << i.error;
  EXPECT_STREQ(zt_file_version(i.get()), "1.2.0");
  size_t ndim = 0;
  const uint64_t* shape = zt_object_shape(i.get(), object_index(i.get(), "w"), &ndim);
  ASSERT_EQ(ndim, 1u);
  EXPECT_EQ(shape[0], 2u);
  EXPECT_EQ(map_component(i.get(), "w", "data").bytes, le<float>({3.0f, 4.0f}));
  // Both encodings describe the same manifest.
  EXPECT_EQ(Json::parse(zt_manifest_json(d.get())), Json::parse(zt_manifest_json(i.get())));
  EXPECT_EQ(attributes_json(i.get()).at("note"), "chunked é text");
  EXPECT_EQ(attributes_json(i.get()).at("blob"), Json({{"$bytes", "AQIDBAU="}}));
}

TEST(Cbor, EmptyIndefiniteContainersAndStringsOpen) {
  const FileBuilder b = one_object();
  // {"e": [_ ], "m": {_ }, "t": (_ ), "b": (_ )}
  const Bytes attrs =
      cat({Bytes{0xA4}, cbor_text("e"), Bytes{0x9F, 0xFF}, cbor_text("m"), Bytes{0xBF, 0xFF},
           cbor_text("t"), Bytes{0x7F, 0xFF}, cbor_text("b"), Bytes{0x5F, 0xFF}});
  const Bytes f = with_raw_attributes(b, attrs);
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_EQ(
      attributes_json(o.get()),
      Json({{"e", Json::array()}, {"m", Json::object()}, {"t", ""}, {"b", {{"$bytes", ""}}}}));
}

TEST(Cbor, DuplicateRootKeyIsFormat) {
  const FileBuilder b = one_object();
  CborWriter w;
  w.map(3);
  w.text("version");
  w.text("1.2.0");
  w.text("objects");
  w.raw(cbor(b.manifest.at("objects")));
  w.text("version");
  w.text("1.2.0");
  EXPECT_TRUE(OpensWith(b.build(w.take()), ZT_ERR_FORMAT, {"duplicate map key \"version\""}));
}

TEST(Cbor, DuplicateObjectNameIsFormat) {
  FileBuilder b = one_object();
  const Json w = b.manifest["objects"]["w"];
  CborWriter objects;
  objects.map(2);
  objects.text("w");
  objects.raw(cbor(w));
  objects.text("w");
  objects.raw(cbor(w));
  CborWriter m;
  m.map(2);
  m.text("version");
  m.text("1.2.0");
  m.text("objects");
  m.raw(objects.bytes());
  EXPECT_TRUE(OpensWith(b.build(m.take()), ZT_ERR_FORMAT, {"duplicate map key \"w\""}));
}

TEST(Cbor, DuplicateComponentFieldIsFormat) {
  FileBuilder b = one_object();
  // The component {"dtype", "offset", "length", "offset"} spliced in by hand.
  const Json& c = b.component("w", "data");
  CborWriter comp;
  comp.map(4);
  comp.text("dtype");
  comp.text("f32");
  comp.text("offset");
  comp.uint(c.at("offset").get<uint64_t>());
  comp.text("length");
  comp.uint(8);
  comp.text("offset");
  comp.uint(c.at("offset").get<uint64_t>());
  const Bytes obj =
      cat({Bytes{0xA3}, cbor_text("shape"), cbor(Json::array({2})), cbor_text("format"),
           cbor_text("dense"), cbor_text("components"), map_of("data", comp.bytes())});
  const Bytes manifest = cat({Bytes{0xA2}, cbor_text("version"), cbor_text("1.2.0"),
                              cbor_text("objects"), map_of("w", obj)});
  EXPECT_TRUE(OpensWith(b.build(manifest), ZT_ERR_FORMAT, {"duplicate map key \"offset\""}));
}

TEST(Cbor, DuplicateKeyInIndefiniteMapIsFormat) {
  const FileBuilder b = one_object();
  const Bytes attrs =
      cat({Bytes{0xBF}, cbor_text("k"), cbor(1), cbor_text("k"), cbor(2), Bytes{0xFF}});
  EXPECT_TRUE(OpensWith(with_raw_attributes(b, attrs), ZT_ERR_FORMAT, {"duplicate map key \"k\""}));
}

TEST(Cbor, DuplicateKeySpelledInChunksIsFormat) {
  const FileBuilder b = one_object();
  // "ab" once definite and once as the chunks "a" + "b".
  const Bytes attrs = cat({Bytes{0xA2}, cbor_text("ab"), cbor(1), Bytes{0x7F}, cbor_text("a"),
                           cbor_text("b"), Bytes{0xFF}, cbor(2)});
  EXPECT_TRUE(
      OpensWith(with_raw_attributes(b, attrs), ZT_ERR_FORMAT, {"duplicate map key \"ab\""}));
}

// Keys are checked by a 32-bit hash and then by their text: among 300 000
// distinct keys some hashes collide (about ten pairs), and none of them is
// taken for a duplicate; the same key twice still is, wherever it sits.
TEST(Cbor, KeysWithEqualHashesAreComparedByText) {
  const FileBuilder b = one_object();
  const size_t n = 300000;
  CborWriter w;
  w.map(n);
  for (size_t i = 0; i < n; ++i) {
    w.text(numbered("k", i));
    w.uint(i % 24);
  }
  EXPECT_TRUE(OpensWith(with_raw_attributes(b, w.bytes()), ZT_OK));

  CborWriter d;
  d.map(n + 1);
  for (size_t i = 0; i < n; ++i) {
    d.text(numbered("k", i));
    d.uint(1);
  }
  d.text(numbered("k", 123456));
  d.uint(2);
  EXPECT_TRUE(OpensWith(with_raw_attributes(b, d.bytes()), ZT_ERR_FORMAT,
                        {"duplicate map key \"k123456\""}));
}

// A map of a few keys is checked by comparing its keys' 32-bit hashes
// pairwise: two distinct keys with equal hashes are told apart by their
// text there too, and the same key twice is refused beside them.
TEST(Cbor, FewKeysWithEqualHashesAreComparedByText) {
  std::unordered_map<uint32_t, std::string> seen;
  std::string a, b;
  for (size_t i = 0; a.empty(); ++i) {  // a birthday search: ~80 000 keys
    std::string k = numbered("k", i);
    const auto top = static_cast<uint32_t>(XXH3_64bits(k.data(), k.size()) >> 32);
    const auto [at, fresh] = seen.emplace(top, k);
    if (!fresh) std::tie(a, b) = std::pair(at->second, k);
  }
  const FileBuilder f = one_object();
  CborWriter w;
  w.map(3);
  for (const std::string& k : {a, std::string("x"), b}) {
    w.text(k);
    w.uint(1);
  }
  EXPECT_TRUE(OpensWith(with_raw_attributes(f, w.bytes()), ZT_OK)) << a << " " << b;
  CborWriter d;
  d.map(4);
  for (const std::string& k : {a, b, std::string("x"), b}) {
    d.text(k);
    d.uint(1);
  }
  EXPECT_TRUE(OpensWith(with_raw_attributes(f, d.bytes()), ZT_ERR_FORMAT,
                        {"duplicate map key \"" + b + "\""}));
}

TEST(Cbor, TaggedIndefiniteStringsOpen) {
  const FileBuilder b = one_object();
  // tag 1 and tag 6 (which libcbor 0.8 does not decode) on "ab" in chunks.
  const Bytes attrs =
      cat({Bytes{0xA2}, cbor_text("t1"), Bytes{0xC1, 0x7F}, cbor_text("a"), cbor_text("b"),
           Bytes{0xFF}, cbor_text("t6"), Bytes{0xC6, 0x7F}, cbor_text("ab"), Bytes{0xFF}});
  const Bytes file = with_raw_attributes(b, attrs);  // read in place: must outlive the reader
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_EQ(attributes_json(o.get()).dump(), R"({"t1":"ab","t6":"ab"})");
  // A tag on a chunk is not well-formed.
  const Bytes chunk_tag = map_of("t", cat({Bytes{0x7F, 0xC6}, cbor_text("a"), Bytes{0xFF}}));
  EXPECT_TRUE(OpensWith(with_raw_attributes(b, chunk_tag), ZT_ERR_FORMAT,
                        {"tag inside an indefinite-length string"}));
}

TEST(Cbor, SameKeyInDifferentMapsIsFine) {
  const FileBuilder b = one_object();
  const Bytes attrs = cat(
      {Bytes{0xA2}, cbor_text("k"), map_of("k", cbor(1)), cbor_text("j"), map_of("k", cbor(2))});
  EXPECT_TRUE(OpensWith(with_raw_attributes(b, attrs), ZT_OK));
}

TEST(Cbor, NestingAtTheDepthLimitOpens) {
  const FileBuilder b = one_object();
  // Root map (depth 1) > attributes map (2) > arrays (3 ... limit).
  const Bytes attrs = map_of("deep", nested_arrays(Limits::cbor_depth - 2));
  EXPECT_TRUE(OpensWith(with_raw_attributes(b, attrs), ZT_OK));
}

TEST(Cbor, NestingBeyondTheDepthLimitIsLimit) {
  const FileBuilder b = one_object();
  const Bytes attrs = map_of("deep", nested_arrays(Limits::cbor_depth - 1));
  EXPECT_TRUE(OpensWith(with_raw_attributes(b, attrs), ZT_ERR_LIMIT, {"nesting"}));
}

TEST(Cbor, VeryDeepNestingIsLimitWithoutRecursion) {
  const FileBuilder b = one_object();
  const Bytes attrs = map_of("deep", nested_arrays(200000));
  EXPECT_TRUE(OpensWith(with_raw_attributes(b, attrs), ZT_ERR_LIMIT, {"nesting"}));
  // Indefinite arrays too.
  Bytes indef(200000, 0x9F);
  indef.insert(indef.end(), 200000, 0xFF);
  EXPECT_TRUE(OpensWith(with_raw_attributes(b, map_of("deep", indef)), ZT_ERR_LIMIT, {"nesting"}));
}

TEST(Cbor, TrailingBytesAreFormat) {
  const FileBuilder b = one_object();
  const Bytes m = cbor(b.manifest);
  EXPECT_TRUE(OpensWith(b.build(cat({m, Bytes{0x00}})), ZT_ERR_FORMAT, {"1 trailing bytes"}));
  EXPECT_TRUE(OpensWith(b.build(cat({m, m})), ZT_ERR_FORMAT, {"trailing bytes"}));
  // A tag number that libcbor 0.8 does not know, after the item.
  EXPECT_TRUE(OpensWith(b.build(cat({m, Bytes{0xC6}})), ZT_ERR_FORMAT, {"trailing bytes"}));
}

TEST(Cbor, TruncatedManifestIsFormat) {
  const FileBuilder b = one_object();
  Bytes m = cbor(b.manifest);
  m.pop_back();
  EXPECT_TRUE(OpensWith(b.build(m), ZT_ERR_FORMAT));
  // An indefinite map without its break.
  Bytes i = cbor_indefinite(b.manifest);
  i.pop_back();
  EXPECT_TRUE(OpensWith(b.build(i), ZT_ERR_FORMAT, {"truncated"}));
}

TEST(Cbor, MalformedHeadsAreFormat) {
  const FileBuilder b = one_object();
  EXPECT_TRUE(OpensWith(b.build(Bytes{0xFF}), ZT_ERR_FORMAT));  // a lone break
  EXPECT_TRUE(
      OpensWith(b.build(Bytes{0x1C}), ZT_ERR_FORMAT, {"malformed"}));  // reserved additional info
  // An array claiming 2^64 - 1 items in a few bytes.
  EXPECT_TRUE(OpensWith(with_raw_attributes(b, map_of("a", Bytes{0x9B, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                                                                 0xFF, 0xFF, 0xFF})),
                        ZT_ERR_FORMAT, {"more items"}));
  // An indefinite map whose last key has no value.
  EXPECT_TRUE(OpensWith(with_raw_attributes(b, cat({Bytes{0xBF}, cbor_text("k"), Bytes{0xFF}})),
                        ZT_ERR_FORMAT, {"key without a value"}));
  // A definite string inside an indefinite text string must be text.
  EXPECT_TRUE(
      OpensWith(with_raw_attributes(b, map_of("t", Bytes{0x7F, 0x41, 'x', 0xFF})), ZT_ERR_FORMAT));
}

TEST(Cbor, NonTextKeysAreInvalid) {
  const FileBuilder b = one_object();
  // Integer, byte string, array and float keys in the attributes map.
  EXPECT_TRUE(OpensWith(with_raw_attributes(b, cat({Bytes{0xA1, 0x01}, cbor(1)})), ZT_ERR_INVALID,
                        {"not a text string"}));
  EXPECT_TRUE(OpensWith(with_raw_attributes(b, cat({Bytes{0xA1, 0x41, 'k'}, cbor(1)})),
                        ZT_ERR_INVALID, {"not a text string"}));
  EXPECT_TRUE(OpensWith(with_raw_attributes(b, cat({Bytes{0xA1, 0x80}, cbor(1)})), ZT_ERR_INVALID,
                        {"not a text string"}));
  EXPECT_TRUE(
      OpensWith(with_raw_attributes(b, cat({Bytes{0xBF, 0xF9, 0x3C, 0x00}, cbor(1), Bytes{0xFF}})),
                ZT_ERR_INVALID, {"not a text string"}));
  // An integer key at the root.
  const Bytes root =
      cat({Bytes{0xA3}, cbor_text("version"), cbor_text("1.2.0"), cbor_text("objects"),
           cbor(b.manifest.at("objects")), Bytes{0x07}, cbor(1)});
  EXPECT_TRUE(OpensWith(b.build(root), ZT_ERR_INVALID, {"not a text string"}));
}

TEST(Cbor, BadUtf8IsFormat) {
  const FileBuilder b = one_object();
  const std::vector<Bytes> bad = {
      {0x61, 0xFF},                    // 0xFF never occurs in UTF-8
      {0x62, 0xC0, 0x80},              // overlong NUL
      {0x63, 0xED, 0xA0, 0x80},        // a UTF-16 surrogate
      {0x64, 0xF4, 0x90, 0x80, 0x80},  // above U+10FFFF
      {0x62, 0xE2, 0x82},              // a sequence cut short
      {0x61, 0x80},                    // a lone continuation byte
  };
  for (const Bytes& text : bad) {
    SCOPED_TRACE(testing::PrintToString(text));
    EXPECT_TRUE(OpensWith(with_raw_attributes(b, map_of("t", text)), ZT_ERR_FORMAT, {"UTF-8"}));
    // As a key.
    EXPECT_TRUE(OpensWith(with_raw_attributes(b, cat({Bytes{0xA1}, text, cbor(1)})), ZT_ERR_FORMAT,
                          {"UTF-8"}));
  }
  // Bad UTF-8 after joining the chunks of an indefinite string.
  EXPECT_TRUE(
      OpensWith(with_raw_attributes(b, map_of("t", Bytes{0x7F, 0x61, 'a', 0x61, 0xFF, 0xFF})),
                ZT_ERR_FORMAT, {"UTF-8"}));
}

// The validator reads ASCII eight bytes at a time: every sequence, good
// or bad, is judged the same at each place in a longer ASCII text.
TEST(Cbor, Utf8IsJudgedTheSameAtEveryPlaceInALongText) {
  const std::vector<std::string> bad = {"\xFF",     "\xC0\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80",
                                        "\xE2\x82", "\x80"};
  const std::vector<std::string> good = {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\x7F"};
  for (size_t before = 0; before < 20; ++before) {
    for (size_t after = 0; after < 10; after += 3) {
      const std::string a(before, 'a'), z(after, 'z');
      for (const std::string& s : bad) {
        SCOPED_TRACE(before);
        EXPECT_FALSE(cbor::is_valid_utf8(a + s + z));
      }
      for (const std::string& s : good) EXPECT_TRUE(cbor::is_valid_utf8(a + s + z + s));
    }
  }
  EXPECT_TRUE(cbor::is_valid_utf8(std::string(64, 'x')));
  EXPECT_TRUE(cbor::is_valid_utf8(""));
}

TEST(Cbor, ValidUtf8Opens) {
  FileBuilder b = one_object();
  b.manifest["attributes"] =
      Json{{"é", "日本語"}, {"emoji", "\xF0\x9F\x98\x80"}, {"max", "\xF4\x8F\xBF\xBF"}};
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_EQ(attributes_json(o.get()).at("é"), "日本語");
}

TEST(Cbor, TagsSixToTwentyAndSimpleValuesOpen) {
  const FileBuilder b = one_object();
  // libcbor 0.8 refuses these heads; RFC 8949 allows them.
  const Bytes attrs = cat({Bytes{0xA7}, cbor_text("tag6"), Bytes{0xC6, 0x01},  // tag 6 (1)
                           cbor_text("tag20"), Bytes{0xD4}, cbor_text("x"),    // tag 20 ("x")
                           cbor_text("two_tags"), Bytes{0xC6, 0xD4, 0x02},     // tag 6 (tag 20 (2))
                           cbor_text("simple0"), Bytes{0xE0},                  // simple(0)
                           cbor_text("simple19"), Bytes{0xF3},                 // simple(19)
                           cbor_text("simple32"), Bytes{0xF8, 0x20},           // simple(32)
                           cbor_text("simple255"), Bytes{0xF8, 0xFF}});        // simple(255)
  const Bytes f = with_raw_attributes(b, attrs);
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const Json a = attributes_json(o.get());
  EXPECT_EQ(a.at("tag6"), 1);
  EXPECT_EQ(a.at("tag20"), "x");
  EXPECT_EQ(a.at("two_tags"), 2);
  EXPECT_TRUE(a.at("simple0").is_null());
  EXPECT_TRUE(a.at("simple255").is_null());
  EXPECT_EQ(map_component(o.get(), "w", "data").bytes, le<float>({3.0f, 4.0f}));
}

TEST(Cbor, TagsLibcborKnowsOpen) {
  const FileBuilder b = one_object();
  const Bytes attrs =
      cat({Bytes{0xA3}, cbor_text("date"), Bytes{0xC0}, cbor_text("2024-01-01T00:00:00Z"),  // tag 0
           cbor_text("epoch"), Bytes{0xC1, 0x1A, 0x65, 0x92, 0x00, 0x00},                   // tag 1
           cbor_text("cbor"), Bytes{0xD8, 0x18, 0x41, 0x00}});  // tag 24
  EXPECT_TRUE(OpensWith(with_raw_attributes(b, attrs), ZT_OK));
}

TEST(Cbor, TagBeforeTheRootOpens) {
  const FileBuilder b = one_object();
  EXPECT_TRUE(OpensWith(b.build(cat({Bytes{0xC6}, cbor(b.manifest)})), ZT_OK));
  EXPECT_TRUE(OpensWith(b.build(cat({Bytes{0xD9, 0xD9, 0xF7}, cbor(b.manifest)})),
                        ZT_OK));  // self-described CBOR
}

TEST(Cbor, TwoByteSimpleBelow32IsFormat) {
  const FileBuilder b = one_object();
  EXPECT_TRUE(OpensWith(with_raw_attributes(b, map_of("s", Bytes{0xF8, 0x10})), ZT_ERR_FORMAT,
                        {"simple value"}));
}

TEST(Cbor, TagWithoutItemIsFormat) {
  const FileBuilder b = one_object();
  EXPECT_TRUE(
      OpensWith(with_raw_attributes(b, cat({Bytes{0xBF}, cbor_text("k"), Bytes{0xC6, 0xFF}})),
                ZT_ERR_FORMAT, {"tag without an item"}));
}

TEST(Cbor, HalfFloatsAndNegativeIntegersOpen) {
  const FileBuilder b = one_object();
  const Bytes attrs =
      cat({Bytes{0xA4}, cbor_text("half"), Bytes{0xF9, 0x3E, 0x00},   // 1.5
           cbor_text("single"), Bytes{0xFA, 0x40, 0x20, 0x00, 0x00},  // 2.5
           cbor_text("neg"), Bytes{0x24},                             // -5
           cbor_text("min"), Bytes{0x3B, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}});
  const Bytes f = with_raw_attributes(b, attrs);
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const Json a = attributes_json(o.get());
  EXPECT_EQ(a.at("half").get<double>(), 1.5);
  EXPECT_EQ(a.at("single").get<double>(), 2.5);
  EXPECT_EQ(a.at("neg").get<int64_t>(), -5);
  EXPECT_EQ(a.at("min").get<int64_t>(), INT64_MIN);
}

}  // namespace
}  // namespace zt::test
