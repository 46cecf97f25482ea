// zt_manifest_json: the manifest in the 1.2.0 vocabulary, parsed back with
// nlohmann::json. Absent optional fields are omitted, unknown keys dropped,
// 1.1.0 dtypes upgraded, CBOR byte strings shown as {"$bytes": base64}.
#include <gtest/gtest.h>

#include "test_files.h"

namespace zt::test {
namespace {

using Plain = nlohmann::json;  // key order does not matter when comparing

Plain manifest_of(const Bytes& file) {
  const Opened o = open_memory(file);
  if (o.status != ZT_OK) {
    ADD_FAILURE() << "open failed: " << o.error;
    return nullptr;
  }
  const char* text = zt_manifest_json(o.get());
  if (!text) {
    ADD_FAILURE() << "zt_manifest_json returned NULL";
    return nullptr;
  }
  return Plain::parse(text);
}

TEST(ManifestJson, MinimalFileOmitsAbsentFields) {
  FileBuilder b;
  b.dense("w", "f32", {2, 1}, le<float>({1, 2}));
  const Plain j = manifest_of(b.build());
  const Plain want =
      Plain::parse(R"({"version": "1.2.0", "objects": {"w": {"shape": [2, 1], "format": "dense",
      "components": {"data": {"dtype": "f32", "offset": 64, "length": 8}}}}})");
  EXPECT_EQ(j, want) << j.dump();
}

TEST(ManifestJson, PresentFieldsAreShownAsWritten) {
  FileBuilder b;
  const Bytes data = pattern(64);
  b.object("z", "dense", {64}, Json{{"data", b.zstd("u8", data)}});
  b.component("z", "data")["digest"] = "crc32c:0xABCDEF01";
  b.dense("r", "u8", {4}, pattern(4));
  b.component("r", "data")["encoding"] = "raw";
  b.component("r", "data")["type"] = "f8_e5m2";
  b.component("r", "data")["unknown_key"] = "dropped";
  b.manifest["objects"]["r"]["unknown_object_key"] = 1;
  b.manifest["unknown_root_key"] = Json::array();
  const Plain j = manifest_of(b.build());
  const Plain z = j["objects"]["z"]["components"]["data"];
  EXPECT_EQ(z["encoding"], "zstd");
  EXPECT_EQ(z["uncompressed_length"], 64);
  EXPECT_EQ(z["digest"], "crc32c:0xABCDEF01");
  EXPECT_FALSE(z.contains("type"));
  const Plain r = j["objects"]["r"];
  EXPECT_EQ(r["components"]["data"], Plain({{"dtype", "u8"},
                                            {"type", "f8_e5m2"},
                                            {"offset", r["components"]["data"]["offset"]},
                                            {"length", 4},
                                            {"encoding", "raw"}}));
  EXPECT_FALSE(r.contains("unknown_object_key"));
  EXPECT_FALSE(r.contains("attributes"));
  EXPECT_FALSE(j.contains("unknown_root_key"));
  EXPECT_FALSE(j.contains("attributes"));
}

TEST(ManifestJson, Version11DtypesAreUpgraded) {
  FileBuilder b("1.1.0");
  b.dense("e4", "f8_e4m3", {3}, pattern(3));
  b.dense("e5", "f8_e5m2", {3}, pattern(3));
  b.dense("c64", "complex64", {2}, Bytes(16, 0));
  b.dense("c128", "complex128", {2}, Bytes(32, 0));
  b.dense("f", "f32", {2}, Bytes(8, 0));
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const Plain j = Plain::parse(zt_manifest_json(o.get()));
  EXPECT_EQ(j["version"], "1.1.0");
  const std::tuple<const char*, const char*, const char*> upgraded[] = {
      {"e4", "u8", "f8_e4m3fn"},
      {"e5", "u8", "f8_e5m2"},
      {"c64", "f32", "complex64"},
      {"c128", "f64", "complex128"}};
  for (const auto& [name, dtype, type] : upgraded) {
    SCOPED_TRACE(name);
    const Plain c = j["objects"][name]["components"]["data"];
    EXPECT_EQ(c["dtype"], dtype);
    EXPECT_EQ(c["type"], type);
    const size_t i = object_index(o.get(), name);
    EXPECT_STREQ(zt_component_dtype(o.get(), i, "data"), dtype);
    EXPECT_STREQ(zt_component_type(o.get(), i, "data"), type);
  }
  // Other dtypes stay as they are.
  EXPECT_EQ(j["objects"]["f"]["components"]["data"], Plain::parse(b.component("f", "data").dump()));
}

TEST(ManifestJson, Version11ComplexSizesCountPairs) {
  FileBuilder b("1.1.0");
  b.dense("c64", "complex64", {2}, Bytes(8, 0));  // one pair short
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"shape [2] x 8 bytes = 16"}));
}

TEST(ManifestJson, Version11ZstdWithoutUncompressedLengthOmitsIt) {
  FileBuilder b("1.1.0");
  b.object("z", "dense", {16}, Json{{"data", b.zstd("f32", pattern(64))}});
  b.component("z", "data").erase("uncompressed_length");
  const Plain c = manifest_of(b.build())["objects"]["z"]["components"]["data"];
  EXPECT_EQ(c["encoding"], "zstd");
  EXPECT_FALSE(c.contains("uncompressed_length")) << c.dump();
}

TEST(ManifestJson, AttributesOfEveryKind) {
  FileBuilder b;
  b.dense("w", "u8", {1}, Bytes{1});
  b.manifest["attributes"] = Json{{"text", "PyTorch"},
                                  {"int", 7},
                                  {"neg", -3},
                                  {"big", UINT64_MAX},
                                  {"float", 0.25},
                                  {"yes", true},
                                  {"none", nullptr},
                                  {"list", Json::array({1, "a", Json::array()})},
                                  {"map", {{"inner", {{"deep", 1}}}}},
                                  {"bytes", Json::binary({0xDE, 0xAD, 0xBE, 0xEF})},
                                  {"empty_bytes", Json::binary({})}};
  b.manifest["objects"]["w"]["attributes"] =
      Json{{"bits", 4}, {"blobs", Json::array({Json::binary({0xFF})})}};
  const Plain j = manifest_of(b.build());
  const Plain want_file =
      Plain::parse(R"({"text": "PyTorch", "int": 7, "neg": -3, "big": 18446744073709551615,
      "float": 0.25, "yes": true, "none": null, "list": [1, "a", []], "map": {"inner": {"deep": 1}},
      "bytes": {"$bytes": "3q2+7w=="}, "empty_bytes": {"$bytes": ""}})");
  EXPECT_EQ(j["attributes"], want_file) << j["attributes"].dump();
  EXPECT_EQ(j["objects"]["w"]["attributes"],
            Plain::parse(R"({"bits": 4, "blobs": [{"$bytes": "/w=="}]})"));
}

TEST(ManifestJson, EmptyAttributeMapsAreKept) {
  FileBuilder b;
  b.dense("w", "u8", {1}, Bytes{1});
  b.manifest["attributes"] = Json::object();
  b.manifest["objects"]["w"]["attributes"] = Json::object();
  const Plain j = manifest_of(b.build());
  EXPECT_EQ(j["attributes"], Plain::object());
  EXPECT_EQ(j["objects"]["w"]["attributes"], Plain::object());
}

TEST(ManifestJson, ObjectsKeepManifestOrderAndTheTextIsCached) {
  FileBuilder b;
  for (const char* name : {"zeta", "alpha", "mid", "été"}) b.dense(name, "u8", {1}, Bytes{1});
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  ASSERT_EQ(zt_object_count(o.get()), 4u);
  EXPECT_STREQ(zt_object_name(o.get(), 0), "zeta");
  EXPECT_STREQ(zt_object_name(o.get(), 1), "alpha");
  EXPECT_STREQ(zt_object_name(o.get(), 2), "mid");
  EXPECT_STREQ(zt_object_name(o.get(), 3), "été");
  const char* first = zt_manifest_json(o.get());
  EXPECT_EQ(zt_manifest_json(o.get()), first);
  const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(first);
  std::vector<std::string> names;
  for (const auto& [name, value] : ordered["objects"].items()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"zeta", "alpha", "mid", "été"}));
  EXPECT_EQ(zt_manifest_json(nullptr), nullptr);
}

// zt_object_summaries: every field as the one-object calls give it.
void expect_summary_matches(zt_reader* r, size_t i, const zt_object_summary& s) {
  SCOPED_TRACE(zt_object_name(r, i));
  EXPECT_EQ(s.struct_size, sizeof(zt_object_summary));
  EXPECT_EQ(s.name, zt_object_name(r, i));
  EXPECT_EQ(s.format, zt_object_format(r, i));
  EXPECT_EQ(s.layout, zt_object_layout(r, i));
  size_t ndim = 0;
  const uint64_t* shape = zt_object_shape(r, i, &ndim);
  ASSERT_EQ(s.ndim, ndim);
  EXPECT_TRUE(std::equal(shape, shape + ndim, s.shape));
  const bool has_data = zt_component_dtype(r, i, "data") != nullptr;
  EXPECT_EQ(s.dtype ? std::string(s.dtype) : "", has_data ? zt_component_dtype(r, i, "data") : "");
  EXPECT_EQ(s.type, has_data ? zt_component_type(r, i, "data") : nullptr);
  EXPECT_EQ(s.components, zt_component_count(r, i));
  const void* attributes = nullptr;
  size_t size = 0;
  ASSERT_EQ(zt_object_attributes_cbor(r, i, &attributes, &size), ZT_OK);
  EXPECT_EQ(s.attributes_size, size);
}

std::vector<zt_object_summary> summaries_of(zt_reader* r, size_t first, size_t count) {
  std::vector<zt_object_summary> out(count);
  for (zt_object_summary& s : out) zt_object_summary_init(&s);
  EXPECT_EQ(zt_object_summaries(r, first, out.data(), count), ZT_OK) << zt_last_error();
  return out;
}

TEST(ObjectSummaries, EveryObjectAtAGlanceAsTheOneObjectCallsSayIt) {
  FileBuilder b;
  b.dense("w", "f32", {2, 3}, le<float>({1, 2, 3, 4, 5, 6}));
  b.manifest["objects"]["w"]["attributes"] = Json{{"bits", 4}};
  b.dense("f8", "u8", {4}, pattern(4));
  b.component("f8", "data")["type"] = "f8_e5m2";
  b.dense("scalar", "i64", {}, le<int64_t>({7}));
  b.object("csr", "sparse_csr", {2, 3},
           Json{{"values", b.raw("f32", le<float>({1, 2}))},
                {"indices", b.raw("u64", le<uint64_t>({0, 2}))},
                {"indptr", b.raw("u64", le<uint64_t>({0, 1, 2}))}});
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const std::vector<zt_object_summary> all = summaries_of(o.get(), 0, 4);
  for (size_t i = 0; i < all.size(); ++i) expect_summary_matches(o.get(), i, all[i]);
  EXPECT_STREQ(all[0].name, "w");
  EXPECT_STREQ(all[0].dtype, "f32");
  EXPECT_EQ(all[0].ndim, 2u);
  EXPECT_GT(all[0].attributes_size, 0u);
  EXPECT_STREQ(all[1].type, "f8_e5m2");
  EXPECT_EQ(all[2].ndim, 0u);
  EXPECT_STREQ(all[3].format, "sparse_csr");
  EXPECT_EQ(all[3].dtype, nullptr) << "no data component";
  EXPECT_EQ(all[3].components, 3u);
  // A window of the objects, and an empty one at the end.
  const std::vector<zt_object_summary> tail = summaries_of(o.get(), 2, 2);
  EXPECT_EQ(tail[0].name, all[2].name);
  EXPECT_EQ(tail[1].name, all[3].name);
  summaries_of(o.get(), 4, 0);
  EXPECT_EQ(zt_object_summaries(o.get(), 4, nullptr, 0), ZT_OK);
}

TEST(ObjectSummaries, AV2LayoutIsNamedAsWrittenAndAsItsFormat) {
  FileBuilderV2 b;
  b.dense("w", "bf16", {2}, le<uint16_t>({0x3F80, 0x4000}));
  b.object("m", "acme.paged/1", {4}, Json{{"pages", b.raw("u8", pattern(4))}});
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const std::vector<zt_object_summary> all = summaries_of(o.get(), 0, 2);
  for (size_t i = 0; i < all.size(); ++i) expect_summary_matches(o.get(), i, all[i]);
  // v2 lists objects by name: "m" first.
  EXPECT_STREQ(all[0].layout, "acme.paged/1");
  EXPECT_STREQ(all[0].format, "acme.paged/1");
  EXPECT_EQ(all[0].dtype, nullptr);
  EXPECT_STREQ(all[1].format, "dense");
  EXPECT_STREQ(all[1].dtype, "bf16");
}

TEST(ObjectSummaries, BadArgumentsWriteNothing) {
  FileBuilder b;
  b.dense("a", "u8", {1}, Bytes{1});
  b.dense("b", "u8", {1}, Bytes{2});
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  std::vector<zt_object_summary> s(3);
  for (zt_object_summary& one : s) zt_object_summary_init(&one);
  EXPECT_EQ(zt_object_summaries(o.get(), 0, s.data(), 3), ZT_ERR_NOT_FOUND);
  EXPECT_NE(std::string(zt_last_error()).find("past the last one (2 objects)"), std::string::npos)
      << zt_last_error();
  EXPECT_EQ(zt_object_summaries(o.get(), 3, s.data(), 0), ZT_ERR_NOT_FOUND);
  EXPECT_EQ(zt_object_summaries(o.get(), SIZE_MAX, s.data(), 2), ZT_ERR_NOT_FOUND);
  EXPECT_EQ(s[0].name, nullptr) << "nothing is written when the call fails";
  s[1].struct_size = 8;
  EXPECT_EQ(zt_object_summaries(o.get(), 0, s.data(), 2), ZT_ERR_ARGUMENT);
  EXPECT_NE(std::string(zt_last_error()).find("summaries[1].struct_size 8"), std::string::npos)
      << zt_last_error();
  EXPECT_EQ(s[0].name, nullptr);
  EXPECT_EQ(zt_object_summaries(nullptr, 0, s.data(), 1), ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_object_summaries(o.get(), 0, nullptr, 1), ZT_ERR_ARGUMENT);
}

}  // namespace
}  // namespace zt::test
