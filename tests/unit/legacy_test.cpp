// Files of the older generations, built byte by byte here, read through
// the C ABI: 1.0.x (no footer, `tensors` map, dtype on the tensor, u64
// sparse index roles, the generator attribute rule) and 0.1.x (array
// index, big-endian data, crc32c / sha256 checksums, the 17-byte file with
// no tensor, custom keys as attributes, sparse layouts listed but refused),
// and zt_verify on all of them.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "test_files.h"

namespace zt::test {
namespace {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), bit by bit: the
// checksum 0.1.x writers stored as "crc32c:0x%08X".
uint32_t crc32c_of(std::span<const uint8_t> bytes) {
  uint32_t crc = 0xffffffffu;
  for (const uint8_t b : bytes) {
    crc ^= b;
    for (int i = 0; i < 8; ++i) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::string crc32c_text(std::span<const uint8_t> bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "crc32c:0x%08X", crc32c_of(bytes));
  return buf;
}

void append_u64_le(Bytes& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

uint64_t place(Bytes& data, std::span<const uint8_t> bytes) {
  data.resize((data.size() + 63) / 64 * 64, 0);
  const uint64_t offset = data.size();
  data.insert(data.end(), bytes.begin(), bytes.end());
  return offset;
}

// 0.1.0: "ZTEN0001", blobs at multiples of 64, a CBOR array of entries,
// the array's size as a little-endian u64. No footer.
struct V010File {
  Bytes data = bytes_of("ZTEN0001");
  Json index = Json::array();

  Json& entry(const std::string& name, const std::string& dtype, const std::vector<uint64_t>& shape,
              std::span<const uint8_t> blob, const std::string& encoding = "raw") {
    const uint64_t offset = place(data, blob);
    index.push_back(Json{{"name", name},
                         {"offset", offset},
                         {"size", blob.size()},
                         {"dtype", dtype},
                         {"shape", shape},
                         {"encoding", encoding}});
    return index.back();
  }
  Bytes build() const {
    Bytes out = data;
    const Bytes c = cbor(index);
    out.insert(out.end(), c.begin(), c.end());
    append_u64_le(out, c.size());
    return out;
  }
};

// 1.0.x: "ZTEN1000", blobs, a CBOR map {version: "1.0", generator,
// attributes, tensors}, the map's size as the last 8 bytes, no footer.
struct V100File {
  Bytes data = bytes_of("ZTEN1000");
  Json manifest = Json{{"version", "1.0"},
                       {"generator", "zTensor-Rust v0.1.0"},
                       {"attributes", Json::object()},
                       {"tensors", Json::object()}};

  Json component(std::span<const uint8_t> blob) {
    return Json{{"offset", place(data, blob)}, {"length", blob.size()}};
  }
  Json& tensor(const std::string& name, const std::string& dtype, const std::string& format,
               const std::vector<uint64_t>& shape, Json components) {
    Json& t = manifest["tensors"][name];
    t = Json{{"dtype", dtype},
             {"shape", shape},
             {"format", format},
             {"components", std::move(components)}};
    return t;
  }
  Bytes build() const {
    Bytes out = data;
    out.resize((out.size() + 63) / 64 * 64, 0);
    const Bytes c = cbor(manifest);
    out.insert(out.end(), c.begin(), c.end());
    append_u64_le(out, c.size());
    return out;
  }
};

Json manifest_of(const zt_reader* r) {
  return Json::parse(zt_manifest_json(r));
}

std::vector<float> read_f32(const zt_reader* r, const char* name) {
  const size_t i = object_index(r, name);
  uint64_t n = 0;
  EXPECT_EQ(zt_object_value_count(r, i, &n), ZT_OK) << zt_last_error();
  std::vector<float> out(n);
  uint64_t written = 0;
  EXPECT_EQ(zt_object_decode_f32(r, i, out.data(), n, &written), ZT_OK) << zt_last_error();
  return out;
}

Bytes big_endian_i16(const std::vector<int16_t>& v) {
  Bytes out;
  for (const int16_t x : v) {
    const auto u = static_cast<uint16_t>(x);
    out.push_back(static_cast<uint8_t>(u >> 8));
    out.push_back(static_cast<uint8_t>(u & 0xff));
  }
  return out;
}

// ---- 0.1.x ---------------------------------------------------------------

TEST(Legacy, V010DenseTensorsBigEndianChecksumsAndCustomKeys) {
  V010File f;
  const std::vector<float> w = {1.5f, -2, 3, 4, 5, 6};
  const Bytes w_bytes = le(w);
  Json& we = f.entry("w", "float32", {2, 3}, w_bytes);
  we["checksum"] = crc32c_text(w_bytes);
  we["note"] = "hello";
  we["layer"] = 3;
  const Bytes be = big_endian_i16({1, -2, 300, -32768});
  Json& ie = f.entry("i", "int16", {2, 2}, be);
  ie["data_endianness"] = "big";
  ie["checksum"] = sha256_digest(be);  // over the stored (big-endian) bytes
  const std::vector<double> z = {0.25, 1e10, -7};
  f.entry("z", "float64", {3}, zstd_compress(le(z)), "zstd");
  const Bytes file = f.build();

  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_file_version(o.get()), "0.1.0");
  EXPECT_EQ(zt_object_count(o.get()), 3u);
  EXPECT_EQ(read_f32(o.get(), "w"), w);
  EXPECT_EQ(read_f32(o.get(), "i"), (std::vector<float>{1, -2, 300, -32768}));
  EXPECT_EQ(read_f32(o.get(), "z"), (std::vector<float>{0.25f, 1e10f, -7}));

  // Big-endian data comes out little-endian, from map and from row slices.
  const Mapped m = map_component(o.get(), "i", "data");
  ASSERT_EQ(m.status, ZT_OK);
  EXPECT_EQ(m.bytes, le(std::vector<int16_t>{1, -2, 300, -32768}));
  int16_t row[2];
  uint64_t written = 0;
  ASSERT_EQ(zt_dense_rows(o.get(), object_index(o.get(), "i"), 1, 2, row, sizeof row, &written),
            ZT_OK)
      << zt_last_error();
  EXPECT_EQ(row[0], 300);
  EXPECT_EQ(row[1], -32768);
  // And from a box (a column) and a byte range: the two reads a staging
  // ring makes of a piece of a box.
  const uint64_t begin[] = {0, 1}, end[] = {2, 2};
  int16_t column[2];
  ASSERT_EQ(zt_dense_slice(o.get(), object_index(o.get(), "i"), 2, begin, end, column,
                           sizeof column, &written),
            ZT_OK)
      << zt_last_error();
  EXPECT_EQ(column[0], -2);
  EXPECT_EQ(column[1], -32768);
  int16_t second = 0;
  zt_decode_range range;
  zt_decode_range_init(&range);
  range.object = object_index(o.get(), "i");
  range.role = "data";
  range.offset = 2;
  range.dst = &second;
  range.length = sizeof second;
  ASSERT_EQ(zt_decode_ranges(o.get(), &range, 1, 0, nullptr, nullptr), ZT_OK) << zt_last_error();
  EXPECT_EQ(second, -2);

  const Json j = manifest_of(o.get());
  EXPECT_EQ(j["version"], "0.1.0");
  EXPECT_EQ(j["objects"]["w"]["attributes"], (Json{{"note", "hello"}, {"layer", 3}}));
  EXPECT_EQ(j["objects"]["w"]["components"]["data"]["dtype"], "f32");
  EXPECT_EQ(j["objects"]["w"]["components"]["data"]["length"], 24);
  char want_digest[32];
  std::snprintf(want_digest, sizeof want_digest, "crc32c:%08x", crc32c_of(w_bytes));
  EXPECT_EQ(j["objects"]["w"]["components"]["data"]["digest"], want_digest);
  EXPECT_FALSE(j["objects"]["i"].contains("attributes")) << "data_endianness is no custom key";

  uint64_t checked = 0, unchecked = 0;
  ASSERT_EQ(zt_verify(o.get(), &checked, &unchecked), ZT_OK) << zt_last_error();
  EXPECT_EQ(checked, 2u);
  EXPECT_EQ(unchecked, 1u);
}

TEST(Legacy, V010ChecksumMismatchesAreDigestErrors) {
  for (const bool sha : {false, true}) {
    V010File f;
    const Bytes bytes = le(std::vector<float>{1, 2, 3, 4});
    Bytes other = bytes;
    other[0] ^= 1;
    f.entry("w", "float32", {4}, bytes)["checksum"] =
        sha ? sha256_digest(other) : crc32c_text(other);
    const Bytes file = f.build();
    const Opened o = open_memory(file);
    ASSERT_EQ(o.status, ZT_OK) << o.error;
    EXPECT_TRUE(FailsWith(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_DIGEST,
                          {"object \"w\"", sha ? "sha256" : "crc32c", "mismatch"}));
  }
}

TEST(Legacy, V010FileWithNoTensorIs17Bytes) {
  const Bytes file = {'Z', 'T', 'E', 'N', '0', '0', '0', '1', 0x80, 1, 0, 0, 0, 0, 0, 0, 0};
  ASSERT_EQ(file.size(), 17u);
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_EQ(zt_object_count(o.get()), 0u);
  EXPECT_STREQ(zt_file_version(o.get()), "0.1.0");
  EXPECT_EQ(manifest_of(o.get())["objects"], Json::object());
  uint64_t checked = 9, unchecked = 9;
  EXPECT_EQ(zt_verify(o.get(), &checked, &unchecked), ZT_OK);
  EXPECT_EQ(checked, 0u);
  EXPECT_EQ(unchecked, 0u);
  // One byte less is not a 0.1.0 file.
  const Bytes short_file(file.begin(), file.end() - 1);
  EXPECT_TRUE(OpensWith(short_file, ZT_ERR_FORMAT));
}

// Entries that 0.1.x writers marked as sparse, next to a dense one.
struct SparseLayouts {
  Bytes csr_blob = pattern(80, 2);
  Bytes file;
  SparseLayouts() {
    V010File f;
    Json& csr = f.entry("csr", "float32", {3, 4}, csr_blob);
    csr["layout"] = "sparse";
    csr["sparse_format"] = "csr";
    csr["nnz"] = 4;
    csr["checksum"] = crc32c_text(csr_blob);
    f.entry("coo", "sparsecoo", {5}, pattern(48, 3));
    f.entry("named", "float32", {2, 2}, pattern(40, 4))["layout"] = "sparse_csr";
    f.entry("d", "uint8", {3}, Bytes{7, 8, 9})["layout"] = "dense";
    f.entry("nhwc", "uint8", {1, 1, 1, 2}, Bytes{1, 2})["layout"] = "NHWC";  // a custom key
    file = f.build();
  }
};

TEST(Legacy, V010SparseLayoutsAreListedWithTheirMetadata) {
  const SparseLayouts t;
  const Opened o = open_memory(t.file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  ASSERT_EQ(zt_object_count(o.get()), 5u);
  EXPECT_STREQ(zt_object_format(o.get(), object_index(o.get(), "nhwc")), "dense");
  // Shown in the 1.2.0 vocabulary where the marker names a layout.
  EXPECT_STREQ(zt_object_format(o.get(), object_index(o.get(), "csr")), "sparse_csr");
  EXPECT_STREQ(zt_object_format(o.get(), object_index(o.get(), "coo")), "sparse_coo");
  EXPECT_STREQ(zt_object_format(o.get(), object_index(o.get(), "named")), "sparse_csr");
  EXPECT_STREQ(zt_object_format(o.get(), object_index(o.get(), "d")), "dense");
  const Json j = manifest_of(o.get());
  EXPECT_EQ(
      j["objects"]["csr"]["attributes"],
      (Json{{"dtype", "float32"}, {"layout", "sparse"}, {"sparse_format", "csr"}, {"nnz", 4}}));
  EXPECT_EQ(j["objects"]["csr"]["shape"], (Json{3, 4}));
  EXPECT_EQ(j["objects"]["coo"]["attributes"], (Json{{"dtype", "sparsecoo"}}));
  EXPECT_EQ(j["objects"]["named"]["attributes"]["layout"], "sparse_csr");
  EXPECT_EQ(j["objects"]["d"]["attributes"], (Json{{"layout", "dense"}}));
  const Json& data = j["objects"]["csr"]["components"]["data"];
  EXPECT_EQ(data["dtype"], "u8");
  EXPECT_EQ(data["length"], 80);
  // The blob is listed but never handed out.
  EXPECT_EQ(map_component(o.get(), "csr", "data").status, ZT_ERR_UNSUPPORTED);
  // verify vouches for every component or fails: the blob cannot be read.
  EXPECT_TRUE(FailsWith(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_UNSUPPORTED, {"0.1.0 sparse layout"}));
}

TEST(Legacy, V010SparseLayoutsAreRefusedOnAccess) {
  const SparseLayouts t;
  const Opened o = open_memory(t.file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const size_t csr = object_index(o.get(), "csr");
  float out[64];
  uint64_t n = 0;
  const std::initializer_list<std::string_view> why = {
      "object \"csr\"", "0.1.0 sparse layout \"sparse\"", "(sparse_format \"csr\")",
      "is not described by the spec"};
  EXPECT_TRUE(FailsWith(zt_object_decode_f32(o.get(), csr, out, 64, &n), ZT_ERR_UNSUPPORTED, why));
  EXPECT_TRUE(FailsWith(zt_object_value_count(o.get(), csr, &n), ZT_ERR_UNSUPPORTED, why));
  EXPECT_TRUE(FailsWith(zt_object_read_f32(o.get(), csr, out, 64, &n), ZT_ERR_UNSUPPORTED, why));
  EXPECT_TRUE(
      FailsWith(zt_component_read_f32(o.get(), csr, "data", out, 64, &n), ZT_ERR_UNSUPPORTED, why));
  EXPECT_TRUE(
      FailsWith(zt_dense_rows(o.get(), csr, 0, 1, out, sizeof out, &n), ZT_ERR_UNSUPPORTED, why));
  // Without a buffer too, as the batch decoder refuses it (the missing
  // buffer was ARGUMENT here).
  EXPECT_TRUE(
      FailsWith(zt_component_read(o.get(), csr, "data", nullptr, 0, &n), ZT_ERR_UNSUPPORTED, why));
  zt_decode_request q;
  zt_decode_request_init(&q);
  q.object = csr;
  q.role = "data";
  EXPECT_TRUE(FailsWith(zt_decode_many(o.get(), &q, 1, 1), ZT_ERR_UNSUPPORTED, why));
  zt_csr_info v;
  zt_csr_info_init(&v);
  EXPECT_TRUE(FailsWith(zt_csr_view(o.get(), csr, &v), ZT_ERR_UNSUPPORTED, why));
  zt_dense_info d;
  zt_dense_info_init(&d);
  EXPECT_TRUE(FailsWith(zt_dense_view(o.get(), object_index(o.get(), "coo"), &d),
                        ZT_ERR_UNSUPPORTED, {"0.1.0 sparse layout \"sparsecoo\""}));
  // The dense entries beside them read normally.
  EXPECT_EQ(read_f32(o.get(), "d"), (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(read_f32(o.get(), "nhwc"), (std::vector<float>{1, 2}));
}

TEST(Legacy, V010SparseEncodingIsAnUnknownEncodingOfItsBlob) {
  V010File f;
  f.entry("s", "float32", {4, 4}, pattern(64), "sparse")["sparse_format"] = "coo";
  const Bytes file = f.build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_object_format(o.get(), 0), "sparse_coo");
  EXPECT_STREQ(zt_component_encoding(o.get(), 0, "data"), "sparse");
  EXPECT_EQ(map_component(o.get(), "s", "data").status, ZT_ERR_UNSUPPORTED);
  float out[16];
  uint64_t n = 0;
  EXPECT_TRUE(FailsWith(zt_object_decode_f32(o.get(), 0, out, 16, &n), ZT_ERR_UNSUPPORTED,
                        {"(sparse_format \"coo\")", "not described by the spec"}));
  EXPECT_EQ(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_UNSUPPORTED);
}

// ---- 1.0.x ---------------------------------------------------------------

TEST(Legacy, V100TensorsAreShownUpgraded) {
  V100File f;
  f.manifest["attributes"]["license"] = "mit";
  const Bytes w = le(std::vector<float>{1, 2, 3, 4});
  Json wc = f.component(w);
  wc["digest"] = crc32c_text(w);
  f.tensor("w", "float32", "dense", {2, 2}, Json{{"data", wc}});
  const Bytes z = zstd_compress(le(std::vector<int16_t>{-1, 2, -3}));
  Json zc = f.component(z);
  zc["encoding"] = "zstd";
  zc["digest"] = sha256_digest(z);
  f.tensor("z", "int16", "dense", {3}, Json{{"data", zc}});
  // [[0, 5, 0], [6, 0, 7]] with u64 index components.
  f.tensor("s", "float32", "sparse_csr", {2, 3},
           Json{{"values", f.component(le(std::vector<float>{5, 6, 7}))},
                {"indices", f.component(le(std::vector<uint64_t>{1, 0, 2}))},
                {"indptr", f.component(le(std::vector<uint64_t>{0, 1, 3}))}});
  f.tensor("c", "bfloat16", "sparse_coo", {2, 2},
           Json{{"values", f.component(le(std::vector<uint16_t>{0x4000}))},
                {"coords", f.component(le(std::vector<uint64_t>{1, 0}))}});
  const Bytes file = f.build();
  ASSERT_NE(Bytes(file.end() - 8, file.end()), bytes_of("ZTEN1000")) << "no footer";

  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_file_version(o.get()), "1.0");
  const Json j = manifest_of(o.get());
  EXPECT_EQ(j["attributes"], (Json{{"license", "mit"}, {"generator", "zTensor-Rust v0.1.0"}}));
  EXPECT_EQ(j["objects"]["w"]["components"]["data"]["dtype"], "f32");
  EXPECT_EQ(j["objects"]["z"]["components"]["data"]["dtype"], "i16");
  EXPECT_EQ(j["objects"]["z"]["components"]["data"]["uncompressed_length"], 6);
  EXPECT_EQ(j["objects"]["s"]["components"]["values"]["dtype"], "f32");
  EXPECT_EQ(j["objects"]["s"]["components"]["indices"]["dtype"], "u64");
  EXPECT_EQ(j["objects"]["s"]["components"]["indptr"]["dtype"], "u64");
  EXPECT_EQ(j["objects"]["c"]["components"]["values"]["dtype"], "bf16");
  EXPECT_EQ(j["objects"]["c"]["components"]["coords"]["dtype"], "u64");

  EXPECT_EQ(read_f32(o.get(), "w"), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(read_f32(o.get(), "z"), (std::vector<float>{-1, 2, -3}));
  EXPECT_EQ(read_f32(o.get(), "s"), (std::vector<float>{0, 5, 0, 6, 0, 7}));
  EXPECT_EQ(read_f32(o.get(), "c"), (std::vector<float>{0, 0, 2, 0}));
  zt_csr_info v;
  zt_csr_info_init(&v);
  ASSERT_EQ(zt_csr_view(o.get(), object_index(o.get(), "s"), &v), ZT_OK) << zt_last_error();
  EXPECT_STREQ(v.indices_dtype, "u64");
  EXPECT_EQ(v.nnz, 3u);

  uint64_t checked = 0, unchecked = 0;
  ASSERT_EQ(zt_verify(o.get(), &checked, &unchecked), ZT_OK) << zt_last_error();
  EXPECT_EQ(checked, 2u);
  EXPECT_EQ(unchecked, 5u);
}

TEST(Legacy, V100GeneratorYieldsToAnAttributeOfTheSameName) {
  V100File f;
  f.manifest["attributes"]["generator"] = "mine";
  f.tensor("w", "uint8", "dense", {2}, Json{{"data", f.component(Bytes{1, 2})}});
  const Bytes file = f.build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_EQ(manifest_of(o.get())["attributes"], (Json{{"generator", "mine"}}));
}

TEST(Legacy, V100BrokenStructuresAndDigestsAreFoundByVerify) {
  {
    V100File f;
    f.tensor("s", "float32", "sparse_csr", {2, 3},
             Json{{"values", f.component(le(std::vector<float>{5, 6, 7}))},
                  {"indices", f.component(le(std::vector<uint64_t>{1, 3, 2}))},  // column 3 of 3
                  {"indptr", f.component(le(std::vector<uint64_t>{0, 1, 3}))}});
    const Bytes file = f.build();
    const Opened o = open_memory(file);
    ASSERT_EQ(o.status, ZT_OK) << o.error;
    EXPECT_TRUE(FailsWith(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_INVALID,
                          {"object \"s\"", "out of range"}));
  }
  {
    V100File f;
    const Bytes w = le(std::vector<float>{1, 2});
    Json wc = f.component(w);
    wc["digest"] = crc32c_text(le(std::vector<float>{1, 3}));
    f.tensor("w", "float32", "dense", {2}, Json{{"data", wc}});
    const Bytes file = f.build();
    const Opened o = open_memory(file);
    ASSERT_EQ(o.status, ZT_OK) << o.error;
    EXPECT_TRUE(
        FailsWith(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_DIGEST, {"object \"w\"", "crc32c"}));
  }
}

}  // namespace
}  // namespace zt::test
