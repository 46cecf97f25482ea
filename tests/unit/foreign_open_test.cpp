// Foreign files through the C API (zt_open_options.allow_foreign): an
// ordinary read-only zt_reader over what the format's reader gives, bytes
// in the file served from its mapping, bytes a reader made (byte-swapped)
// from held buffers, the format's refusals as zt_status with a message.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "foreign/gguf.h"
#include "test_files.h"

namespace zt::test {
namespace {

class ForeignOpen : public testing::Test {
 protected:
  std::string write(const std::string& name, const Bytes& bytes) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    return path;
  }

  Opened open(const std::string& path, bool allow_foreign = true) {
    zt_open_options opt;
    zt_open_options_init(&opt);
    opt.allow_foreign = allow_foreign ? 1 : 0;
    Opened o;
    zt_reader* r = nullptr;
    o.status = zt_open_ex(path.c_str(), &opt, &r);
    o.error = zt_last_error();
    o.reader.reset(r);
    return o;
  }

  TempDir tmp_{"zt_foreign_open_"};
  const std::string dir_ = tmp_.path();
};

Bytes safetensors(const std::string& header_json, const Bytes& data) {
  std::string h = header_json;
  h.resize((h.size() + 7) / 8 * 8, ' ');
  Bytes out;
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i, n >>= 8) out.push_back(static_cast<uint8_t>(n & 0xFF));
  out.insert(out.end(), h.begin(), h.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

Bytes npy(const std::string& descr, const std::string& shape, const Bytes& data) {
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  h.resize((10 + h.size() + 1 + 63) / 64 * 64 - 10 - 1, ' ');
  h += '\n';
  Bytes out = bytes_of("\x93NUMPY");
  out.push_back(1);
  out.push_back(0);
  out.push_back(static_cast<uint8_t>(h.size() & 0xFF));
  out.push_back(static_cast<uint8_t>(h.size() >> 8));
  append(out, bytes_of(h));
  append(out, data);
  return out;
}

Json manifest(const zt_reader* r) {
  return Json::parse(zt_manifest_json(r));
}

TEST_F(ForeignOpen, SafetensorsIsAnOrdinaryReaderServedFromTheMapping) {
  const std::vector<float> w = {1, 2, 3, 4, 5, 6};
  const std::vector<uint16_t> b = {0x3F80, 0xC000};  // bf16 1, -2
  const Bytes data = cat({le(w), le(b)});
  const std::string path = write(
      "m.safetensors", safetensors(R"({"__metadata__":{"format":"pt"},)"
                                   R"("w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                                   R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[24,28]},)"
                                   R"("e":{"dtype":"F32","shape":[0,4],"data_offsets":[28,28]}})",
                                   data));
  const Opened o = open(path);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_file_format(o.get()), "safetensors");
  EXPECT_STREQ(zt_file_version(o.get()), "");
  ASSERT_EQ(zt_object_count(o.get()), 3u);

  const size_t wi = object_index(o.get(), "w");
  EXPECT_STREQ(zt_object_format(o.get(), wi), "dense");
  zt_dense_info v;
  zt_dense_info_init(&v);
  ASSERT_EQ(zt_dense_view(o.get(), wi, &v), ZT_OK) << zt_last_error();
  EXPECT_EQ(v.zero_copy, 1u);  // a view of the mapped file, no copy
  EXPECT_STREQ(v.dtype, "f32");
  ASSERT_EQ(v.values, 6u);
  EXPECT_EQ(0, std::memcmp(v.data, w.data(), 24));

  std::vector<float> bf(2);
  uint64_t n = 0;
  ASSERT_EQ(zt_object_read_f32(o.get(), object_index(o.get(), "b"), bf.data(), 2, &n), ZT_OK);
  EXPECT_EQ(bf, (std::vector<float>{1, -2}));

  const Mapped e = map_component(o.get(), "e", "data");
  EXPECT_EQ(e.status, ZT_OK);
  EXPECT_TRUE(e.bytes.empty());

  const Json j = manifest(o.get());
  EXPECT_EQ(j["foreign"], "safetensors");
  EXPECT_EQ(j["attributes"]["format"], "pt");
  EXPECT_EQ(j["objects"]["w"]["shape"], Json::array({2, 3}));
  EXPECT_EQ(j["objects"]["b"]["components"]["data"]["dtype"], "bf16");

  // No digests in a safetensors file: every component counts unchecked,
  // and the content rules still run.
  uint64_t checked = 9, unchecked = 9;
  ASSERT_EQ(zt_verify(o.get(), &checked, &unchecked), ZT_OK) << zt_last_error();
  EXPECT_EQ(checked, 0u);
  EXPECT_EQ(unchecked, 3u);
}

// A sharded checkpoint's shards are read as the kind their names say, at
// the paths their links resolve to: a Hugging Face cache's shard is a link
// to an extension-less blob, and a "shard" that links back to the index
// is refused as a safetensors file (it was read as the index again, without
// end, until the stack overflowed).
TEST_F(ForeignOpen, IndexShardsAreReadAsTheirNamesSayWhereverTheirLinksLead) {
  namespace fs = std::filesystem;
  const std::vector<float> w = {1, 2};
  fs::create_directories(dir_ + "/blobs");
  write("blobs/3f2a9c",
        safetensors(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", le(w)));
  fs::create_directories(dir_ + "/cache");
  fs::create_symlink("../blobs/3f2a9c", dir_ + "/cache/model-00001-of-00001.safetensors");
  const std::string index = R"({"weight_map":{"w":"model-00001-of-00001.safetensors"}})";
  write("blobs/index", bytes_of(index));
  fs::create_symlink("../blobs/index", dir_ + "/cache/model.safetensors.index.json");
  const Opened o = open(dir_ + "/cache/model.safetensors.index.json");
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  std::vector<float> got(2);
  uint64_t n = 0;
  ASSERT_EQ(zt_object_read_f32(o.get(), object_index(o.get(), "w"), got.data(), 2, &n), ZT_OK);
  EXPECT_EQ(got, w);

  fs::create_directories(dir_ + "/loop");
  write("loop/model.safetensors.index.json", bytes_of(R"({"weight_map":{"w":"a.safetensors"}})"));
  fs::create_symlink("model.safetensors.index.json", dir_ + "/loop/a.safetensors");
  const Opened loop = open(dir_ + "/loop/model.safetensors.index.json");
  EXPECT_NE(loop.status, ZT_OK);
  EXPECT_NE(loop.error.find("a.safetensors"), std::string::npos) << loop.error;
}

// zt_component_files names the file each tensor of a sharded checkpoint
// lies in (as the reader opened it: a link's own path, the file it leads
// to by device and inode) and where; a tensor a reader made in memory of
// its own is in no file.
TEST_F(ForeignOpen, ATensorsFileIsNamedWhereverItsIndexPutsIt) {
  namespace fs = std::filesystem;
  const Bytes w1 = le(std::vector<float>{1, 2}), w2 = le(std::vector<float>{3, 4, 5});
  const std::string h1 = R"({"w1":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string h2 = R"({"w2":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}})";
  write("a.safetensors", safetensors(h1, w1));
  fs::create_directories(dir_ + "/blobs");
  write("blobs/b", safetensors(h2, w2));
  fs::create_symlink("blobs/b", dir_ + "/b.safetensors");
  write("model.safetensors.index.json",
        bytes_of(R"({"weight_map":{"w1":"a.safetensors","w2":"b.safetensors"}})"));
  const Opened o = open(dir_ + "/model.safetensors.index.json");
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const size_t count = zt_object_count(o.get());
  ASSERT_EQ(count, 2u);
  std::vector<const char*> files(count);
  std::vector<uint64_t> offsets(count), lengths(count), devices(count), inodes(count);
  ASSERT_EQ(zt_component_files(o.get(), "data", 0, count, files.data(), offsets.data(),
                               lengths.data(), devices.data(), inodes.data()),
            ZT_OK)
      << zt_last_error();
  const auto check = [&](const char* name, const std::string& file, const Bytes& data,
                         size_t header) {
    const size_t k = object_index(o.get(), name);
    ASSERT_NE(files[k], nullptr) << name;
    struct stat st {};
    ASSERT_EQ(::stat(files[k], &st), 0) << files[k];
    EXPECT_EQ(static_cast<uint64_t>(st.st_dev), devices[k]) << name;
    EXPECT_EQ(static_cast<uint64_t>(st.st_ino), inodes[k]) << name;
    struct stat want {};
    ASSERT_EQ(::stat(file.c_str(), &want), 0);
    EXPECT_EQ(want.st_ino, st.st_ino) << name;
    EXPECT_EQ(offsets[k], 8 + (header + 7) / 8 * 8) << name;  // after the padded header
    EXPECT_EQ(lengths[k], data.size()) << name;
  };
  check("w1", dir_ + "/a.safetensors", w1, h1.size());
  check("w2", dir_ + "/blobs/b", w2, h2.size());
  EXPECT_NE(files[0], files[1]);
  // Neither is in the index's own file.
  EXPECT_EQ(
      zt_component_extents(o.get(), "data", 0, count, offsets.data(), lengths.data(), nullptr),
      ZT_OK);
  EXPECT_EQ(offsets[0], UINT64_MAX);
  EXPECT_EQ(offsets[1], UINT64_MAX);

  // One file: its own tensors are in it, a reordered one is in memory.
  const std::string le_path = write("le.npy", npy("<f4", "(2,)", w1));
  const Opened little = open(le_path);
  ASSERT_EQ(little.status, ZT_OK) << little.error;
  const char* file = nullptr;
  uint64_t offset = 0, n = 0;
  ASSERT_EQ(zt_component_files(little.get(), "data", 0, 1, &file, &offset, &n, nullptr, nullptr),
            ZT_OK);
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(std::string(file), le_path);
  EXPECT_EQ(n, 8u);
  const Opened big =
      open(write("be.npy", npy(">f4", "(2,)", Bytes{0x3F, 0x80, 0, 0, 0x40, 0, 0, 0})));
  ASSERT_EQ(big.status, ZT_OK) << big.error;
  ASSERT_EQ(zt_component_files(big.get(), "data", 0, 1, &file, &offset, &n, nullptr, nullptr),
            ZT_OK);
  EXPECT_EQ(file, nullptr);
  EXPECT_EQ(offset, UINT64_MAX);
}

// A key given twice in one JSON object would keep one value and drop the
// other: refused in a safetensors header at any depth (tensor names were
// checked; __metadata__'s keys were not) and in an index (a second
// "weight_map" replaced the first, whose tensors vanished).
TEST_F(ForeignOpen, AKeyTwiceInOneJsonObjectIsRefused) {
  const Bytes w = le(std::vector<float>{1, 2});
  const std::string entry = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const Opened twice_meta =
      open(write("meta.safetensors",
                 safetensors(R"({"__metadata__":{"a":"1","b":"2","a":"3"},)" + entry + "}", w)));
  EXPECT_EQ(twice_meta.status, ZT_ERR_INVALID);
  EXPECT_NE(twice_meta.error.find("key \"a\" appears twice"), std::string::npos)
      << twice_meta.error;
  const Opened twice_name =
      open(write("name.safetensors", safetensors("{" + entry + "," + entry + "}", w)));
  EXPECT_EQ(twice_name.status, ZT_ERR_INVALID);
  EXPECT_NE(twice_name.error.find("tensor \"w\" appears twice"), std::string::npos)
      << twice_name.error;
  // The same key in two objects is not a repeat.
  const Opened fine = open(
      write("fine.safetensors", safetensors(R"({"__metadata__":{"w":"x"},)" + entry + "}", w)));
  EXPECT_EQ(fine.status, ZT_OK) << fine.error;

  write("s.safetensors", safetensors("{" + entry + "}", w));
  write("model.safetensors.index.json",
        bytes_of(R"({"weight_map":{"w":"s.safetensors"},"weight_map":{}})"));
  const Opened index = open(dir_ + "/model.safetensors.index.json");
  EXPECT_EQ(index.status, ZT_ERR_INVALID);
  EXPECT_NE(index.error.find("\"weight_map\" appears twice"), std::string::npos) << index.error;
}

// A header of many tensors: every one read (the checks are linear in the
// header: the DOM parser with a callback was quadratic, 90 ms for 4,096
// tensors), and a key twice in its last tensor's object, or the last
// tensor's name twice, still found, as are keys twice in an object inside
// an array of a JSON attribute.
TEST_F(ForeignOpen, ManyTensorsAreReadAndAKeyTwiceInTheLastIsRefused) {
  constexpr int kTensors = 20000;
  const Bytes data(4 * kTensors, 0);
  auto header = [&](const std::string& last) {
    std::string h = "{";
    for (int i = 0; i + 1 < kTensors; ++i)
      h += "\"t" + std::to_string(i) + R"(":{"dtype":"F32","shape":[1],"data_offsets":[)" +
           std::to_string(4 * i) + "," + std::to_string(4 * i + 4) + "]},";
    return h + last + "}";
  };
  const std::string end = std::to_string(4 * kTensors);
  const std::string at = "[" + std::to_string(4 * kTensors - 4) + "," + end + "]";
  const Opened fine = open(
      write("many.safetensors",
            safetensors(header(R"("last":{"dtype":"F32","shape":[1],"data_offsets":)" + at + "}"),
                        data)));
  ASSERT_EQ(fine.status, ZT_OK) << fine.error;
  EXPECT_EQ(zt_object_count(fine.get()), static_cast<size_t>(kTensors));
  const Opened twice_key = open(write(
      "key.safetensors",
      safetensors(
          header(R"("last":{"dtype":"F32","shape":[1],"dtype":"F32","data_offsets":)" + at + "}"),
          data)));
  EXPECT_EQ(twice_key.status, ZT_ERR_INVALID);
  EXPECT_NE(twice_key.error.find("key \"dtype\" appears twice in one object"), std::string::npos)
      << twice_key.error;
  const Opened twice_name = open(write(
      "name.safetensors",
      safetensors(header(R"("t0":{"dtype":"F32","shape":[1],"data_offsets":)" + at + "}"), data)));
  EXPECT_EQ(twice_name.status, ZT_ERR_INVALID);
  EXPECT_NE(twice_name.error.find("tensor \"t0\" appears twice"), std::string::npos)
      << twice_name.error;

  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open((dir_ + "/out.zt").c_str(), &w), ZT_OK);
  EXPECT_EQ(zt_writer_set_file_attributes_json(w, R"({"a":[1,{"x":1,"y":2,"x":3}]})"),
            ZT_ERR_ARGUMENT);
  EXPECT_NE(std::string(zt_last_error()).find("key \"x\" appears twice"), std::string::npos)
      << zt_last_error();
  EXPECT_EQ(zt_writer_set_file_attributes_json(w, R"({"a":[{"x":1},{"x":3}]})"), ZT_OK)
      << zt_last_error();
  zt_writer_abort(w);
}

// An integer wider than 64 bits became a double, rounded without a word:
// 2^64 + 1 in metadata came back as 18446744073709551616.
TEST_F(ForeignOpen, AnIntegerWiderThan64BitsIsRefused) {
  const Bytes w = le(std::vector<float>{1, 2});
  const std::string entry = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const Opened wide = open(
      write("wide.safetensors",
            safetensors(R"({"__metadata__":{"step":18446744073709551617},)" + entry + "}", w)));
  EXPECT_EQ(wide.status, ZT_ERR_INVALID);
  EXPECT_NE(wide.error.find("\"step\": the integer 18446744073709551617 does not fit 64 bits"),
            std::string::npos)
      << wide.error;
  // Doubles written as doubles, and 64-bit integers, are kept.
  const Opened fine = open(write(
      "fine.safetensors",
      safetensors(R"({"__metadata__":{"a":1.5,"b":1e300,"c":18446744073709551615},)" + entry + "}",
                  w)));
  EXPECT_EQ(fine.status, ZT_OK) << fine.error;

  write("s.safetensors", safetensors("{" + entry + "}", w));
  write(
      "model.safetensors.index.json",
      bytes_of(
          R"({"metadata":{"total_size":-99999999999999999999},"weight_map":{"w":"s.safetensors"}})"));
  const Opened index = open(dir_ + "/model.safetensors.index.json");
  EXPECT_EQ(index.status, ZT_ERR_INVALID);
  EXPECT_NE(index.error.find("-99999999999999999999 does not fit"), std::string::npos)
      << index.error;
}

TEST_F(ForeignOpen, WithoutAllowForeignTheFileIsRefusedWithAHint) {
  const std::string path = write("m.safetensors", safetensors(R"({})", {}));
  const Opened o = open(path, false);
  EXPECT_EQ(o.status, ZT_ERR_FORMAT);
  EXPECT_NE(o.error.find("allow_foreign"), std::string::npos) << o.error;
  zt_reader* r = nullptr;
  EXPECT_EQ(zt_open(path.c_str(), &r), ZT_ERR_FORMAT);
  EXPECT_EQ(r, nullptr);
}

TEST_F(ForeignOpen, AZtFileOpensTheSameWithAllowForeign) {
  FileBuilder b;
  b.dense("x", "f32", {2}, le(std::vector<float>{1, 2}));
  const std::string path = write("m.zt", b.build());
  const Opened o = open(path);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_file_format(o.get()), "zt");
  EXPECT_STREQ(zt_file_version(o.get()), "1.2.0");
  EXPECT_FALSE(manifest(o.get()).contains("foreign"));
}

TEST_F(ForeignOpen, BigEndianNpyIsServedSwappedFromAHeldBuffer) {
  const Bytes be = {0x3F, 0x80, 0, 0, 0x40, 0, 0, 0, 0x40, 0x40, 0, 0, 0x40, 0x80, 0, 0};
  const Opened o = open(write("a.npy", npy(">f4", "(2, 2)", be)));
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_file_format(o.get()), "npy");
  zt_dense_info v;
  zt_dense_info_init(&v);
  ASSERT_EQ(zt_dense_view(o.get(), 0, &v), ZT_OK) << zt_last_error();
  EXPECT_EQ(v.zero_copy, 0u);  // swapped into memory the reader owns
  ASSERT_EQ(v.values, 4u);
  std::vector<float> got(4);
  std::memcpy(got.data(), v.data, 16);
  EXPECT_EQ(got, (std::vector<float>{1, 2, 3, 4}));
  // Row ranges and the batch decoder read held buffers too.
  std::vector<float> row(2);
  uint64_t n = 0;
  ASSERT_EQ(zt_dense_rows_f32(o.get(), 0, 1, 2, row.data(), 2, &n), ZT_OK) << zt_last_error();
  EXPECT_EQ(row, (std::vector<float>{3, 4}));
  std::vector<uint8_t> dst(16);
  const zt_decode_request q = decode_one(o.get(), 0, "data", dst);
  ASSERT_EQ(q.status, ZT_OK) << zt_last_error();
  EXPECT_EQ(0, std::memcmp(dst.data(), le(std::vector<float>{1, 2, 3, 4}).data(), 16));
  // Its stored bytes are not what it decodes to: no extent in the file, so
  // that no program maps them as its elements.
  uint64_t offset = 0, nbytes = 0;
  EXPECT_EQ(zt_component_extent(o.get(), 0, "data", &offset, &nbytes), ZT_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(zt_last_error()).find("reordered"), std::string::npos) << zt_last_error();
  const char* encoding = nullptr;
  ASSERT_EQ(zt_component_extents(o.get(), "data", 0, 1, &offset, &nbytes, &encoding), ZT_OK);
  EXPECT_EQ(offset, UINT64_MAX);
  EXPECT_EQ(nbytes, 0u);
}

TEST_F(ForeignOpen, ALittleEndianNpysExtentHoldsItsElementsAsTheyDecode) {
  const Bytes data = le(std::vector<float>{1, 2, 3, 4});
  const std::string path = write("a.npy", npy("<f4", "(2, 2)", data));
  const Opened o = open(path);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  uint64_t offset = 0, nbytes = 0;
  ASSERT_EQ(zt_component_extent(o.get(), 0, "data", &offset, &nbytes), ZT_OK) << zt_last_error();
  std::ifstream in(path, std::ios::binary);
  const Bytes file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(nbytes, 16u);
  ASSERT_EQ(offset, file.size() - 16);  // after the header, 64-byte aligned
  EXPECT_EQ(offset % 64, 0u);
  EXPECT_EQ(Bytes(file.begin() + static_cast<std::ptrdiff_t>(offset), file.end()), data);
}

TEST_F(ForeignOpen, TheFormatsRefusalsComeBackAsStatusAndMessage) {
  // Overlapping tensors, a bool byte that is neither 0 nor 1, an object
  // array (a pickle inside an npy): each refused while opening.
  const Opened overlap = open(write(
      "o.safetensors", safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                   R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                   pattern(12))));
  EXPECT_NE(overlap.status, ZT_OK);
  EXPECT_EQ(overlap.reader, nullptr);
  EXPECT_NE(overlap.error.find("o.safetensors"), std::string::npos) << overlap.error;

  const Opened bools = open(write("b.npy", npy("|b1", "(3,)", Bytes{0, 1, 2})));
  EXPECT_EQ(bools.status, ZT_ERR_INVALID);
  EXPECT_NE(bools.error.find("bool byte 0x02"), std::string::npos) << bools.error;

  const Opened objects = open(write("p.npy", npy("|O", "(1,)", Bytes(8, 0))));
  EXPECT_EQ(objects.status, ZT_ERR_UNSUPPORTED) << objects.error;

  const Opened missing = open(dir_ + "/none.gguf");
  EXPECT_EQ(missing.status, ZT_ERR_IO) << missing.error;
}

TEST_F(ForeignOpen, GgufQ8_0IsAQuantizedGroupWithGgmlsValues) {
  // One Q8_0 block: f16 scale 0.5 (0x3800) and 32 int8 codes -16..15.
  Bytes block = {0x00, 0x38};
  for (int i = 0; i < 32; ++i) block.push_back(static_cast<uint8_t>(static_cast<int8_t>(i - 16)));
  const std::vector<float> dense = {1.5f, -2.0f};
  const std::string path = dir_ + "/m.gguf";
  const Bytes arch = cbor_text("llama");
  const std::vector<foreign::GgufKeyValue> kv = {{"general.architecture", "string", arch}};
  const std::vector<foreign::GgufTensorEntry> tensors = {
      {"q", {32}, find_ggml_type(8u), block.size()}, {"d", {2}, find_ggml_type(0u), 8}};
  const Bytes dense_bytes = le(dense);
  ASSERT_TRUE(
      foreign::write_gguf(path, 3, kv, tensors, [&](size_t i, const foreign::GgufSink& sink) {
        return sink(i == 0 ? std::span<const uint8_t>(block)
                           : std::span<const uint8_t>(dense_bytes));
      }));
  const Opened o = open(path);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_file_format(o.get()), "gguf");
  const size_t q = object_index(o.get(), "q");
  EXPECT_STREQ(zt_object_format(o.get(), q), "quantized_group");
  std::vector<float> got(32);
  uint64_t n = 0;
  ASSERT_EQ(zt_object_decode_f32(o.get(), q, got.data(), 32, &n), ZT_OK) << zt_last_error();
  ASSERT_EQ(n, 32u);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(got[i], 0.5f * static_cast<float>(i - 16)) << i;
  std::vector<float> d(2);
  ASSERT_EQ(zt_object_read_f32(o.get(), object_index(o.get(), "d"), d.data(), 2, &n), ZT_OK);
  EXPECT_EQ(d, dense);
  EXPECT_EQ(manifest(o.get())["attributes"]["general.architecture"], "llama");
  uint64_t checked = 0, unchecked = 0;
  EXPECT_EQ(zt_verify(o.get(), &checked, &unchecked), ZT_OK) << zt_last_error();
  // Regrouping copies the blocks: above the caller's cap on a component it
  // is refused before anything is allocated, as every copy a foreign
  // reader makes at open is.
  zt_open_options opt;
  zt_open_options_init(&opt);
  opt.allow_foreign = 1;
  opt.max_decoded_bytes = block.size() - 1;
  zt_reader* r = nullptr;
  EXPECT_EQ(zt_open_ex(path.c_str(), &opt, &r), ZT_ERR_LIMIT);
  EXPECT_NE(std::string(zt_last_error()).find("blocks to regroup"), std::string::npos)
      << zt_last_error();
  EXPECT_EQ(r, nullptr);
  opt.max_decoded_bytes = block.size();
  ASSERT_EQ(zt_open_ex(path.c_str(), &opt, &r), ZT_OK) << zt_last_error();
  zt_close(r);
}

}  // namespace
}  // namespace zt::test
