// zTensor v2 models over several files (v2 spec §7): parts whose bytes are
// in a shard are read from <stem>-<name>.zt beside the root, opened on
// first use and checked by the ladder of §7.3 (magic and footer version,
// size at open of the shard, whole-file digest in zt_verify).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "cbor/cbor_encode.h"
#include "codec/digest.h"
#include "test_files.h"

namespace zt::test {
namespace {

namespace fs = std::filesystem;

// A data shard (§7.2): magic, blobs at multiples of 4096, a footer without
// a manifest. `offsets` gets each blob's offset.
Bytes data_shard(const std::vector<Bytes>& blobs, std::vector<uint64_t>& offsets) {
  Bytes out(4096, 0);
  std::memcpy(out.data(), "\x89ZT2\r\n\x1a\n", 8);
  for (const Bytes& b : blobs) {
    out.resize((out.size() + 4095) / 4096 * 4096, 0);
    offsets.push_back(out.size());
    out.insert(out.end(), b.begin(), b.end());
  }
  Bytes footer(40, 0);
  footer[24] = 2;  // version
  std::memcpy(footer.data() + 32, "\x89ZT2\r\n\x1a\n", 8);
  out.insert(out.end(), footer.begin(), footer.end());
  return out;
}

std::string sha256_of(const Bytes& b) {
  return "sha256:" + digest_hex(DigestAlgo::sha256, b);
}

class Shards : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void put(const std::string& name, const Bytes& bytes) const {
    std::ofstream f(path(name), std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  }
  Bytes get(const std::string& name) const {
    std::ifstream f(path(name), std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(f), {});
  }

  // model.zt holds "local"; "w" (24 bytes) and "v" (16 bytes) are in
  // model-00001.zt, whose identity the root's table gives.
  void write_model() {
    std::vector<uint64_t> at;
    shard_ = data_shard({w_, v_}, at);
    FileBuilderV2 root;
    root.dense("local", "u8", {3}, Bytes{1, 2, 3});
    root.object(
        "w", "dense", {2, 3},
        Json{{"data", {{"dtype", "f32"}, {"blob", {at[0], w_.size()}}, {"shard", "00001"}}}});
    root.object(
        "v", "dense", {4},
        Json{{"data", {{"dtype", "i32"}, {"blob", {at[1], v_.size()}}, {"shard", "00001"}}}});
    root.manifest["shards"] =
        Json{{"00001", {{"size", shard_.size()}, {"digest", sha256_of(shard_)}}}};
    put("model.zt", root.build());
    put("model-00001.zt", shard_);
  }
  ReaderPtr open(const std::string& name = "model.zt", uint32_t mode = ZT_IO_MAP) const {
    zt_open_options o;
    zt_open_options_init(&o);
    o.io_mode = mode;
    zt_reader* r = nullptr;
    EXPECT_EQ(zt_open_ex(path(name).c_str(), &o, &r), ZT_OK) << zt_last_error();
    return ReaderPtr(r);
  }

  TempDir tmp_{"zt-shards-"};
  const fs::path dir_ = tmp_.path();
  Bytes w_ = pattern(24), v_ = le<int32_t>({-1, 2, -3, 4});
  Bytes shard_;
};

TEST_F(Shards, PartsAreReadFromTheirShardBesideTheRoot) {
  write_model();
  for (const uint32_t mode : {ZT_IO_MAP, ZT_IO_COPY}) {
    const ReaderPtr r = open("model.zt", mode);
    ASSERT_TRUE(r);
    EXPECT_STREQ(zt_component_shard(r.get(), object_index(r.get(), "w"), "data"), "00001");
    // A part in a shard is not in the root file: it has no extent there.
    uint64_t offset = 0, n = 0;
    EXPECT_EQ(zt_component_extent(r.get(), object_index(r.get(), "w"), "data", &offset, &n),
              ZT_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(zt_last_error()).find("another file"), std::string::npos)
        << zt_last_error();
    ASSERT_EQ(zt_component_extent(r.get(), object_index(r.get(), "local"), "data", &offset, &n),
              ZT_OK);
    EXPECT_EQ(n, 3u);
    // So every object's at once marks it, beside the one that is here.
    const size_t count = zt_object_count(r.get());
    std::vector<uint64_t> offsets(count), lengths(count);
    ASSERT_EQ(
        zt_component_extents(r.get(), "data", 0, count, offsets.data(), lengths.data(), nullptr),
        ZT_OK);
    EXPECT_EQ(offsets[object_index(r.get(), "w")], UINT64_MAX);
    EXPECT_EQ(lengths[object_index(r.get(), "w")], 0u);
    EXPECT_EQ(offsets[object_index(r.get(), "local")], offset);
    EXPECT_EQ(lengths[object_index(r.get(), "local")], 3u);
    EXPECT_EQ(map_component(r.get(), "w", "data").bytes, w_);
    EXPECT_EQ(map_component(r.get(), "v", "data").bytes, v_);
    EXPECT_EQ(map_component(r.get(), "local", "data").bytes, (Bytes{1, 2, 3}));
    // Rows, and the batch decoder, read the shard too.
    int32_t rows[2] = {};
    uint64_t written = 0;
    ASSERT_EQ(zt_dense_rows(r.get(), object_index(r.get(), "v"), 1, 3, rows, sizeof rows, &written),
              ZT_OK)
        << zt_last_error();
    EXPECT_EQ(rows[0], 2);
    EXPECT_EQ(rows[1], -3);
    Bytes got(24);
    zt_decode_request q;
    zt_decode_request_init(&q);
    q.object = object_index(r.get(), "w");
    q.role = "data";
    q.dst = got.data();
    q.capacity = got.size();
    ASSERT_EQ(zt_decode_many(r.get(), &q, 1, 2), ZT_OK) << zt_last_error();
    EXPECT_EQ(got, w_);
    // Ranges of parts in the shard, read where they lie (slices of the
    // shard's file, as of the root's), beside one of the root.
    Bytes part_w(13), part_v(8), part_local(2);
    zt_decode_range ranges[3];
    const std::pair<const char*, Bytes*> wanted[3] = {
        {"w", &part_w}, {"v", &part_v}, {"local", &part_local}};
    for (size_t k = 0; k < 3; ++k) {
      zt_decode_range_init(&ranges[k]);
      ranges[k].object = object_index(r.get(), wanted[k].first);
      ranges[k].role = "data";
      ranges[k].offset = 1;
      ranges[k].dst = wanted[k].second->data();
      ranges[k].length = wanted[k].second->size();
    }
    ASSERT_EQ(zt_decode_ranges(r.get(), ranges, 3, 2, nullptr, nullptr), ZT_OK) << zt_last_error();
    EXPECT_EQ(part_w, Bytes(w_.begin() + 1, w_.begin() + 14));
    EXPECT_EQ(part_v, Bytes(v_.begin() + 1, v_.begin() + 9));
    EXPECT_EQ(part_local, (Bytes{2, 3}));
    uint64_t checked = 0;
    ASSERT_EQ(zt_verify(r.get(), &checked, nullptr), ZT_OK) << zt_last_error();
  }
}

// zt_component_files: each part's file as the reader opened it (path,
// device, inode) and where its bytes lie there, for a loader that maps a
// sharded model's files itself; a shard that cannot be opened marks its
// parts only.
TEST_F(Shards, EachPartsFileIsNamedWithWhereItsBytesLie) {
  write_model();
  std::vector<uint64_t> at;
  data_shard({w_, v_}, at);
  const auto identity = [](const std::string& p) {
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
    return std::pair<uint64_t, uint64_t>(st.st_dev, st.st_ino);
  };
  for (const uint32_t mode : {ZT_IO_MAP, ZT_IO_COPY}) {
    const ReaderPtr r = open("model.zt", mode);
    ASSERT_TRUE(r);
    const size_t count = zt_object_count(r.get());
    std::vector<const char*> files(count);
    std::vector<uint64_t> offsets(count), lengths(count), devices(count), inodes(count);
    ASSERT_EQ(zt_component_files(r.get(), "data", 0, count, files.data(), offsets.data(),
                                 lengths.data(), devices.data(), inodes.data()),
              ZT_OK)
        << zt_last_error();
    const size_t w = object_index(r.get(), "w"), v = object_index(r.get(), "v"),
                 local = object_index(r.get(), "local");
    ASSERT_NE(files[w], nullptr);
    ASSERT_NE(files[local], nullptr);
    EXPECT_EQ(files[w], files[v]);  // one pointer a file
    EXPECT_NE(files[w], files[local]);
    EXPECT_EQ(identity(files[w]), identity(path("model-00001.zt")));
    EXPECT_EQ(identity(files[local]), identity(path("model.zt")));
    EXPECT_EQ(std::make_pair(devices[w], inodes[w]), identity(path("model-00001.zt")));
    EXPECT_EQ(std::make_pair(devices[local], inodes[local]), identity(path("model.zt")));
    EXPECT_EQ(offsets[w], at[0]);
    EXPECT_EQ(lengths[w], w_.size());
    EXPECT_EQ(offsets[v], at[1]);
    EXPECT_EQ(lengths[v], v_.size());
    uint64_t offset = 0, n = 0;
    ASSERT_EQ(zt_component_extent(r.get(), local, "data", &offset, &n), ZT_OK);
    EXPECT_EQ(offsets[local], offset);
    EXPECT_EQ(lengths[local], n);
    const Bytes shard = get("model-00001.zt");
    EXPECT_EQ(Bytes(shard.begin() + static_cast<std::ptrdiff_t>(at[0]),
                    shard.begin() + static_cast<std::ptrdiff_t>(at[0] + w_.size())),
              w_);
    // Optional arrays may be left out; a role no object has is marked.
    ASSERT_EQ(zt_component_files(r.get(), "nope", 0, count, files.data(), offsets.data(),
                                 lengths.data(), nullptr, nullptr),
              ZT_OK);
    for (size_t k = 0; k < count; ++k) {
      EXPECT_EQ(files[k], nullptr);
      EXPECT_EQ(offsets[k], UINT64_MAX);
      EXPECT_EQ(lengths[k], 0u);
    }
    EXPECT_EQ(zt_component_files(r.get(), "data", 1, count, files.data(), offsets.data(),
                                 lengths.data(), nullptr, nullptr),
              ZT_ERR_NOT_FOUND);
    EXPECT_EQ(zt_component_files(r.get(), "data", 0, count, nullptr, offsets.data(), lengths.data(),
                                 nullptr, nullptr),
              ZT_ERR_ARGUMENT);
    EXPECT_EQ(
        zt_component_files(nullptr, "data", 0, 0, nullptr, nullptr, nullptr, nullptr, nullptr),
        ZT_ERR_ARGUMENT);
  }
  fs::remove(path("model-00001.zt"));
  const ReaderPtr r = open();
  ASSERT_TRUE(r);
  const size_t count = zt_object_count(r.get());
  std::vector<const char*> files(count);
  std::vector<uint64_t> offsets(count), lengths(count), devices(count, 7), inodes(count, 7);
  ASSERT_EQ(zt_component_files(r.get(), "data", 0, count, files.data(), offsets.data(),
                               lengths.data(), devices.data(), inodes.data()),
            ZT_OK);
  const size_t w = object_index(r.get(), "w");
  EXPECT_EQ(files[w], nullptr);
  EXPECT_EQ(offsets[w], UINT64_MAX);
  EXPECT_EQ(devices[w], 0u);
  EXPECT_EQ(inodes[w], 0u);
  EXPECT_NE(files[object_index(r.get(), "local")], nullptr);
  // The read still gives the open's refusal.
  EXPECT_TRUE(FailsWith(map_component(r.get(), "w", "data").status, ZT_ERR_IO, {"cannot open"}));
  // A reader of memory names no file.
  const Bytes root = get("model.zt");
  zt_reader* raw = nullptr;
  ASSERT_EQ(zt_open_memory(root.data(), root.size(), &raw), ZT_OK);
  const ReaderPtr m(raw);
  ASSERT_EQ(zt_component_files(m.get(), "data", 0, count, files.data(), offsets.data(),
                               lengths.data(), nullptr, nullptr),
            ZT_OK);
  for (size_t k = 0; k < count; ++k) EXPECT_EQ(files[k], nullptr);
}

// A shard opens at first use: it is looked for beside the root as it was
// opened, not from whatever directory the process has moved to since (where
// a file of the same name and size would otherwise be read).
TEST_F(Shards, AShardIsFoundBesideTheRootAsOpenedWhereverTheProcessMovesAfter) {
  write_model();
  fs::create_directory(dir_ / "elsewhere");
  Bytes decoy = shard_;
  for (size_t k = 64; k < decoy.size() - 64; ++k) decoy[k] ^= 0x5a;  // same size, other bytes
  put("elsewhere/model-00001.zt", decoy);
  const fs::path was = fs::current_path();
  fs::current_path(dir_);
  zt_reader* raw = nullptr;
  const zt_status opened = zt_open("model.zt", &raw);
  const ReaderPtr r(raw);
  fs::current_path(dir_ / "elsewhere");
  Bytes got;
  if (opened == ZT_OK) got = map_component(r.get(), "w", "data").bytes;
  fs::current_path(was);
  ASSERT_EQ(opened, ZT_OK) << zt_last_error();
  EXPECT_EQ(got, w_);
}

// An open reader holds what a shard table says, not more: a shard's file
// state (a mutex, a flag, a Source: ~144 bytes) is made when the shard is
// first read, and the manifest's decoded nodes (~190 bytes an entry) are
// dropped once parsed. 300,000 entries: 89 MB held before both, 33 MB now.
TEST_F(Shards, AShardTableCostsNoFileStateUntilAShardIsRead) {
  if (freed_memory_is_kept()) GTEST_SKIP() << "heap figures say nothing under valgrind or ASan";
  constexpr size_t kShards = 300000;
  FileBuilderV2 root;
  root.dense("local", "u8", {3}, Bytes{1, 2, 3});
  // The manifest written directly (an ordered Json takes minutes to hold
  // 300,000 keys): {"shards": {...}, "objects": ...}, deterministic order.
  CborWriter w;
  w.map(2);
  w.text("shards");
  w.map(kShards);
  char name[16];
  for (size_t i = 0; i < kShards; ++i) {
    std::snprintf(name, sizeof name, "%06zu", i);
    w.text(name);
    w.map(2);
    w.text("size");
    w.uint(8192);
    w.text("digest");
    w.text("xxh3:0000000000000000");
  }
  w.text("objects");
  w.raw(cbor_v2(root.manifest["objects"]));
  const Bytes file = root.build(w.bytes());
  // The heap's bytes in use, exact whatever it holds free from before.
  const auto in_use = [] {
    const struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
  };
  const size_t before = in_use();
  zt_reader* r = nullptr;
  ASSERT_EQ(zt_open_memory(file.data(), file.size(), &r), ZT_OK) << zt_last_error();
  const size_t held = in_use() - before;
  zt_close(r);
  std::fprintf(stderr, "  %zu shards, manifest %zu KiB: the open reader holds %zu KiB\n", kShards,
               file.size() >> 10, held >> 10);
  // Each entry: its Shard (name, size, digest: 72 bytes and the digest's
  // text, 32) and a pointer for its file state (8). Made at open, the file
  // state added ~144 bytes an entry.
  EXPECT_LT(held, 160 * kShards) << "the reader holds " << held / kShards << " bytes a shard";
}

TEST_F(Shards, AMissingShardFailsOnlyWhatNeedsIt) {
  write_model();
  fs::remove(path("model-00001.zt"));
  const ReaderPtr r = open();  // open reads the root alone
  ASSERT_TRUE(r);
  EXPECT_EQ(map_component(r.get(), "local", "data").bytes, (Bytes{1, 2, 3}));
  const Mapped m = map_component(r.get(), "w", "data");
  EXPECT_TRUE(FailsWith(m.status, ZT_ERR_IO, {"shard \"00001\"", "model-00001.zt", "cannot open"}));
  EXPECT_TRUE(FailsWith(zt_verify(r.get(), nullptr, nullptr), ZT_ERR_IO, {"model-00001.zt"}));
}

// A request the read refuses whatever the file holds (a buffer too small,
// a range outside) gets that refusal from every call, not the missing
// shard's: zt_decode_many answered IO where zt_component_read answered
// ARGUMENT.
TEST_F(Shards, AMissingShardDoesNotHideARefusalOfTheRequest) {
  write_model();
  fs::remove(path("model-00001.zt"));
  const ReaderPtr r = open();
  ASSERT_TRUE(r);
  size_t w = 0;
  ASSERT_EQ(zt_object_find(r.get(), "w", &w), ZT_OK);
  uint8_t small[8];
  uint64_t written = 0;
  EXPECT_TRUE(FailsWith(zt_component_read(r.get(), w, "data", small, sizeof small, &written),
                        ZT_ERR_ARGUMENT, {"do not fit"}));
  zt_decode_request q[2];
  for (auto& one : q) zt_decode_request_init(&one);
  q[0].object = q[1].object = w;
  q[0].role = q[1].role = "data";
  q[0].dst = small;
  q[0].capacity = sizeof small;
  uint8_t room[64];
  q[1].dst = room;
  q[1].capacity = sizeof room;
  EXPECT_TRUE(FailsWith(zt_decode_many(r.get(), q, 1, 2), ZT_ERR_ARGUMENT, {"do not fit"}));
  EXPECT_EQ(q[0].status, ZT_ERR_ARGUMENT);
  zt_decode_many(r.get(), q, 2, 2);
  EXPECT_EQ(q[0].status, ZT_ERR_ARGUMENT);
  EXPECT_EQ(q[1].status, ZT_ERR_IO);
  zt_decode_range range;
  zt_decode_range_init(&range);
  range.object = w;
  range.role = "data";
  range.offset = 20;
  range.dst = small;
  range.length = sizeof small;  // [20, 28) of 24 bytes
  EXPECT_TRUE(FailsWith(zt_decode_ranges(r.get(), &range, 1, 2, nullptr, nullptr), ZT_ERR_ARGUMENT,
                        {"not within"}));
}

TEST_F(Shards, TheLadderRefusesAWrongFile) {
  write_model();
  Bytes longer = shard_;
  longer.insert(longer.end() - 40, 4096, 0);  // one more page: another size
  put("model-00001.zt", longer);
  {
    const ReaderPtr r = open();
    EXPECT_TRUE(FailsWith(map_component(r.get(), "w", "data").status, ZT_ERR_INVALID,
                          {"shard \"00001\"", "bytes, the shard table says"}));
  }
  Bytes bad_magic = shard_;
  bad_magic[0] = 'X';
  put("model-00001.zt", bad_magic);
  {
    const ReaderPtr r = open();
    EXPECT_TRUE(FailsWith(map_component(r.get(), "v", "data").status, ZT_ERR_FORMAT,
                          {"shard \"00001\"", "magic"}));
  }
  Bytes bad_version = shard_;
  bad_version[bad_version.size() - 16] = 3;
  put("model-00001.zt", bad_version);
  {
    const ReaderPtr r = open();
    EXPECT_TRUE(FailsWith(map_component(r.get(), "v", "data").status, ZT_ERR_UNSUPPORTED,
                          {"footer version 3"}));
  }
  // Same size, one byte changed outside every blob: only the whole-file
  // digest (zt_verify, the deep rung) can tell.
  Bytes flipped = shard_;
  flipped[100] ^= 1;
  put("model-00001.zt", flipped);
  {
    const ReaderPtr r = open();
    EXPECT_EQ(map_component(r.get(), "w", "data").bytes, w_);
    EXPECT_TRUE(FailsWith(zt_verify(r.get(), nullptr, nullptr), ZT_ERR_DIGEST,
                          {"shard \"00001\"", "sha256 digest mismatch"}));
  }
}

// Any v2 file may serve as a shard (§7.2): an adapter's root references the
// blob of a base model file that has a manifest of its own.
TEST_F(Shards, AFileWithItsOwnManifestServesAsAShard) {
  FileBuilderV2 base;
  base.dense("w", "f32", {2, 3}, w_);
  const Bytes base_file = base.build();
  put("adapter-base.zt", base_file);
  const uint64_t w_at = base.manifest["objects"]["w"]["parts"]["data"]["blob"][0].get<uint64_t>();
  FileBuilderV2 root;
  root.dense("delta", "f32", {2, 3}, pattern(24, 7));
  root.object("w", "dense", {2, 3},
              Json{{"data", {{"dtype", "f32"}, {"blob", {w_at, 24}}, {"shard", "base"}}}});
  root.manifest["shards"] =
      Json{{"base", {{"size", base_file.size()}, {"digest", sha256_of(base_file)}}}};
  put("adapter.zt", root.build());
  const ReaderPtr r = open("adapter.zt");
  ASSERT_TRUE(r);
  EXPECT_EQ(map_component(r.get(), "w", "data").bytes, w_);
  EXPECT_EQ(zt_verify(r.get(), nullptr, nullptr), ZT_OK) << zt_last_error();
}

// The name of a root without the .zt suffix is the stem as a whole.
TEST_F(Shards, ARootWithoutTheSuffixKeepsItsWholeName) {
  write_model();
  fs::rename(path("model.zt"), path("model.bin"));
  fs::rename(path("model-00001.zt"), path("model.bin-00001.zt"));
  const ReaderPtr r = open("model.bin");
  ASSERT_TRUE(r);
  EXPECT_EQ(map_component(r.get(), "v", "data").bytes, v_);
}

// ---- writing shards ---------------------------------------------------------

zt_writer_options sharded_options(uint64_t shard_bytes) {
  zt_writer_options o;
  zt_writer_options_init(&o);
  o.file_version = 2;
  o.shard_bytes = shard_bytes;
  o.frame_size = 4096;
  return o;
}

// The model both ways: one file, and split into shards of 192 KiB.
void write_split_model(const std::string& target, uint64_t shard_bytes) {
  const zt_writer_options o = sharded_options(shard_bytes);
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open_ex(target.c_str(), &o, &w), ZT_OK) << zt_last_error();
  const Bytes a = pattern(100000, 1), b = pattern(100000, 2), c = pattern(300000, 3),
              e = pattern(20000, 4);
  const uint64_t s1[] = {100000}, s3[] = {300000}, s0[] = {0}, s4[] = {20000};
  ASSERT_EQ(zt_writer_add_dense(w, "a", "u8", s1, 1, a.data(), a.size(), "raw"), ZT_OK)
      << zt_last_error();
  ASSERT_EQ(zt_writer_add_dense(w, "b", "u8", s1, 1, b.data(), b.size(), "raw"), ZT_OK);
  ASSERT_EQ(zt_writer_add_dense(w, "c", "u8", s3, 1, c.data(), c.size(), "raw"), ZT_OK);
  ASSERT_EQ(zt_writer_add_dense(w, "d", "u8", s0, 1, nullptr, 0, "raw"), ZT_OK);
  ASSERT_EQ(zt_writer_add_dense(w, "e", "u8", s4, 1, e.data(), e.size(), "zstd"), ZT_OK);
  // A CSR matrix whose parts straddle a shard boundary: its rules are
  // checked at end_object on bytes read back from both files.
  const uint64_t shape[] = {2, 3};
  ASSERT_EQ(zt_writer_begin_object(w, "m", "sparse_csr", shape, 2), ZT_OK);
  const Bytes values = le<float>({1, 2}), indices = le<uint64_t>({0, 2}),
              indptr = le<uint64_t>({0, 1, 2});
  ASSERT_EQ(zt_writer_add_component(w, "values", "f32", nullptr, values.data(), 8, "raw"), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "indices", "u64", nullptr, indices.data(), 16, "raw"),
            ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "indptr", "u64", nullptr, indptr.data(), 24, "raw"), ZT_OK);
  ASSERT_EQ(zt_writer_end_object(w), ZT_OK) << zt_last_error();
  ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
}

// The root's shard names in table order: the writer names each shard after
// its place and its content, "00001-" and 12 hex digits of its sha256.
std::vector<std::string> shard_names(const zt_reader* r) {
  std::vector<std::string> names;
  const Json manifest = Json::parse(zt_manifest_json(r));
  for (const auto& [name, identity] : manifest["shards"].items()) {
    EXPECT_EQ(name.size(), 5u + 1 + 12) << name;
    const std::string digest = identity["digest"].get<std::string>();
    EXPECT_EQ(digest.substr(0, 7), "sha256:") << name;
    EXPECT_EQ(name.substr(6), digest.substr(7, 12)) << name;
    names.push_back(name);
  }
  return names;
}

// A part's shard name, "" for the root's own.
std::string shard_of(const zt_reader* r, size_t object, const char* role) {
  const char* name = zt_component_shard(r, object, role);
  return name ? name : "";
}

// The open files of this process.
size_t open_descriptors() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// A model of more shards than the process may open files: mapped shards
// past the reader's budget keep no descriptor, so every part reads (before,
// each shard held one for the reader's life, and a model of 1,100 shards
// failed under a limit of 1024 at about the 1,018th).
TEST_F(Shards, AModelOfMoreShardsThanOpenFilesReads) {
  zt_writer_options o = sharded_options(8192);
  o.alignment = 4096;
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open_ex(path("many.zt").c_str(), &o, &w), ZT_OK) << zt_last_error();
  constexpr size_t kObjects = 200;
  for (size_t i = 0; i < kObjects; ++i) {
    const Bytes b = pattern(4096, static_cast<uint8_t>(i));
    const uint64_t shape[] = {4096};
    ASSERT_EQ(
        zt_writer_add_dense(w, numbered("t", i).c_str(), "u8", shape, 1, b.data(), b.size(), "raw"),
        ZT_OK)
        << zt_last_error();
  }
  ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  // A limit of 128 open files (a budget of 16 shard descriptors), well
  // under the shard count; restored at the end. Mapped shards past the
  // budget keep their mapping alone; shards in copy mode are opened again
  // for each read.
  struct rlimit old {};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
  struct rlimit lim = old;
  lim.rlim_cur = std::min<rlim_t>(128, old.rlim_cur);
  for (const uint32_t mode : {ZT_IO_MAP, ZT_IO_COPY}) {
    SCOPED_TRACE(mode == ZT_IO_MAP ? "map" : "copy");
    const ReaderPtr r = open("many.zt", mode);
    ASSERT_TRUE(r);
    ASSERT_GE(shard_names(r.get()).size(), kObjects / 2);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lim), 0);
    const size_t before = open_descriptors();
    for (size_t i = 0; i < kObjects; ++i) {
      ASSERT_EQ(map_component(r.get(), numbered("t", i).c_str(), "data").bytes,
                pattern(4096, static_cast<uint8_t>(i)))
          << numbered("t", i) << ": " << zt_last_error();
    }
    EXPECT_EQ(zt_verify(r.get(), nullptr, nullptr), ZT_OK) << zt_last_error();
    EXPECT_LE(open_descriptors(), before + 16);
    if (mode == ZT_IO_COPY) {
      // Opened again as at first, following no link: a link put at a
      // shard's path is refused even where it leads to the very file (a
      // shard opened past the budget, held by no descriptor).
      const size_t first = object_index(r.get(), numbered("t", kObjects - 5).c_str());
      const std::string linked = path("many-" + shard_of(r.get(), first, "data") + ".zt");
      fs::rename(linked, linked + ".moved");
      fs::create_symlink(linked + ".moved", linked);
      Bytes got(4096);
      uint64_t n = 0;
      EXPECT_EQ(zt_component_read(r.get(), first, "data", got.data(), got.size(), &n), ZT_ERR_IO);
      EXPECT_NE(std::strstr(zt_last_error(), "symbolic link"), nullptr) << zt_last_error();
      fs::remove(linked);
      fs::rename(linked + ".moved", linked);
      EXPECT_EQ(zt_component_read(r.get(), first, "data", got.data(), got.size(), &n), ZT_OK)
          << zt_last_error();
      // A shard opened again must be the file first opened: one replaced
      // under the model (same bytes, another inode) is refused.
      const size_t last = object_index(r.get(), numbered("t", kObjects - 1).c_str());
      const std::string shard = path("many-" + shard_of(r.get(), last, "data") + ".zt");
      fs::copy_file(shard, shard + ".new");
      fs::rename(shard + ".new", shard);
      EXPECT_EQ(zt_component_read(r.get(), last, "data", got.data(), got.size(), &n), ZT_ERR_IO);
      EXPECT_NE(std::strstr(zt_last_error(), "replaced since it was opened"), nullptr)
          << zt_last_error();
    }
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
  }
}

// The writer too: shards before the object being written are hashed, named
// and closed past the budget (each held a descriptor until finish: 1,100
// shards failed under a limit of 1024), then published by name.
// A writer that died past the shard budget left its settled shards named
// beside the model, a shard's size each; the next sharded write of the
// model removes those of writers no longer running (or whose pid another
// process took since), and leaves those of live writers and other models.
TEST_F(Shards, TheNextWriteRemovesTheShardsADeadWriterSettled) {
  // A writer of 100 shards under a limit of 128 open files, killed before
  // its finish: it settled some.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    struct rlimit lim {};
    getrlimit(RLIMIT_NOFILE, &lim);
    lim.rlim_cur = std::min<rlim_t>(128, lim.rlim_cur);
    setrlimit(RLIMIT_NOFILE, &lim);
    zt_writer_options o = sharded_options(8192);
    o.alignment = 4096;
    zt_writer* w = nullptr;
    if (zt_writer_open_ex(path("many.zt").c_str(), &o, &w) != ZT_OK) _exit(1);
    for (size_t i = 0; i < 100; ++i) {
      const Bytes b = pattern(4096, static_cast<uint8_t>(i));
      const uint64_t shape[] = {4096};
      if (zt_writer_add_dense(w, numbered("t", i).c_str(), "u8", shape, 1, b.data(), b.size(),
                              "raw") != ZT_OK)
        _exit(1);
    }
    _exit(0);  // as a crash: no finish, no abort
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);  // a pid that no longer runs
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  size_t left = 0;
  for (const auto& e : fs::directory_iterator(dir_))
    left += e.path().filename().string().find(".tmp-") != std::string::npos;
  ASSERT_GT(left, 0u);
  const std::string dead = std::to_string(child), alive = std::to_string(getpid());
  const std::vector<std::string> stale = {"many-00002.zt.tmp-" + dead + "-0",
                                          "many-00003.zt.tmp-" + dead + "-1",
                                          "many-00004.zt.tmp-" + alive + "-0"};
  const std::vector<std::string> kept = {
      "many-00005.zt.tmp-" + alive + "-0", "other-00002.zt.tmp-" + dead + "-0",
      "many-00002.zt.tmp-" + dead, "many-0002.zt.tmp-" + dead + "-0", "notes.txt"};
  for (const auto& name : stale) put(name, pattern(100));
  for (const auto& name : kept) put(name, pattern(100));
  // Last changed before this process started: its pid is a reuse.
  const struct timespec long_ago[2] = {{1000, 0}, {1000, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, path(stale[2]).c_str(), long_ago, 0), 0);
  zt_writer_options o = sharded_options(8192);
  o.alignment = 4096;
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open_ex(path("many.zt").c_str(), &o, &w), ZT_OK) << zt_last_error();
  for (const auto& name : stale) EXPECT_FALSE(fs::exists(path(name))) << name;
  for (const auto& name : kept) EXPECT_TRUE(fs::exists(path(name))) << name;
  for (const auto& e : fs::directory_iterator(dir_)) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(name.find(".tmp-" + dead + "-") == std::string::npos ||
                std::find(kept.begin(), kept.end(), name) != kept.end())
        << name;
  }
  zt_writer_abort(w);
}

// A settled shard (named beside the target, closed) is published only if
// the file under its name is still the one closed: its sha256 was taken as
// it was settled, and another file put there would be published under it.
TEST_F(Shards, ASettledShardReplacedBeforeFinishIsRefused) {
  struct rlimit old {};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
  struct rlimit lim = old;
  lim.rlim_cur = std::min<rlim_t>(128, old.rlim_cur);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lim), 0);
  zt_writer_options o = sharded_options(8192);
  o.alignment = 4096;
  zt_writer* w = nullptr;
  zt_status s = zt_writer_open_ex(path("many.zt").c_str(), &o, &w);
  for (size_t i = 0; s == ZT_OK && i < 100; ++i) {
    const Bytes b = pattern(4096, static_cast<uint8_t>(i));
    const uint64_t shape[] = {4096};
    s = zt_writer_add_dense(w, numbered("t", i).c_str(), "u8", shape, 1, b.data(), b.size(), "raw");
  }
  std::string settled;
  for (const auto& e : fs::directory_iterator(dir_))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) settled = e.path();
  if (!settled.empty()) {
    fs::copy_file(settled, settled + ".copy");  // the same bytes, another file
    fs::rename(settled + ".copy", settled);
  }
  if (s == ZT_OK)
    s = zt_writer_finish(w);  // spends the writer, whatever it returns
  else
    zt_writer_abort(w);
  const std::string error = s == ZT_OK ? "" : zt_last_error();
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
  ASSERT_FALSE(settled.empty()) << "no shard was settled";
  EXPECT_EQ(s, ZT_ERR_IO);
  EXPECT_NE(error.find("replaced since it was written"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(path("many.zt")));
}

TEST_F(Shards, AWriterOfMoreShardsThanOpenFilesFinishes) {
  struct rlimit old {};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
  struct rlimit lim = old;
  lim.rlim_cur = std::min<rlim_t>(128, old.rlim_cur);
  constexpr size_t kObjects = 200;
  const size_t before = open_descriptors();
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lim), 0);
  zt_writer_options o = sharded_options(8192);
  o.alignment = 4096;
  zt_writer* w = nullptr;
  zt_status s = zt_writer_open_ex(path("many.zt").c_str(), &o, &w);
  size_t most = 0;
  for (size_t i = 0; s == ZT_OK && i < kObjects; ++i) {
    const Bytes b = pattern(4096, static_cast<uint8_t>(i));
    const uint64_t shape[] = {4096};
    s = zt_writer_add_dense(w, numbered("t", i).c_str(), "u8", shape, 1, b.data(), b.size(), "raw");
    most = std::max(most, open_descriptors());
  }
  if (s == ZT_OK) s = zt_writer_finish(w);
  const std::string error = s == ZT_OK ? "" : zt_last_error();
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
  ASSERT_EQ(s, ZT_OK) << error;
  EXPECT_LE(most, before + 16 + 4);  // the budget, the current shard, the object's
  // Every shard published under its name, no temporary left beside them.
  size_t shards = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(name.find(".tmp-"), std::string::npos) << name;
    shards += name.starts_with("many-");
  }
  const ReaderPtr r = open("many.zt");
  ASSERT_TRUE(r);
  EXPECT_EQ(shard_names(r.get()).size(), shards);
  EXPECT_GE(shards, kObjects / 2);
  for (size_t i = 0; i < kObjects; ++i)
    ASSERT_EQ(map_component(r.get(), numbered("t", i).c_str(), "data").bytes,
              pattern(4096, static_cast<uint8_t>(i)))
        << numbered("t", i);
  EXPECT_EQ(zt_verify(r.get(), nullptr, nullptr), ZT_OK)
      << zt_last_error();  // every shard's sha256
}

TEST_F(Shards, TheWriterSplitsAModelThatReadsBackWhole) {
  const uint64_t limit = 3 * 65536;
  write_split_model(path("model.zt"), limit);
  write_split_model(path("single.zt"), 0);
  const ReaderPtr split = open("model.zt");
  const ReaderPtr one = open("single.zt");
  ASSERT_TRUE(split && one);
  const std::vector<std::string> shard = shard_names(split.get());
  ASSERT_EQ(shard.size(), 5u);
  std::vector<std::string> names, want;
  for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  for (size_t k = 0; k < shard.size(); ++k) {
    EXPECT_EQ(shard[k].substr(0, 6), "0000" + std::to_string(k + 1) + "-");
    want.push_back("model-" + shard[k] + ".zt");
  }
  want.insert(want.end(), {"model.zt", "single.zt"});
  EXPECT_EQ(names, want);
  // Blobs sit at 64 KiB boundaries, so a 192 KiB shard holds two of them:
  // a, b one shard each (both would pass 192 KiB); c alone, over the limit;
  // e and m's values in the fourth, m's indices and indptr in the fifth (m
  // straddles two shards).
  for (const size_t k : {0, 1, 3, 4}) EXPECT_LE(fs::file_size(path(want[k])), limit) << want[k];
  EXPECT_GT(fs::file_size(path(want[2])), limit);
  ASSERT_EQ(zt_object_count(split.get()), 6u);
  for (const char* name : {"a", "b", "c", "d", "e"})
    EXPECT_EQ(map_component(split.get(), name, "data").bytes,
              map_component(one.get(), name, "data").bytes)
        << name;
  EXPECT_EQ(shard_of(split.get(), object_index(split.get(), "c"), "data"), shard[2]);
  EXPECT_EQ(zt_component_shard(split.get(), object_index(split.get(), "d"), "data"), nullptr);
  EXPECT_EQ(zt_verify(split.get(), nullptr, nullptr), ZT_OK) << zt_last_error();
  EXPECT_EQ(shard_of(split.get(), object_index(split.get(), "m"), "values"), shard[3]);
  EXPECT_EQ(shard_of(split.get(), object_index(split.get(), "m"), "indptr"), shard[4]);
  char id_split[ZT_CONTENT_DIGEST_SIZE], id_one[ZT_CONTENT_DIGEST_SIZE];
  ASSERT_EQ(zt_content_digest(split.get(), nullptr, id_split, sizeof id_split), ZT_OK);
  ASSERT_EQ(zt_content_digest(one.get(), nullptr, id_one, sizeof id_one), ZT_OK);
  EXPECT_STREQ(id_split, id_one);  // the content digest ignores how a model is split
}

// The shards' temporary files go beside the root: a link at a shard's
// first name ("<stem>-00001.zt", leading nowhere here) is not followed (the
// writer refused to start), and stays as it was.
TEST_F(Shards, ALinkAtAShardsFirstNameIsNotFollowed) {
  fs::create_symlink(dir_ / "gone" / "elsewhere.zt", dir_ / "model-00001.zt");
  write_split_model(path("model.zt"), 3 * 65536);
  EXPECT_TRUE(fs::is_symlink(dir_ / "model-00001.zt"));
  EXPECT_EQ(fs::read_symlink(dir_ / "model-00001.zt"), dir_ / "gone" / "elsewhere.zt");
  EXPECT_FALSE(fs::exists(dir_ / "gone"));
  const ReaderPtr r = open("model.zt");
  ASSERT_TRUE(r);
  EXPECT_EQ(shard_names(r.get()).size(), 5u);
  EXPECT_EQ(zt_verify(r.get(), nullptr, nullptr), ZT_OK) << zt_last_error();
}

// The same model written again: its shard files, the same bytes under the
// same names, stay the files they are (a reader of the old model in copy
// mode reopens them by inode; a link stays a link, a mode stays).
TEST_F(Shards, ARewriteLeavesItsUnchangedShardFilesInPlace) {
  write_split_model(path("model.zt"), 3 * 65536);
  std::vector<std::pair<std::string, ino_t>> before;
  for (const auto& e : fs::directory_iterator(dir_)) {
    const std::string name = e.path().filename().string();
    if (name == "model.zt") continue;
    struct stat st {};
    ASSERT_EQ(::stat(e.path().c_str(), &st), 0);
    before.emplace_back(name, st.st_ino);
  }
  ASSERT_EQ(before.size(), 5u);
  fs::permissions(dir_ / before[0].first, fs::perms::owner_read | fs::perms::owner_write);
  write_split_model(path("model.zt"), 3 * 65536);
  for (const auto& [name, ino] : before) {
    struct stat st {};
    ASSERT_EQ(::stat((dir_ / name).c_str(), &st), 0) << name;
    EXPECT_EQ(st.st_ino, ino) << name << " was replaced";
  }
  EXPECT_EQ(fs::status(dir_ / before[0].first).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  const ReaderPtr r = open("model.zt");
  ASSERT_TRUE(r);
  EXPECT_EQ(zt_verify(r.get(), nullptr, nullptr), ZT_OK) << zt_last_error();
  // A shard damaged in place (same size) is no longer the same bytes: the
  // rewrite replaces it, and the model verifies again.
  {
    std::fstream f(dir_ / before[1].first, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x5a');
  }
  write_split_model(path("model.zt"), 3 * 65536);
  const ReaderPtr again = open("model.zt");
  ASSERT_TRUE(again);
  EXPECT_EQ(zt_verify(again.get(), nullptr, nullptr), ZT_OK) << zt_last_error();
}

// A refused component that had begun a new shard takes it back: the same
// successful calls give the same bytes, whatever was refused among them.
TEST_F(Shards, ARefusedComponentTakesItsShardBack) {
  const auto write = [&](const std::string& name, bool with_refusal) {
    zt_writer_options o = sharded_options(2 * 65536);
    o.alignment = 4096;  // "small" fits in the first shard, beside "a"
    zt_writer* w = nullptr;
    ASSERT_EQ(zt_writer_open_ex(path(name).c_str(), &o, &w), ZT_OK) << zt_last_error();
    const Bytes a = pattern(100, 1), small = pattern(16, 2), big = pattern(50000, 3);
    const uint64_t s1[] = {100}, one[] = {1};
    ASSERT_EQ(zt_writer_add_dense(w, "a", "u8", s1, 1, a.data(), a.size(), "raw"), ZT_OK);
    ASSERT_EQ(zt_writer_begin_object(w, "b", "ex.blob/1", one, 1), ZT_OK) << zt_last_error();
    if (with_refusal) {
      // Larger than a shard: it begins a shard of its own.
      ASSERT_EQ(zt_writer_begin_component(w, "big", "u8", nullptr, "raw", 150000), ZT_OK)
          << zt_last_error();
      ASSERT_EQ(zt_writer_write(w, big.data(), big.size()), ZT_OK) << zt_last_error();
      EXPECT_EQ(zt_writer_end_component(w), ZT_ERR_INVALID);  // 50000 of 150000 bytes
    }
    ASSERT_EQ(zt_writer_add_component(w, "small", "u8", nullptr, small.data(), small.size(), "raw"),
              ZT_OK)
        << zt_last_error();
    ASSERT_EQ(zt_writer_end_object(w), ZT_OK) << zt_last_error();
    ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  };
  fs::create_directories(dir_ / "plain");
  fs::create_directories(dir_ / "refused");
  write("plain/m.zt", false);
  write("refused/m.zt", true);
  std::vector<std::string> plain, refused;
  for (const auto& e : fs::directory_iterator(dir_ / "plain")) plain.push_back(e.path().filename());
  for (const auto& e : fs::directory_iterator(dir_ / "refused"))
    refused.push_back(e.path().filename());
  std::sort(plain.begin(), plain.end());
  std::sort(refused.begin(), refused.end());
  EXPECT_EQ(refused, plain);
  for (const std::string& n : plain) EXPECT_EQ(get("refused/" + n), get("plain/" + n)) << n;
}

// A split model written through a link put its shards beside the file the
// link leads to, where a reader of the link does not look: refused.
TEST_F(Shards, ASplitModelIsNotWrittenThroughALink) {
  fs::create_directories(dir_ / "store");
  write_split_model((dir_ / "store" / "real.zt").string(), 0);
  fs::create_symlink(dir_ / "store" / "real.zt", dir_ / "model.zt");
  const zt_writer_options o = sharded_options(3 * 65536);
  zt_writer* w = nullptr;
  EXPECT_TRUE(FailsWith(zt_writer_open_ex(path("model.zt").c_str(), &o, &w), ZT_ERR_ARGUMENT,
                        {"model.zt: a symbolic link", "shard_bytes"}));
  EXPECT_EQ(w, nullptr);
  // One file through the link is written as before: the link stays.
  write_split_model(path("model.zt"), 0);
  EXPECT_TRUE(fs::is_symlink(dir_ / "model.zt"));
  const ReaderPtr r = open("model.zt");
  ASSERT_TRUE(r);
  EXPECT_EQ(zt_verify(r.get(), nullptr, nullptr), ZT_OK) << zt_last_error();
}

// One file written over a sharded model: the old root goes in the rename,
// its shards after it; nothing unreferenced is left in the folder.
TEST_F(Shards, OneFileWrittenOverAShardedModelTakesItsShards) {
  write_split_model(path("model.zt"), 3 * 65536);
  write_split_model(path("other.zt"), 3 * 65536);
  size_t before = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++before;
  EXPECT_EQ(before, 12u);  // two roots, five shards each
  write_split_model(path("model.zt"), 0);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names.size(), 7u);
  for (const std::string& n : names)
    EXPECT_TRUE(n == "model.zt" || n.rfind("other", 0) == 0) << n;  // the other model's stay
  const ReaderPtr r = open("model.zt");
  ASSERT_TRUE(r);
  EXPECT_EQ(zt_verify(r.get(), nullptr, nullptr), ZT_OK) << zt_last_error();
  const ReaderPtr other = open("other.zt");
  ASSERT_TRUE(other);
  EXPECT_EQ(zt_verify(other.get(), nullptr, nullptr), ZT_OK) << zt_last_error();
}

// An object refused after it ran into a new shard takes that shard back.
TEST_F(Shards, ARefusedObjectTakesItsShardsWithIt) {
  const zt_writer_options o = sharded_options(2 * 65536);
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open_ex(path("model.zt").c_str(), &o, &w), ZT_OK) << zt_last_error();
  const Bytes a = pattern(60000);
  const uint64_t s1[] = {60000};
  ASSERT_EQ(zt_writer_add_dense(w, "a", "u8", s1, 1, a.data(), a.size(), "raw"), ZT_OK);
  const uint64_t shape[] = {2, 3};
  ASSERT_EQ(zt_writer_begin_object(w, "m", "sparse_csr", shape, 2), ZT_OK);
  const Bytes values = le<float>({1, 2}), bad = le<uint64_t>({0, 7}),
              indptr = le<uint64_t>({0, 1, 2});
  ASSERT_EQ(zt_writer_add_component(w, "values", "f32", nullptr, values.data(), 8, "raw"), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "indices", "u64", nullptr, bad.data(), 16, "raw"), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "indptr", "u64", nullptr, indptr.data(), 24, "raw"), ZT_OK);
  EXPECT_EQ(zt_writer_end_object(w), ZT_ERR_INVALID);  // column 7 of 3
  ASSERT_EQ(zt_writer_add_dense(w, "b", "u8", s1, 1, a.data(), a.size(), "raw"), ZT_OK);
  ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  const ReaderPtr r = open("model.zt");
  ASSERT_TRUE(r);
  EXPECT_EQ(zt_object_count(r.get()), 2u);
  EXPECT_EQ(zt_verify(r.get(), nullptr, nullptr), ZT_OK) << zt_last_error();
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++files;
  const Json j = Json::parse(zt_manifest_json(r.get()));
  EXPECT_EQ(files, 1 + j["shards"].size());  // nothing else was left behind
}

// Append (§2.5) to a sharded root: the table and the parts in shards carry
// over, new blobs go into the root, the shards are not touched.
TEST_F(Shards, AppendingToAShardedRootKeepsItsShards) {
  write_split_model(path("model.zt"), 3 * 65536);
  std::vector<std::string> shard;
  {
    const ReaderPtr r = open("model.zt");
    ASSERT_TRUE(r);
    shard = shard_names(r.get());
    ASSERT_EQ(shard.size(), 5u);
  }
  const auto shard_bytes = [&] { return get("model-" + shard[2] + ".zt"); };
  const Bytes before = shard_bytes();
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open_append(path("model.zt").c_str(), nullptr, &w), ZT_OK) << zt_last_error();
  const Bytes x = pattern(5000, 9), c2 = pattern(10, 8);
  const uint64_t sx[] = {5000}, sc[] = {10};
  ASSERT_EQ(zt_writer_add_dense(w, "x", "u8", sx, 1, x.data(), x.size(), "raw"), ZT_OK)
      << zt_last_error();
  ASSERT_EQ(zt_writer_add_dense(w, "c", "u8", sc, 1, c2.data(), c2.size(), "raw"), ZT_OK)
      << zt_last_error();  // replaces the object whose part sits in the third shard
  ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  EXPECT_EQ(shard_bytes(), before);
  const ReaderPtr r = open("model.zt");
  ASSERT_TRUE(r);
  EXPECT_EQ(zt_object_count(r.get()), 7u);
  EXPECT_EQ(zt_verify(r.get(), nullptr, nullptr), ZT_OK) << zt_last_error();
  EXPECT_EQ(map_component(r.get(), "x", "data").bytes, x);
  EXPECT_EQ(map_component(r.get(), "c", "data").bytes, c2);
  EXPECT_EQ(zt_component_shard(r.get(), object_index(r.get(), "x"), "data"), nullptr);
  EXPECT_EQ(shard_of(r.get(), object_index(r.get(), "a"), "data"), shard[0]);
  EXPECT_EQ(map_component(r.get(), "a", "data").bytes, pattern(100000, 1));
  const Json j = Json::parse(zt_manifest_json(r.get()));
  EXPECT_EQ(j["shards"].size(), 5u);
}

TEST_F(Shards, WriterOptionsAndAbort) {
  zt_writer* w = nullptr;
  zt_writer_options o = sharded_options(1 << 20);
  o.file_version = 0;
  EXPECT_EQ(zt_writer_open_ex(path("x.zt").c_str(), &o, &w), ZT_ERR_ARGUMENT);
  o = sharded_options(1 << 20);
  o.canonical = 1;
  EXPECT_EQ(zt_writer_open_ex(path("x.zt").c_str(), &o, &w), ZT_ERR_ARGUMENT);
  o = sharded_options(65536);
  EXPECT_EQ(zt_writer_open_ex(path("x.zt").c_str(), &o, &w), ZT_ERR_ARGUMENT);
  o = sharded_options(2 * 65536);
  ASSERT_EQ(zt_writer_open_ex(path("x.zt").c_str(), &o, &w), ZT_OK) << zt_last_error();
  const Bytes a = pattern(100000);
  const uint64_t s1[] = {100000};
  ASSERT_EQ(zt_writer_add_dense(w, "a", "u8", s1, 1, a.data(), a.size(), "raw"), ZT_OK);
  ASSERT_EQ(zt_writer_add_dense(w, "b", "u8", s1, 1, a.data(), a.size(), "raw"), ZT_OK);
  zt_writer_abort(w);
  EXPECT_TRUE(fs::is_empty(dir_));
}

}  // namespace
}  // namespace zt::test
