// The writer producing zTensor v2 (zt_writer_options.file_version = 2): what
// it writes reads back through the same calls, with the v2 rules the reader
// enforces (placement, seekable zstd, digests over decoded bytes,
// deterministic manifest), deterministic bytes, and the refusals of what v2
// cannot say.
#include <gtest/gtest.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "cbor/deterministic.h"
#include "container/container.h"
#include "test_files.h"

namespace zt::test {
namespace {

namespace fs = std::filesystem;

class WriterV2 : public ::testing::Test {
 protected:
  std::string path(const std::string& name = "out.zt") const { return (dir_ / name).string(); }

  static zt_writer_options v2_options(uint64_t alignment = 0) {
    zt_writer_options o;
    zt_writer_options_init(&o);
    o.file_version = 2;
    o.alignment = alignment;
    o.frame_size = 1024;
    return o;
  }
  zt_writer* open_v2(const std::string& p, uint64_t alignment = 0) const {
    const zt_writer_options o = v2_options(alignment);
    zt_writer* w = nullptr;
    EXPECT_EQ(zt_writer_open_ex(p.c_str(), &o, &w), ZT_OK) << zt_last_error();
    return w;
  }
  static Bytes slurp(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(f), {});
  }

  // A model of each kind the v2 writer handles.
  void write_sample(const std::string& p, uint64_t alignment = 0) const {
    zt_writer* w = open_v2(p, alignment);
    ASSERT_NE(w, nullptr);
    const std::vector<float> weights{1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, 7.0f};
    const uint64_t wshape[] = {2, 3};
    ASSERT_EQ(zt_writer_add_dense(w, "w", "f32", wshape, 2, weights.data(), 24, "raw"), ZT_OK)
        << zt_last_error();
    ASSERT_EQ(zt_writer_set_file_attributes_json(w, R"({"z": 1, "a": [1.5, "x"], "mm": null})"),
              ZT_OK);
    const Bytes ramp = pattern(10000);
    const uint64_t rshape[] = {10000};
    ASSERT_EQ(zt_writer_add_dense(w, "ramp", "u8", rshape, 1, ramp.data(), ramp.size(), "zstd"),
              ZT_OK)
        << zt_last_error();
    const uint8_t flags[] = {0, 1, 1};
    const uint64_t fshape[] = {3};
    ASSERT_EQ(zt_writer_add_dense(w, "flags", "bool", fshape, 1, flags, 3, "raw"), ZT_OK)
        << zt_last_error();
    const uint64_t cshape[] = {2, 3};
    ASSERT_EQ(zt_writer_begin_object(w, "csr", "sparse_csr", cshape, 2), ZT_OK) << zt_last_error();
    const Bytes values = le<float>({1, 2}), indices = le<uint64_t>({0, 2}),
                indptr = le<uint64_t>({0, 1, 2});
    ASSERT_EQ(zt_writer_add_component(w, "values", "f32", nullptr, values.data(), 8, "raw"), ZT_OK);
    ASSERT_EQ(zt_writer_add_component(w, "indices", "u64", nullptr, indices.data(), 16, "raw"),
              ZT_OK);
    ASSERT_EQ(zt_writer_add_component(w, "indptr", "u64", nullptr, indptr.data(), 24, "zstd"),
              ZT_OK);
    ASSERT_EQ(zt_writer_set_object_attributes_json(w, R"({"note": "tied"})"), ZT_OK);
    ASSERT_EQ(zt_writer_end_object(w), ZT_OK) << zt_last_error();
    const uint64_t eshape[] = {0};
    ASSERT_EQ(zt_writer_add_dense(w, "empty", "f32", eshape, 1, nullptr, 0, "zstd"), ZT_OK)
        << zt_last_error();
    ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  }

  TempDir tmp_{"zt-writer-v2-"};
  const fs::path dir_ = tmp_.path();
};

TEST_F(WriterV2, WhatItWritesReadsBackThroughTheSameCalls) {
  write_sample(path());
  zt_reader* r = nullptr;
  ASSERT_EQ(zt_open(path().c_str(), &r), ZT_OK) << zt_last_error();
  ReaderPtr hold(r);
  EXPECT_STREQ(zt_file_version(r), "2");
  ASSERT_EQ(zt_object_count(r), 5u);
  const size_t w = object_index(r, "w"), ramp = object_index(r, "ramp"),
               flags = object_index(r, "flags"), csr = object_index(r, "csr");
  EXPECT_STREQ(zt_object_layout(r, w), "dense");
  EXPECT_STREQ(zt_object_format(r, csr), "sparse_csr");
  EXPECT_STREQ(zt_object_layout(r, csr), "zt.sparse_csr/1");
  EXPECT_STREQ(zt_component_encoding(r, ramp, "data"), "zstd");
  EXPECT_STREQ(zt_component_encoding_id(r, ramp, "data"), "zt.zstd-seekable/1");
  // bool is a type over u8 in v2.
  EXPECT_STREQ(zt_component_dtype(r, flags, "data"), "u8");
  EXPECT_STREQ(zt_component_type(r, flags, "data"), "bool");
  const Mapped m = map_component(r, "ramp", "data");
  ASSERT_EQ(m.status, ZT_OK);
  EXPECT_EQ(m.bytes, pattern(10000));
  uint64_t checked = 0, unchecked = 0;
  ASSERT_EQ(zt_verify(r, &checked, &unchecked), ZT_OK) << zt_last_error();
  EXPECT_EQ(checked, 7u);  // every part has an xxh3 digest
  EXPECT_EQ(unchecked, 0u);
}

// The content digest (v2 spec §6.4) names the tensors, not the file: the
// same at 4096 and 65536 placement, raw or zstd; another byte or attribute
// gives another one.
TEST_F(WriterV2, ContentDigestIgnoresLayoutAndFollowsContent) {
  const auto write = [&](const std::string& p, uint64_t alignment, const char* encoding,
                         uint8_t last, const char* attributes) {
    zt_writer* w = open_v2(p, alignment);
    ASSERT_NE(w, nullptr);
    Bytes data = pattern(5000);
    data.back() = last;
    const uint64_t shape[] = {5000};
    ASSERT_EQ(zt_writer_begin_object(w, "t", "dense", shape, 1), ZT_OK) << zt_last_error();
    ASSERT_EQ(zt_writer_set_object_attributes_json(w, attributes), ZT_OK) << zt_last_error();
    ASSERT_EQ(zt_writer_add_component(w, "data", "u8", nullptr, data.data(), data.size(), encoding),
              ZT_OK)
        << zt_last_error();
    ASSERT_EQ(zt_writer_end_object(w), ZT_OK) << zt_last_error();
    ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  };
  const auto id = [&](const std::string& p, const char* algorithm = nullptr) {
    zt_reader* r = nullptr;
    EXPECT_EQ(zt_open(p.c_str(), &r), ZT_OK) << zt_last_error();
    ReaderPtr hold(r);
    char text[ZT_CONTENT_DIGEST_SIZE];
    EXPECT_EQ(zt_content_digest(r, algorithm, text, sizeof text), ZT_OK) << zt_last_error();
    return std::string(text);
  };
  write(path("a.zt"), 4096, "raw", 7, R"({"k": 1})");
  write(path("b.zt"), 65536, "zstd", 7, R"({"k": 1})");
  write(path("c.zt"), 4096, "raw", 8, R"({"k": 1})");
  write(path("d.zt"), 4096, "raw", 7, R"({"k": 2})");
  EXPECT_NE(slurp(path("a.zt")), slurp(path("b.zt")));
  const std::string a = id(path("a.zt"));
  EXPECT_EQ(a.substr(0, 7), "sha256:");
  EXPECT_EQ(a.size(), 7u + 64u);
  EXPECT_EQ(a, id(path("b.zt")));
  EXPECT_NE(a, id(path("c.zt")));
  EXPECT_NE(a, id(path("d.zt")));
  EXPECT_EQ(id(path("a.zt"), "xxh3"), id(path("b.zt"), "xxh3"));
  EXPECT_EQ(id(path("a.zt"), "xxh3").size(), 5u + 16u);

  zt_reader* r = nullptr;
  ASSERT_EQ(zt_open(path("a.zt").c_str(), &r), ZT_OK);
  ReaderPtr hold(r);
  char text[ZT_CONTENT_DIGEST_SIZE];
  EXPECT_EQ(zt_content_digest(r, "md5", text, sizeof text), ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_content_digest(r, nullptr, text, ZT_CONTENT_DIGEST_SIZE - 1), ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_content_digest(r, nullptr, nullptr, 0), ZT_ERR_ARGUMENT);
}

// Undefined, not approximated: a part without a digest, or a 1.x file.
TEST_F(WriterV2, ContentDigestNeedsEveryPartDigestAndAV2File) {
  zt_writer_options o = v2_options();
  o.digest = ZT_DIGEST_NONE;
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open_ex(path().c_str(), &o, &w), ZT_OK) << zt_last_error();
  const uint8_t one[] = {1};
  const uint64_t shape[] = {1};
  ASSERT_EQ(zt_writer_add_dense(w, "t", "u8", shape, 1, one, 1, "raw"), ZT_OK);
  ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  char text[ZT_CONTENT_DIGEST_SIZE];
  {
    zt_reader* r = nullptr;
    ASSERT_EQ(zt_open(path().c_str(), &r), ZT_OK);
    ReaderPtr hold(r);
    EXPECT_EQ(zt_content_digest(r, nullptr, text, sizeof text), ZT_ERR_UNSUPPORTED);
    EXPECT_NE(std::strstr(zt_last_error(), "object \"t\": component \"data\" has no digest"),
              nullptr)
        << zt_last_error();
  }
  FileBuilder v1;
  v1.dense("t", "u8", {1}, Bytes{1});
  const Opened old = open_memory(v1.build());
  ASSERT_EQ(old.status, ZT_OK) << old.error;
  EXPECT_EQ(zt_content_digest(old.get(), nullptr, text, sizeof text), ZT_ERR_UNSUPPORTED);
}

TEST_F(WriterV2, DigestsCoverTheDecodedBytes) {
  write_sample(path());
  zt_reader* r = nullptr;
  ASSERT_EQ(zt_open(path().c_str(), &r), ZT_OK);
  ReaderPtr hold(r);
  const Json j = Json::parse(zt_manifest_json(r));
  EXPECT_EQ(j["objects"]["ramp"]["components"]["data"]["digest"], xxh3_digest(pattern(10000)));
}

TEST_F(WriterV2, BlobsAndTheManifestSitAtTheAlignment) {
  for (const uint64_t alignment : {uint64_t{0}, uint64_t{4096}, uint64_t{8192}}) {
    SCOPED_TRACE(alignment);
    std::string file_name = std::to_string(alignment);
    file_name += ".zt";
    const std::string p = path(file_name);
    write_sample(p, alignment);
    const uint64_t a = alignment ? alignment : 65536;
    const Bytes file = slurp(p);
    const uint64_t manifest_at = load_u64_le(file.data() + file.size() - 40);
    EXPECT_EQ(manifest_at % a, 0u);
    zt_reader* r = nullptr;
    ASSERT_EQ(zt_open(p.c_str(), &r), ZT_OK) << zt_last_error();
    ReaderPtr hold(r);
    const Json j = Json::parse(zt_manifest_json(r));
    for (const auto& [name, o] : j["objects"].items())
      for (const auto& [role, c] : o["components"].items()) {
        EXPECT_EQ(c["offset"].get<uint64_t>() % a, 0u) << name << "." << role;
        EXPECT_GE(c["offset"].get<uint64_t>(), a) << name << "." << role;
      }
  }
}

TEST_F(WriterV2, TheManifestIsDeterministicAndTheBytesRepeat) {
  write_sample(path("one.zt"));
  write_sample(path("two.zt"));
  const Bytes one = slurp(path("one.zt"));
  EXPECT_EQ(one, slurp(path("two.zt")));
  const uint64_t at = load_u64_le(one.data() + one.size() - 40);
  const uint64_t length = load_u64_le(one.data() + one.size() - 32);
  const std::span<const uint8_t> manifest(one.data() + at, length);
  EXPECT_TRUE(cbor::check_deterministic(manifest, 32).ok());
  // The file attributes were given unsorted: they are stored sorted.
  zt_reader* r = nullptr;
  ASSERT_EQ(zt_open(path("one.zt").c_str(), &r), ZT_OK);
  ReaderPtr hold(r);
  const void* data = nullptr;
  size_t size = 0;
  ASSERT_EQ(zt_file_attributes_cbor(r, &data, &size), ZT_OK);
  const Bytes attrs(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + size);
  EXPECT_EQ(attrs, cbor_v2(Json{{"z", 1}, {"a", {1.5, "x"}}, {"mm", nullptr}}));
}

TEST_F(WriterV2, WhatV2CannotSayIsRefused) {
  zt_writer* w = open_v2(path());
  ASSERT_NE(w, nullptr);
  const uint64_t shape[] = {4};
  EXPECT_TRUE(FailsWith(zt_writer_begin_object(w, "q", "quantized_group", shape, 1),
                        ZT_ERR_UNSUPPORTED, {"no v2 layout"}));
  EXPECT_TRUE(FailsWith(zt_writer_begin_object(w, "q", "my_format", shape, 1), ZT_ERR_ARGUMENT,
                        {"not a v2 layout"}));
  const std::string long_name(1025, 'n');
  EXPECT_TRUE(FailsWith(zt_writer_begin_object(w, long_name.c_str(), "dense", shape, 1),
                        ZT_ERR_ARGUMENT, {"at most 1024 bytes"}));
  const uint8_t tagged[] = {0xA1, 0x61, 'k', 0xC1, 0x01};  // {"k": 1(1)}
  EXPECT_TRUE(FailsWith(zt_writer_set_file_attributes_cbor(w, tagged, sizeof tagged),
                        ZT_ERR_ARGUMENT, {"tag"}));
  // An object without parts has no meaning in v2 (§3.3): dropped at its end.
  ASSERT_EQ(zt_writer_begin_object(w, "hollow", "dense", shape, 1), ZT_OK);
  EXPECT_TRUE(FailsWith(zt_writer_end_object(w), ZT_ERR_INVALID, {"at least one part"}));
  const uint64_t huge[] = {uint64_t{1} << 40, uint64_t{1} << 40};
  EXPECT_TRUE(FailsWith(zt_writer_begin_object(w, "huge", "dense", huge, 2), ZT_ERR_ARGUMENT,
                        {"fits 64 bits"}));
  // A profile id the library does not know is stored as written.
  ASSERT_EQ(zt_writer_begin_object(w, "kv", "acme.paged/1", shape, 1), ZT_OK) << zt_last_error();
  ASSERT_EQ(zt_writer_add_component(w, "pages", "u8", nullptr, "abcd", 4, "raw"), ZT_OK);
  ASSERT_EQ(zt_writer_end_object(w), ZT_OK) << zt_last_error();
  ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  zt_reader* r = nullptr;
  ASSERT_EQ(zt_open(path().c_str(), &r), ZT_OK) << zt_last_error();
  ReaderPtr hold(r);
  EXPECT_STREQ(zt_object_format(r, 0), "acme.paged/1");
}

// f4_e2m1 with an odd count: the spare nibble must be 0 (decision 14), as
// bool bytes must be 0 or 1; a refused part leaves the object open.
TEST_F(WriterV2, F4e2m1SpareNibbleIsCheckedOnTheWay) {
  for (const char* encoding : {"raw", "zstd"}) {
    zt_writer* w = open_v2(path());
    ASSERT_NE(w, nullptr);
    const uint64_t shape[] = {3};
    const uint8_t bad[] = {0x21, 0x13}, good[] = {0x21, 0x03};
    ASSERT_EQ(zt_writer_begin_object(w, "fp4", "dense", shape, 1), ZT_OK) << zt_last_error();
    EXPECT_TRUE(FailsWith(zt_writer_add_component(w, "data", "u8", "f4_e2m1", bad, 2, encoding),
                          ZT_ERR_ARGUMENT, {"odd count of 3 values", "high nibble"}))
        << encoding;
    ASSERT_EQ(zt_writer_add_component(w, "data", "u8", "f4_e2m1", good, 2, encoding), ZT_OK)
        << zt_last_error();
    ASSERT_EQ(zt_writer_end_object(w), ZT_OK) << zt_last_error();
    ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
    zt_reader* r = nullptr;
    ASSERT_EQ(zt_open(path().c_str(), &r), ZT_OK) << zt_last_error();
    ReaderPtr hold(r);
    EXPECT_EQ(zt_verify(r, nullptr, nullptr), ZT_OK) << zt_last_error();
    float out[3];
    uint64_t written = 0;
    ASSERT_EQ(zt_object_read_f32(r, 0, out, 3, &written), ZT_OK) << zt_last_error();
    EXPECT_EQ(out[2], 1.5f);
  }
}

TEST_F(WriterV2, OptionsAreChecked) {
  zt_writer_options o = v2_options(4100);
  zt_writer* w = nullptr;
  EXPECT_TRUE(
      FailsWith(zt_writer_open_ex(path().c_str(), &o, &w), ZT_ERR_ARGUMENT, {"multiple of 4096"}));
  o = v2_options();
  o.frame_size = (16u << 20) + 1;
  EXPECT_TRUE(FailsWith(zt_writer_open_ex(path().c_str(), &o, &w), ZT_ERR_ARGUMENT, {"16 MiB"}));
  o = v2_options();
  o.file_version = 1;
  EXPECT_TRUE(
      FailsWith(zt_writer_open_ex(path().c_str(), &o, &w), ZT_ERR_ARGUMENT, {"file_version 1"}));
  zt_writer_options_init(&o);
  o.alignment = 4096;
  EXPECT_TRUE(FailsWith(zt_writer_open_ex(path().c_str(), &o, &w), ZT_ERR_ARGUMENT, {"v2 option"}));
  EXPECT_FALSE(fs::exists(path()));
}

// ---- canonical form (v2 spec §6.3) ------------------------------------------

zt_writer_options canonical_options() {
  zt_writer_options o;
  zt_writer_options_init(&o);
  o.file_version = 2;
  o.canonical = 1;
  return o;
}

// v2 sparse parts may hold u32 indices (zt.sparse_csr/1, zt.sparse_coo/1);
// the writer checks them as it read them back, a window at a time, so a
// fault far into a zstd or byte-planes part is found and named.
TEST_F(WriterV2, SparseU32IndicesAreWrittenAndCheckedAcrossWindows) {
  constexpr uint32_t kRows = 60000, kCols = 7;
  std::vector<uint32_t> indptr{0}, indices;
  for (uint32_t i = 0; i < kRows; ++i) {
    indices.push_back(i % 5);
    indices.push_back(i % 5 + 2);
    indptr.push_back(static_cast<uint32_t>(indices.size()));
  }
  const std::vector<float> values(indices.size(), 1.0f);
  const uint64_t shape[] = {kRows, kCols};
  const auto write_csr = [&](zt_writer* w, const char* name, const std::vector<uint32_t>& ix,
                             const char* encoding) {
    EXPECT_EQ(zt_writer_begin_object(w, name, "sparse_csr", shape, 2), ZT_OK) << zt_last_error();
    EXPECT_EQ(
        zt_writer_add_component(w, "indices", "u32", nullptr, ix.data(), ix.size() * 4, encoding),
        ZT_OK)
        << zt_last_error();
    EXPECT_EQ(zt_writer_add_component(w, "indptr", "u32", nullptr, indptr.data(), indptr.size() * 4,
                                      encoding),
              ZT_OK)
        << zt_last_error();
    EXPECT_EQ(zt_writer_add_component(w, "values", "f32", nullptr, values.data(), values.size() * 4,
                                      "raw"),
              ZT_OK)
        << zt_last_error();
    return zt_writer_end_object(w);
  };
  zt_writer* w = open_v2(path());
  ASSERT_NE(w, nullptr);
  for (const char* encoding : {"raw", "zstd", "planes"}) {
    SCOPED_TRACE(encoding);
    EXPECT_EQ(write_csr(w, (std::string("ok_") + encoding).c_str(), indices, encoding), ZT_OK)
        << zt_last_error();
    // Row 50000 takes column 3 twice: refused, named, the object cut off.
    std::vector<uint32_t> twice = indices;
    twice[100001] = twice[100000];
    EXPECT_EQ(write_csr(w, "bad", twice, encoding), ZT_ERR_INVALID);
    EXPECT_NE(std::strstr(zt_last_error(), "row 50000 are not strictly increasing"), nullptr)
        << zt_last_error();
    std::vector<uint32_t> wide = indices;
    wide[119999] = kCols;
    EXPECT_EQ(write_csr(w, "bad", wide, encoding), ZT_ERR_INVALID);
    EXPECT_NE(std::strstr(zt_last_error(), "column index 7 at position 119999"), nullptr)
        << zt_last_error();
  }
  // COO: a cell named twice, the second time near the end.
  const uint64_t cshape[] = {1000, 1000};
  std::vector<uint32_t> coords(2 * 50000);
  for (uint32_t k = 0; k < 50000; ++k) coords[k] = k / 50, coords[50000 + k] = k % 50;
  const std::vector<float> cvalues(50000, 2.0f);
  for (const bool repeat : {false, true}) {
    std::vector<uint32_t> c = coords;
    if (repeat) c[49999] = c[0], c[50000 + 49999] = c[50000];
    ASSERT_EQ(zt_writer_begin_object(w, repeat ? "coo_bad" : "coo", "sparse_coo", cshape, 2),
              ZT_OK);
    ASSERT_EQ(zt_writer_add_component(w, "coords", "u32", nullptr, c.data(), c.size() * 4, "zstd"),
              ZT_OK);
    ASSERT_EQ(zt_writer_add_component(w, "values", "f32", nullptr, cvalues.data(),
                                      cvalues.size() * 4, "raw"),
              ZT_OK);
    if (!repeat) {
      EXPECT_EQ(zt_writer_end_object(w), ZT_OK) << zt_last_error();
      continue;
    }
    EXPECT_EQ(zt_writer_end_object(w), ZT_ERR_INVALID);
    EXPECT_NE(std::strstr(zt_last_error(), "cell [0, 0] appears more than once"), nullptr)
        << zt_last_error();
  }
  ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  zt_reader* r = nullptr;
  ASSERT_EQ(zt_open(path().c_str(), &r), ZT_OK) << zt_last_error();
  EXPECT_EQ(zt_object_count(r), 4u);
  EXPECT_EQ(zt_verify(r, nullptr, nullptr), ZT_OK) << zt_last_error();
  size_t k = 0;
  ASSERT_EQ(zt_object_find(r, "ok_planes", &k), ZT_OK);
  zt_csr_info v;
  zt_csr_info_init(&v);
  ASSERT_EQ(zt_csr_view(r, k, &v), ZT_OK) << zt_last_error();
  EXPECT_STREQ(v.indices_dtype, "u32");
  EXPECT_EQ(v.nnz, indices.size());
  EXPECT_EQ(std::memcmp(v.indices, indices.data(), indices.size() * 4), 0);
  zt_close(r);
}

TEST_F(WriterV2, CanonicalFilesPackSortedBlobsAndShareIdenticalOnes) {
  const auto write = [&](const std::string& p) {
    const zt_writer_options o = canonical_options();
    zt_writer* w = nullptr;
    ASSERT_EQ(zt_writer_open_ex(p.c_str(), &o, &w), ZT_OK) << zt_last_error();
    const Bytes x = pattern(70000), y = pattern(300);
    const uint64_t sx[] = {70000}, sy[] = {300}, s0[] = {0};
    ASSERT_EQ(zt_writer_add_dense(w, "a", "u8", sx, 1, x.data(), x.size(), "auto"), ZT_OK)
        << zt_last_error();
    ASSERT_EQ(zt_writer_add_dense(w, "b", "u8", sy, 1, y.data(), y.size(), "raw"), ZT_OK);
    ASSERT_EQ(zt_writer_add_dense(w, "c", "u8", sx, 1, x.data(), x.size(), "raw"), ZT_OK);
    ASSERT_EQ(zt_writer_add_dense(w, "d", "u8", s0, 1, nullptr, 0, "raw"), ZT_OK);
    ASSERT_EQ(zt_writer_add_dense(w, "e", "u8", s0, 1, nullptr, 0, "raw"), ZT_OK);
    ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  };
  write(path("one.zt"));
  write(path("two.zt"));
  const Bytes f = slurp(path("one.zt"));
  EXPECT_EQ(f, slurp(path("two.zt")));
  // a at 65536 (70000 bytes), b at the next 64 KiB boundary, c shares a's
  // blob, the empty parts share one at the manifest's position, which is
  // the last blob, followed by the footer.
  ASSERT_GT(f.size(), 40u);
  uint64_t manifest_offset = 0, manifest_length = 0;
  std::memcpy(&manifest_offset, f.data() + f.size() - 40, 8);
  std::memcpy(&manifest_length, f.data() + f.size() - 32, 8);
  EXPECT_EQ(manifest_offset, 262144u);
  EXPECT_EQ(manifest_offset + manifest_length + 40, f.size());
  zt_reader* r = nullptr;
  ASSERT_EQ(zt_open(path("one.zt").c_str(), &r), ZT_OK) << zt_last_error();
  ReaderPtr hold(r);
  const Json j = Json::parse(zt_manifest_json(r));
  const auto offset = [&](const char* o) {
    return j["objects"][o]["components"]["data"]["offset"].get<uint64_t>();
  };
  EXPECT_EQ(offset("a"), 65536u);
  EXPECT_EQ(offset("b"), 196608u);
  EXPECT_EQ(offset("c"), 65536u);
  EXPECT_EQ(offset("d"), 262144u);
  EXPECT_EQ(offset("e"), 262144u);
  EXPECT_STREQ(zt_component_encoding(r, object_index(r, "a"), "data"), "raw");  // "auto" -> raw
  EXPECT_EQ(j["objects"]["a"]["components"]["data"]["digest"].get<std::string>().substr(0, 5),
            "xxh3:");
  EXPECT_EQ(map_component(r, "c", "data").bytes, pattern(70000));
  uint64_t checked = 0;
  ASSERT_EQ(zt_verify(r, &checked, nullptr), ZT_OK) << zt_last_error();
  EXPECT_EQ(checked, 5u);
}

// Same length, other bytes: two blobs. A dropped object's blob is forgotten,
// so a later part of the same bytes gets a blob of its own.
TEST_F(WriterV2, CanonicalSharingIsOnEqualBytesOfKeptObjectsOnly) {
  const zt_writer_options o = canonical_options();
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open_ex(path().c_str(), &o, &w), ZT_OK) << zt_last_error();
  Bytes x = pattern(5000), y = x;
  y[4999] ^= 1;
  const uint64_t s[] = {5000};
  ASSERT_EQ(zt_writer_begin_object(w, "a", "dense", s, 1), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "data", "u8", nullptr, x.data(), x.size(), "raw"), ZT_OK);
  ASSERT_EQ(zt_writer_cancel_object(w), ZT_OK);
  ASSERT_EQ(zt_writer_add_dense(w, "b", "u8", s, 1, x.data(), x.size(), "raw"), ZT_OK);
  ASSERT_EQ(zt_writer_add_dense(w, "c", "u8", s, 1, y.data(), y.size(), "raw"), ZT_OK);
  ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  zt_reader* r = nullptr;
  ASSERT_EQ(zt_open(path().c_str(), &r), ZT_OK) << zt_last_error();
  ReaderPtr hold(r);
  const Json j = Json::parse(zt_manifest_json(r));
  EXPECT_EQ(j["objects"]["b"]["components"]["data"]["offset"], 65536u);
  EXPECT_EQ(j["objects"]["c"]["components"]["data"]["offset"], 131072u);
  EXPECT_EQ(map_component(r, "b", "data").bytes, x);
  EXPECT_EQ(map_component(r, "c", "data").bytes, y);
  EXPECT_EQ(zt_verify(r, nullptr, nullptr), ZT_OK) << zt_last_error();
}

TEST_F(WriterV2, CanonicalRefusesWhatItCannotPlace) {
  const zt_writer_options o = canonical_options();
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open_ex(path().c_str(), &o, &w), ZT_OK) << zt_last_error();
  const uint8_t b[] = {1, 2};
  const uint64_t s[] = {2};
  ASSERT_EQ(zt_writer_add_dense(w, "m", "u8", s, 1, b, 2, "raw"), ZT_OK);
  // Objects in bytewise order: "M" (0x4D) < "m"; "ma" > "m" is fine.
  EXPECT_EQ(zt_writer_add_dense(w, "M", "u8", s, 1, b, 2, "raw"), ZT_ERR_ARGUMENT);
  EXPECT_NE(std::strstr(zt_last_error(), "bytewise name order"), nullptr) << zt_last_error();
  EXPECT_EQ(zt_writer_add_dense(w, "m", "u8", s, 1, b, 2, "raw"), ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_writer_add_dense(w, "ma", "u8", s, 1, b, 2, "zstd"), ZT_ERR_ARGUMENT);
  EXPECT_NE(std::strstr(zt_last_error(), "stores every part raw"), nullptr) << zt_last_error();
  // "e" + U+0301 (combining acute) is NFD; U+00E9 is its NFC form.
  EXPECT_EQ(zt_writer_add_dense(w, "ne\xCC\x81", "u8", s, 1, b, 2, "raw"), ZT_ERR_ARGUMENT);
  EXPECT_NE(std::strstr(zt_last_error(), "not in Unicode NFC"), nullptr) << zt_last_error();
  ASSERT_EQ(zt_writer_add_dense(w, "n\xC3\xA9", "u8", s, 1, b, 2, "raw"), ZT_OK) << zt_last_error();
  ASSERT_EQ(zt_writer_begin_object(w, "z", "zt.sparse_coo/1", s, 1), ZT_OK) << zt_last_error();
  EXPECT_EQ(zt_writer_set_object_attributes_json(w, "{\"ke\xCC\x81y\": 1}"), ZT_ERR_ARGUMENT);
  const Bytes coords = le<uint64_t>({1}), values = le<float>({2});
  ASSERT_EQ(zt_writer_add_component(w, "values", "f32", nullptr, values.data(), 4, "raw"), ZT_OK);
  EXPECT_EQ(zt_writer_add_component(w, "coords", "u64", nullptr, coords.data(), 8, "raw"),
            ZT_ERR_ARGUMENT);
  EXPECT_NE(std::strstr(zt_last_error(), "part \"coords\" after \"values\""), nullptr)
      << zt_last_error();
  ASSERT_EQ(zt_writer_cancel_object(w), ZT_OK);
  ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
}

TEST_F(WriterV2, CanonicalOptionsAreChecked) {
  zt_writer* w = nullptr;
  zt_writer_options o = canonical_options();
  o.file_version = 0;
  EXPECT_EQ(zt_writer_open_ex(path().c_str(), &o, &w), ZT_ERR_ARGUMENT);
  o = canonical_options();
  o.alignment = 4096;
  EXPECT_EQ(zt_writer_open_ex(path().c_str(), &o, &w), ZT_ERR_ARGUMENT);
  o = canonical_options();
  o.digest = ZT_DIGEST_SHA256;
  EXPECT_EQ(zt_writer_open_ex(path().c_str(), &o, &w), ZT_ERR_ARGUMENT);
  o = canonical_options();
  o.alignment = 65536;
  ASSERT_EQ(zt_writer_open_ex(path().c_str(), &o, &w), ZT_OK) << zt_last_error();
  zt_writer_abort(w);
}

// ---- append (v2 spec §2.5) --------------------------------------------------

TEST_F(WriterV2, AppendAddsAndReplacesObjectsAfterTheUnchangedBytes) {
  {
    zt_writer* w = open_v2(path(), 4096);
    ASSERT_NE(w, nullptr);
    const uint8_t a[] = {1, 2, 3}, b[] = {4, 5};
    const uint64_t sa[] = {3}, sb[] = {2};
    ASSERT_EQ(zt_writer_set_file_attributes_json(w, R"({"run": "x"})"), ZT_OK);
    ASSERT_EQ(zt_writer_add_dense(w, "a", "u8", sa, 1, a, 3, "raw"), ZT_OK);
    ASSERT_EQ(zt_writer_begin_object(w, "b", "dense", sb, 1), ZT_OK);
    ASSERT_EQ(zt_writer_set_object_attributes_json(w, R"({"v": 1})"), ZT_OK);
    ASSERT_EQ(zt_writer_add_component(w, "data", "u8", nullptr, b, 2, "zstd"), ZT_OK);
    ASSERT_EQ(zt_writer_end_object(w), ZT_OK);
    ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  }
  const Bytes before = slurp(path());
  zt_writer_options o = v2_options(4096);
  // An aborted append leaves the file as it was.
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open_append(path().c_str(), &o, &w), ZT_OK) << zt_last_error();
  const uint8_t c[] = {9};
  const uint64_t sc[] = {1};
  ASSERT_EQ(zt_writer_add_dense(w, "c", "u8", sc, 1, c, 1, "raw"), ZT_OK);
  zt_writer_abort(w);
  EXPECT_EQ(slurp(path()), before);

  ASSERT_EQ(zt_writer_open_append(path().c_str(), &o, &w), ZT_OK) << zt_last_error();
  ASSERT_EQ(zt_writer_add_dense(w, "c", "u8", sc, 1, c, 1, "raw"), ZT_OK) << zt_last_error();
  EXPECT_EQ(zt_writer_add_dense(w, "c", "u8", sc, 1, c, 1, "raw"), ZT_ERR_ARGUMENT);
  const uint8_t b2[] = {7, 7, 7, 7};
  const uint64_t sb2[] = {4};
  ASSERT_EQ(zt_writer_add_dense(w, "b", "u8", sb2, 1, b2, 4, "raw"), ZT_OK) << zt_last_error();
  // A file's own object is replaced once: the new one is the writer's own.
  EXPECT_EQ(zt_writer_add_dense(w, "b", "u8", sb2, 1, b2, 4, "raw"), ZT_ERR_ARGUMENT);
  ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();

  const Bytes after = slurp(path());
  ASSERT_GT(after.size(), before.size());
  EXPECT_TRUE(std::equal(before.begin(), before.end(), after.begin()));  // never rewritten
  zt_reader* r = nullptr;
  ASSERT_EQ(zt_open(path().c_str(), &r), ZT_OK) << zt_last_error();
  ReaderPtr hold(r);
  ASSERT_EQ(zt_object_count(r), 3u);
  EXPECT_EQ(map_component(r, "a", "data").bytes, (Bytes{1, 2, 3}));
  EXPECT_EQ(map_component(r, "b", "data").bytes, (Bytes{7, 7, 7, 7}));
  EXPECT_EQ(map_component(r, "c", "data").bytes, (Bytes{9}));
  const void* attrs = nullptr;
  size_t n = 0;
  ASSERT_EQ(zt_file_attributes_cbor(r, &attrs, &n), ZT_OK);
  EXPECT_EQ(Bytes(static_cast<const uint8_t*>(attrs), static_cast<const uint8_t*>(attrs) + n),
            cbor_v2(Json{{"run", "x"}}));
  EXPECT_EQ(zt_verify(r, nullptr, nullptr), ZT_OK) << zt_last_error();
}

TEST_F(WriterV2, AppendRefusesWhatItCannotDo) {
  zt_writer* w = nullptr;
  FileBuilder v1;
  v1.dense("t", "u8", {1}, Bytes{1});
  const Bytes one = v1.build();
  {
    std::ofstream f(path("one.zt"), std::ios::binary);
    f.write(reinterpret_cast<const char*>(one.data()), static_cast<std::streamsize>(one.size()));
  }
  EXPECT_EQ(zt_writer_open_append(path("one.zt").c_str(), nullptr, &w), ZT_ERR_UNSUPPORTED);
  EXPECT_NE(std::strstr(zt_last_error(), "works on v2 files"), nullptr) << zt_last_error();
  EXPECT_EQ(zt_writer_open_append(path("missing.zt").c_str(), nullptr, &w), ZT_ERR_IO);
  write_sample(path());
  zt_writer_options o = canonical_options();
  EXPECT_EQ(zt_writer_open_append(path().c_str(), &o, &w), ZT_ERR_ARGUMENT);
  o = v2_options();
  o.shard_bytes = 1 << 20;
  EXPECT_EQ(zt_writer_open_append(path().c_str(), &o, &w), ZT_ERR_ARGUMENT);
  // Nothing was left beside the files.
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++entries;
  EXPECT_EQ(entries, 2u);
}

}  // namespace
}  // namespace zt::test
