// The writer through the C ABI: round trips through the reader for every
// dtype and format, raw/zstd/auto, streaming, attributes, determinism,
// refusals before anything is written, and never a torn file at the target.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "codec/byte_planes.h"
#include "test_files.h"
#include "ztensor.h"

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

class WriterTest : public ::testing::Test {
 protected:
  std::string path(const std::string& name = "out.zt") const { return (dir_ / name).string(); }

  static Bytes slurp(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(f), {});
  }

  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_))
      names.push_back(e.path().filename().string());
    return names;
  }

  // A child process writes `size` bytes past its RLIMIT_FSIZE.
  void DiskFullLeavesTargetIntactAt(size_t size);

  zt::test::TempDir tmp_{"zt-writer-test-"};
  const fs::path dir_ = tmp_.path();
};

template <typename T>
Bytes bytes_of(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Opens `path`, verifies it, and returns the reader (caller closes).
zt_reader* open_verified(const std::string& path, uint64_t* checked = nullptr) {
  zt_reader* r = nullptr;
  EXPECT_EQ(zt_open(path.c_str(), &r), ZT_OK) << zt_last_error();
  if (!r) return nullptr;
  uint64_t c = 0, u = 0;
  EXPECT_EQ(zt_verify(r, &c, &u), ZT_OK) << zt_last_error();
  if (checked) *checked = c;
  return r;
}

Bytes mapped(zt_reader* r, const char* name, const char* role) {
  size_t i = 0;
  EXPECT_EQ(zt_object_find(r, name, &i), ZT_OK) << name;
  const void* p = nullptr;
  uint64_t n = 0;
  EXPECT_EQ(zt_component_map(r, i, role, &p, &n), ZT_OK) << zt_last_error();
  const auto* b = static_cast<const uint8_t*>(p);
  return Bytes(b, b + n);
}

nlohmann::json manifest(zt_reader* r) {
  return nlohmann::json::parse(zt_manifest_json(r));
}

TEST_F(WriterTest, EveryDtypeRoundTripsRawAndZstd) {
  const char* dtypes[] = {"f64", "f32", "f16", "bf16", "i64", "i32", "i16",
                          "i8",  "u64", "u32", "u16",  "u8",  "bool"};
  const unsigned widths[] = {8, 4, 2, 2, 8, 4, 2, 1, 8, 4, 2, 1, 1};
  std::vector<Bytes> data;
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open(path().c_str(), &w), ZT_OK);
  for (size_t i = 0; i < std::size(dtypes); ++i) {
    Bytes b(widths[i] * 12);
    for (size_t k = 0; k < b.size(); ++k)
      b[k] = std::string(dtypes[i]) == "bool" ? k % 2 : static_cast<uint8_t>(k * 7 + i);
    data.push_back(b);
    const uint64_t shape[2] = {3, 4};
    for (const char* enc : {"raw", "zstd"}) {
      const std::string name = std::string(dtypes[i]) + "." + enc;
      ASSERT_EQ(zt_writer_add_dense(w, name.c_str(), dtypes[i], shape, 2, b.data(), b.size(), enc),
                ZT_OK)
          << zt_last_error();
    }
  }
  ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  uint64_t checked = 0;
  zt_reader* r = open_verified(path(), &checked);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(checked, 26u);  // every component carries an xxh3 digest
  const auto m = manifest(r);
  EXPECT_EQ(m["version"], "1.2.0");
  for (size_t i = 0; i < std::size(dtypes); ++i) {
    for (const char* enc : {"raw", "zstd"}) {
      const std::string name = std::string(dtypes[i]) + "." + enc;
      EXPECT_EQ(mapped(r, name.c_str(), "data"), data[i]) << name;
      const auto& c = m["objects"][name]["components"]["data"];
      EXPECT_EQ(c["dtype"], dtypes[i]);
      EXPECT_EQ(c["offset"].get<uint64_t>() % 64, 0u);
      EXPECT_EQ(c["digest"].get<std::string>().rfind("xxh3:", 0), 0u);
      EXPECT_EQ(c["digest"].get<std::string>().size(), 5u + 16u);
      if (std::string(enc) == "zstd") {
        EXPECT_EQ(c["uncompressed_length"], data[i].size());
      }
    }
  }
  zt_close(r);
}

// Writes a one-tensor file at `p` through the C writer.
void write_one(const std::string& p, float value) {
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open(p.c_str(), &w), ZT_OK) << zt_last_error();
  const uint64_t shape[1] = {1};
  ASSERT_EQ(zt_writer_add_dense(w, "x", "f32", shape, 1, &value, sizeof value, "raw"), ZT_OK);
  ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
}

TEST_F(WriterTest, AFileWrittenOverAnotherKeepsItsMode) {
  const std::string p = path();
  write_one(p, 1.0f);
  const mode_t mask = ::umask(022);  // restored below; the test runs alone
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0666u & ~mask);  // a new file: 0666 & ~umask
  for (mode_t mode : {0600u, 0640u, 0604u, 0755u}) {
    ASSERT_EQ(::chmod(p.c_str(), mode), 0);
    write_one(p, 2.0f);
    ASSERT_EQ(::stat(p.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, mode) << std::oct << mode;
  }
  ::umask(mask);
  write_one(path("new.zt"), 3.0f);
  ASSERT_EQ(::stat(path("new.zt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0666u & ~mask);
}

// A link at the target is followed, as cp and a shell's redirection follow
// it: the file it names is replaced (beside itself), the link stays.
TEST_F(WriterTest, ALinkAtTheTargetIsFollowed) {
  fs::create_directory(dir_ / "store");
  const std::string real = path("store/real.zt"), link = path("link.zt");
  write_one(real, 1.0f);
  ASSERT_EQ(::chmod(real.c_str(), 0640), 0);
  fs::create_symlink("store/real.zt", link);
  write_one(link, 2.0f);
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::read_symlink(link), "store/real.zt");
  struct stat st {};
  ASSERT_EQ(::stat(real.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  zt_reader* r = open_verified(link);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(mapped(r, "x", "data"), bytes_of(std::vector<float>{2.0f}));
  zt_close(r);
  EXPECT_EQ(fs::directory_iterator(dir_ / "store")->path().filename(), "real.zt");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "store"), fs::directory_iterator()), 1);
  // A link that leads nowhere has no file to replace: refused, left as it was.
  fs::create_symlink("store/missing.zt", path("dangling.zt"));
  zt_writer* w = nullptr;
  EXPECT_EQ(zt_writer_open(path("dangling.zt").c_str(), &w), ZT_ERR_IO);
  EXPECT_NE(std::string(zt_last_error()).find("symbolic link"), std::string::npos)
      << zt_last_error();
  EXPECT_TRUE(fs::is_symlink(path("dangling.zt")));
  EXPECT_FALSE(fs::exists(path("store/missing.zt")));
}

// A writer replaces the file at its target: a FIFO, a directory (or, for
// root, /dev/null) is not one, and is refused before anything is written.
TEST_F(WriterTest, ATargetThatIsNoRegularFileIsRefused) {
  const std::string fifo = path("fifo"), folder = path("folder");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_directory(folder);
  fs::create_symlink("fifo", path("to-fifo"));
  for (const auto& [target, kind] : {std::pair{fifo, "a FIFO"}, std::pair{folder, "a directory"},
                                     std::pair{path("to-fifo"), "a FIFO"}}) {
    zt_writer* w = nullptr;
    EXPECT_EQ(zt_writer_open(target.c_str(), &w), ZT_ERR_IO) << target;
    EXPECT_NE(std::string(zt_last_error()).find(kind), std::string::npos) << zt_last_error();
    EXPECT_EQ(w, nullptr);
  }
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_TRUE(fs::is_directory(folder));
  EXPECT_TRUE(fs::is_symlink(path("to-fifo")));
  EXPECT_EQ(entries().size(), 3u);  // no temporary file either
}

// Any valid name can be written: the temporary name beside it is cut to
// fit NAME_MAX, not the target's name lengthened past it.
TEST_F(WriterTest, ANameOfTheLongestLengthIsWritable) {
  const std::string name = std::string(252, 'a') + ".zt";  // 255 bytes
  write_one(path(name), 1.0f);
  write_one(path(name), 2.0f);  // over itself
  EXPECT_EQ(entries(), std::vector<std::string>{name});
  zt_reader* r = open_verified(path(name));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(mapped(r, "x", "data"), bytes_of(std::vector<float>{2.0f}));
  zt_close(r);
}

// In a setgid directory a new file takes the directory's group; a file
// rewritten there keeps its own (who may read it does not change).
TEST_F(WriterTest, AFileRewrittenInASetgidFolderKeepsItsGroup) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the folder another group";
  const fs::path folder = dir_ / "shared";
  fs::create_directory(folder);
  const gid_t other = ::getegid() + 1;
  ASSERT_EQ(::chown(folder.c_str(), 0, other), 0);
  ASSERT_EQ(::chmod(folder.c_str(), 02775), 0);
  const std::string p = (folder / "m.zt").string();
  write_one(p, 1.0f);
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, other);  // a new file: the folder's group
  ASSERT_EQ(::chown(p.c_str(), 0, ::getegid()), 0);
  ASSERT_EQ(::chmod(p.c_str(), 0640), 0);
  write_one(p, 2.0f);
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, ::getegid());
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST_F(WriterTest, ScalarAndZeroSizeTensors) {
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open(path().c_str(), &w), ZT_OK);
  const double scalar = 2.5;
  ASSERT_EQ(zt_writer_add_dense(w, "scalar", "f64", nullptr, 0, &scalar, 8, nullptr), ZT_OK)
      << zt_last_error();
  const uint64_t zero_shape[3] = {3, 0, 2};
  ASSERT_EQ(zt_writer_add_dense(w, "empty.raw", "f32", zero_shape, 3, nullptr, 0, "raw"), ZT_OK)
      << zt_last_error();
  ASSERT_EQ(zt_writer_add_dense(w, "empty.zstd", "f32", zero_shape, 3, nullptr, 0, "zstd"), ZT_OK)
      << zt_last_error();
  ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  zt_reader* r = open_verified(path());
  ASSERT_NE(r, nullptr);
  size_t nd = 9;
  size_t i = 0;
  ASSERT_EQ(zt_object_find(r, "scalar", &i), ZT_OK);
  zt_object_shape(r, i, &nd);
  EXPECT_EQ(nd, 0u);
  EXPECT_EQ(mapped(r, "scalar", "data"), Bytes(reinterpret_cast<const uint8_t*>(&scalar),
                                               reinterpret_cast<const uint8_t*>(&scalar) + 8));
  EXPECT_TRUE(mapped(r, "empty.raw", "data").empty());
  EXPECT_TRUE(mapped(r, "empty.zstd", "data").empty());
  zt_close(r);
}

TEST_F(WriterTest, SparseQuantizedFp8AndComplexObjects) {
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open(path().c_str(), &w), ZT_OK);
  const uint64_t shape34[2] = {3, 4};
  const std::vector<float> v = {1, 2, 3, 4};
  const std::vector<uint64_t> idx = {0, 2, 1, 3}, ptr = {0, 2, 3, 4};
  ASSERT_EQ(zt_writer_begin_object(w, "csr", "sparse_csr", shape34, 2), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "values", "f32", nullptr, v.data(), 16, nullptr), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "indices", "u64", nullptr, idx.data(), 32, "zstd"), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "indptr", "u64", nullptr, ptr.data(), 32, nullptr), ZT_OK);
  ASSERT_EQ(zt_writer_end_object(w), ZT_OK) << zt_last_error();

  const std::vector<uint64_t> coords = {0, 2, 1, 3};  // rows 0,2; cols 1,3
  ASSERT_EQ(zt_writer_begin_object(w, "coo", "sparse_coo", shape34, 2), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "values", "f32", nullptr, v.data(), 8, nullptr), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "coords", "u64", nullptr, coords.data(), 32, nullptr),
            ZT_OK);
  ASSERT_EQ(zt_writer_end_object(w), ZT_OK) << zt_last_error();

  const uint64_t qshape[2] = {8, 64};  // [N, K]: 8 output rows, 64 inputs, groups of 32
  const std::vector<int32_t> packed(64, 0x12345678);
  const std::vector<uint16_t> scales(16, 0x3C00), zeros(16, 0x4800);
  ASSERT_EQ(zt_writer_begin_object(w, "q", "quantized_group", qshape, 2), ZT_OK);
  ASSERT_EQ(zt_writer_set_object_attributes_json(
                w, R"({"bits": 4, "group_size": 32, "packing": "8_per_i32"})"),
            ZT_OK);
  ASSERT_EQ(
      zt_writer_add_component(w, "packed_weight", "i32", nullptr, packed.data(), 256, nullptr),
      ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "scales", "f16", nullptr, scales.data(), 32, nullptr),
            ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "zeros", "f16", nullptr, zeros.data(), 32, "zstd"), ZT_OK);
  ASSERT_EQ(zt_writer_end_object(w), ZT_OK) << zt_last_error();

  const uint8_t fp8[4] = {0x00, 0x38, 0x40, 0xB8};
  const uint64_t s4[1] = {4};
  ASSERT_EQ(zt_writer_begin_object(w, "fp8", "dense", s4, 1), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "data", "u8", "f8_e4m3fn", fp8, 4, nullptr), ZT_OK);
  ASSERT_EQ(zt_writer_end_object(w), ZT_OK);
  const std::vector<float> c64 = {1, 0, 0, 1};
  const uint64_t s2[1] = {2};
  ASSERT_EQ(zt_writer_begin_object(w, "c64", "dense", s2, 1), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "data", "f32", "complex64", c64.data(), 16, nullptr), ZT_OK);
  ASSERT_EQ(zt_writer_end_object(w), ZT_OK);
  ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();

  zt_reader* r = open_verified(path());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(mapped(r, "csr", "indices"), bytes_of(idx));
  EXPECT_EQ(mapped(r, "q", "zeros"), bytes_of(zeros));
  const auto m = manifest(r);
  EXPECT_EQ(m["objects"]["fp8"]["components"]["data"]["type"], "f8_e4m3fn");
  EXPECT_EQ(m["objects"]["c64"]["components"]["data"]["type"], "complex64");
  EXPECT_EQ(m["objects"]["q"]["attributes"]["packing"], "8_per_i32");
  zt_close(r);
}

TEST_F(WriterTest, AttributesRoundTripExactly) {
  const char* file_attrs =
      R"({"s": "h\u00e9llo", "i": -9223372036854775808, "u": 18446744073709551615, "f": 0.1, "whole": 3.0,)"
      R"( "t": true, "n": null, "list": [1, [2, {"x": []}]], "map": {"deep": {"deeper": {}}}, "b": {"$bytes": "AAH+/w=="}})";
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open(path().c_str(), &w), ZT_OK);
  ASSERT_EQ(zt_writer_set_file_attributes_json(w, file_attrs), ZT_OK) << zt_last_error();
  ASSERT_EQ(zt_writer_finish(w), ZT_OK);
  zt_reader* r = open_verified(path());
  ASSERT_NE(r, nullptr);
  const auto got = manifest(r)["attributes"];
  const auto want = nlohmann::json::parse(file_attrs);
  EXPECT_EQ(got, want);
  EXPECT_TRUE(got["whole"].is_number_float());
  EXPECT_TRUE(got["i"].is_number_integer());
  EXPECT_TRUE(got["u"].is_number_unsigned());
  zt_close(r);
}

// CBOR in, the same CBOR out: values JSON cannot carry (NaN, infinities,
// -2^64, byte strings, undefined, a simple value, a tag, indefinite
// lengths, a map whose key is "$bytes") pass through byte for byte.
TEST_F(WriterTest, CborAttributesAreStoredAndHandedOutByteForByte) {
  const Bytes file_attrs = {
      0xA7,                                                             // map of 7
      0x61, 'n', 0xFB, 0x7F, 0xF8, 0,    0,    0,    0,    0,    1,     // "n": a NaN with a payload
      0x61, 'i', 0xF9, 0xFC, 0x00,                                      // "i": -inf (half float)
      0x61, 'm', 0x3B, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,  // "m": -2^64
      0x61, 'b', 0x42, 0x00, 0xFF,                                      // "b": bytes 00 FF
      0x61, 'u', 0x9F, 0xF7, 0xF0, 0xFF,              // "u": [_ undefined, simple(16)]
      0x61, 't', 0xC1, 0x1A, 0x51, 0x4B, 0x67, 0xB0,  // "t": tag 1 (epoch time)
      0x66, '$', 'b',  'y',  't',  'e',  's',  0xA1, 0x66, '$',  'b',
      'y',  't', 'e',  's',  0x60};  // {"$bytes": {"$bytes": ""}}
  const Bytes object_attrs = {0xA1, 0x61, 'k',  0xFA,
                              0x7F, 0x80, 0x00, 0x00};  // {"k": +inf (single)}
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open(path().c_str(), &w), ZT_OK);
  ASSERT_EQ(zt_writer_set_file_attributes_cbor(w, file_attrs.data(), file_attrs.size()), ZT_OK)
      << zt_last_error();
  const uint64_t s1[1] = {1};
  const uint8_t one = 1;
  ASSERT_EQ(zt_writer_begin_object(w, "x", "dense", s1, 1), ZT_OK);
  ASSERT_EQ(zt_writer_set_object_attributes_cbor(w, object_attrs.data(), object_attrs.size()),
            ZT_OK)
      << zt_last_error();
  ASSERT_EQ(zt_writer_add_component(w, "data", "u8", nullptr, &one, 1, nullptr), ZT_OK);
  ASSERT_EQ(zt_writer_end_object(w), ZT_OK);
  ASSERT_EQ(zt_writer_add_dense(w, "plain", "u8", s1, 1, &one, 1, nullptr), ZT_OK);
  ASSERT_EQ(zt_writer_finish(w), ZT_OK);
  zt_reader* r = open_verified(path());
  ASSERT_NE(r, nullptr);
  const void* data = nullptr;
  size_t size = 0;
  ASSERT_EQ(zt_file_attributes_cbor(r, &data, &size), ZT_OK);
  EXPECT_EQ(Bytes(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + size),
            file_attrs);
  ASSERT_EQ(zt_object_attributes_cbor(r, 0, &data, &size), ZT_OK);
  EXPECT_EQ(Bytes(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + size),
            object_attrs);
  ASSERT_EQ(zt_object_attributes_cbor(r, 1, &data, &size), ZT_OK);
  EXPECT_EQ(data, nullptr);
  EXPECT_EQ(size, 0u);
  EXPECT_EQ(zt_object_attributes_cbor(r, 2, &data, &size), ZT_ERR_NOT_FOUND);
  EXPECT_EQ(zt_object_attributes_cbor(r, 0, nullptr, &size), ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_file_attributes_cbor(nullptr, &data, &size), ZT_ERR_ARGUMENT);
  zt_close(r);
}

// v2's f4_e2m1 packs two values a byte; a 1.2 reader would size its bytes
// as product(shape) u8s, so a 1.2 writer refuses it and names the 1.2 form.
// The pairs (f4_e2m1fn_x2, the last dimension halved) are written.
TEST_F(WriterTest, PackedV2TypesAreRefusedIn12Files) {
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open(path().c_str(), &w), ZT_OK);
  const uint64_t values[1] = {4}, pairs[1] = {2};
  const uint8_t bytes[2] = {0x21, 0x43};
  ASSERT_EQ(zt_writer_begin_object(w, "v", "dense", values, 1), ZT_OK);
  EXPECT_EQ(zt_writer_add_component(w, "data", "u8", "f4_e2m1", bytes, 2, nullptr),
            ZT_ERR_ARGUMENT);
  EXPECT_NE(std::string(zt_last_error()).find("f4_e2m1fn_x2"), std::string::npos)
      << zt_last_error();
  ASSERT_EQ(zt_writer_cancel_object(w), ZT_OK);
  ASSERT_EQ(zt_writer_begin_object(w, "p", "dense", pairs, 1), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "data", "u8", "f4_e2m1fn_x2", bytes, 2, nullptr), ZT_OK)
      << zt_last_error();
  ASSERT_EQ(zt_writer_end_object(w), ZT_OK) << zt_last_error();
  ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  zt_reader* r = open_verified(path());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(zt_object_count(r), 1u);
  zt_close(r);
}

TEST_F(WriterTest, CborAttributesThatReadersWouldRefuseAreRefused) {
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open(path().c_str(), &w), ZT_OK);
  const struct {
    const char* what;
    Bytes cbor;
    zt_status want;
  } cases[] = {
      {"an array, not a map", {0x80}, ZT_ERR_ARGUMENT},
      {"a key that is not text", {0xA1, 0x01, 0x02}, ZT_ERR_ARGUMENT},
      {"a duplicate key", {0xA2, 0x61, 'a', 0x01, 0x61, 'a', 0x02}, ZT_ERR_ARGUMENT},
      {"bytes after the map", {0xA0, 0x00}, ZT_ERR_ARGUMENT},
      {"truncated", {0xA1, 0x61, 'a'}, ZT_ERR_ARGUMENT},
      {"invalid UTF-8", {0xA1, 0x62, 0xC3, 0x28, 0x01}, ZT_ERR_ARGUMENT},
      {"empty", {}, ZT_ERR_ARGUMENT},
  };
  for (const auto& c : cases) {
    const uint8_t none = 0;
    EXPECT_EQ(zt_writer_set_file_attributes_cbor(w, c.cbor.empty() ? &none : c.cbor.data(),
                                                 c.cbor.size()),
              c.want)
        << c.what;
  }
  Bytes deep = {0xA1, 0x61, 'a'};  // {"a": [[...]]}: 1 + 127 containers
  deep.insert(deep.end(), 127, 0x81);
  deep.push_back(0x00);
  EXPECT_EQ(zt_writer_set_file_attributes_cbor(w, deep.data(), deep.size()), ZT_ERR_LIMIT);
  // Deeper than the CBOR decoder goes: a limit too (ztensor.h), not an argument.
  Bytes deeper = {0xA1, 0x61, 'a'};
  deeper.insert(deeper.end(), 200, 0x81);
  deeper.push_back(0x00);
  EXPECT_EQ(zt_writer_set_file_attributes_cbor(w, deeper.data(), deeper.size()), ZT_ERR_LIMIT)
      << zt_last_error();
  deep.erase(deep.begin() + 3);  // 127 deep: readers accept it at the root
  EXPECT_EQ(zt_writer_set_file_attributes_cbor(w, deep.data(), deep.size()), ZT_OK)
      << zt_last_error();
  EXPECT_EQ(zt_writer_set_file_attributes_cbor(w, nullptr, 1), ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_writer_set_object_attributes_cbor(w, deep.data(), deep.size()),
            ZT_ERR_STATE);  // no object
  ASSERT_EQ(zt_writer_finish(w), ZT_OK);
  zt_reader* r = open_verified(path());
  ASSERT_NE(r, nullptr);
  zt_close(r);
}

// What the writer accepts must reopen: attributes may nest only as deep as
// the reader's CBOR depth limit allows at their place in the manifest.
TEST_F(WriterTest, AttributeNestingStaysWithinTheReadersLimit) {
  auto object_of_depth = [](int depth) {
    std::string s = "{\"a\": ";
    for (int i = 1; i < depth; ++i) s += '[';
    s += '1';
    for (int i = 1; i < depth; ++i) s += ']';
    return s + '}';
  };
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open(path().c_str(), &w), ZT_OK);
  EXPECT_EQ(zt_writer_set_file_attributes_json(w, object_of_depth(128).c_str()), ZT_ERR_LIMIT);
  EXPECT_EQ(zt_writer_set_file_attributes_json(w, object_of_depth(100000).c_str()), ZT_ERR_LIMIT);
  ASSERT_EQ(zt_writer_set_file_attributes_json(w, object_of_depth(127).c_str()), ZT_OK)
      << zt_last_error();
  const uint64_t s1[1] = {1};
  const uint8_t one = 1;
  ASSERT_EQ(zt_writer_begin_object(w, "x", "dense", s1, 1), ZT_OK);
  EXPECT_EQ(zt_writer_set_object_attributes_json(w, object_of_depth(126).c_str()), ZT_ERR_LIMIT);
  ASSERT_EQ(zt_writer_set_object_attributes_json(w, object_of_depth(125).c_str()), ZT_OK)
      << zt_last_error();
  ASSERT_EQ(zt_writer_add_component(w, "data", "u8", nullptr, &one, 1, nullptr), ZT_OK);
  ASSERT_EQ(zt_writer_end_object(w), ZT_OK);
  ASSERT_EQ(zt_writer_finish(w), ZT_OK);
  zt_reader* r = open_verified(path());
  ASSERT_NE(r, nullptr);
  zt_close(r);
}

TEST_F(WriterTest, SameCallsGiveIdenticalBytes) {
  auto write = [&](const std::string& p) {
    zt_writer_options o;
    zt_writer_options_init(&o);
    o.frame_size = 4096;
    o.threads = 2;
    zt_writer* w = nullptr;
    ASSERT_EQ(zt_writer_open_ex(p.c_str(), &o, &w), ZT_OK);
    std::vector<float> big(50000);
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 97) * 0.5f;
    const uint64_t shape[1] = {big.size()};
    ASSERT_EQ(zt_writer_set_file_attributes_json(w, R"({"b": 1, "a": [true]})"), ZT_OK);
    ASSERT_EQ(zt_writer_add_dense(w, "z", "f32", shape, 1, big.data(), big.size() * 4, "zstd"),
              ZT_OK);
    ASSERT_EQ(zt_writer_add_dense(w, "r", "f32", shape, 1, big.data(), big.size() * 4, "raw"),
              ZT_OK);
    ASSERT_EQ(zt_writer_finish(w), ZT_OK);
  };
  write(path("a.zt"));
  write(path("b.zt"));
  const Bytes a = slurp(path("a.zt"));
  EXPECT_EQ(a, slurp(path("b.zt")));
  EXPECT_GT(a.size(), 200000u);
  // 50000 floats at 4 KiB per frame make 49 independent frames.
  zt_reader* r = open_verified(path("a.zt"));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(mapped(r, "z", "data"), mapped(r, "r", "data"));
  zt_close(r);
}

// zt_writer_add_dense_many writes what the same zt_writer_add_dense calls
// write, byte for byte, 1.2 and v2, raw and zstd; an item that fails stops
// the call with the items before it added (as separate calls leave them)
// and the writer goes on; a struct_size it does not know adds nothing.
TEST_F(WriterTest, ManyDenseObjectsInOneCallAreTheSameCallsOneByOne) {
  std::vector<uint16_t> big(40000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint16_t>(i % 251);
  const std::vector<int32_t> small = {1, -2, 3, 4, 5, 6};
  const uint8_t one = 7;
  const uint64_t big_shape[2] = {200, 200}, small_shape[2] = {2, 3};
  const auto dense = [](const char* name, const char* dtype, const uint64_t* shape, uint32_t ndim,
                        const void* data, uint64_t nbytes) {
    zt_dense_item it;
    zt_dense_item_init(&it);
    it.name = name;
    it.dtype = dtype;
    it.shape = shape;
    it.ndim = ndim;
    it.data = data;
    it.nbytes = nbytes;
    return it;
  };
  const std::vector<zt_dense_item> items = {
      dense("model.embed.weight", "bf16", big_shape, 2, big.data(), big.size() * 2),
      dense("model.norm.bias", "i32", small_shape, 2, small.data(), small.size() * 4),
      dense("scalar", "u8", nullptr, 0, &one, 1)};  // rank 0: no shape
  for (const uint32_t version : {0u, 2u})
    for (const char* encoding : {"raw", "zstd"}) {
      SCOPED_TRACE(std::string(encoding) + ", file_version " + std::to_string(version));
      zt_writer_options o;
      zt_writer_options_init(&o);
      o.file_version = version;
      zt_writer* w = nullptr;
      ASSERT_EQ(zt_writer_open_ex(path("one_by_one.zt").c_str(), &o, &w), ZT_OK);
      for (const zt_dense_item& item : items)
        ASSERT_EQ(zt_writer_add_dense(w, item.name, item.dtype, item.shape, item.ndim, item.data,
                                      item.nbytes, encoding),
                  ZT_OK)
            << zt_last_error();
      ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
      ASSERT_EQ(zt_writer_open_ex(path("many.zt").c_str(), &o, &w), ZT_OK);
      size_t added = 99;
      ASSERT_EQ(zt_writer_add_dense_many(w, items.data(), items.size(), encoding, &added), ZT_OK)
          << zt_last_error();
      EXPECT_EQ(added, items.size());
      ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
      EXPECT_EQ(slurp(path("many.zt")), slurp(path("one_by_one.zt")));
    }

  // A duplicate name second of three: the first stays, the writer goes on.
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open(path("refused.zt").c_str(), &w), ZT_OK);
  std::vector<zt_dense_item> twice = {items[1], items[1], items[2]};
  size_t added = 99;
  EXPECT_EQ(zt_writer_add_dense_many(w, twice.data(), twice.size(), nullptr, &added),
            ZT_ERR_ARGUMENT);
  EXPECT_EQ(added, 1u);
  EXPECT_NE(std::string(zt_last_error()).find("model.norm.bias"), std::string::npos)
      << zt_last_error();
  // An unknown struct_size, last of two: nothing is added.
  std::vector<zt_dense_item> unknown = {items[0], items[2]};
  unknown[1].struct_size = sizeof(zt_dense_item) + 8;
  EXPECT_EQ(zt_writer_add_dense_many(w, unknown.data(), unknown.size(), nullptr, &added),
            ZT_ERR_ARGUMENT);
  EXPECT_EQ(added, 0u);
  EXPECT_NE(std::string(zt_last_error()).find("items[1].struct_size"), std::string::npos)
      << zt_last_error();
  // A NULL name: refused as zt_writer_add_dense refuses it.
  std::vector<zt_dense_item> nameless = {items[2]};
  nameless[0].name = nullptr;
  EXPECT_EQ(zt_writer_add_dense_many(w, nameless.data(), 1, nullptr, nullptr), ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_writer_add_dense_many(w, nullptr, 0, nullptr, nullptr), ZT_OK);
  EXPECT_EQ(zt_writer_add_dense_many(w, nullptr, 1, nullptr, nullptr), ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_writer_add_dense_many(nullptr, items.data(), 1, nullptr, nullptr), ZT_ERR_ARGUMENT);
  ASSERT_EQ(zt_writer_add_dense_many(w, &items[2], 1, nullptr, &added), ZT_OK) << zt_last_error();
  ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  zt_reader* r = open_verified(path("refused.zt"));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(zt_object_count(r), 2u);
  EXPECT_EQ(mapped(r, "model.norm.bias", "data"), bytes_of(small));
  EXPECT_EQ(mapped(r, "scalar", "data"), Bytes{one});
  zt_close(r);
}

TEST_F(WriterTest, StreamingComponentInPieces) {
  zt_writer_options o;
  zt_writer_options_init(&o);
  o.frame_size = 1024;
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open_ex(path().c_str(), &o, &w), ZT_OK);
  const uint64_t n = 100003;
  Bytes all(n);
  for (uint64_t i = 0; i < n; ++i) all[i] = static_cast<uint8_t>((i * i) >> 3);
  const uint64_t shape[1] = {n};
  for (const char* enc : {"zstd", "raw", "auto"}) {
    ASSERT_EQ(zt_writer_begin_object(w, enc, "dense", shape, 1), ZT_OK);
    ASSERT_EQ(zt_writer_begin_component(w, "data", "u8", nullptr, enc, n), ZT_OK)
        << zt_last_error();
    for (uint64_t at = 0; at < n;) {
      const uint64_t piece = std::min<uint64_t>(n - at, 1 + (at * 31) % 5000);
      ASSERT_EQ(zt_writer_write(w, all.data() + at, piece), ZT_OK) << zt_last_error();
      at += piece;
    }
    ASSERT_EQ(zt_writer_end_component(w), ZT_OK) << zt_last_error();
    ASSERT_EQ(zt_writer_end_object(w), ZT_OK) << zt_last_error();
  }
  ASSERT_EQ(zt_writer_finish(w), ZT_OK);
  zt_reader* r = open_verified(path());
  ASSERT_NE(r, nullptr);
  for (const char* enc : {"zstd", "raw", "auto"}) EXPECT_EQ(mapped(r, enc, "data"), all) << enc;
  zt_close(r);
}

// Frames start every frame_size bytes of a component, so the file is the
// same whatever the compression threads and however the data is cut into
// pieces (whole, tiny, frame-sized, just off frame-sized).
TEST_F(WriterTest, ZstdBytesDoNotDependOnThreadsOrPieces) {
  const uint64_t n = 300001;
  Bytes all(n);
  for (uint64_t i = 0; i < n; ++i) all[i] = static_cast<uint8_t>((i * i) >> 5);
  const uint64_t shape[1] = {n};
  auto write = [&](const std::string& p, unsigned threads, uint64_t piece) {
    zt_writer_options o;
    zt_writer_options_init(&o);
    o.frame_size = 4096;
    o.threads = threads;
    zt_writer* w = nullptr;
    ASSERT_EQ(zt_writer_open_ex(p.c_str(), &o, &w), ZT_OK);
    ASSERT_EQ(zt_writer_begin_object(w, "x", "dense", shape, 1), ZT_OK);
    ASSERT_EQ(zt_writer_begin_component(w, "data", "u8", nullptr, "zstd", n), ZT_OK);
    for (uint64_t at = 0; at < n;) {
      const uint64_t len = std::min<uint64_t>(n - at, piece ? piece : 1 + (at * 131) % 9000);
      ASSERT_EQ(zt_writer_write(w, all.data() + at, len), ZT_OK) << zt_last_error();
      at += len;
    }
    ASSERT_EQ(zt_writer_end_component(w), ZT_OK) << zt_last_error();
    ASSERT_EQ(zt_writer_end_object(w), ZT_OK) << zt_last_error();
    ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  };
  write(path("ref.zt"), 1, n);
  const Bytes ref = slurp(path("ref.zt"));
  zt_reader* r = open_verified(path("ref.zt"));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(mapped(r, "x", "data"), all);
  zt_close(r);
  for (const unsigned threads : {1u, 2u, 7u}) {
    for (const uint64_t piece :
         {n, uint64_t{0}, uint64_t{4096}, uint64_t{4095}, uint64_t{4097}, uint64_t{3 * 4096}}) {
      write(path("t.zt"), threads, piece);
      EXPECT_EQ(slurp(path("t.zt")), ref) << threads << " threads, pieces of " << piece;
    }
  }
}

// Byte planes (v2) are encoded frame by frame on the compression workers:
// the file is the same whatever the threads and pieces, and the component's
// stored bytes are the codec's own stream of the whole input.
TEST_F(WriterTest, PlanesBytesDoNotDependOnThreadsOrPieces) {
  constexpr uint32_t kPlanesFrameBytes = 1u << 20;  // the writer's frames (writer_impl.h)
  const uint64_t n = (uint64_t{7} << 19) + 6;       // 3.5 MiB of bf16: four frames, the last short
  Bytes all(n);
  uint32_t x = 12345;
  for (uint64_t i = 0; i < n; i += 2) {  // bf16 near +-0.02: a narrow exponent, noisy mantissa
    x = x * 1664525u + 1013904223u;
    all[i] = static_cast<uint8_t>(x >> 24);
    all[i + 1] = static_cast<uint8_t>(0x3C | ((x >> 7) & 0x80));
  }
  const uint64_t shape[1] = {n / 2};
  auto write = [&](const std::string& p, unsigned threads, uint64_t piece) {
    zt_writer_options o;
    zt_writer_options_init(&o);
    o.file_version = 2;
    o.threads = threads;
    zt_writer* w = nullptr;
    ASSERT_EQ(zt_writer_open_ex(p.c_str(), &o, &w), ZT_OK) << zt_last_error();
    ASSERT_EQ(zt_writer_begin_object(w, "x", "dense", shape, 1), ZT_OK) << zt_last_error();
    ASSERT_EQ(zt_writer_begin_component(w, "data", "bf16", nullptr, "planes", n), ZT_OK)
        << zt_last_error();
    for (uint64_t at = 0; at < n;) {
      const uint64_t len = std::min<uint64_t>(n - at, piece ? piece : 1 + (at * 131) % 300000);
      ASSERT_EQ(zt_writer_write(w, all.data() + at, len), ZT_OK) << zt_last_error();
      at += len;
    }
    ASSERT_EQ(zt_writer_end_component(w), ZT_OK) << zt_last_error();
    ASSERT_EQ(zt_writer_end_object(w), ZT_OK) << zt_last_error();
    ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  };
  write(path("ref.zt"), 1, n);
  const Bytes ref = slurp(path("ref.zt"));
  Bytes stream;
  ASSERT_TRUE(
      zt::byte_planes_encode(all, zt::PlanesLayout{2, true, kPlanesFrameBytes}, 3, stream).ok());
  EXPECT_NE(std::search(ref.begin(), ref.end(), stream.begin(), stream.end()), ref.end());
  EXPECT_LT(stream.size(), n * 9 / 10);  // compressed: the exponent plane pays
  zt_reader* r = open_verified(path("ref.zt"));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(mapped(r, "x", "data"), all);
  zt_close(r);
  for (const unsigned threads : {2u, 7u}) {
    for (const uint64_t piece :
         {n, uint64_t{0}, uint64_t{kPlanesFrameBytes}, uint64_t{kPlanesFrameBytes - 2}}) {
      write(path("t.zt"), threads, piece);
      EXPECT_EQ(slurp(path("t.zt")), ref) << threads << " threads, pieces of " << piece;
    }
  }
}

// Cancelling an object, or a refused piece, while streamed frames are still
// being compressed leaves the file as if they had never been given.
TEST_F(WriterTest, FramesInFlightAreDroppedByCancelAndRefusal) {
  const uint64_t n = 60000;
  Bytes bits(n);
  for (uint64_t i = 0; i < n; ++i) bits[i] = static_cast<uint8_t>((i / 7) & 1);
  const uint64_t shape[1] = {n};
  zt_writer_options o;
  zt_writer_options_init(&o);
  o.frame_size = 1024;
  o.threads = 4;
  o.zstd_level = 19;  // slow frames: still running when the writer drops them

  auto expected = [&](const std::string& p) {
    zt_writer* w = nullptr;
    ASSERT_EQ(zt_writer_open_ex(p.c_str(), &o, &w), ZT_OK);
    ASSERT_EQ(zt_writer_add_dense(w, "kept", "bool", shape, 1, bits.data(), n, "zstd"), ZT_OK);
    ASSERT_EQ(zt_writer_finish(w), ZT_OK);
  };
  expected(path("want.zt"));

  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open_ex(path("got.zt").c_str(), &o, &w), ZT_OK);
  // 1. Cancelled halfway through a streamed component.
  ASSERT_EQ(zt_writer_begin_object(w, "cancelled", "dense", shape, 1), ZT_OK);
  ASSERT_EQ(zt_writer_begin_component(w, "data", "bool", nullptr, "zstd", n), ZT_OK);
  for (uint64_t at = 0; at < n / 2; at += 100)
    ASSERT_EQ(zt_writer_write(w, bits.data() + at, 100), ZT_OK);
  ASSERT_EQ(zt_writer_cancel_object(w), ZT_OK);
  // 2. A piece refused (a bool byte of 2) after many frames went out.
  ASSERT_EQ(zt_writer_begin_object(w, "kept", "dense", shape, 1), ZT_OK);
  ASSERT_EQ(zt_writer_begin_component(w, "data", "bool", nullptr, "zstd", n), ZT_OK);
  for (uint64_t at = 0; at < n / 2; at += 100)
    ASSERT_EQ(zt_writer_write(w, bits.data() + at, 100), ZT_OK);
  const uint8_t bad[3] = {0, 2, 1};
  EXPECT_EQ(zt_writer_write(w, bad, sizeof bad), ZT_ERR_ARGUMENT);
  // The component is gone; the object goes on with a good one.
  ASSERT_EQ(zt_writer_add_component(w, "data", "bool", nullptr, bits.data(), n, "zstd"), ZT_OK)
      << zt_last_error();
  ASSERT_EQ(zt_writer_end_object(w), ZT_OK) << zt_last_error();
  ASSERT_EQ(zt_writer_finish(w), ZT_OK);
  EXPECT_EQ(slurp(path("got.zt")), slurp(path("want.zt")));
}

// A writer dropped with frames in flight joins its workers cleanly.
TEST_F(WriterTest, AbortWithFramesInFlight) {
  zt_writer_options o;
  zt_writer_options_init(&o);
  o.frame_size = 1024;
  o.threads = 3;
  o.zstd_level = 19;
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open_ex(path("x.zt").c_str(), &o, &w), ZT_OK);
  const uint64_t shape[1] = {1 << 20};
  ASSERT_EQ(zt_writer_begin_object(w, "x", "dense", shape, 1), ZT_OK);
  ASSERT_EQ(zt_writer_begin_component(w, "data", "u8", nullptr, "zstd", shape[0]), ZT_OK);
  Bytes piece(777);
  for (size_t i = 0; i < piece.size(); ++i) piece[i] = static_cast<uint8_t>(i * 13);
  for (int k = 0; k < 40; ++k) ASSERT_EQ(zt_writer_write(w, piece.data(), piece.size()), ZT_OK);
  zt_writer_abort(w);
  EXPECT_TRUE(entries().empty());  // no target, no temporary file
}

TEST_F(WriterTest, AutoKeepsIncompressibleDataRaw) {
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open(path().c_str(), &w), ZT_OK);
  Bytes noise(65536);
  uint64_t x = 88172645463325252ull;
  for (auto& b : noise) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<uint8_t>(x);
  }
  const Bytes zeros(65536, 0);
  const uint64_t shape[1] = {65536};
  ASSERT_EQ(zt_writer_add_dense(w, "noise", "u8", shape, 1, noise.data(), noise.size(), "auto"),
            ZT_OK);
  ASSERT_EQ(zt_writer_add_dense(w, "zeros", "u8", shape, 1, zeros.data(), zeros.size(), "auto"),
            ZT_OK);
  ASSERT_EQ(zt_writer_finish(w), ZT_OK);
  zt_reader* r = open_verified(path());
  ASSERT_NE(r, nullptr);
  const auto m = manifest(r);
  EXPECT_FALSE(m["objects"]["noise"]["components"]["data"].contains("encoding"));
  EXPECT_EQ(m["objects"]["zeros"]["components"]["data"]["encoding"], "zstd");
  zt_close(r);
}

// "auto" decides on the component's first frame, however the pieces cut
// it: the same bytes streamed in one piece, in 16-byte pieces or after an
// empty piece give the same file (it decided on the first piece: a 16-byte
// or empty one made a whole component raw).
TEST_F(WriterTest, AutoDecidesTheSameWhateverThePieces) {
  const Bytes zeros(100000, 0);
  const uint64_t shape[1] = {zeros.size()};
  auto write = [&](size_t first, size_t piece) {
    zt_writer_options o;
    zt_writer_options_init(&o);
    o.frame_size = 65536;
    zt_writer* w = nullptr;
    EXPECT_EQ(zt_writer_open_ex(path().c_str(), &o, &w), ZT_OK);
    EXPECT_EQ(zt_writer_begin_object(w, "z", "dense", shape, 1), ZT_OK);
    EXPECT_EQ(zt_writer_begin_component(w, "data", "u8", nullptr, "auto", zeros.size()), ZT_OK);
    EXPECT_EQ(zt_writer_write(w, zeros.data(), first), ZT_OK);
    for (size_t at = first; at < zeros.size(); at += piece)
      EXPECT_EQ(zt_writer_write(w, zeros.data() + at, std::min(piece, zeros.size() - at)), ZT_OK);
    EXPECT_EQ(zt_writer_end_component(w), ZT_OK) << zt_last_error();
    EXPECT_EQ(zt_writer_end_object(w), ZT_OK);
    EXPECT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
    return slurp(path());
  };
  const Bytes whole = write(zeros.size(), 1);
  EXPECT_LT(whole.size(), 10000u);  // zstd
  EXPECT_EQ(write(16, 16), whole);
  EXPECT_EQ(write(0, 7000), whole);
  EXPECT_EQ(write(65535, 2), whole);
}

TEST_F(WriterTest, DigestOptions) {
  for (const auto& [algo, prefix] :
       {std::pair{ZT_DIGEST_SHA256, "sha256:"}, std::pair{ZT_DIGEST_NONE, ""}}) {
    zt_writer_options o;
    zt_writer_options_init(&o);
    o.digest = algo;
    zt_writer* w = nullptr;
    ASSERT_EQ(zt_writer_open_ex(path().c_str(), &o, &w), ZT_OK);
    const float f[2] = {1, 2};
    const uint64_t shape[1] = {2};
    ASSERT_EQ(zt_writer_add_dense(w, "x", "f32", shape, 1, f, 8, nullptr), ZT_OK);
    ASSERT_EQ(zt_writer_finish(w), ZT_OK);
    uint64_t checked = 9;
    zt_reader* r = open_verified(path(), &checked);
    ASSERT_NE(r, nullptr);
    const auto c = manifest(r)["objects"]["x"]["components"]["data"];
    if (*prefix) {
      EXPECT_EQ(c["digest"].get<std::string>().rfind(prefix, 0), 0u);
      EXPECT_EQ(checked, 1u);
    } else {
      EXPECT_FALSE(c.contains("digest"));
      EXPECT_EQ(checked, 0u);
    }
    zt_close(r);
  }
}

// From 8 MiB a raw component's digest is computed on a helper thread
// while the bytes are written (1.2: the stored bytes, in emit_stored; v2:
// the input, in accept): the same digests, the same file, on one thread
// or two.
TEST_F(WriterTest, LargeComponentsHashedBesideTheirWriteKeepTheirDigests) {
  Bytes big((size_t{9} << 20) + 123);
  uint32_t x = 12345;
  for (auto& b : big) b = static_cast<uint8_t>((x = x * 1103515245u + 12345u) >> 24);
  for (const auto& [version, algo] :
       {std::pair{0u, ZT_DIGEST_XXH3}, std::pair{0u, ZT_DIGEST_SHA256},
        std::pair{2u, ZT_DIGEST_XXH3}}) {
    std::vector<Bytes> files;
    for (const uint32_t threads : {1u, 2u}) {
      zt_writer_options o;
      zt_writer_options_init(&o);
      o.file_version = version;
      o.digest = algo;
      o.threads = threads;
      zt_writer* w = nullptr;
      ASSERT_EQ(zt_writer_open_ex(path().c_str(), &o, &w), ZT_OK);
      const uint64_t shape[1] = {big.size()};
      ASSERT_EQ(zt_writer_add_dense(w, "big", "u8", shape, 1, big.data(), big.size(), nullptr),
                ZT_OK);
      const float f[2] = {1, 2};
      const uint64_t two[1] = {2};
      ASSERT_EQ(zt_writer_add_dense(w, "x", "f32", two, 1, f, 8, nullptr), ZT_OK);
      ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
      uint64_t checked = 9;
      zt_reader* r = open_verified(path(), &checked);
      ASSERT_NE(r, nullptr);
      EXPECT_EQ(checked, 2u);
      zt_close(r);
      files.push_back(slurp(path()));
    }
    EXPECT_EQ(files[0], files[1]);
  }
}

TEST_F(WriterTest, TenThousandSmallObjects) {
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open(path().c_str(), &w), ZT_OK);
  const uint64_t shape[1] = {3};
  for (int i = 0; i < 10000; ++i) {
    const float v[3] = {static_cast<float>(i), 1, 2};
    const std::string name = std::string("layer.").append(std::to_string(i));
    ASSERT_EQ(zt_writer_add_dense(w, name.c_str(), "f32", shape, 1, v, 12, nullptr), ZT_OK);
  }
  ASSERT_EQ(zt_writer_finish(w), ZT_OK);
  zt_reader* r = open_verified(path());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(zt_object_count(r), 10000u);
  const Bytes b = mapped(r, "layer.9999", "data");
  float first = 0;
  std::memcpy(&first, b.data(), 4);
  EXPECT_EQ(first, 9999.0f);
  zt_close(r);
}

TEST_F(WriterTest, RefusesBadArgumentsBeforeWriting) {
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open(path().c_str(), &w), ZT_OK);
  const float f[6] = {};
  const uint64_t shape[2] = {2, 3};
  EXPECT_EQ(zt_writer_add_dense(w, "", "f32", shape, 2, f, 24, nullptr), ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_writer_add_dense(w, "bad\xff", "f32", shape, 2, f, 24, nullptr), ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_writer_add_dense(w, "x", "f128", shape, 2, f, 24, nullptr), ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_writer_add_dense(w, "x", "f32", shape, 2, f, 20, nullptr), ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_writer_add_dense(w, "x", "f32", shape, 2, f, 24, "lz4"), ZT_ERR_ARGUMENT);
  EXPECT_NE(std::string(zt_last_error()).find("lz4"), std::string::npos);
  const uint8_t notbool[2] = {0, 2};
  const uint64_t s2[1] = {2};
  EXPECT_EQ(zt_writer_add_dense(w, "b", "bool", s2, 1, notbool, 2, nullptr), ZT_ERR_ARGUMENT);
  ASSERT_EQ(zt_writer_begin_object(w, "t", "dense", s2, 1), ZT_OK);
  EXPECT_EQ(zt_writer_add_component(w, "data", "f32", "f8_e4m3fn", f, 2, nullptr), ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_writer_add_component(w, "data", "f32", "complex128", f, 16, nullptr),
            ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_writer_end_object(w), ZT_ERR_INVALID);  // no "data" component
  EXPECT_EQ(zt_writer_set_file_attributes_json(w, "[1]"), ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_writer_set_file_attributes_json(w, "{oops"), ZT_ERR_ARGUMENT);
  // A key twice in one object would lose a value: refused, at any depth.
  EXPECT_EQ(zt_writer_set_file_attributes_json(w, R"({"a": 1, "b": 2, "a": 3})"), ZT_ERR_ARGUMENT);
  EXPECT_NE(std::string(zt_last_error()).find("key \"a\" appears twice"), std::string::npos)
      << zt_last_error();
  EXPECT_EQ(zt_writer_set_file_attributes_json(w, R"({"m": [{"k": 1, "k": 1}]})"), ZT_ERR_ARGUMENT);
  ASSERT_EQ(
      zt_writer_set_file_attributes_json(w, R"({"m": {"k": 1}, "n": {"k": 2}, "k": [{"k": 3}]})"),
      ZT_OK)
      << zt_last_error();
  // An integer wider than 64 bits would be stored as a rounded double.
  EXPECT_EQ(zt_writer_set_file_attributes_json(w, R"({"n": {"big": 18446744073709551616}})"),
            ZT_ERR_ARGUMENT);
  EXPECT_NE(std::string(zt_last_error())
                .find("\"big\": the integer 18446744073709551616 does not fit 64 bits"),
            std::string::npos)
      << zt_last_error();
  EXPECT_EQ(zt_writer_set_file_attributes_json(w, R"({"n": [-9223372036854775809]})"),
            ZT_ERR_ARGUMENT);
  // Named by the key it stands under, not by the last key read before it.
  EXPECT_EQ(zt_writer_set_file_attributes_json(w, R"({"a": [{"b": 1}, 99999999999999999999]})"),
            ZT_ERR_ARGUMENT);
  EXPECT_NE(std::string(zt_last_error()).find("\"a\": the integer 99999999999999999999"),
            std::string::npos)
      << zt_last_error();
  ASSERT_EQ(
      zt_writer_set_file_attributes_json(
          w, R"({"u": 18446744073709551615, "i": -9223372036854775808, "f": 1e30, "g": 2.5})"),
      ZT_OK)
      << zt_last_error();
  ASSERT_EQ(zt_writer_set_file_attributes_json(w, "{}"), ZT_OK);
  ASSERT_EQ(zt_writer_finish(w), ZT_OK);
  // Nothing refused left a trace: an empty, valid file of 1.2.0.
  zt_reader* r = open_verified(path());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(zt_object_count(r), 0u);
  zt_close(r);
  EXPECT_LT(slurp(path()).size(), 64u);
}

TEST_F(WriterTest, InvalidObjectsAreCutOffTheFile) {
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open(path().c_str(), &w), ZT_OK);
  const uint64_t shape34[2] = {3, 4};
  const float v[2] = {1, 2};
  const uint64_t bad_idx[2] = {0, 4}, ptr[4] = {0, 1, 2, 2};
  ASSERT_EQ(zt_writer_begin_object(w, "csr", "sparse_csr", shape34, 2), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "values", "f32", nullptr, v, 8, nullptr), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "indices", "u64", nullptr, bad_idx, 16, nullptr), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "indptr", "u64", nullptr, ptr, 32, nullptr), ZT_OK);
  EXPECT_EQ(zt_writer_end_object(w), ZT_ERR_INVALID);
  EXPECT_NE(std::string(zt_last_error()).find("column index 4"), std::string::npos)
      << zt_last_error();
  const uint32_t idx32[2] = {0, 1};
  ASSERT_EQ(zt_writer_begin_object(w, "csr32", "sparse_csr", shape34, 2), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "values", "f32", nullptr, v, 8, nullptr), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "indices", "u32", nullptr, idx32, 8, nullptr), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "indptr", "u64", nullptr, ptr, 32, nullptr), ZT_OK);
  EXPECT_EQ(zt_writer_end_object(w), ZT_ERR_INVALID);
  const uint64_t qshape[2] = {8, 64};
  const int32_t packed[64] = {};
  const uint16_t sc[16] = {};
  ASSERT_EQ(zt_writer_begin_object(w, "q", "quantized_group", qshape, 2), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "packed_weight", "i32", nullptr, packed, 256, nullptr),
            ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "scales", "f16", nullptr, sc, 32, nullptr), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "zeros", "f16", nullptr, sc, 32, nullptr), ZT_OK);
  // No bits/group_size/packing: stored as readers list it, not dequantisable.
  EXPECT_EQ(zt_writer_end_object(w), ZT_OK) << zt_last_error();
  ASSERT_EQ(zt_writer_begin_object(w, "q17", "quantized_group", qshape, 2), ZT_OK);
  ASSERT_EQ(zt_writer_set_object_attributes_json(
                w, R"({"bits": 17, "group_size": 8, "packing": "1_per_i32"})"),
            ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "packed_weight", "i32", nullptr, packed, 256, nullptr),
            ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "scales", "f16", nullptr, sc, 32, nullptr), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "zeros", "f16", nullptr, sc, 32, nullptr), ZT_OK);
  EXPECT_EQ(zt_writer_end_object(w), ZT_ERR_INVALID);  // present but wrong: refused
  EXPECT_NE(std::string(zt_last_error()).find("\"bits\""), std::string::npos) << zt_last_error();
  const float ok[2] = {5, 6};
  const uint64_t s2[1] = {2};
  ASSERT_EQ(zt_writer_add_dense(w, "ok", "f32", s2, 1, ok, 8, nullptr), ZT_OK);
  ASSERT_EQ(zt_writer_finish(w), ZT_OK);
  zt_reader* r = open_verified(path());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(zt_object_count(r), 2u);
  zt_quant_info q;
  zt_quant_info_init(&q);
  size_t qi = 0;
  ASSERT_EQ(zt_object_find(r, "q", &qi), ZT_OK);
  EXPECT_EQ(zt_quant_view(r, qi, &q), ZT_ERR_UNSUPPORTED);
  zt_close(r);
  // The refused objects' bytes were cut: "q" takes [64, 416) and "ok" sits
  // at 448; had "q17" stayed, "ok" would be at 832 and the file over 1100.
  EXPECT_LT(slurp(path()).size(), 1000u);
}

TEST_F(WriterTest, CancelledObjectLeavesNoTrace) {
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open(path().c_str(), &w), ZT_OK);
  EXPECT_EQ(zt_writer_cancel_object(w), ZT_ERR_STATE);
  const uint64_t s4[1] = {4096};
  const Bytes big(4096, 9);
  ASSERT_EQ(zt_writer_begin_object(w, "gone", "some_future_format", s4, 1), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "a", "u8", nullptr, big.data(), big.size(), nullptr), ZT_OK);
  ASSERT_EQ(zt_writer_begin_component(w, "b", "u8", nullptr, "zstd", 4096), ZT_OK);
  ASSERT_EQ(zt_writer_write(w, big.data(), 100), ZT_OK);
  ASSERT_EQ(zt_writer_cancel_object(w), ZT_OK);
  // The name is free again.
  ASSERT_EQ(zt_writer_add_dense(w, "gone", "u8", s4, 1, big.data(), big.size(), nullptr), ZT_OK);
  ASSERT_EQ(zt_writer_finish(w), ZT_OK);
  zt_reader* r = open_verified(path());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(zt_object_count(r), 1u);
  EXPECT_STREQ(zt_object_format(r, 0), "dense");
  EXPECT_EQ(manifest(r)["objects"]["gone"]["components"]["data"]["offset"], 64);
  zt_close(r);
}

TEST_F(WriterTest, StateErrors) {
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open(path().c_str(), &w), ZT_OK);
  const uint64_t s1[1] = {1};
  EXPECT_EQ(zt_writer_end_object(w), ZT_ERR_STATE);
  EXPECT_EQ(zt_writer_write(w, "x", 1), ZT_ERR_STATE);
  ASSERT_EQ(zt_writer_begin_object(w, "a", "dense", s1, 1), ZT_OK);
  EXPECT_EQ(zt_writer_begin_object(w, "b", "dense", s1, 1), ZT_ERR_STATE);
  ASSERT_EQ(zt_writer_begin_component(w, "data", "u8", nullptr, "raw", 1), ZT_OK);
  EXPECT_EQ(zt_writer_end_object(w), ZT_ERR_STATE);
  EXPECT_EQ(zt_writer_write(w, "xy", 2),
            ZT_ERR_ARGUMENT);  // more than announced: component dropped
  EXPECT_EQ(zt_writer_end_component(w), ZT_ERR_STATE);
  EXPECT_EQ(zt_writer_finish(w), ZT_ERR_STATE);  // an object is still open: nothing published
  EXPECT_TRUE(entries().empty());
}

TEST_F(WriterTest, AbortAndFailureLeaveTheTargetAsItWas) {
  { std::ofstream(path()) << "old contents"; }
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open(path().c_str(), &w), ZT_OK);
  const float f[1] = {1};
  const uint64_t s1[1] = {1};
  ASSERT_EQ(zt_writer_add_dense(w, "x", "f32", s1, 1, f, 4, nullptr), ZT_OK);
  zt_writer_abort(w);
  EXPECT_EQ(slurp(path()), Bytes({'o', 'l', 'd', ' ', 'c', 'o', 'n', 't', 'e', 'n', 't', 's'}));
  EXPECT_EQ(entries(), std::vector<std::string>{"out.zt"});
}

// A child writes a file larger than its RLIMIT_FSIZE: the write fails
// (SIGXFSZ ignored), finish reports it, and the target keeps its old bytes.
TEST_F(WriterTest, DiskFullLeavesTargetIntact) {
  // 9 MiB: a component hashed beside its write (on a helper thread).
  for (const size_t size : {size_t{300000}, size_t{9} << 20}) DiskFullLeavesTargetIntactAt(size);
}

void WriterTest::DiskFullLeavesTargetIntactAt(size_t size) {
  { std::ofstream(path()) << "old"; }
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child's work returns its exit code, so its buffer is freed before
    // _exit (valgrind counts a buffer still held at _exit as lost).
    const auto child = [&]() -> int {
      signal(SIGXFSZ, SIG_IGN);
      struct rlimit rl {};
      rl.rlim_cur = rl.rlim_max = 100000;
      setrlimit(RLIMIT_FSIZE, &rl);
      zt_writer* w = nullptr;
      if (zt_writer_open(path().c_str(), &w) != ZT_OK) return 10;
      std::vector<uint8_t> big(size, 7);
      const uint64_t shape[1] = {big.size()};
      const zt_status a =
          zt_writer_add_dense(w, "big", "u8", shape, 1, big.data(), big.size(), nullptr);
      if (a == ZT_OK) return 11;
      if (a != ZT_ERR_IO) return 12;
      return zt_writer_finish(w) == ZT_ERR_STATE ? 0 : 13;
    };
    _exit(child());
  }
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0);
  EXPECT_EQ(slurp(path()), Bytes({'o', 'l', 'd'}));
  EXPECT_EQ(entries(), std::vector<std::string>{"out.zt"});
}

TEST_F(WriterTest, KilledWriterLeavesTargetIntact) {
  { std::ofstream(path()) << "old"; }
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    zt_writer* w = nullptr;
    if (zt_writer_open(path().c_str(), &w) != ZT_OK) _exit(10);
    std::vector<uint8_t> big(1 << 20, 3);
    const uint64_t shape[1] = {big.size()};
    zt_writer_add_dense(w, "big", "u8", shape, 1, big.data(), big.size(), nullptr);
    if (write(fds[1], "x", 1) != 1) _exit(11);
    pause();  // killed here, mid-file
    _exit(12);
  }
  char c = 0;
  ASSERT_EQ(read(fds[0], &c, 1), 1);
  kill(pid, SIGKILL);
  int st = 0;
  waitpid(pid, &st, 0);
  EXPECT_TRUE(WIFSIGNALED(st));
  EXPECT_EQ(slurp(path()), Bytes({'o', 'l', 'd'}));
  // The unnamed temporary file (O_TMPFILE) vanished with the process.
  EXPECT_EQ(entries(), std::vector<std::string>{"out.zt"});
  close(fds[0]);
  close(fds[1]);
}

TEST_F(WriterTest, UnwritableDirectoryIsAnIoError) {
  zt_writer* w = nullptr;
  EXPECT_EQ(zt_writer_open((dir_ / "no/such/dir/out.zt").c_str(), &w), ZT_ERR_IO);
  EXPECT_NE(std::string(zt_last_error()).find("no/such/dir"), std::string::npos) << zt_last_error();
}

}  // namespace
