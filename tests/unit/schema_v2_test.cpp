// zTensor v2 manifests (L1, v2 spec §3, §4, §5.1, §7.1 and the decisions of
// docs/v2.md §4): what opens, how it appears through the unchanged C ABI,
// and each rule broken alone with its status and message.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "codec/zstd_seekable.h"
#include "test_files.h"

namespace zt::test {
namespace {

// A v2 file with one dense f32 object "w" of shape [2, 3].
FileBuilderV2 one_dense() {
  FileBuilderV2 b;
  b.dense("w", "f32", {2, 3}, pattern(24));
  return b;
}

TEST(SchemaV2, ADenseFileOpensAndReadsThroughTheCalls) {
  const Bytes file = one_dense().build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_file_version(o.get()), "2");
  ASSERT_EQ(zt_object_count(o.get()), 1u);
  EXPECT_STREQ(zt_object_format(o.get(), 0), "dense");
  EXPECT_STREQ(zt_component_role(o.get(), 0, 0), "data");
  EXPECT_STREQ(zt_component_dtype(o.get(), 0, "data"), "f32");
  EXPECT_STREQ(zt_component_encoding(o.get(), 0, "data"), "raw");
  const Mapped m = map_component(o.get(), "w", "data");
  ASSERT_EQ(m.status, ZT_OK);
  ASSERT_EQ(m.bytes.size(), 24u);
  EXPECT_EQ(0, std::memcmp(m.bytes.data(), pattern(24).data(), 24));
  uint64_t checked = 0, unchecked = 0;
  EXPECT_EQ(zt_verify(o.get(), &checked, &unchecked), ZT_OK) << zt_last_error();
}

// f8_e8m0 (Appendix A, OCP MX scales): 2^(e-127), 0xFF NaN, no sign.
TEST(SchemaV2, E8m0ConvertsToPowersOfTwo) {
  FileBuilderV2 b;
  Json parts{{"data", b.raw("u8", Bytes{0, 1, 126, 127, 128, 254, 255})}};
  parts["data"]["type"] = "f8_e8m0";
  b.object("s", "dense", {7}, parts);
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  float out[7];
  uint64_t written = 0;
  ASSERT_EQ(zt_object_read_f32(o.get(), 0, out, 7, &written), ZT_OK) << zt_last_error();
  ASSERT_EQ(written, 7u);
  EXPECT_EQ(out[0], std::ldexp(1.0f, -127));  // an f32 subnormal, exact
  EXPECT_EQ(out[1], std::ldexp(1.0f, -126));
  EXPECT_EQ(out[2], 0.5f);
  EXPECT_EQ(out[3], 1.0f);
  EXPECT_EQ(out[4], 2.0f);
  EXPECT_EQ(out[5], std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isnan(out[6]));
  // In a 1.x file the name means nothing known: exposed, never converted.
  FileBuilder v1;
  Json& obj = v1.dense("s", "u8", {2}, Bytes{127, 128});
  obj["components"]["data"]["type"] = "f8_e8m0";
  const Bytes old = v1.build();
  const Opened o1 = open_memory(old);
  ASSERT_EQ(o1.status, ZT_OK) << o1.error;
  EXPECT_EQ(zt_object_read_f32(o1.get(), 0, out, 2, &written), ZT_ERR_UNSUPPORTED);
}

// Object i holds the bool bytes {1, 2}: refused (INVALID, naming byte 0x02
// at element 1) by every call that gives them out as values, and given as
// they are by the structural reads.
void expect_bools_refused_as_values(const zt_reader* r, size_t i) {
  const std::initializer_list<std::string_view> why{"bool byte 0x02 at element 1"};
  float f[2];
  uint8_t b[2];
  uint64_t w = 0;
  const uint64_t begin[] = {0}, end[] = {2};
  const void* p = nullptr;
  zt_dense_info v;
  zt_dense_info_init(&v);
  EXPECT_TRUE(FailsWith(zt_object_read_f32(r, i, f, 2, &w), ZT_ERR_INVALID, why));
  EXPECT_TRUE(FailsWith(zt_object_decode_f32(r, i, f, 2, &w), ZT_ERR_INVALID, why));
  EXPECT_TRUE(FailsWith(zt_component_read_f32(r, i, "data", f, 2, &w), ZT_ERR_INVALID, why));
  EXPECT_TRUE(FailsWith(zt_dense_view(r, i, &v), ZT_ERR_INVALID, why));
  EXPECT_TRUE(FailsWith(zt_dense_rows_f32(r, i, 0, 2, f, 2, &w), ZT_ERR_INVALID, why));
  EXPECT_TRUE(FailsWith(zt_dense_rows(r, i, 0, 2, b, 2, &w), ZT_ERR_INVALID, why));
  EXPECT_TRUE(FailsWith(zt_dense_rows_map(r, i, 1, 2, &p, &w), ZT_ERR_INVALID, why));
  EXPECT_TRUE(FailsWith(zt_dense_slice(r, i, 1, begin, end, b, 2, &w), ZT_ERR_INVALID, why));
  EXPECT_TRUE(FailsWith(zt_dense_slice_f32(r, i, 1, begin, end, f, 2, &w), ZT_ERR_INVALID, why));
  // The row before the bad byte is fine.
  ASSERT_EQ(zt_dense_rows_f32(r, i, 0, 1, f, 1, &w), ZT_OK) << zt_last_error();
  EXPECT_EQ(f[0], 1.0f);
  ASSERT_EQ(zt_component_read(r, i, "data", b, 2, &w), ZT_OK) << zt_last_error();
  EXPECT_EQ(b[1], 2);
  ASSERT_EQ(zt_component_map(r, i, "data", &p, &w), ZT_OK) << zt_last_error();
  EXPECT_EQ(static_cast<const uint8_t*>(p)[1], 2);
}

// bool is a type over u8 in v2: it converts as 1.2's bool dtype does, and
// verify holds its bytes to 0 and 1.
TEST(SchemaV2, BoolConvertsAsZeroAndOne) {
  FileBuilderV2 b;
  b.dense("flags", "u8", {3}, Bytes{0, 1, 1})["parts"]["data"]["type"] = "bool";
  b.dense("bad", "u8", {2}, Bytes{1, 2})["parts"]["data"]["type"] = "bool";
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  float out[3];
  uint64_t written = 0;
  ASSERT_EQ(zt_object_read_f32(o.get(), object_index(o.get(), "flags"), out, 3, &written), ZT_OK)
      << zt_last_error();
  EXPECT_EQ(written, 3u);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[2], 1.0f);
  EXPECT_TRUE(FailsWith(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_INVALID,
                        {"object \"bad\"", "bool byte 0x02"}));
  // docs/v2.md decision 13: every call that hands the bytes out as values
  // refuses them as verify does; the structural reads do not look.
  expect_bools_refused_as_values(o.get(), object_index(o.get(), "bad"));
}

// A 1.2 file's bool dtype is held to the same rule.
TEST(SchemaV2, BoolDtypeOf12IsRefusedAsValuesToo) {
  FileBuilder b;
  b.dense("bad", "bool", {2}, Bytes{1, 2});
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  expect_bools_refused_as_values(o.get(), 0);
}

// f4_e2m1 (Appendix A, OCP MX): two values a byte, low nibble first; sign,
// two exponent bits (bias 1), one mantissa bit.
TEST(SchemaV2, F4e2m1ConvertsNibbleByNibble) {
  FileBuilderV2 b;
  Bytes all;  // the 16 codes in order: bytes 0x10, 0x32, ...
  for (uint8_t c = 0; c < 16; c += 2) all.push_back(static_cast<uint8_t>(c | (c + 1) << 4));
  b.dense("all", "u8", {16}, all)["parts"]["data"]["type"] = "f4_e2m1";
  // 3 x 3 = 9 values in 5 bytes: rows of an odd length share bytes.
  b.dense("m", "u8", {3, 3}, Bytes{0x21, 0x43, 0x65, 0x17, 0x02})["parts"]["data"]["type"] =
      "f4_e2m1";
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_EQ(zt_verify(o.get(), nullptr, nullptr), ZT_OK) << zt_last_error();
  const float want[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  float out[16];
  uint64_t written = 0;
  const size_t a = object_index(o.get(), "all"), m = object_index(o.get(), "m");
  ASSERT_EQ(zt_object_read_f32(o.get(), a, out, 16, &written), ZT_OK) << zt_last_error();
  ASSERT_EQ(written, 16u);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(out[i], want[i]) << i;
    EXPECT_EQ(std::signbit(out[i]), i >= 8) << i;
  }
  double d[16];
  ASSERT_EQ(zt_component_read_f64(o.get(), a, "data", d, 16, &written), ZT_OK) << zt_last_error();
  EXPECT_EQ(written, 16u);
  EXPECT_EQ(d[15], -6.0);
  // The 3 x 3 object: nibbles 1 2 3 | 4 5 6 | 7 1 2, the spare one 0.
  const float m_values[9] = {0.5f, 1, 1.5f, 2, 3, 4, 6, 0.5f, 1};
  ASSERT_EQ(zt_object_decode_f32(o.get(), m, out, 9, &written), ZT_OK) << zt_last_error();
  ASSERT_EQ(written, 9u);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(out[i], m_values[i]) << i;
  // Row 1 starts at the high nibble of byte 1.
  ASSERT_EQ(zt_dense_rows_f32(o.get(), m, 1, 3, out, 6, &written), ZT_OK) << zt_last_error();
  ASSERT_EQ(written, 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[i], m_values[3 + i]) << i;
  ASSERT_EQ(zt_dense_rows_f32(o.get(), m, 1, 2, out, 3, &written), ZT_OK) << zt_last_error();
  EXPECT_EQ(out[2], 4.0f);
  // As bytes, such rows would carry a neighbour's nibble.
  uint8_t raw[5];
  EXPECT_TRUE(FailsWith(zt_dense_rows(o.get(), m, 1, 2, raw, 5, &written), ZT_ERR_UNSUPPORTED,
                        {"do not start and end on a byte", "zt_dense_rows_f32"}));
  ASSERT_EQ(zt_dense_rows(o.get(), m, 0, 3, raw, 5, &written), ZT_OK) << zt_last_error();
  EXPECT_EQ(written, 5u);
  zt_dense_info info;
  zt_dense_info_init(&info);
  ASSERT_EQ(zt_dense_view(o.get(), m, &info), ZT_OK) << zt_last_error();
  EXPECT_EQ(info.elements, 9u);
  EXPECT_EQ(info.values, 5u);
  EXPECT_STREQ(info.type, "f4_e2m1");
}

// Decision 14: with an odd count, the spare high nibble of the last byte is
// 0; open does not look (no data bytes), verify and every conversion do.
TEST(SchemaV2, F4e2m1SpareNibbleMustBeZero) {
  FileBuilderV2 b;
  b.dense("m", "u8", {3, 3}, Bytes{0x21, 0x43, 0x65, 0x17, 0x52})["parts"]["data"]["type"] =
      "f4_e2m1";
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const std::initializer_list<std::string_view> why = {"object \"m\"", "odd count of 9 values",
                                                       "high nibble", "0x5"};
  EXPECT_TRUE(FailsWith(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_INVALID, why));
  float out[9];
  uint64_t written = 0;
  EXPECT_TRUE(FailsWith(zt_object_read_f32(o.get(), 0, out, 9, &written), ZT_ERR_INVALID, why));
  EXPECT_TRUE(
      FailsWith(zt_component_read_f32(o.get(), 0, "data", out, 9, &written), ZT_ERR_INVALID, why));
  EXPECT_TRUE(
      FailsWith(zt_dense_rows_f32(o.get(), 0, 2, 3, out, 3, &written), ZT_ERR_INVALID, why));
  zt_dense_info info;
  zt_dense_info_init(&info);
  EXPECT_TRUE(FailsWith(zt_dense_view(o.get(), 0, &info), ZT_ERR_INVALID, why));
  // Rows that stop short of the last byte never see it.
  EXPECT_EQ(zt_dense_rows_f32(o.get(), 0, 0, 2, out, 6, &written), ZT_OK) << zt_last_error();
  // The raw structural read is exempt, as for bool.
  EXPECT_EQ(map_component(o.get(), "m", "data").status, ZT_OK);
}

TEST(SchemaV2, AnEmptyModelOpens) {
  const Opened o = open_memory(FileBuilderV2().build());
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_EQ(zt_object_count(o.get()), 0u);
}

TEST(SchemaV2, ProfilesWithA12MeaningShowThe12Name) {
  FileBuilderV2 b;
  const Bytes values = le<float>({1, 2}), indices = le<uint32_t>({0, 2}),
              indptr = le<uint32_t>({0, 1, 2});
  b.object("csr", "zt.sparse_csr/1", {2, 3},
           Json{{"values", b.raw("f32", values)},
                {"indices", b.raw("u32", indices)},
                {"indptr", b.raw("u32", indptr)}});
  b.object("mx", "zt.mx/1", {32},
           Json{{"data", b.raw("u8", pattern(16))}, {"scales", b.raw("u8", Bytes{127})}});
  b.part("mx", "data")["type"] = "f4_e2m1";
  b.part("mx", "scales")["type"] = "f8_e8m0";
  b.manifest["objects"]["mx"]["attributes"] =
      Json{{"block_size", 32}, {"scale_form", "e8m0_exponent"}};
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_object_format(o.get(), object_index(o.get(), "csr")), "sparse_csr");
  EXPECT_STREQ(zt_object_layout(o.get(), object_index(o.get(), "csr")), "zt.sparse_csr/1");
  // A layout without a 1.2 meaning is shown as written, never under a 1.2 name.
  EXPECT_STREQ(zt_object_format(o.get(), object_index(o.get(), "mx")), "zt.mx/1");
}

TEST(SchemaV2, UnknownKeysAreIgnoredAtEveryLevel) {
  FileBuilderV2 b = one_dense();
  b.manifest["zz_future"] = Json{{"anything", {1, 2, 3}}};
  b.manifest["objects"]["w"]["zz_future"] = "x";
  b.part("w", "data")["zz_future"] = Json::array({Json::object()});
  const Opened o = open_memory(b.build());
  EXPECT_EQ(o.status, ZT_OK) << o.error;
}

TEST(SchemaV2, AManifestNotInDeterministicEncodingIsFormat) {
  const FileBuilderV2 b = one_dense();
  // nlohmann's order of the root keys is not the deterministic one once
  // "attributes" is there: "attributes" < "objects" as text, but the longer
  // key sorts last by its encoding.
  FileBuilderV2 unsorted = b;
  unsorted.manifest["attributes"] = Json{{"k", 1}};
  EXPECT_TRUE(OpensWith(unsorted.build(cbor(unsorted.manifest)), ZT_ERR_FORMAT,
                        {"deterministic encoding", "does not sort after"}));
  EXPECT_TRUE(
      OpensWith(b.build(cbor_indefinite(b.manifest)), ZT_ERR_FORMAT, {"indefinite length"}));
}

TEST(SchemaV2, ObjectsAreRequiredAndAMap) {
  FileBuilderV2 b;
  b.manifest = Json{{"attributes", Json::object()}};
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"no \"objects\""}));
  b.manifest = Json{{"objects", Json::array()}};
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"\"objects\" is not a map"}));
}

TEST(SchemaV2, LayoutIsDenseOrAVersionedProfileId) {
  for (const char* bad : {"sparse_csr", "zt.sparse_csr", "zt.sparse_csr/0", "zt.sparse_csr/01",
                          "zt./1", ".x/1", "zt.x/1a", "x/1"}) {
    FileBuilderV2 b = one_dense();
    b.manifest["objects"]["w"]["layout"] = bad;
    EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"layout", "profile id"})) << bad;
  }
  FileBuilderV2 b = one_dense();
  b.manifest["objects"]["w"].erase("layout");
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"\"layout\" is missing"}));
}

TEST(SchemaV2, AnUnknownLayoutOpensStructurally) {
  FileBuilderV2 b;
  b.object("kv", "acme.paged/12", {4}, Json{{"pages", b.raw("u8", pattern(7))}});
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_object_format(o.get(), 0), "acme.paged/12");
  const Mapped m = map_component(o.get(), "kv", "pages");
  EXPECT_EQ(m.status, ZT_OK);
  EXPECT_EQ(m.bytes.size(), 7u);
}

TEST(SchemaV2, PartsAreRequiredAndNotEmpty) {
  FileBuilderV2 b = one_dense();
  b.manifest["objects"]["w"]["parts"] = Json::object();
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"\"parts\" is empty"}));
  b.manifest["objects"]["w"].erase("parts");
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"\"parts\" is missing"}));
}

TEST(SchemaV2, DenseHasExactlyOnePartOfTheRightSize) {
  FileBuilderV2 b = one_dense();
  b.manifest["objects"]["w"]["parts"]["extra"] = b.raw("u8", pattern(3));
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"exactly one part"}));
  FileBuilderV2 c;
  c.dense("w", "f32", {2, 3}, pattern(20));
  EXPECT_TRUE(OpensWith(c.build(), ZT_ERR_INVALID, {"length 20 does not match", "24"}));
}

TEST(SchemaV2, BlobHasExactlyTwoUnsignedElements) {
  for (const Json& bad : {Json::array({4096}), Json::array({4096, 24, 0}), Json::array({4096, -1}),
                          Json(4096), Json::array({"4096", 24})}) {
    FileBuilderV2 b = one_dense();
    b.part("w", "data")["blob"] = bad;
    EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"\"blob\""})) << bad.dump();
  }
}

TEST(SchemaV2, DtypesAreTheTwelveStorageTypes) {
  FileBuilderV2 b;
  b.dense("w", "bool", {3}, pattern(3));
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"not one of the 12 storage types"}));
  FileBuilderV2 c;
  c.dense("w", "f128", {3}, pattern(48));
  EXPECT_TRUE(OpensWith(c.build(), ZT_ERR_INVALID, {"not one of the 12 storage types"}));
  FileBuilderV2 d = one_dense();
  d.part("w", "data").erase("dtype");
  EXPECT_TRUE(OpensWith(d.build(), ZT_ERR_INVALID, {"\"dtype\" is missing"}));
}

TEST(SchemaV2, V2LogicalTypesHaveTheirSizeFunctions) {
  FileBuilderV2 b;
  b.dense("flags", "u8", {3}, Bytes{0, 1, 1})["parts"]["data"]["type"] = "bool";
  b.dense("fp4", "u8", {5}, Bytes{0x21, 0x43, 0x05})["parts"]["data"]["type"] = "f4_e2m1";
  b.dense("e8", "u8", {2}, Bytes{127, 128})["parts"]["data"]["type"] = "f8_e8m0";
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_component_type(o.get(), object_index(o.get(), "flags"), "data"), "bool");
  EXPECT_STREQ(zt_component_dtype(o.get(), object_index(o.get(), "flags"), "data"), "u8");
  // f4_e2m1 is ceil(n / 2) bytes: 5 values in 3 bytes, not 5.
  FileBuilderV2 c;
  c.dense("fp4", "u8", {5}, pattern(5))["parts"]["data"]["type"] = "f4_e2m1";
  EXPECT_TRUE(OpensWith(c.build(), ZT_ERR_INVALID, {"does not match", "= 3"}));
  // A known type on the wrong dtype.
  FileBuilderV2 d;
  d.dense("flags", "i8", {3}, pattern(3))["parts"]["data"]["type"] = "bool";
  EXPECT_TRUE(OpensWith(d.build(), ZT_ERR_INVALID, {"type \"bool\" needs dtype \"u8\""}));
}

TEST(SchemaV2, AnUnknownTypeOpensWithoutASizeCheck) {
  FileBuilderV2 b;
  b.dense("w", "u8", {3}, pattern(5))["parts"]["data"]["type"] = "acme_int3";
  const Opened o = open_memory(b.build());
  EXPECT_EQ(o.status, ZT_OK) << o.error;
}

TEST(SchemaV2, RankAndProductRules) {
  FileBuilderV2 b;
  b.dense("w", "u8", std::vector<uint64_t>(65, 1), pattern(1));
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"65 dimensions", "more than 64"}));
  FileBuilderV2 c;
  c.dense("w", "u8", std::vector<uint64_t>(64, 1), pattern(1));
  EXPECT_TRUE(OpensWith(c.build(), ZT_OK));
  FileBuilderV2 d;
  d.dense("w", "u8", {uint64_t{1} << 32, uint64_t{1} << 32}, pattern(1));
  EXPECT_TRUE(OpensWith(d.build(), ZT_ERR_INVALID, {"overflows 64 bits"}));
}

TEST(SchemaV2, NamesAreAtMost1024Bytes) {
  FileBuilderV2 b;
  b.dense(std::string(1024, 'n'), "u8", {1}, pattern(1));
  EXPECT_TRUE(OpensWith(b.build(), ZT_OK));
  FileBuilderV2 c;
  c.dense(std::string(1025, 'n'), "u8", {1}, pattern(1));
  EXPECT_TRUE(OpensWith(c.build(), ZT_ERR_INVALID, {"object name of 1025 bytes", "1024"}));
  FileBuilderV2 d;
  d.object("w", "acme.x/1", {1}, Json{{std::string(1025, 'p'), d.raw("u8", pattern(1))}});
  EXPECT_TRUE(OpensWith(d.build(), ZT_ERR_INVALID, {"part name of 1025 bytes"}));
  FileBuilderV2 e = one_dense();
  e.manifest["attributes"] = Json{{std::string(1025, 'k'), 1}};
  EXPECT_TRUE(OpensWith(e.build(), ZT_ERR_INVALID, {"attribute name of 1025 bytes"}));
  FileBuilderV2 f;
  f.dense(std::string("a\0b", 3), "u8", {1}, pattern(1));
  EXPECT_TRUE(OpensWith(f.build(), ZT_ERR_INVALID, {"NUL"}));
}

TEST(SchemaV2, AttributesHoldNoTagsOrUndefined) {
  const FileBuilderV2 b = one_dense();
  const Bytes manifest = cbor_v2(b.manifest);
  // {"attributes": {"k": <value>}, "objects": ...} built by hand around
  // each value: the root map gains one key, sorted last (10-byte key).
  auto with_attribute = [&](std::initializer_list<uint8_t> value) {
    Bytes m = {0xA2};
    append(m, Bytes(manifest.begin() + 1, manifest.end()));  // "objects": {...}
    append(m, cbor_text("attributes"));
    append(m, Bytes{0xA1, 0x61, 'k'});
    append(m, Bytes(value));
    return b.build(m);
  };
  EXPECT_TRUE(OpensWith(with_attribute({0x01}), ZT_OK));
  EXPECT_TRUE(
      OpensWith(with_attribute({0xC1, 0x01}), ZT_ERR_INVALID, {"attribute \"k\"", "CBOR tag"}));
  EXPECT_TRUE(OpensWith(with_attribute({0x81, 0xF7}), ZT_ERR_INVALID, {"undefined"}));
  EXPECT_TRUE(OpensWith(with_attribute({0xF0}), ZT_ERR_INVALID, {"simple value 16"}));
}

TEST(SchemaV2, AttributesNestAtMost32LevelsFromTheRoot) {
  // Root (1) > attributes (2) > "k": arrays from level 3.
  auto nested = [](int levels) {
    Json j = Json::array();
    for (int i = 1; i < levels; ++i) j = Json::array({j});
    return j;
  };
  FileBuilderV2 b = one_dense();
  b.manifest["attributes"] = Json{{"k", nested(30)}};
  EXPECT_TRUE(OpensWith(b.build(), ZT_OK));
  b.manifest["attributes"] = Json{{"k", nested(31)}};
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_FORMAT, {"deeper than 32"}));
  // One counter over the whole manifest: unknown fields count too.
  FileBuilderV2 c = one_dense();
  c.manifest["zz"] = nested(32);
  EXPECT_TRUE(OpensWith(c.build(), ZT_ERR_FORMAT, {"deeper than 32"}));
}

TEST(SchemaV2, DecodedLengthIffEncoding) {
  FileBuilderV2 b = one_dense();
  b.part("w", "data")["decoded_length"] = 24;
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"iff"}));
  FileBuilderV2 c = one_dense();
  c.part("w", "data")["encoding"] = "zt.zstd-seekable/1";
  EXPECT_TRUE(OpensWith(c.build(), ZT_ERR_INVALID, {"iff"}));
  for (const char* bad : {"zstd", "raw", "zt.zstd-seekable"}) {
    FileBuilderV2 d = one_dense();
    d.part("w", "data")["encoding"] = bad;
    d.part("w", "data")["decoded_length"] = 24;
    EXPECT_TRUE(OpensWith(d.build(), ZT_ERR_INVALID, {"is not a profile id"})) << bad;
  }
}

TEST(SchemaV2, EncodingsShowTheir12NameAndKeepTheId) {
  FileBuilderV2 b;
  b.object("w", "acme.x/1", {1},
           Json{{"a", b.raw("u8", pattern(8))}, {"b", b.raw("u8", pattern(8))}});
  b.part("w", "a")["encoding"] = "zt.zstd-seekable/1";
  b.part("w", "a")["decoded_length"] = 100;
  b.part("w", "b")["encoding"] = "acme.lz/3";
  b.part("w", "b")["decoded_length"] = 100;
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_component_encoding(o.get(), 0, "a"), "zstd");
  EXPECT_STREQ(zt_component_encoding_id(o.get(), 0, "a"), "zt.zstd-seekable/1");
  EXPECT_STREQ(zt_component_encoding(o.get(), 0, "b"), "acme.lz/3");
  EXPECT_STREQ(zt_component_encoding_id(o.get(), 0, "b"), "acme.lz/3");
  EXPECT_STREQ(zt_object_layout(o.get(), 0), "acme.x/1");
  EXPECT_EQ(zt_component_shard(o.get(), 0, "a"), nullptr);
  EXPECT_EQ(zt_component_encoding_id(o.get(), 0, "nope"), nullptr);
  EXPECT_EQ(zt_object_layout(o.get(), 7), nullptr);
  uint64_t n = 0;
  ASSERT_EQ(zt_component_decoded_size(o.get(), 0, "a", &n), ZT_OK);
  EXPECT_EQ(n, 100u);
}

// decoded_length is stated for every encoded part (v2 spec 3.4), so a dense
// part's size equation (5.1) holds whatever the encoding: a part of a
// vendor's encoding whose decoded_length cannot fit the shape opened.
TEST(SchemaV2, SizeRulesHoldForAPartOfAnUnknownEncoding) {
  for (const uint64_t declared : {uint64_t{999}, uint64_t{17}, uint64_t{24}}) {
    FileBuilderV2 b;
    b.dense("w", "f32", {6}, pattern(16));
    b.part("w", "data")["encoding"] = "acme.lz/1";
    b.part("w", "data")["decoded_length"] = declared;
    const Bytes file = b.build();
    if (declared == 24) {
      const Opened o = open_memory(file);
      EXPECT_EQ(o.status, ZT_OK) << o.error;  // it fits: opens, decoding refused later
    } else {
      EXPECT_TRUE(OpensWith(file, ZT_ERR_INVALID, {"decoded_length", "does not match shape [6]"}))
          << declared;
    }
  }
}

TEST(SchemaV2, DigestsAreAlgorithmAndLowercaseHex) {
  for (const char* bad :
       {"xxh3:ABCDEF0123456789", "xxh3:abc", "0123456789abcdef", ":00", "xxh3:"}) {
    FileBuilderV2 b = one_dense();
    b.part("w", "data")["digest"] = bad;
    EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"digest"})) << bad;
  }
  // Unregistered algorithms (crc32c included) open, unchecked.
  FileBuilderV2 b = one_dense();
  b.part("w", "data")["digest"] = "blake3:00ff";
  EXPECT_TRUE(OpensWith(b.build(), ZT_OK));
}

TEST(SchemaV2, PlacementFollowsTheV2Rules) {
  {  // 64-aligned is not enough.
    FileBuilderV2 b = one_dense();
    b.part("w", "data")["blob"] = {4096 + 64, 24};
    EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"multiple of 4096"}));
  }
  {  // Zero-length blobs still obey alignment (decision 2) ...
    FileBuilderV2 b;
    b.dense("e", "u8", {0}, Bytes{});
    b.part("e", "data")["blob"] = {4100, 0};
    EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"multiple of 4096"}));
    b.part("e", "data")["blob"] = {0, 0};
    EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"multiple of 4096"}));
  }
  {  // ... but not the overlap rule: here it sits where the manifest is.
    FileBuilderV2 b;
    b.dense("e", "u8", {0}, Bytes{});
    b.part("e", "data")["blob"] = {b.manifest_offset(), 0};
    EXPECT_TRUE(OpensWith(b.build(), ZT_OK));
  }
  {  // A blob may not run into the footer.
    FileBuilderV2 b = one_dense();
    b.part("w", "data")["blob"] = {4096 * 3, 1};  // where the footer is
    EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"past the data region"}));
  }
  {  // Blobs overlapping in part.
    FileBuilderV2 b;
    b.object("w", "acme.x/1", {1},
             Json{{"a", b.raw("u8", pattern(8192))}, {"b", b.raw("u8", pattern(10))}});
    b.part("w", "b")["blob"] = {4096 + 4096, 10};  // inside "a"
    EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"overlaps"}));
    b.part("w", "b")["blob"] = {4096, 8192};  // the same range as "a": shared
    EXPECT_TRUE(OpensWith(b.build(), ZT_OK));
  }
}

TEST(SchemaV2, TheManifestBlobIsInTheOverlapSet) {
  FileBuilderV2 b;
  b.object("w", "acme.x/1", {1}, Json{{"data", b.raw("u8", pattern(24))}});
  const uint64_t at = b.manifest_offset();
  b.part("w", "data")["blob"] = {at, 24};  // over the manifest's first bytes
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"overlaps", "the manifest"}));
  // Exactly the manifest's range is sharing, which §2.4 allows (decision
  // 3). The manifest holds its own length: iterate to the fixed point.
  uint64_t length = 0;
  for (int i = 0; i < 4; ++i) {
    b.part("w", "data")["blob"] = {at, length};
    length = cbor_v2(b.manifest).size();
  }
  EXPECT_TRUE(OpensWith(b.build(), ZT_OK));
}

TEST(SchemaV2, ShardTableRules) {
  const std::string digest = "sha256:" + std::string(64, '0');
  auto with_shards = [&](Json table) {
    FileBuilderV2 b = one_dense();
    b.manifest["shards"] = std::move(table);
    return b;
  };
  EXPECT_TRUE(
      OpensWith(with_shards(Json{{"00001", {{"size", 8192}, {"digest", digest}}}}).build(), ZT_OK));
  for (const char* bad : {".hidden", "a/b", "..", "a b", "x%2f"}) {
    EXPECT_TRUE(OpensWith(with_shards(Json{{bad, {{"size", 8192}, {"digest", digest}}}}).build(),
                          ZT_ERR_INVALID, {"shard name"}))
        << bad;
  }
  EXPECT_TRUE(OpensWith(
      with_shards(Json{{std::string(65, 'a'), {{"size", 8192}, {"digest", digest}}}}).build(),
      ZT_ERR_INVALID, {"shard name"}));
  // A name with a NUL is shown whole, the NUL escaped, not cut at it.
  EXPECT_TRUE(OpensWith(
      with_shards(Json{{std::string("ab\0cd", 5), {{"size", 8192}, {"digest", digest}}}}).build(),
      ZT_ERR_INVALID, {"shard \"ab\\x00cd\": a shard name"}));
  EXPECT_TRUE(OpensWith(with_shards(Json{{"s", {{"digest", digest}}}}).build(), ZT_ERR_INVALID,
                        {"\"size\" is missing"}));
  EXPECT_TRUE(OpensWith(with_shards(Json{{"s", {{"size", 8192}}}}).build(), ZT_ERR_INVALID,
                        {"\"digest\" is missing"}));
  EXPECT_TRUE(
      OpensWith(with_shards(Json{{"s", {{"size", 8192}, {"digest", "crc32c:00000000"}}}}).build(),
                ZT_ERR_INVALID, {"xxh3 or sha256"}));
  EXPECT_TRUE(OpensWith(with_shards(Json{{"s", {{"size", 47}, {"digest", digest}}}}).build(),
                        ZT_ERR_INVALID, {"smaller than"}));
}

TEST(SchemaV2, PartsInShardsAreCheckedFromTheRootManifest) {
  const std::string digest = "xxh3:" + std::string(16, '0');
  FileBuilderV2 b = one_dense();
  b.part("w", "data")["shard"] = "s1";
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"shard \"s1\" is not in"}));
  b.manifest["shards"] = Json{{"s1", {{"size", 4096 + 24 + 40}, {"digest", digest}}}};
  EXPECT_TRUE(OpensWith(b.build(), ZT_OK));
  // Placement is against the shard's size, not this file's.
  b.manifest["shards"]["s1"]["size"] = 4096 + 23 + 40;
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"past the data region of shard \"s1\""}));
  // Overlap is per file: the same range here and in a shard is no overlap.
  FileBuilderV2 c;
  c.object("w", "acme.x/1", {1},
           Json{{"a", c.raw("u8", pattern(30))}, {"b", c.raw("u8", pattern(30))}});
  c.part("w", "b")["blob"] = {4096, 20};
  EXPECT_TRUE(OpensWith(c.build(), ZT_ERR_INVALID, {"overlaps"}));
  c.part("w", "b")["shard"] = "s1";
  c.manifest["shards"] = Json{{"s1", {{"size", 8192}, {"digest", digest}}}};
  EXPECT_TRUE(OpensWith(c.build(), ZT_OK));
}

TEST(SchemaV2, ManifestJsonUsesThe12VocabularyWithTheV2Additions) {
  FileBuilderV2 b;
  b.object(
      "w", "zt.sparse_coo/1", {4},
      Json{{"values", b.raw("f32", le<float>({1}))}, {"coords", b.raw("u32", le<uint32_t>({2}))}});
  b.part("w", "values")["encoding"] = "zt.zstd-seekable/1";
  b.part("w", "values")["decoded_length"] = 4;
  b.part("w", "coords")["shard"] = "s";
  b.manifest["shards"] = Json{{"s", {{"size", 16384}, {"digest", "xxh3:" + std::string(16, 'a')}}}};
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const Json j = Json::parse(zt_manifest_json(o.get()));
  EXPECT_EQ(j["version"], "2");
  EXPECT_EQ(j["shards"]["s"]["size"], 16384);
  const Json& w = j["objects"]["w"];
  EXPECT_EQ(w["format"], "sparse_coo");
  EXPECT_EQ(w["layout"], "zt.sparse_coo/1");
  EXPECT_EQ(w["components"]["values"]["encoding"], "zstd");
  EXPECT_EQ(w["components"]["values"]["encoding_id"], "zt.zstd-seekable/1");
  EXPECT_EQ(w["components"]["values"]["uncompressed_length"], 4);
  EXPECT_EQ(w["components"]["coords"]["shard"], "s");
  EXPECT_EQ(w["components"]["coords"]["offset"], 4096 + 4096);
}

// Digests cover the decoded bytes in v2 (§3.4): re-encoding keeps them.
TEST(SchemaV2, VerifyHashesDecodedBytes) {
  const Bytes data = pattern(4000);
  Bytes z;
  ASSERT_TRUE(seekable_compress(data, 1024, 3, z).ok());
  auto file_with = [&](const std::string& digest) {
    FileBuilderV2 b;
    b.object("w", "dense", {1000}, Json{{"data", b.raw("f32", z)}});
    b.part("w", "data")["encoding"] = "zt.zstd-seekable/1";
    b.part("w", "data")["decoded_length"] = data.size();
    b.part("w", "data")["digest"] = digest;
    return b.build();
  };
  for (const std::string& good : {xxh3_digest(data), sha256_digest(data)}) {
    const Bytes file = file_with(good);
    const Opened o = open_memory(file);
    ASSERT_EQ(o.status, ZT_OK) << o.error;
    uint64_t checked = 0, unchecked = 0;
    EXPECT_EQ(zt_verify(o.get(), &checked, &unchecked), ZT_OK) << zt_last_error();
    EXPECT_EQ(checked, 1u);
  }
  const Bytes file = file_with(xxh3_digest(z));  // over the stored bytes: wrong in v2
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_TRUE(FailsWith(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_DIGEST,
                        {"object \"w\": component \"data\"", "over the decoded bytes"}));
  // A raw part's decoded bytes are its stored bytes.
  FileBuilderV2 b = one_dense();
  b.part("w", "data")["digest"] = xxh3_digest(pattern(24));
  const Bytes raw = b.build();
  const Opened r = open_memory(raw);
  ASSERT_EQ(r.status, ZT_OK) << r.error;
  uint64_t checked = 0;
  EXPECT_EQ(zt_verify(r.get(), &checked, nullptr), ZT_OK) << zt_last_error();
  EXPECT_EQ(checked, 1u);
}

// A reader over memory has no directory to find shard files in: the part
// is listed and placed from the root manifest, its bytes refused
// (shards_test.cpp reads them from files).
TEST(SchemaV2, PartsInShardsNeedTheRootOpenedByPath) {
  FileBuilderV2 b = one_dense();
  b.part("w", "data")["shard"] = "s1";
  b.manifest["shards"] = Json{{"s1", {{"size", 8192}, {"digest", "xxh3:0000000000000000"}}}};
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_component_shard(o.get(), 0, "data"), "s1");
  const Mapped m = map_component(o.get(), "w", "data");
  EXPECT_TRUE(FailsWith(m.status, ZT_ERR_UNSUPPORTED, {"shard \"s1\"", "opened from memory"}));
  float out[6];
  uint64_t written = 0;
  EXPECT_TRUE(
      FailsWith(zt_object_read_f32(o.get(), 0, out, 6, &written), ZT_ERR_UNSUPPORTED, {"shard"}));
  EXPECT_TRUE(FailsWith(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_UNSUPPORTED, {"shard"}));
}

}  // namespace
}  // namespace zt::test
