// The v2 layout profiles as descriptors (docs/v2.md §3, decisions 16-22;
// profiles/*.md): for each profile a valid object (the profile's worked
// examples where it has them) opens and verifies, and each metadata rule
// broken alone is refused at open with ZT_ERR_INVALID and a message naming
// the rule. The sparse data rules are zt_verify's.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "test_files.h"

namespace zt::test {
namespace {

testing::AssertionResult OpensAndVerifies(const Bytes& file) {
  const Opened o = open_memory(file);
  if (o.status != ZT_OK) return testing::AssertionFailure() << "open: " << o.error;
  if (zt_verify(o.get(), nullptr, nullptr) != ZT_OK)
    return testing::AssertionFailure() << "verify: " << zt_last_error();
  return testing::AssertionSuccess();
}

// Opens, then zt_verify fails with ZT_ERR_INVALID and `message`.
testing::AssertionResult VerifyRefuses(const Bytes& file, std::string_view message) {
  const Opened o = open_memory(file);
  if (o.status != ZT_OK) return testing::AssertionFailure() << "open: " << o.error;
  return FailsWith(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_INVALID, {message});
}

// One rule broken alone: how to break it, and what the message must say.
struct Broken {
  std::function<void(FileBuilderV2&)> change;
  std::string message;
};

void ExpectEachRefused(const std::function<FileBuilderV2()>& valid,
                       const std::vector<Broken>& cases) {
  for (const Broken& c : cases) {
    FileBuilderV2 b = valid();
    c.change(b);
    EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {c.message})) << c.message;
  }
}

Json typed(FileBuilderV2& b, std::string_view dtype, std::string_view type, const Bytes& bytes) {
  Json p = b.raw(dtype, bytes);
  if (!type.empty()) p["type"] = type;
  return p;
}

Json& attributes(FileBuilderV2& b, const std::string& object) {
  return b.manifest["objects"][object]["attributes"];
}

// ---- zt.sparse_csr/1 ----

// [2, 3]: row 0 holds columns 0 and 2, row 1 column 1.
FileBuilderV2 csr(const std::vector<uint32_t>& indices = {0, 2, 1},
                  const std::vector<uint32_t>& indptr = {0, 2, 3}) {
  FileBuilderV2 b;
  b.object("m", "zt.sparse_csr/1", {2, 3},
           Json{{"values", b.raw("f32", le(std::vector<float>(indices.size(), 1.5f)))},
                {"indices", b.raw("u32", le(indices))},
                {"indptr", b.raw("u32", le(indptr))}});
  return b;
}

TEST(ProfilesV2, SparseCsrOpensAndVerifies) {
  EXPECT_TRUE(OpensAndVerifies(csr().build()));
  FileBuilderV2 wide;
  wide.object("m", "zt.sparse_csr/1", {2, 3},
              Json{{"values", wide.raw("f64", le<double>({1, 2}))},
                   {"indices", wide.raw("u64", le<uint64_t>({1, 0}))},
                   {"indptr", wide.raw("u64", le<uint64_t>({0, 1, 2}))}});
  EXPECT_TRUE(OpensAndVerifies(wide.build()));
  // nnz comes from indices: three packed f4 values take two bytes.
  FileBuilderV2 f4 = csr();
  f4.part("m", "values") = typed(f4, "u8", "f4_e2m1", Bytes{0x21, 0x03});
  EXPECT_TRUE(OpensAndVerifies(f4.build()));
  const Bytes file = csr().build();  // outlives the reader
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_object_format(o.get(), 0), "sparse_csr");
}

TEST(ProfilesV2, SparseCsrMetadataRules) {
  ExpectEachRefused(
      [] { return csr(); },
      {
          {[](FileBuilderV2& b) { b.manifest["objects"]["m"]["shape"] = Json::array({6}); },
           "the shape must have rank 2"},
          {[](FileBuilderV2& b) {
             b.manifest["objects"]["m"]["shape"] = Json::array({2, 3, 1});
           },
           "the shape must have rank 2"},
          {[](FileBuilderV2& b) { b.part("m", "indices")["dtype"] = "i32"; },
           "part \"indices\" must be u32 or u64 with no type"},
          {[](FileBuilderV2& b) { b.part("m", "indices")["type"] = "acme_t"; },
           "part \"indices\" must be u32 or u64 with no type"},
          {[](FileBuilderV2& b) { b.part("m", "indptr")["dtype"] = "i32"; },
           "part \"indptr\" must have the dtype of \"indices\""},
          {[](FileBuilderV2& b) { b.part("m", "indptr")["type"] = "acme_t"; },
           "part \"indptr\" must have the dtype of \"indices\""},
          {[](FileBuilderV2& b) {
             b.part("m", "indptr") = b.raw("u32", le<uint32_t>({0, 2}));
           },
           "(rows + 1) x width(indices.dtype)"},
          {[](FileBuilderV2& b) {
             b.part("m", "values") = b.raw("f32", le<float>({1, 2}));
           },
           "the values type's size at nnz"},
          {[](FileBuilderV2& b) { b.part("m", "indices") = b.raw("u32", pattern(10)); },
           "not a whole number of 4-byte elements"},
          {[](FileBuilderV2& b) { b.manifest["objects"]["m"]["parts"]["extra"] = b.raw("u8", {}); },
           "has no part \"extra\" (its parts are exactly \"values\", \"indices\", \"indptr\")"},
          {[](FileBuilderV2& b) { b.manifest["objects"]["m"]["parts"].erase("indptr"); },
           "requires component \"indptr\""},
      });
}

TEST(ProfilesV2, SparseCsrDataRules) {
  EXPECT_TRUE(VerifyRefuses(csr({0, 2, 1}, {1, 2, 3}).build(), "indptr[0] is 1"));
  EXPECT_TRUE(VerifyRefuses(csr({0, 2, 1}, {0, 3, 2}).build(), "indptr decreases at row 1"));
  EXPECT_TRUE(VerifyRefuses(csr({0, 2, 1}, {0, 1, 2}).build(), "must equal nnz 3"));
  EXPECT_TRUE(VerifyRefuses(csr({0, 3, 1}).build(), "column index 3 at position 1"));
  // Strictly increasing within a row: no duplicates, no reordering.
  EXPECT_TRUE(VerifyRefuses(csr({2, 2, 1}).build(),
                            "column indices of row 0 are not strictly increasing (2 then 2"));
  EXPECT_TRUE(VerifyRefuses(csr({2, 0, 1}).build(), "(2 then 0 at position 1)"));
  // Across rows the columns start again.
  EXPECT_TRUE(OpensAndVerifies(csr({1, 2, 0}).build()));
}

// 1.2 sums duplicates: the strict rule is v2's alone.
TEST(ProfilesV2, SparseDuplicatesStayValidIn12) {
  FileBuilder b;
  b.object("m", "sparse_csr", {2, 3},
           Json{{"values", b.raw("f32", le<float>({1, 2, 3}))},
                {"indices", b.raw("u64", le<uint64_t>({2, 2, 1}))},
                {"indptr", b.raw("u64", le<uint64_t>({0, 2, 3}))}});
  b.object("c", "sparse_coo", {2, 3},
           Json{{"values", b.raw("f32", le<float>({1, 2}))},
                {"coords", b.raw("u64", le<uint64_t>({1, 1, 2, 2}))}});
  EXPECT_TRUE(OpensAndVerifies(b.build()));
}

// ---- zt.sparse_coo/1 ----

// [2, 3]: entries at (0, 2) and (1, 0).
FileBuilderV2 coo(const std::vector<uint32_t>& coords = {0, 1, 2, 0}) {
  FileBuilderV2 b;
  b.object("c", "zt.sparse_coo/1", {2, 3},
           Json{{"values", b.raw("f32", le(std::vector<float>(coords.size() / 2, 2.5f)))},
                {"coords", b.raw("u32", le(coords))}});
  return b;
}

// f4_e2m1 values: nnz from the index part, three values in two bytes.
TEST(ProfilesV2, SparseF4ValuesDensifyAndKeepTheirSpareNibbleZero) {
  FileBuilderV2 b = csr();
  b.part("m", "values") = typed(b, "u8", "f4_e2m1", Bytes{0x21, 0x03});  // 0.5 1 1.5
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  float out[6];
  uint64_t written = 0;
  ASSERT_EQ(zt_object_decode_f32(o.get(), 0, out, 6, &written), ZT_OK) << zt_last_error();
  const float want[6] = {0.5f, 0, 1, 0, 1.5f, 0};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[i], want[i]) << i;
  // The values part alone: its count comes from the index part.
  ASSERT_EQ(zt_component_read_f32(o.get(), 0, "values", out, 6, &written), ZT_OK)
      << zt_last_error();
  ASSERT_EQ(written, 3u);
  EXPECT_EQ(out[2], 1.5f);

  FileBuilderV2 bad = csr();
  bad.part("m", "values") = typed(bad, "u8", "f4_e2m1", Bytes{0x21, 0x13});
  const Bytes bad_file = bad.build();
  const Opened ob = open_memory(bad_file);
  ASSERT_EQ(ob.status, ZT_OK) << ob.error;
  EXPECT_TRUE(FailsWith(zt_verify(ob.get(), nullptr, nullptr), ZT_ERR_INVALID,
                        {"component \"values\"", "odd count of 3 values"}));
  EXPECT_TRUE(FailsWith(zt_object_decode_f32(ob.get(), 0, out, 6, &written), ZT_ERR_INVALID,
                        {"odd count of 3 values"}));

  FileBuilderV2 c = coo();
  c.part("c", "values") = typed(c, "u8", "f4_e2m1", Bytes{0xf7});  // 6 and -6
  const Bytes coo_file = c.build();
  const Opened oc = open_memory(coo_file);
  ASSERT_EQ(oc.status, ZT_OK) << oc.error;
  ASSERT_EQ(zt_object_decode_f32(oc.get(), 0, out, 6, &written), ZT_OK) << zt_last_error();
  EXPECT_EQ(out[0 * 3 + 2], 6.0f);
  EXPECT_EQ(out[1 * 3 + 0], -6.0f);
}

TEST(ProfilesV2, SparseCooOpensAndVerifies) {
  EXPECT_TRUE(OpensAndVerifies(coo().build()));
  FileBuilderV2 b;
  b.object("c", "zt.sparse_coo/1", {5},
           Json{{"values", b.raw("i8", Bytes{1, 2, 3})},
                {"coords", b.raw("u64", le<uint64_t>({4, 0, 2}))}});
  EXPECT_TRUE(OpensAndVerifies(b.build()));
  FileBuilderV2 empty = coo({});
  EXPECT_TRUE(OpensAndVerifies(empty.build()));
}

TEST(ProfilesV2, SparseCooMetadataRules) {
  ExpectEachRefused(
      [] { return coo(); },
      {
          {[](FileBuilderV2& b) { b.manifest["objects"]["c"]["shape"] = Json::array(); },
           "the shape must have rank 1 or more"},
          {[](FileBuilderV2& b) { b.part("c", "coords")["dtype"] = "i32"; },
           "part \"coords\" must be u32 or u64 with no type (it is i32)"},
          {[](FileBuilderV2& b) { b.part("c", "coords")["type"] = "acme_t"; },
           "part \"coords\" must be u32 or u64 with no type (it is u32 of type acme_t)"},
          {[](FileBuilderV2& b) {
             b.part("c", "coords") = b.raw("u32", le<uint32_t>({0, 1, 2}));
           },
           "part \"coords\" has 12 bytes, not a multiple of 4 bytes x rank 2"},
          {[](FileBuilderV2& b) { b.part("c", "values") = b.raw("f32", le<float>({1})); },
           "the values type's size at nnz"},
          {[](FileBuilderV2& b) { b.manifest["objects"]["c"]["parts"]["extra"] = b.raw("u8", {}); },
           "has no part \"extra\""},
          {[](FileBuilderV2& b) { b.manifest["objects"]["c"]["parts"].erase("coords"); },
           "requires component \"coords\""},
      });
}

TEST(ProfilesV2, SparseCooDataRules) {
  EXPECT_TRUE(VerifyRefuses(coo({0, 2, 2, 0}).build(),
                            "coordinate 2 of dimension 0 (entry 1) is out of range [0, 2)"));
  EXPECT_TRUE(VerifyRefuses(coo({1, 1, 2, 2}).build(), "cell [1, 2] appears more than once"));
  EXPECT_TRUE(VerifyRefuses(coo({1, 0, 1, 2, 0, 2}).build(), "cell [1, 2] appears more than once"));
  EXPECT_TRUE(OpensAndVerifies(coo({1, 1, 2, 0}).build()));  // same row, other columns
}

// ---- zt.quant_group/1 ----

struct QuantParts {
  std::vector<uint64_t> shape;
  size_t data;  // bytes
  std::string scales_dtype;
  size_t scales;
  std::string zeros_dtype;  // empty: no zeros part
  size_t zeros = 0;
};

FileBuilderV2 quant(const Json& attrs, const QuantParts& p, std::string_view data_dtype = "u32") {
  FileBuilderV2 b;
  Json parts{{"data", b.raw(data_dtype, pattern(p.data))},
             {"scales", b.raw(p.scales_dtype, pattern(p.scales, 3))}};
  if (!p.zeros_dtype.empty()) parts["zeros"] = b.raw(p.zeros_dtype, pattern(p.zeros, 5));
  b.object("q", "zt.quant_group/1", p.shape, std::move(parts));
  attributes(b, "q") = attrs;
  return b;
}

// The profile's worked points, over small shapes.
Json awq_attributes() {
  return Json{{"bits", 4},
              {"group_size", 128},
              {"axis", 0},
              {"packing", {{"word", "u32"}, {"order", "lsb_first"}, {"per_word", 8}}},
              {"scale_form", "f16_factors"},
              {"zero_point", {{"form", "tensor"}, {"packing", "same_as_data"}}}};
}
// [128, 8]: one group along axis 0 per lane, 8 lanes; 1024 codes in 128
// words, 8 f16 scales, 8 zero points packed into one word.
const QuantParts kAwqParts = {{128, 8}, 512, "f16", 16, "u32", 4};
FileBuilderV2 awq() {
  return quant(awq_attributes(), kAwqParts);
}

TEST(ProfilesV2, QuantGroupWorkedPointsOpen) {
  EXPECT_TRUE(OpensAndVerifies(awq().build()));
  Json gptq = awq_attributes();
  gptq["packing"]["order"] = "msb_first";
  EXPECT_TRUE(OpensAndVerifies(quant(gptq, kAwqParts).build()));
  const Json mlx{{"bits", 4},
                 {"group_size", 64},
                 {"axis", 1},
                 {"packing", {{"word", "u32"}, {"order", "lsb_first"}, {"per_word", 8}}},
                 {"scale_form", "f16_factors"},
                 {"zero_point", {{"form", "tensor"}, {"packing", "plain"}}}};
  // [2, 128]: 2 groups x 2 lanes; plain zeros are one f16 per group.
  EXPECT_TRUE(OpensAndVerifies(quant(mlx, {{2, 128}, 128, "f16", 8, "f16", 8}).build()));
  const Json bias8{{"bits", 4},
                   {"group_size", 32},
                   {"axis", 0},
                   {"packing", {{"word", "u32"}, {"order", "lsb_first"}, {"per_word", 8}}},
                   {"scale_form", "f32_factors"},
                   {"zero_point", {{"form", "implied"}, {"value", 8}}}};
  EXPECT_TRUE(OpensAndVerifies(quant(bias8, {{64, 2}, 64, "f32", 16, ""}).build()));
  const Json int8{{"bits", 8},
                  {"group_size", 0},
                  {"axis", 0},
                  {"packing", {{"word", "u8"}, {"order", "lsb_first"}, {"per_word", 1}}},
                  {"scale_form", "f32_factors"},
                  {"zero_point", {{"form", "none"}}}};
  // Decision 16: group_size 0 is one group per lane, 6 scales for [4, 6]
  // along axis 0, not one per code.
  EXPECT_TRUE(OpensAndVerifies(quant(int8, {{4, 6}, 24, "f32", 24, ""}, "u8").build()));
  EXPECT_TRUE(
      OpensWith(quant(int8, {{4, 6}, 24, "f32", 96, ""}, "u8").build(), ZT_ERR_INVALID,
                {"part \"scales\" has 96 bytes; groups x lanes x width(scales.dtype)", "= 24"}));
  // Signed data in its unsigned word; e8m0 exponents as scales; a negative
  // implied zero point.
  Json e8m0 = bias8;
  e8m0["scale_form"] = "e8m0_exponent";
  e8m0["zero_point"]["value"] = -3;
  FileBuilderV2 b = quant(e8m0, {{64, 2}, 64, "u8", 4, ""}, "i32");
  b.part("q", "scales")["type"] = "f8_e8m0";
  EXPECT_TRUE(OpensAndVerifies(b.build()));
  const Bytes file = awq().build();  // outlives the reader
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_object_format(o.get(), 0), "zt.quant_group/1");
}

TEST(ProfilesV2, QuantGroupAttributeRules) {
  const auto set = [](std::string key, Json value) {
    return [key, value](FileBuilderV2& b) { attributes(b, "q")[key] = value; };
  };
  const auto set_in = [](std::string map, std::string key, Json value) {
    return [map, key, value](FileBuilderV2& b) { attributes(b, "q")[map][key] = value; };
  };
  const auto drop = [](std::string key) {
    return [key](FileBuilderV2& b) { attributes(b, "q").erase(key); };
  };
  ExpectEachRefused(
      awq,
      {
          {[](FileBuilderV2& b) { b.manifest["objects"]["q"].erase("attributes"); },
           "layout \"zt.quant_group/1\": attribute \"bits\" is required by the profile"},
          {drop("group_size"), "attribute \"group_size\" is required"},
          {drop("axis"), "attribute \"axis\" is required"},
          {drop("packing"), "attribute \"packing\" is required"},
          {drop("scale_form"), "attribute \"scale_form\" is required"},
          {drop("zero_point"), "attribute \"zero_point\" is required"},
          {set("bits", 4.0), "attribute \"bits\" must be an unsigned integer"},
          {set("bits", -4), "attribute \"bits\" must be an unsigned integer"},
          {set("bits", 7), "attribute \"bits\" must be 2, 3, 4, 5, 6 or 8, not 7"},
          {set("group_size", "128"), "attribute \"group_size\" must be an unsigned integer"},
          {set("group_size", 100), "group_size 100 does not divide shape[0] = 128"},
          {set("axis", 2), "attribute \"axis\" is 2, not below the rank 2"},
          {set("packing", "8_per_u32"), "attribute \"packing\" must be a map"},
          {[](FileBuilderV2& b) { attributes(b, "q")["packing"].erase("word"); },
           "attribute \"packing.word\" is required"},
          {set_in("packing", "word", "i32"), "attribute \"packing.word\" must be \"u8\""},
          {set_in("packing", "order", "big"), "attribute \"packing.order\" must be"},
          {set_in("packing", "per_word", 4),
           "attribute \"packing.per_word\" is 4; a 32-bit word of 4-bit codes holds 8"},
          {set("scale_form", "fp8"), "attribute \"scale_form\" must be \"f32_factors\""},
          {set("zero_point", "none"), "attribute \"zero_point\" must be a map"},
          {set_in("zero_point", "form", "asym"), "attribute \"zero_point.form\" must be \"none\""},
          {set_in("zero_point", "packing", "nibbles"),
           "attribute \"zero_point.packing\" must be \"same_as_data\" or \"plain\""},
          {[](FileBuilderV2& b) { attributes(b, "q")["zero_point"].erase("packing"); },
           "attribute \"zero_point.packing\" is required"},
      });
  // Decision 17: 3 bits never divide a word, whatever per_word says.
  Json three = awq_attributes();
  three["bits"] = 3;
  three["packing"]["per_word"] = 10;
  EXPECT_TRUE(OpensWith(quant(three, kAwqParts).build(), ZT_ERR_INVALID,
                        {"bits 3 do not divide a 32-bit word (\"u32\")"}));
  // The implied zero point: present, an integer within int64.
  Json implied = awq_attributes();
  implied["zero_point"] = {{"form", "implied"}};
  const QuantParts no_zeros = {{128, 8}, 512, "f16", 16, ""};
  EXPECT_TRUE(OpensWith(quant(implied, no_zeros).build(), ZT_ERR_INVALID,
                        {"attribute \"zero_point.value\" is required"}));
  implied["zero_point"]["value"] = 9223372036854775808ull;
  EXPECT_TRUE(OpensWith(quant(implied, no_zeros).build(), ZT_ERR_INVALID,
                        {"\"zero_point.value\" must be an integer that fits in 64 signed bits"}));
  // Decision 19: `value` where the form does not use it is ignored.
  Json extra = awq_attributes();
  extra["zero_point"]["value"] = "ignored";
  EXPECT_TRUE(OpensAndVerifies(quant(extra, kAwqParts).build()));
}

TEST(ProfilesV2, QuantGroupPartRules) {
  ExpectEachRefused(
      awq,
      {
          {[](FileBuilderV2& b) { b.part("q", "data")["dtype"] = "u16"; },
           "part \"data\" must be u32 (packing.word) or its signed counterpart"},
          {[](FileBuilderV2& b) { b.part("q", "data")["dtype"] = "f32"; },
           "part \"data\" must be u32 (packing.word)"},
          {[](FileBuilderV2& b) { b.part("q", "data")["type"] = "acme_t"; },
           "not u32 of type acme_t"},
          {[](FileBuilderV2& b) { b.part("q", "scales")["dtype"] = "u16"; },
           "part \"scales\" is u16, which scale_form \"f16_factors\" does not allow"},
          {[](FileBuilderV2& b) { b.part("q", "scales") = b.raw("f32", pattern(32)); },
           "part \"scales\" is f32, which scale_form \"f16_factors\" does not allow"},
          {[](FileBuilderV2& b) { attributes(b, "q")["scale_form"] = "e8m0_exponent"; },
           "(it needs u8 of type f8_e8m0)"},
          {[](FileBuilderV2& b) { b.manifest["objects"]["q"]["parts"].erase("zeros"); },
           "zero_point.form \"tensor\" needs the part \"zeros\""},
          {[](FileBuilderV2& b) { b.part("q", "zeros")["dtype"] = "i32"; },
           "part \"zeros\" packed \"same_as_data\" must have the dtype of \"data\" (u32)"},
          {[](FileBuilderV2& b) { b.part("q", "zeros")["type"] = "acme_t"; },
           "part \"zeros\" must have no type"},
          {[](FileBuilderV2& b) { b.part("q", "data") = b.raw("u32", pattern(508)); },
           "part \"data\" has 508 bytes; codes / per_word x width(word) = 512"},
          {[](FileBuilderV2& b) { b.part("q", "scales") = b.raw("f16", pattern(14)); },
           "part \"scales\" has 14 bytes"},
          {[](FileBuilderV2& b) { b.part("q", "zeros") = b.raw("u32", pattern(8)); },
           "part \"zeros\" has 8 bytes; groups x lanes / per_word x width(word) = 4"},
          {[](FileBuilderV2& b) { b.manifest["objects"]["q"]["parts"]["bias"] = b.raw("u8", {}); },
           "has no part \"bias\" (its parts are exactly \"data\", \"scales\", optional \"zeros\")"},
          {[](FileBuilderV2& b) { b.manifest["objects"]["q"]["parts"].erase("scales"); },
           "requires component \"scales\""},
      });
  // zeros where the form has none.
  Json none = awq_attributes();
  none["zero_point"] = {{"form", "none"}};
  EXPECT_TRUE(OpensWith(quant(none, kAwqParts).build(), ZT_ERR_INVALID,
                        {"part \"zeros\" must be absent when zero_point.form is \"none\""}));
  // Plain zeros: any dtype, sized one element per group.
  Json plain = awq_attributes();
  plain["zero_point"]["packing"] = "plain";
  EXPECT_TRUE(OpensAndVerifies(quant(plain, {{128, 8}, 512, "f16", 16, "i8", 8}).build()));
  EXPECT_TRUE(OpensWith(quant(plain, {{128, 8}, 512, "f16", 16, "i8", 4}).build(), ZT_ERR_INVALID,
                        {"part \"zeros\" has 4 bytes; groups x lanes x width(zeros.dtype) = 8"}));
  // Decision 18: sizes divide exactly. 15 codes are no whole number of
  // words; 4 zero points do not fill a word of 8.
  Json odd = awq_attributes();
  odd["group_size"] = 3;
  EXPECT_TRUE(OpensWith(quant(odd, {{3, 5}, 8, "f16", 10, "u32", 4}).build(), ZT_ERR_INVALID,
                        {"15 codes are not a whole number of words of 8 codes"}));
  EXPECT_TRUE(OpensWith(quant(awq_attributes(), {{128, 4}, 256, "f16", 8, "u32", 4}).build(),
                        ZT_ERR_INVALID,
                        {"4 zero points packed same_as_data are not a whole number of words"}));
}

// ---- zt.mx/1 ----

// MXFP4 over [2, 64], blocks of 32 along the last axis: 128 elements in 64
// bytes, 4 scales.
FileBuilderV2 mx() {
  FileBuilderV2 b;
  b.object("x", "zt.mx/1", {2, 64},
           Json{{"data", typed(b, "u8", "f4_e2m1", pattern(64))},
                {"scales", typed(b, "u8", "f8_e8m0", Bytes{127, 128, 0xff, 1})}});
  attributes(b, "x") = Json{{"block_size", 32}, {"scale_form", "e8m0_exponent"}};
  return b;
}

TEST(ProfilesV2, MxOpensAndVerifies) {
  EXPECT_TRUE(OpensAndVerifies(mx().build()));
  for (const char* type : {"f8_e4m3fn", "f8_e5m2"}) {  // MXFP8: one byte per element
    FileBuilderV2 b = mx();
    b.part("x", "data") = typed(b, "u8", type, pattern(128));
    EXPECT_TRUE(OpensAndVerifies(b.build())) << type;
  }
  FileBuilderV2 int8 = mx();  // MXINT8
  int8.part("x", "data") = int8.raw("i8", pattern(128));
  EXPECT_TRUE(OpensAndVerifies(int8.build()));
  // Blocks along axis 0 (decision 20): [64, 3] has 2 x 3 blocks.
  FileBuilderV2 axis0 = mx();
  axis0.manifest["objects"]["x"]["shape"] = Json::array({64, 3});
  attributes(axis0, "x")["axis"] = 0;
  axis0.part("x", "data") = typed(axis0, "u8", "f4_e2m1", pattern(96));
  axis0.part("x", "scales") = typed(axis0, "u8", "f8_e8m0", pattern(6));
  EXPECT_TRUE(OpensAndVerifies(axis0.build()));
  // An element type this library does not know opens (decision 21), unsized.
  FileBuilderV2 future = mx();
  future.part("x", "data") = typed(future, "u8", "f6_e3m2", pattern(96));
  EXPECT_TRUE(OpensAndVerifies(future.build()));
  const Bytes file = mx().build();  // outlives the reader
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_object_format(o.get(), 0), "zt.mx/1");
}

TEST(ProfilesV2, MxRules) {
  const auto data = [](std::string dtype, std::string type) {
    return [dtype, type](FileBuilderV2& b) {
      b.part("x", "data") = typed(b, dtype, type, pattern(128));
    };
  };
  ExpectEachRefused(
      mx,
      {
          {[](FileBuilderV2& b) { b.manifest["objects"]["x"]["shape"] = Json::array(); },
           "layout \"zt.mx/1\": the shape must have rank 1 or more"},
          {[](FileBuilderV2& b) { attributes(b, "x").erase("block_size"); },
           "attribute \"block_size\" is required"},
          {[](FileBuilderV2& b) { attributes(b, "x")["block_size"] = "32"; },
           "attribute \"block_size\" must be an unsigned integer"},
          {[](FileBuilderV2& b) { attributes(b, "x")["block_size"] = 1; },
           "attribute \"block_size\" must be at least 2, not 1"},
          {[](FileBuilderV2& b) { attributes(b, "x")["block_size"] = 48; },
           "block_size 48 does not divide shape[1] = 64"},
          {[](FileBuilderV2& b) { attributes(b, "x")["axis"] = 2; },
           "attribute \"axis\" is 2, not below the rank 2"},
          {[](FileBuilderV2& b) { attributes(b, "x")["axis"] = -1; },
           "attribute \"axis\" must be an unsigned integer"},
          {[](FileBuilderV2& b) { attributes(b, "x").erase("scale_form"); },
           "attribute \"scale_form\" is required"},
          {[](FileBuilderV2& b) { attributes(b, "x")["scale_form"] = "f32_factors"; },
           "attribute \"scale_form\" must be \"e8m0_exponent\""},
          {[](FileBuilderV2& b) { b.part("x", "scales").erase("type"); },
           "part \"scales\" must be u8 of type f8_e8m0"},
          {[](FileBuilderV2& b) { b.part("x", "scales")["type"] = "f8_e4m3fn"; },
           "part \"scales\" must be u8 of type f8_e8m0"},
          {data("u8", ""), "part \"data\" is u8 with no type; MX elements are"},
          {data("u8", "f8_e4m3fnuz"), "part \"data\" is u8 of type f8_e4m3fnuz"},
          {data("u8", "bool"), "part \"data\" is u8 of type bool"},
          {data("i16", ""), "part \"data\" is i16 with no type"},
          {[](FileBuilderV2& b) { b.part("x", "data") = typed(b, "u8", "f4_e2m1", pattern(65)); },
           "part \"data\" has 65 bytes; the type's size at product(shape) = 64"},
          {[](FileBuilderV2& b) { b.part("x", "scales") = typed(b, "u8", "f8_e8m0", pattern(2)); },
           "part \"scales\" has 2 bytes; product(shape) / block_size = 4"},
          {[](FileBuilderV2& b) { b.manifest["objects"]["x"]["parts"]["extra"] = b.raw("u8", {}); },
           "has no part \"extra\" (its parts are exactly \"data\", \"scales\")"},
          {[](FileBuilderV2& b) { b.manifest["objects"]["x"]["parts"].erase("scales"); },
           "requires component \"scales\""},
      });
}

// ---- libztensor.packed_group/1 (docs/profiles/libztensor.packed_group-1.md) ----

Json slots(std::initializer_list<int> order) {
  return Json(std::vector<int>(order));
}

Json packing(int axis, const Json& order) {
  return Json{{"word", "u32"},
              {"per_word", 8},
              {"axis", axis},
              {"stored", "columns_first"},
              {"slots", order}};
}

// GPTQ's point over [8, 16] (8 rows, 16 columns), 4 bits, 2 groups of 8
// columns, act-order: data [16 / 8, 8] words, zeros [2, 8 / 8] words,
// scales f16 [2, 8], g_idx i32 [16].
FileBuilderV2 packed(const std::vector<uint32_t>& data, const std::vector<uint32_t>& zeros,
                     const std::vector<int32_t>& g_idx) {
  FileBuilderV2 b;
  std::vector<uint16_t> scales(16, 0x3800);  // f16 0.5
  scales[9] = 0x4000;                        // group 1, row 1: 2.0
  b.object("w", "libztensor.packed_group/1", {8, 16},
           Json{{"data", b.raw("i32", le(data))},
                {"scales", b.raw("f16", le(scales))},
                {"zeros", b.raw("i32", le(zeros))},
                {"g_idx", b.raw("i32", le(g_idx))}});
  const Json identity = slots({0, 1, 2, 3, 4, 5, 6, 7});
  attributes(b, "w") =
      Json{{"bits", 4},
           {"groups", 2},
           {"group_size", 8},
           {"packing", packing(1, identity)},
           {"scales_stored", "groups_first"},
           {"zero_point", {{"form", "packed"}, {"offset", 1}, {"packing", packing(0, identity)}}}};
  return b;
}

std::vector<int32_t> act_order() {  // columns 0-7 in group 1, 8-15 in group 0
  std::vector<int32_t> g(16);
  for (int c = 0; c < 16; ++c) g[c] = c < 8 ? 1 : 0;
  return g;
}

FileBuilderV2 gptq_point() {
  std::vector<uint32_t> data(16);
  for (uint32_t i = 0; i < 16; ++i)
    data[i] = 0x76543210u + i;  // word [c / 8, r] at (c / 8) * 8 + r
  return packed(data, {0x00000002u, 0x00000003u}, act_order());
}

TEST(ProfilesV2, PackedGroupDecodesAsItsText) {
  const Bytes file = gptq_point().build();
  ASSERT_TRUE(OpensAndVerifies(file));
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_object_format(o.get(), 0), "libztensor.packed_group/1");
  float out[128];
  size_t written = 0;
  ASSERT_EQ(zt_object_decode_f32(o.get(), 0, out, 128, &written), ZT_OK) << zt_last_error();
  ASSERT_EQ(written, 128u);
  // W[r][c] = (code - (zero + 1)) x scale, by the profile's text, worked by
  // hand: code(r, c) is nibble c % 8 of word (c / 8) * 8 + r; zero(g, r) is
  // nibble r of zeros word g (2 for group 0, 3 for group 1); column c is in
  // group 1 for c < 8.
  const auto want = [](int r, int c) {
    const uint32_t word = 0x76543210u + static_cast<uint32_t>((c / 8) * 8 + r);
    const int code = static_cast<int>((word >> (4 * (c % 8))) & 15);
    const int g = c < 8 ? 1 : 0;
    const int zero = (r == 0 ? (g == 0 ? 2 : 3) : 0) + 1;
    const float scale = g == 1 && r == 1 ? 2.0f : 0.5f;
    return static_cast<float>(code - zero) * scale;
  };
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 16; ++c) EXPECT_EQ(out[r * 16 + c], want(r, c)) << r << ", " << c;
  EXPECT_EQ(out[0 * 16 + 1], (1 - 4) * 0.5f);  // a value spelled out
  EXPECT_EQ(out[1 * 16 + 2], (2 - 1) * 2.0f);  // word 1 = 0x76543211: nibble 2 is 2
  // AWQ's slot order over the same words: slot s holds position {0, 2, 4, 6,
  // 1, 3, 5, 7}[s] of the run, so position 1 is in slot 4.
  FileBuilderV2 awq = gptq_point();
  attributes(awq, "w")["packing"]["slots"] = slots({0, 2, 4, 6, 1, 3, 5, 7});
  const Bytes awq_file = awq.build();
  const Opened a = open_memory(awq_file);
  ASSERT_EQ(a.status, ZT_OK) << a.error;
  ASSERT_EQ(zt_object_decode_f32(a.get(), 0, out, 128, &written), ZT_OK) << zt_last_error();
  EXPECT_EQ(out[0 * 16 + 1], (4 - 4) * 0.5f);
  EXPECT_EQ(out[0 * 16 + 4], (2 - 4) * 0.5f);
}

TEST(ProfilesV2, PackedGroupGroupMapIsADataRule) {
  std::vector<int32_t> g = act_order();
  g[5] = 2;
  FileBuilderV2 b = gptq_point();
  b.part("w", "g_idx") = b.raw("i32", le(g));
  const Bytes file = b.build();
  EXPECT_TRUE(
      VerifyRefuses(file, "part \"g_idx\": column 5 names group 2, not one of the 2 groups"));
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  float out[128];
  size_t written = 0;
  EXPECT_TRUE(FailsWith(zt_object_decode_f32(o.get(), 0, out, 128, &written), ZT_ERR_INVALID,
                        {"column 5 names group 2"}));
  g[5] = -1;
  b.part("w", "g_idx") = b.raw("i32", le(g));
  EXPECT_TRUE(VerifyRefuses(b.build(), "column 5 names group -1"));
}

TEST(ProfilesV2, PackedGroupRules) {
  const auto set = [](std::string key, Json value) {
    return [key, value](FileBuilderV2& b) { attributes(b, "w")[key] = value; };
  };
  const auto set_in = [](std::string map, std::string key, Json value) {
    return [map, key, value](FileBuilderV2& b) { attributes(b, "w")[map][key] = value; };
  };
  ExpectEachRefused(
      gptq_point,
      {
          {[](FileBuilderV2& b) { b.manifest["objects"]["w"]["shape"] = Json::array({128}); },
           "the shape must be [rows, columns], not rank 1"},
          {set("bits", 3), "attribute \"bits\" must be 2, 4 or 8, not 3"},
          {set("groups", 0), "attribute \"groups\" must be at least 1"},
          {[](FileBuilderV2& b) { attributes(b, "w").erase("group_size"); },
           "attribute \"group_size\" is required"},
          {set_in("packing", "per_word", 4),
           "attribute \"packing.per_word\" is 4; a 32-bit word holds 8"},
          {set_in("packing", "word", "u16"),
           "attribute \"packing.per_word\" is 8; a 16-bit word holds 4"},
          {set_in("packing", "axis", 2), "attribute \"packing.axis\" must be 0 or 1, not 2"},
          {set_in("packing", "stored", "rows"),
           "attribute \"packing.stored\" must be \"rows_first\" or \"columns_first\""},
          {set_in("packing", "slots", slots({0, 1, 2, 3, 4, 5, 6, 6})),
           "attribute \"packing.slots\" must list each of 0 .. 7 once"},
          {set_in("packing", "slots", slots({0, 1, 2})), "must list each of 0 .. 7 once"},
          {set_in("packing", "slots", "01234567"),
           "attribute \"packing.slots\" must be an array of unsigned integers"},
          {set("scales_stored", "columns_first"),
           "attribute \"scales_stored\" must be \"groups_first\" or \"rows_first\""},
          {set_in("zero_point", "form", "tensor"),
           "attribute \"zero_point.form\" must be \"none\", \"implied\", \"packed\" or \"plain\""},
          {[](FileBuilderV2& b) { attributes(b, "w")["zero_point"].erase("offset"); },
           "attribute \"zero_point.offset\" is required when the form is \"packed\""},
          {set_in("zero_point", "form", "none"),
           "part \"zeros\" must be there exactly when zero_point.form is \"packed\" or \"plain\""},
          {[](FileBuilderV2& b) { b.part("w", "data") = b.raw("f32", pattern(64)); },
           "part \"data\" must be u32 (its packing's word) or the signed counterpart"},
          {[](FileBuilderV2& b) { b.part("w", "data") = b.raw("i32", pattern(60)); },
           "part \"data\" has 60 bytes; words x width(word) = 64"},
          {[](FileBuilderV2& b) { b.part("w", "scales") = b.raw("f16", pattern(30)); },
           "part \"scales\" has 30 bytes; rows x groups x width(scales.dtype) = 32"},
          {[](FileBuilderV2& b) { b.part("w", "scales") = b.raw("i16", pattern(32)); },
           "part \"scales\" must be f16, bf16, f32 or f64 with no type"},
          {[](FileBuilderV2& b) { b.part("w", "g_idx") = b.raw("i32", pattern(60)); },
           "part \"g_idx\" has 60 bytes; columns x width(g_idx.dtype) = 64"},
          {[](FileBuilderV2& b) { b.part("w", "g_idx") = b.raw("f32", pattern(64)); },
           "part \"g_idx\" must be an integer dtype with no type"},
          {[](FileBuilderV2& b) {
             b.manifest["objects"]["w"]["parts"].erase("g_idx");
             attributes(b, "w")["group_size"] = 4;
           },
           "without a part \"g_idx\", groups must be 4"},
          {[](FileBuilderV2& b) {  // 8 rows do not fill a word along axis 0 of [8, 2] at 16 a word
             attributes(b, "w")["bits"] = 2;
             attributes(b, "w")["packing"]["per_word"] = 16;
             attributes(b, "w")["packing"]["slots"] =
                 slots({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
             attributes(b, "w")["zero_point"]["packing"] = attributes(b, "w")["packing"];
             attributes(b, "w")["zero_point"]["packing"]["axis"] = 0;
             b.part("w", "data") = b.raw("i32", pattern(32));  // [16 / 16, 8] words
           },
           "part \"zeros\": the zero points [rows, groups]'s axis 0 has 8 codes, not a multiple of "
           "16"},
          {[](FileBuilderV2& b) { b.manifest["objects"]["w"]["parts"]["extra"] = b.raw("u8", {}); },
           "has no part \"extra\""},
      });
  // Without a group map, the groups follow group_size; the last may be short.
  FileBuilderV2 plain = gptq_point();
  plain.manifest["objects"]["w"]["parts"].erase("g_idx");
  attributes(plain, "w")["group_size"] = 10;
  EXPECT_TRUE(OpensAndVerifies(plain.build()));
}

// ---- libztensor.block_scaled/1 (docs/profiles/libztensor.block_scaled-1.md) ----

// FP4 over [3, 5] (15 values in 8 bytes) in blocks of [2, 2]: a 2 x 3 grid
// of f8_e4m3fn scales, and a global f32 scale.
FileBuilderV2 block_scaled() {
  FileBuilderV2 b;
  const Bytes data{0x21, 0x43, 0x65, 0x87, 0xa9, 0xcb, 0xed, 0x0f};
  const Bytes scales{0x38, 0x40, 0x30, 0x38, 0x48, 0xb8};  // 1, 2, 0.5, 1, 4, -1
  b.object("b", "libztensor.block_scaled/1", {3, 5},
           Json{{"data", typed(b, "u8", "f4_e2m1", data)},
                {"scales", typed(b, "u8", "f8_e4m3fn", scales)},
                {"global_scale", b.raw("f32", le(std::vector<float>{0.25f}))}});
  attributes(b, "b") = Json{{"block", {2, 2}}};
  return b;
}

TEST(ProfilesV2, BlockScaledDecodesAsItsText) {
  const Bytes file = block_scaled().build();
  ASSERT_TRUE(OpensAndVerifies(file));
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  float out[15];
  size_t written = 0;
  ASSERT_EQ(zt_object_decode_f32(o.get(), 0, out, 15, &written), ZT_OK) << zt_last_error();
  ASSERT_EQ(written, 15u);
  // Nibble i (low first) is E2M1 code i + 1 for i < 14, then 0xf (-6); by
  // hand: code 1 = 0.5, 2 = 1, 3 = 1.5, 4 = 2, 5 = 3, 6 = 4, 7 = 6, 8 = -0,
  // 9 = -0.5, 10 = -1, 11 = -1.5, 12 = -2, 13 = -3, 14 = -4, 15 = -6.
  const float e2m1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  const float scale[2][3] = {{1, 2, 0.5f}, {1, 4, -1}};
  for (int i = 0; i < 15; ++i) {
    const int r = i / 5, c = i % 5, code = i < 14 ? i + 1 : 15;
    EXPECT_EQ(out[i], e2m1[code] * scale[r / 2][c / 2] * 0.25f) << i;
  }
  EXPECT_EQ(out[14], -6 * -1 * 0.25f);  // row 2, column 4: the last block of both
}

TEST(ProfilesV2, BlockScaledRules) {
  ExpectEachRefused(
      block_scaled,
      {
          {[](FileBuilderV2& b) { b.manifest["objects"]["b"]["shape"] = Json::array({15}); },
           "the shape must be [rows, columns], not rank 1"},
          {[](FileBuilderV2& b) { attributes(b, "b").erase("block"); },
           "attribute \"block\" is required"},
          {[](FileBuilderV2& b) {
             attributes(b, "b")["block"] = {2, 0};
           },
           "attribute \"block\" must be [rows, columns] of a block, both at least 1"},
          {[](FileBuilderV2& b) { attributes(b, "b")["block"] = {2}; },
           "attribute \"block\" must be [rows, columns]"},
          {[](FileBuilderV2& b) {
             attributes(b, "b")["block"] = {1, 2, 3};
           },
           "attribute \"block\" has more than 2 items"},
          {[](FileBuilderV2& b) {
             attributes(b, "b")["block"] = {3, 5};
           },
           "part \"scales\" has 6 bytes; ceil(rows / block[0]) x ceil(columns / block[1]) x "
           "width = 1"},
          {[](FileBuilderV2& b) { b.part("b", "data") = typed(b, "u8", "f4_e2m1", pattern(7)); },
           "part \"data\" has 7 bytes; the type's size at rows x columns = 8"},
          {[](FileBuilderV2& b) { b.part("b", "data") = typed(b, "u8", "bool", pattern(15)); },
           "part \"data\" must be f16, bf16, f32 or i8 with no type, or u8 of an FP8 or FP4 type"},
          {[](FileBuilderV2& b) { b.part("b", "data") = b.raw("i32", pattern(60)); },
           "part \"data\" must be f16, bf16, f32 or i8"},
          {[](FileBuilderV2& b) { b.part("b", "scales") = b.raw("u8", pattern(6)); },
           "part \"scales\" must be f16, bf16 or f32 with no type, or u8 of type f8_e4m3fn or "
           "f8_e8m0"},
          {[](FileBuilderV2& b) { b.part("b", "global_scale") = b.raw("f32", pattern(8)); },
           "part \"global_scale\" has 8 bytes; one value = 4"},
          {[](FileBuilderV2& b) {
             b.manifest["objects"]["b"]["parts"]["input_scale"] =
                 typed(b, "u8", "f8_e4m3fn", pattern(1));
           },
           "part \"input_scale\" must be f16, bf16 or f32 with no type"},
          {[](FileBuilderV2& b) { b.manifest["objects"]["b"]["parts"]["extra"] = b.raw("u8", {}); },
           "has no part \"extra\""},
      });
  // FP8 data with f32 scales, blocks that cover the whole tensor; a future
  // element type opens.
  FileBuilderV2 fp8 = block_scaled();
  fp8.part("b", "data") = typed(fp8, "u8", "f8_e4m3fn", pattern(15));
  fp8.part("b", "scales") = fp8.raw("f32", pattern(4));
  attributes(fp8, "b")["block"] = {3, 5};
  EXPECT_TRUE(OpensAndVerifies(fp8.build()));
  FileBuilderV2 future = block_scaled();
  future.part("b", "data") = typed(future, "u8", "f6_e3m2", pattern(12));
  EXPECT_TRUE(OpensAndVerifies(future.build()));
}

// ---- gguf.<type>/1 ----

// ggml's block geometry, from ggml-common.h (not from the library's table).
struct Ggml {
  const char* type;
  uint64_t elems_per_block, block_bytes;
};
constexpr Ggml kGgml[] = {
    {"q4_0", 32, 18},     {"q4_1", 32, 20},     {"q5_0", 32, 22},     {"q5_1", 32, 24},
    {"q8_0", 32, 34},     {"q8_1", 32, 36},     {"q2_k", 256, 84},    {"q3_k", 256, 110},
    {"q4_k", 256, 144},   {"q5_k", 256, 176},   {"q6_k", 256, 210},   {"q8_k", 256, 292},
    {"iq1_s", 256, 50},   {"iq1_m", 256, 56},   {"iq2_xxs", 256, 66}, {"iq2_xs", 256, 74},
    {"iq2_s", 256, 82},   {"iq3_xxs", 256, 98}, {"iq3_s", 256, 110},  {"iq4_nl", 32, 18},
    {"iq4_xs", 256, 136}, {"mxfp4", 32, 17},
};

// gguf.q8_0/1 over [2, 64]: 4 blocks of 32 elements, 34 bytes each.
FileBuilderV2 gguf() {
  FileBuilderV2 b;
  b.object("g", "gguf.q8_0/1", {2, 64}, Json{{"data", b.raw("u8", pattern(136))}});
  attributes(b, "g") = Json{{"elems_per_block", 32}, {"block_bytes", 34}};
  return b;
}

TEST(ProfilesV2, GgufEveryTypeOpens) {
  for (const Ggml& t : kGgml) {
    const std::string id = std::string("gguf.") + t.type + "/1";
    FileBuilderV2 b;
    b.object("g", id, {3, t.elems_per_block},
             Json{{"data", b.raw("u8", pattern(3 * t.block_bytes))}});
    attributes(b, "g") =
        Json{{"elems_per_block", t.elems_per_block}, {"block_bytes", t.block_bytes}};
    const Bytes file = b.build();
    EXPECT_TRUE(OpensAndVerifies(file)) << id;
    const Opened o = open_memory(file);
    ASSERT_EQ(o.status, ZT_OK) << o.error;
    EXPECT_STREQ(zt_object_format(o.get(), 0), id.c_str());
  }
  // Types the profile does not list are unknown layouts: opened unchecked.
  for (const char* id : {"gguf.f32/1", "gguf.q8_0/2", "gguf.q1_0/1"}) {
    FileBuilderV2 b;
    b.object("g", id, {7}, Json{{"blocks", b.raw("i16", pattern(4))}});
    EXPECT_TRUE(OpensAndVerifies(b.build())) << id;
  }
}

TEST(ProfilesV2, GgufRules) {
  const auto shape = [](std::vector<uint64_t> s) {
    return [s](FileBuilderV2& b) { b.manifest["objects"]["g"]["shape"] = s; };
  };
  ExpectEachRefused(
      gguf,
      {
          {[](FileBuilderV2& b) { b.part("g", "data")["dtype"] = "i8"; },
           "layout \"gguf.q8_0/1\": part \"data\" must be u8 with no type (it is i8)"},
          {[](FileBuilderV2& b) { b.part("g", "data")["type"] = "bool"; },
           "part \"data\" must be u8 with no type (it is u8 of type bool)"},
          {[](FileBuilderV2& b) { attributes(b, "g").erase("elems_per_block"); },
           "attribute \"elems_per_block\" is required"},
          {[](FileBuilderV2& b) { attributes(b, "g").erase("block_bytes"); },
           "attribute \"block_bytes\" is required"},
          {[](FileBuilderV2& b) { attributes(b, "g")["block_bytes"] = 34.0; },
           "attribute \"block_bytes\" must be an unsigned integer"},
          {[](FileBuilderV2& b) { attributes(b, "g")["elems_per_block"] = 0; },
           "attribute \"elems_per_block\" must be at least 1"},
          {[](FileBuilderV2& b) { attributes(b, "g")["block_bytes"] = 0; },
           "attribute \"block_bytes\" must be at least 1"},
          {[](FileBuilderV2& b) { attributes(b, "g")["block_bytes"] = 36; },
           "elems_per_block 32 and block_bytes 36 are not ggml's 32 and 34"},
          {shape({40}), "elems_per_block 32 does not divide product(shape) = 40"},
          {shape({}), "elems_per_block 32 does not divide product(shape) = 1"},
          // 96 elements are 3 whole blocks, but a block would span two rows.
          {shape({2, 48}), "elems_per_block 32 does not divide the last dimension 48"},
          {[](FileBuilderV2& b) { b.part("g", "data") = b.raw("u8", pattern(135)); },
           "part \"data\" has 135 bytes; product(shape) / elems_per_block x block_bytes = 136"},
          {[](FileBuilderV2& b) { b.manifest["objects"]["g"]["parts"]["meta"] = b.raw("u8", {}); },
           "layout \"gguf.q8_0/1\" has exactly one part, \"data\" (not \"meta\")"},
      });
}

}  // namespace
}  // namespace zt::test
