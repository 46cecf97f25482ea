// The manifest schema: version policy, required fields and their types,
// unknown keys, dtypes, formats and logical types, the components each known
// format needs, index dtypes, and uncompressed_length across 1.1 and 1.2.
#include <gtest/gtest.h>

#include "test_files.h"
#include "base/zt_limits.h"

namespace zt::test {
namespace {

FileBuilder one_object(std::string version = "1.2.0") {
  FileBuilder b(std::move(version));
  b.dense("w", "f32", {2}, le<float>({1.0f, 2.0f}));
  return b;
}

// A CSR matrix [[1, 0, 2], [0, 0, 3]] with index components of dtype T.
template <typename T>
FileBuilder csr(std::string_view index_dtype) {
  FileBuilder b;
  b.object("m", "sparse_csr", {2, 3},
           Json{{"values", b.raw("f32", le<float>({1, 2, 3}))},
                {"indices", b.raw(index_dtype, le<T>({0, 2, 2}))},
                {"indptr", b.raw(index_dtype, le<T>({0, 2, 3}))}});
  return b;
}

// A COO matrix with the same entries, coords in structure-of-arrays order.
template <typename T>
FileBuilder coo(std::string_view index_dtype) {
  FileBuilder b;
  b.object("m", "sparse_coo", {2, 3},
           Json{{"values", b.raw("f32", le<float>({1, 2, 3}))},
                {"coords", b.raw(index_dtype, le<T>({0, 0, 1, 0, 2, 2}))}});
  return b;
}

// --- version ----------------------------------------------------------------

TEST(Schema, AnyMinorOfMajorOneOpens) {
  for (const char* v : {"1.2.0", "1.2.5", "1.3.0", "1.99.7", "1.2.0-rc1", "1.4.0+build"}) {
    SCOPED_TRACE(v);
    FileBuilder b = one_object(v);
    b.manifest["a_future_root_key"] = Json{{"x", 1}};
    const Bytes f = b.build();
    const Opened o = open_memory(f);
    ASSERT_EQ(o.status, ZT_OK) << o.error;
    EXPECT_STREQ(zt_file_version(o.get()), v);
  }
}

TEST(Schema, OtherMajorVersionsAreUnsupported) {
  for (const char* v : {"2.0.0", "0.9.0", "10.1.0"}) {
    SCOPED_TRACE(v);
    EXPECT_TRUE(OpensWith(one_object(v).build(), ZT_ERR_UNSUPPORTED, {v}));
  }
}

TEST(Schema, UnparsableVersionIsInvalid) {
  for (const char* v : {"1.2", "one", "", "1.2.x", "v1.2.0"}) {
    SCOPED_TRACE(v);
    EXPECT_TRUE(OpensWith(one_object(v).build(), ZT_ERR_INVALID, {"version"}));
  }
}

TEST(Schema, MissingOrMistypedRootFieldsAreInvalid) {
  FileBuilder b = one_object();
  b.manifest.erase("version");
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"no \"version\""}));
  b = one_object();
  b.manifest["version"] = 1;
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"\"version\" is not a text string"}));
  b = one_object();
  b.manifest.erase("objects");
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"no \"objects\""}));
  b = one_object();
  b.manifest["objects"] = Json::array();
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"\"objects\" is not a map"}));
  b = one_object();
  b.manifest["attributes"] = "text";
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"\"attributes\" is not a map"}));
  // The root itself must be a map.
  EXPECT_TRUE(OpensWith(b.build(cbor(Json::array({"1.2.0"}))), ZT_ERR_INVALID, {"not a CBOR map"}));
}

// --- objects ------------------------------------------------------------------

TEST(Schema, ObjectFieldsAreChecked) {
  struct Case {
    const char* what;
    void (*edit)(Json& o);
    const char* message;
  };
  const Case cases[] = {
      {"not a map", [](Json& o) { o = 5; }, "object \"w\" is not a map"},
      {"no shape", [](Json& o) { o.erase("shape"); }, "has no \"shape\""},
      {"shape not an array", [](Json& o) { o["shape"] = 2; }, "\"shape\" is not an array"},
      {"negative dimension", [](Json& o) { o["shape"] = Json::array({-2}); }, "shape element 0"},
      {"float dimension", [](Json& o) { o["shape"] = Json::array({2.0}); }, "shape element 0"},
      {"text dimension", [](Json& o) { o["shape"] = Json::array({"2"}); }, "shape element 0"},
      {"no format", [](Json& o) { o.erase("format"); }, "\"format\" is missing"},
      {"format not text", [](Json& o) { o["format"] = 1; },
       "\"format\" is missing or not a string"},
      {"no components", [](Json& o) { o.erase("components"); }, "\"components\" is missing"},
      {"components an array", [](Json& o) { o["components"] = Json::array(); },
       "\"components\" is missing or"},
      {"attributes not a map", [](Json& o) { o["attributes"] = Json::array(); },
       "\"attributes\" is not a map"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    FileBuilder b = one_object();
    c.edit(b.manifest["objects"]["w"]);
    EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {c.message}));
  }
}

TEST(Schema, RankOverTheLimitIsLimit) {
  FileBuilder b;
  std::vector<uint64_t> shape(Limits::rank + 1, 1);
  b.dense("w", "u8", shape, Bytes{7});
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_LIMIT, {"dimensions"}));
  shape.pop_back();
  FileBuilder ok;
  ok.dense("w", "u8", shape, Bytes{7});
  EXPECT_TRUE(OpensWith(ok.build(), ZT_OK));
}

TEST(Schema, ObjectNameWithNulIsInvalid) {
  FileBuilder b;
  b.dense(std::string("a\0b", 3), "u8", {1}, Bytes{7});
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"NUL"}));
}

TEST(Schema, NamesOverTheLengthLimitAreLimit) {
  const std::string at_limit(Limits::name_bytes, 'n');
  FileBuilder ok;
  ok.dense(at_limit, "u8", {1}, Bytes{7});
  EXPECT_TRUE(OpensWith(ok.build(), ZT_OK));
  FileBuilder object;
  object.dense(at_limit + "n", "u8", {1}, Bytes{7});
  EXPECT_TRUE(OpensWith(
      object.build(), ZT_ERR_LIMIT,
      {"object name of", std::to_string(Limits::name_bytes + 1), "bytes exceeds the limit"}));
  FileBuilder role;
  role.object("w", "my_format", {1}, Json{{at_limit + "r", role.raw("u8", Bytes{7})}});
  EXPECT_TRUE(OpensWith(role.build(), ZT_ERR_LIMIT,
                        {"component name of", std::to_string(Limits::name_bytes + 1), "bytes"}));
}

TEST(Schema, ComponentCountOverTheLimitIsLimit) {
  FileBuilder b;
  Json comps = Json::object();
  for (uint64_t i = 0; i <= Limits::components; ++i)
    comps[numbered("c", i)] = Json{{"dtype", "u8"}, {"offset", 0}, {"length", 0}};
  b.object("w", "my_format", {0}, comps);
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_LIMIT, {"components"}));
}

TEST(Schema, UnknownKeysAreIgnoredAtEveryLevel) {
  FileBuilder b = one_object();
  b.manifest["generator"] = "tests";
  b.manifest["extensions"] = Json{{"nested", Json::array({1, 2})}};
  b.manifest["objects"]["w"]["layout_hint"] = "row";
  b.component("w", "data")["compression_level"] = 19;
  b.component("w", "data")["future"] = Json{{"a", Json::binary({1})}};
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_EQ(map_component(o.get(), "w", "data").bytes, le<float>({1.0f, 2.0f}));
}

// --- components -----------------------------------------------------------------

TEST(Schema, ComponentFieldsAreChecked) {
  struct Case {
    const char* what;
    void (*edit)(Json& c);
    const char* message;
  };
  const Case cases[] = {
      {"not a map", [](Json& c) { c = Json::array(); }, "component \"data\" is not a map"},
      {"no dtype", [](Json& c) { c.erase("dtype"); }, "required field \"dtype\" is missing"},
      {"no offset", [](Json& c) { c.erase("offset"); }, "required field \"offset\" is missing"},
      {"no length", [](Json& c) { c.erase("length"); }, "required field \"length\" is missing"},
      {"negative offset", [](Json& c) { c["offset"] = -64; },
       "\"offset\" is not an unsigned integer"},
      {"text length", [](Json& c) { c["length"] = "8"; }, "\"length\" is not an unsigned integer"},
      {"float length", [](Json& c) { c["length"] = 8.0; }, "\"length\" is not an unsigned integer"},
      {"dtype not text", [](Json& c) { c["dtype"] = 4; }, "\"dtype\" is not a string"},
      {"type not text", [](Json& c) { c["type"] = 1; }, "\"type\" is not a string"},
      {"encoding not text", [](Json& c) { c["encoding"] = 0; }, "\"encoding\" is not a string"},
      {"digest not text", [](Json& c) { c["digest"] = 0; }, "\"digest\" is not a string"},
      {"uncompressed_length negative", [](Json& c) { c["uncompressed_length"] = -1; },
       "\"uncompressed_length\" is not an unsigned integer"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    FileBuilder b = one_object();
    c.edit(b.component("w", "data"));
    EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"object \"w\"", c.message}));
  }
}

TEST(Schema, NullOptionalFieldsMeanAbsent) {
  FileBuilder b = one_object();
  Json& c = b.component("w", "data");
  c["type"] = nullptr;
  c["encoding"] = nullptr;
  c["digest"] = nullptr;
  c["uncompressed_length"] = nullptr;
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_component_encoding(o.get(), 0, "data"), "raw");
  EXPECT_EQ(zt_component_type(o.get(), 0, "data"), nullptr);
}

TEST(Schema, AllThirteenDtypesOpen) {
  const std::pair<const char*, unsigned> dtypes[] = {
      {"f64", 8}, {"f32", 4}, {"f16", 2}, {"bf16", 2}, {"i64", 8}, {"i32", 4}, {"i16", 2},
      {"i8", 1},  {"u64", 8}, {"u32", 4}, {"u16", 2},  {"u8", 1},  {"bool", 1}};
  FileBuilder b;
  for (const auto& [name, width] : dtypes) b.dense(name, name, {3}, Bytes(3 * width, 1));
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  ASSERT_EQ(zt_object_count(o.get()), 13u);
  for (const auto& [name, width] : dtypes) {
    const size_t i = object_index(o.get(), name);
    EXPECT_STREQ(zt_component_dtype(o.get(), i, "data"), name);
    uint64_t n = 0;
    EXPECT_EQ(zt_component_decoded_size(o.get(), i, "data", &n), ZT_OK);
    EXPECT_EQ(n, 3u * width);
  }
}

TEST(Schema, UnknownDtypeIsUnsupported) {
  for (const char* d : {"f128", "float32", "F32", "complex64", "f8_e4m3", ""}) {
    SCOPED_TRACE(d);
    FileBuilder b = one_object();
    b.component("w", "data")["dtype"] = d;
    EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_UNSUPPORTED, {"unknown dtype"}));
  }
}

TEST(Schema, UnknownFormatOpensStructurally) {
  FileBuilder b;
  b.object("t", "block_sparse_v9", {4, 4},
           Json{{"blocks", b.raw("f16", pattern(10))}, {"map", b.raw("u8", pattern(3))}});
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_object_format(o.get(), 0), "block_sparse_v9");
  EXPECT_EQ(zt_component_count(o.get(), 0), 2u);
  // f16 of 10 bytes is 5 elements: no size rule applies to unknown formats.
  EXPECT_EQ(map_component(o.get(), "t", "blocks").bytes, pattern(10));
  uint64_t checked = 9, unchecked = 9;
  EXPECT_EQ(zt_verify(o.get(), &checked, &unchecked), ZT_OK) << zt_last_error();
  EXPECT_EQ(checked, 0u);
  EXPECT_EQ(unchecked, 2u);
}

TEST(Schema, UnknownLogicalTypeOpens) {
  FileBuilder b;
  b.dense("p", "u8", {4}, pattern(7));  // 7 bytes for 4 elements: the size is unknown for "posit8x"
  b.component("p", "data")["type"] = "posit8x";
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_component_type(o.get(), 0, "data"), "posit8x");
  EXPECT_EQ(map_component(o.get(), "p", "data").bytes, pattern(7));
}

TEST(Schema, KnownLogicalTypeNeedsItsDtype) {
  FileBuilder b;
  b.dense("x", "f32", {2}, le<float>({1, 2}));
  b.component("x", "data")["type"] = "f8_e4m3fn";
  EXPECT_TRUE(
      OpensWith(b.build(), ZT_ERR_INVALID, {"type \"f8_e4m3fn\" needs dtype \"u8\", not \"f32\""}));
}

TEST(Schema, UnknownEncodingOpensButDoesNotMap) {
  FileBuilder b = one_object();
  b.component("w", "data")["encoding"] = "lz4";
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_component_encoding(o.get(), 0, "data"), "lz4");
  uint64_t n = 0;
  EXPECT_EQ(zt_component_decoded_size(o.get(), 0, "data", &n), ZT_ERR_UNSUPPORTED);
  const void* p = nullptr;
  EXPECT_TRUE(
      FailsWith(zt_component_map(o.get(), 0, "data", &p, &n), ZT_ERR_UNSUPPORTED, {"\"lz4\""}));
  uint8_t buf[64];
  EXPECT_TRUE(
      FailsWith(zt_component_read(o.get(), 0, "data", buf, sizeof buf, &n), ZT_ERR_UNSUPPORTED));
  EXPECT_TRUE(FailsWith(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_UNSUPPORTED));
}

// --- known formats and their components --------------------------------------

TEST(Schema, KnownFormatsRequireTheirComponents) {
  struct Case {
    const char* format;
    std::vector<const char*> roles;
  };
  const Case cases[] = {{"dense", {"data"}},
                        {"sparse_csr", {"values", "indices", "indptr"}},
                        {"sparse_coo", {"values", "coords"}},
                        {"quantized_group", {"packed_weight", "scales", "zeros"}}};
  for (const Case& c : cases) {
    for (const char* missing : c.roles) {
      SCOPED_TRACE(std::string(c.format) + " without " + missing);
      FileBuilder b;
      Json comps = Json::object();
      for (const char* role : c.roles)
        if (std::string_view(role) != missing)
          comps[role] = Json{{"dtype", "u8"}, {"offset", 0}, {"length", 0}};
      b.object("o", c.format, {0, 0}, comps);
      EXPECT_TRUE(
          OpensWith(b.build(), ZT_ERR_INVALID,
                    {"object \"o\"", std::string("requires component \"") + missing + "\""}));
    }
  }
}

TEST(Schema, ExtraComponentsOfKnownFormatsAreAllowed) {
  FileBuilder b = one_object();
  b.manifest["objects"]["w"]["components"]["mask"] = b.raw("bool", Bytes{1, 0});
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_EQ(zt_component_count(o.get(), 0), 2u);
}

TEST(Schema, SparseIndexComponentsMayBeAnyIntegerDtype) {
  const Bytes files[] = {
      csr<uint64_t>("u64").build(), csr<int64_t>("i64").build(),  csr<int32_t>("i32").build(),
      csr<uint32_t>("u32").build(), csr<uint16_t>("u16").build(), csr<int8_t>("i8").build(),
      coo<uint64_t>("u64").build(), coo<int32_t>("i32").build(),  coo<uint8_t>("u8").build()};
  for (const Bytes& f : files) {
    const Opened o = open_memory(f);
    ASSERT_EQ(o.status, ZT_OK) << o.error;
    EXPECT_EQ(zt_verify(o.get(), nullptr, nullptr), ZT_OK) << zt_last_error();
  }
}

TEST(Schema, FloatIndexComponentsAreInvalid) {
  EXPECT_TRUE(OpensWith(csr<float>("f32").build(), ZT_ERR_INVALID,
                        {"component \"indices\"", "index dtype \"f32\" is not an integer type"}));
  EXPECT_TRUE(OpensWith(coo<double>("f64").build(), ZT_ERR_INVALID,
                        {"component \"coords\"", "index dtype \"f64\" is not an integer type"}));
  FileBuilder b = csr<uint64_t>("u64");
  b.component("m", "indptr")["dtype"] = "bool";
  EXPECT_TRUE(
      OpensWith(b.build(), ZT_ERR_INVALID, {"component \"indptr\"", "not an integer type"}));
}

TEST(Schema, CsrCountsMustAgree) {
  FileBuilder b;  // 3 values, 2 indices
  b.object("m", "sparse_csr", {2, 3},
           Json{{"values", b.raw("f32", le<float>({1, 2, 3}))},
                {"indices", b.raw("u64", le<uint64_t>({0, 2}))},
                {"indptr", b.raw("u64", le<uint64_t>({0, 2, 3}))}});
  EXPECT_TRUE(
      OpensWith(b.build(), ZT_ERR_INVALID, {"component \"indices\"", "2 indices for 3 values"}));
  FileBuilder p;  // indptr of 4 entries for 2 rows
  p.object("m", "sparse_csr", {2, 3},
           Json{{"values", p.raw("f32", le<float>({1, 2, 3}))},
                {"indices", p.raw("u64", le<uint64_t>({0, 2, 2}))},
                {"indptr", p.raw("u64", le<uint64_t>({0, 2, 3, 3}))}});
  EXPECT_TRUE(
      OpensWith(p.build(), ZT_ERR_INVALID, {"component \"indptr\"", "indptr has 4 entries"}));
  FileBuilder r;  // 3-d shape
  r.object("m", "sparse_csr", {2, 3, 1},
           Json{{"values", r.raw("f32", le<float>({1, 2, 3}))},
                {"indices", r.raw("u64", le<uint64_t>({0, 2, 2}))},
                {"indptr", r.raw("u64", le<uint64_t>({0, 2, 3}))}});
  EXPECT_TRUE(OpensWith(r.build(), ZT_ERR_INVALID, {"sparse_csr needs a 2-d shape"}));
  FileBuilder w;  // 10 bytes of u64 indices
  w.object("m", "sparse_csr", {2, 3},
           Json{{"values", w.raw("f32", le<float>({1, 2, 3}))},
                {"indices", w.raw("u64", Bytes(10, 0))},
                {"indptr", w.raw("u64", le<uint64_t>({0, 2, 3}))}});
  EXPECT_TRUE(OpensWith(w.build(), ZT_ERR_INVALID, {"not a whole number of 8-byte elements"}));
}

TEST(Schema, CooCoordsCountMustBeNdimTimesNnz) {
  FileBuilder b;
  b.object("m", "sparse_coo", {2, 3},
           Json{{"values", b.raw("f32", le<float>({1, 2, 3}))},
                {"coords", b.raw("u64", le<uint64_t>({0, 0, 1, 0, 2}))}});
  EXPECT_TRUE(
      OpensWith(b.build(), ZT_ERR_INVALID, {"component \"coords\"", "coords has 5 entries"}));
}

TEST(Schema, ComplexValuesCountPairs) {
  FileBuilder b;  // 2 complex64 values (16 bytes) with 2 indices
  Json values = b.raw("f32", le<float>({1, 2, 3, 4}));
  values["type"] = "complex64";
  b.object("m", "sparse_csr", {1, 3},
           Json{{"values", values},
                {"indices", b.raw("u64", le<uint64_t>({0, 2}))},
                {"indptr", b.raw("u64", le<uint64_t>({0, 2}))}});
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_EQ(zt_verify(o.get(), nullptr, nullptr), ZT_OK) << zt_last_error();
}

// --- uncompressed_length ------------------------------------------------------

TEST(Schema, ZstdWithoutUncompressedLengthIsInvalidIn12) {
  FileBuilder b;
  b.object("w", "dense", {64}, Json{{"data", b.zstd("f32", pattern(256))}});
  b.component("w", "data").erase("uncompressed_length");
  EXPECT_TRUE(
      OpensWith(b.build(), ZT_ERR_INVALID,
                {"object \"w\": component \"data\"", "\"zstd\" requires \"uncompressed_length\""}));
}

TEST(Schema, ZstdWithoutUncompressedLengthOpensIn11) {
  for (const bool content_size : {true, false}) {
    SCOPED_TRACE(content_size ? "frame with content size" : "frame without content size");
    FileBuilder b("1.1.0");
    const Bytes data = pattern(256);
    b.object("w", "dense", {64}, Json{{"data", b.zstd("f32", data, content_size)}});
    b.component("w", "data").erase("uncompressed_length");
    const Bytes f = b.build();
    const Opened o = open_memory(f);
    ASSERT_EQ(o.status, ZT_OK) << o.error;
    uint64_t n = 0;
    EXPECT_EQ(zt_component_decoded_size(o.get(), 0, "data", &n), ZT_OK);
    EXPECT_EQ(n, 256u);  // from the shape
    EXPECT_EQ(map_component(o.get(), "w", "data").bytes, data);
    EXPECT_EQ(zt_verify(o.get(), nullptr, nullptr), ZT_OK) << zt_last_error();
  }
}

}  // namespace
}  // namespace zt::test
