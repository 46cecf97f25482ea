// Access to component bytes: zero-copy mapping of raw data, zstd decoded
// once and cached, exact decoded sizes, the decode cap, zt_component_read's
// buffer rules, copy mode, and many threads at once.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <latch>
#include <string>
#include <thread>
#include <utility>

#include "test_files.h"

namespace zt::test {
namespace {

// "raw": f32 [64] stored raw; "packed": u16 [512] stored as zstd.
struct TwoObjects {
  Bytes raw_data = pattern(256, 3);
  Bytes zstd_data = pattern(1024, 5);
  Bytes file;
  TwoObjects() {
    FileBuilder b;
    b.dense("raw", "f32", {64}, raw_data);
    b.object("packed", "dense", {512}, Json{{"data", b.zstd("u16", zstd_data)}});
    file = b.build();
  }
};

TEST(Access, RawMapIsZeroCopyIntoTheCallersBuffer) {
  const TwoObjects t;
  const Opened o = open_memory(t.file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const void* p = nullptr;
  uint64_t n = 0;
  ASSERT_EQ(zt_component_map(o.get(), object_index(o.get(), "raw"), "data", &p, &n), ZT_OK);
  EXPECT_EQ(n, 256u);
  // The pointer lies inside the buffer given to zt_open_memory, at the offset.
  EXPECT_EQ(static_cast<const uint8_t*>(p), t.file.data() + 64);
  EXPECT_EQ(Bytes(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n), t.raw_data);
}

TEST(Access, ZstdIsDecodedOnceAndCached) {
  const TwoObjects t;
  const Opened o = open_memory(t.file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const Mapped first = map_component(o.get(), "packed", "data");
  ASSERT_EQ(first.status, ZT_OK) << zt_last_error();
  EXPECT_EQ(first.bytes, t.zstd_data);
  const auto* p = static_cast<const uint8_t*>(first.ptr);
  EXPECT_TRUE(p < t.file.data() || p >= t.file.data() + t.file.size())
      << "decoded bytes are owned by the reader";
  const Mapped second = map_component(o.get(), "packed", "data");
  EXPECT_EQ(second.ptr, first.ptr);
  EXPECT_EQ(second.bytes, t.zstd_data);
}

// zt_component_extent: where the stored bytes are in what the reader was
// opened on, raw or encoded; and nothing for what is not there.
TEST(Access, ExtentsPointAtTheStoredBytes) {
  const TwoObjects t;
  const Opened o = open_memory(t.file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const Bytes zstd = zstd_compress(t.zstd_data);
  for (const auto& [name, stored] : {std::pair<const char*, const Bytes&>{"raw", t.raw_data},
                                     std::pair<const char*, const Bytes&>{"packed", zstd}}) {
    uint64_t offset = 0, n = 0;
    ASSERT_EQ(zt_component_extent(o.get(), object_index(o.get(), name), "data", &offset, &n), ZT_OK)
        << zt_last_error();
    ASSERT_EQ(n, stored.size()) << name;
    ASSERT_LE(offset + n, t.file.size()) << name;
    EXPECT_EQ(Bytes(t.file.begin() + static_cast<std::ptrdiff_t>(offset),
                    t.file.begin() + static_cast<std::ptrdiff_t>(offset + n)),
              stored)
        << name;
    EXPECT_EQ(offset % 64, 0u) << name;
  }
  uint64_t offset = 0, n = 0;
  EXPECT_EQ(zt_component_extent(o.get(), 0, "nope", &offset, &n), ZT_ERR_NOT_FOUND);
  EXPECT_EQ(zt_component_extent(o.get(), 7, "data", &offset, &n), ZT_ERR_NOT_FOUND);
  EXPECT_EQ(zt_component_extent(o.get(), 0, "data", nullptr, &n), ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_component_extent(o.get(), 0, "data", &offset, nullptr), ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_component_extent(o.get(), 0, nullptr, &offset, &n), ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_component_extent(nullptr, 0, "data", &offset, &n), ZT_ERR_ARGUMENT);
}

// zt_component_extents: every object's extent and encoding in one call, as
// the calls one object at a time give them; what they refuse is marked.
TEST(Access, ExtentsOfManyObjectsAreEachObjectsExtent) {
  FileBuilder b;
  const Bytes raw = pattern(256, 3), packed = pattern(1024, 5);
  b.dense("raw", "f32", {64}, raw);
  b.object("packed", "dense", {512}, Json{{"data", b.zstd("u16", packed)}});
  b.object("csr", "sparse_csr", {2, 2},
           Json{{"values", b.raw("f32", pattern(8, 7))},
                {"indices", b.raw("u64", le(std::vector<uint64_t>{1, 0}))},
                {"indptr", b.raw("u64", le(std::vector<uint64_t>{0, 1, 2}))}});
  b.dense("last", "u8", {3}, Bytes{1, 2, 3});
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  constexpr size_t kCount = 4;
  uint64_t offsets[kCount] = {}, nbytes[kCount] = {};
  const char* encodings[kCount] = {};
  ASSERT_EQ(zt_component_extents(o.get(), "data", 0, kCount, offsets, nbytes, encodings), ZT_OK)
      << zt_last_error();
  for (size_t i = 0; i < kCount; ++i) {
    uint64_t offset = 0, n = 0;
    const zt_status one = zt_component_extent(o.get(), i, "data", &offset, &n);
    EXPECT_EQ(offsets[i], one == ZT_OK ? offset : UINT64_MAX) << i;
    EXPECT_EQ(nbytes[i], one == ZT_OK ? n : 0u) << i;
    const char* encoding = zt_component_encoding(o.get(), i, "data");
    if (encoding)
      EXPECT_STREQ(encodings[i], encoding) << i;
    else
      EXPECT_EQ(encodings[i], nullptr) << i;
  }
  EXPECT_EQ(offsets[2], UINT64_MAX) << "no \"data\" component";
  EXPECT_STREQ(encodings[1], "zstd");
  EXPECT_EQ(Bytes(file.begin() + static_cast<std::ptrdiff_t>(offsets[3]),
                  file.begin() + static_cast<std::ptrdiff_t>(offsets[3] + nbytes[3])),
            (Bytes{1, 2, 3}));
  // A window of them; encodings may be left out.
  uint64_t window_offsets[2] = {}, window_nbytes[2] = {};
  ASSERT_EQ(zt_component_extents(o.get(), "data", 2, 2, window_offsets, window_nbytes, nullptr),
            ZT_OK);
  EXPECT_EQ(window_offsets[1], offsets[3]);
  EXPECT_EQ(window_nbytes[1], nbytes[3]);
  // Another role; nothing asked; refusals write nothing.
  ASSERT_EQ(zt_component_extents(o.get(), "values", 2, 1, window_offsets, window_nbytes, nullptr),
            ZT_OK);
  EXPECT_EQ(window_nbytes[0], 8u);
  EXPECT_EQ(zt_component_extents(o.get(), "data", kCount, 0, nullptr, nullptr, nullptr), ZT_OK);
  uint64_t untouched[2] = {7, 7};
  EXPECT_TRUE(FailsWith(zt_component_extents(o.get(), "data", 3, 2, untouched, untouched, nullptr),
                        ZT_ERR_NOT_FOUND, {"run past the last one"}));
  EXPECT_EQ(untouched[0], 7u);
  EXPECT_EQ(zt_component_extents(o.get(), "data", kCount + 1, 0, nullptr, nullptr, nullptr),
            ZT_ERR_NOT_FOUND);
  EXPECT_EQ(zt_component_extents(o.get(), "data", 0, 1, nullptr, untouched, nullptr),
            ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_component_extents(o.get(), "data", 0, 1, untouched, nullptr, nullptr),
            ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_component_extents(o.get(), nullptr, 0, 1, untouched, untouched, nullptr),
            ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_component_extents(nullptr, "data", 0, 1, untouched, untouched, nullptr),
            ZT_ERR_ARGUMENT);
  EXPECT_EQ(untouched[1], 7u);
}

TEST(Access, SizesAndEncodingsAreReported) {
  const TwoObjects t;
  const Opened o = open_memory(t.file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const size_t packed = object_index(o.get(), "packed");
  uint64_t stored = 0, decoded = 0;
  EXPECT_EQ(zt_component_stored_size(o.get(), packed, "data", &stored), ZT_OK);
  EXPECT_EQ(stored, zstd_compress(t.zstd_data).size());
  EXPECT_EQ(zt_component_decoded_size(o.get(), packed, "data", &decoded), ZT_OK);
  EXPECT_EQ(decoded, 1024u);
  EXPECT_STREQ(zt_component_encoding(o.get(), packed, "data"), "zstd");
  EXPECT_STREQ(zt_component_encoding(o.get(), object_index(o.get(), "raw"), "data"), "raw");
  EXPECT_STREQ(zt_component_role(o.get(), packed, 0), "data");
  EXPECT_EQ(zt_component_role(o.get(), packed, 1), nullptr);
  EXPECT_EQ(zt_object_name(o.get(), 2), nullptr);
}

TEST(Access, UnknownObjectOrRoleIsNotFound) {
  const TwoObjects t;
  const Opened o = open_memory(t.file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const void* p = nullptr;
  uint64_t n = 0;
  EXPECT_TRUE(FailsWith(zt_component_map(o.get(), 0, "values", &p, &n), ZT_ERR_NOT_FOUND,
                        {"no component \"values\""}));
  EXPECT_TRUE(
      FailsWith(zt_component_map(o.get(), 7, "data", &p, &n), ZT_ERR_NOT_FOUND, {"out of range"}));
  size_t i = 0;
  EXPECT_TRUE(FailsWith(zt_object_find(o.get(), "nope", &i), ZT_ERR_NOT_FOUND, {"nope"}));
  EXPECT_EQ(zt_component_map(o.get(), 0, nullptr, &p, &n), ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_component_map(o.get(), 0, "data", nullptr, &n), ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_component_map(nullptr, 0, "data", &p, &n), ZT_ERR_ARGUMENT);
}

// A dense u8 [size_claimed] object whose zstd data decodes to `actual` bytes.
Bytes zstd_file(size_t claimed, size_t actual, bool content_size) {
  FileBuilder b;
  const Bytes z = zstd_compress(pattern(actual), content_size);
  const uint64_t off = b.add_blob(z);
  b.object("z", "dense", {claimed},
           Json{{"data",
                 {{"dtype", "u8"},
                  {"offset", off},
                  {"length", z.size()},
                  {"encoding", "zstd"},
                  {"uncompressed_length", claimed}}}});
  return b.build();
}

TEST(Access, ZstdFrameWithoutContentSizeDecodes) {
  const Bytes frame = zstd_compress(pattern(100), false);
  ASSERT_EQ(ZSTD_getFrameContentSize(frame.data(), frame.size()), ZSTD_CONTENTSIZE_UNKNOWN);
  const Bytes f = zstd_file(3000, 3000, false);
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const Mapped m = map_component(o.get(), "z", "data");
  ASSERT_EQ(m.status, ZT_OK) << zt_last_error();
  EXPECT_EQ(m.bytes, pattern(3000));
}

TEST(Access, ZstdLongerThanUncompressedLengthIsInvalid) {
  for (const bool content_size : {true, false}) {
    SCOPED_TRACE(content_size ? "frame with content size" : "frame without content size");
    const Bytes f = zstd_file(1000, 1001, content_size);
    const Opened o = open_memory(f);  // opening reads no data byte
    ASSERT_EQ(o.status, ZT_OK) << o.error;
    const void* p = nullptr;
    uint64_t n = 0;
    EXPECT_TRUE(FailsWith(zt_component_map(o.get(), 0, "data", &p, &n), ZT_ERR_INVALID,
                          {"object \"z\": component \"data\"", "more than 1000 bytes"}));
    Bytes buf(2000);
    EXPECT_TRUE(FailsWith(zt_component_read(o.get(), 0, "data", buf.data(), buf.size(), &n),
                          ZT_ERR_INVALID));
    EXPECT_TRUE(FailsWith(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_INVALID));
  }
}

TEST(Access, ZstdShorterThanUncompressedLengthIsInvalid) {
  for (const bool content_size : {true, false}) {
    SCOPED_TRACE(content_size ? "frame with content size" : "frame without content size");
    const Bytes f = zstd_file(1000, 999, content_size);
    const Opened o = open_memory(f);
    ASSERT_EQ(o.status, ZT_OK) << o.error;
    const void* p = nullptr;
    uint64_t n = 0;
    EXPECT_TRUE(FailsWith(zt_component_map(o.get(), 0, "data", &p, &n), ZT_ERR_INVALID,
                          {"object \"z\": component \"data\"", "999 bytes, expected 1000"}));
    // The failure is cached like a success: the second call says the same.
    EXPECT_TRUE(
        FailsWith(zt_component_map(o.get(), 0, "data", &p, &n), ZT_ERR_INVALID, {"999 bytes"}));
  }
}

TEST(Access, CorruptZstdIsInvalid) {
  FileBuilder b;
  Bytes junk = zstd_compress(pattern(500));
  for (size_t i = 12; i < junk.size(); ++i) junk[i] ^= 0x5A;
  const uint64_t off = b.add_blob(junk);
  b.object("z", "dense", {500},
           Json{{"data",
                 {{"dtype", "u8"},
                  {"offset", off},
                  {"length", junk.size()},
                  {"encoding", "zstd"},
                  {"uncompressed_length", 500}}}});
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const void* p = nullptr;
  uint64_t n = 0;
  EXPECT_TRUE(
      FailsWith(zt_component_map(o.get(), 0, "data", &p, &n), ZT_ERR_INVALID, {"object \"z\""}));
}

TEST(Access, ConcatenatedZstdFramesDecode) {
  // Two frames, one with and one without a content size.
  const Bytes a = pattern(700, 1), c = pattern(300, 2);
  const Bytes z = cat({zstd_compress(a, true), zstd_compress(c, false)});
  FileBuilder b;
  const uint64_t off = b.add_blob(z);
  b.object("z", "dense", {1000},
           Json{{"data",
                 {{"dtype", "u8"},
                  {"offset", off},
                  {"length", z.size()},
                  {"encoding", "zstd"},
                  {"uncompressed_length", 1000}}}});
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_EQ(map_component(o.get(), "z", "data").bytes, cat({a, c}));
}

TEST(Access, UncompressedLengthOverTheCapIsLimitBeforeDecoding) {
  // The stored bytes are not zstd at all: a decoder would say INVALID, so
  // LIMIT shows that the size is refused before anything is decoded.
  FileBuilder b;
  const uint64_t off = b.add_blob(Bytes(64, 0xAB));
  b.object("big", "dense", {1 << 20},
           Json{{"data",
                 {{"dtype", "f32"},
                  {"offset", off},
                  {"length", 64},
                  {"encoding", "zstd"},
                  {"uncompressed_length", 4 << 20}}}});
  const TempFile t(b.build());
  zt_open_options opt;
  zt_open_options_init(&opt);
  opt.max_decoded_bytes = 1 << 20;
  const Opened o = open_file(t, &opt);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const void* p = nullptr;
  uint64_t n = 0;
  EXPECT_TRUE(FailsWith(zt_component_map(o.get(), 0, "data", &p, &n), ZT_ERR_LIMIT,
                        {"object \"big\": component \"data\"",
                         "uncompressed_length 4194304 exceeds the decode limit 1048576"}));
  Bytes buf(8 << 20);
  EXPECT_TRUE(
      FailsWith(zt_component_read(o.get(), 0, "data", buf.data(), buf.size(), &n), ZT_ERR_LIMIT));
  EXPECT_TRUE(FailsWith(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_LIMIT));
  // The size a read needs is refused the same way, before any allocation;
  // the size the file states is still told as it is.
  EXPECT_TRUE(FailsWith(zt_component_read_size(o.get(), 0, "data", &n), ZT_ERR_LIMIT,
                        {"object \"big\": component \"data\"",
                         "uncompressed_length 4194304 exceeds the decode limit 1048576"}));
  ASSERT_EQ(zt_component_decoded_size(o.get(), 0, "data", &n), ZT_OK);
  EXPECT_EQ(n, uint64_t{4} << 20);
  {
    // A v2 file's message names its own field, decoded_length.
    FileBuilderV2 v2;
    v2.object("big", "dense", {uint64_t{4} << 20}, Json{{"data", v2.raw("u8", Bytes(64, 0))}});
    Json& part = v2.part("big", "data");
    part["encoding"] = "zt.zstd-seekable/1";
    part["decoded_length"] = uint64_t{4} << 20;
    const TempFile t2(v2.build());
    const Opened o2 = open_file(t2, &opt);
    ASSERT_EQ(o2.status, ZT_OK) << o2.error;
    EXPECT_TRUE(FailsWith(zt_component_map(o2.get(), 0, "data", &p, &n), ZT_ERR_LIMIT,
                          {"decoded_length 4194304 exceeds the decode limit 1048576"}));
  }

  // Under the default cap the same file is decoded, and the junk is refused.
  const Opened d = open_file(t);
  ASSERT_EQ(d.status, ZT_OK) << d.error;
  EXPECT_TRUE(FailsWith(zt_component_map(d.get(), 0, "data", &p, &n), ZT_ERR_INVALID));
}

TEST(Access, CapAppliesToSizesFromTheShapeIn11) {
  FileBuilder b("1.1.0");
  const Bytes data = pattern(4096);
  b.object("w", "dense", {1024}, Json{{"data", b.zstd("f32", data, false)}});
  b.component("w", "data").erase("uncompressed_length");
  const TempFile t(b.build());
  zt_open_options opt;
  zt_open_options_init(&opt);
  opt.max_decoded_bytes = 4095;
  const Opened o = open_file(t, &opt);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const void* p = nullptr;
  uint64_t n = 0;
  EXPECT_TRUE(
      FailsWith(zt_component_map(o.get(), 0, "data", &p, &n), ZT_ERR_LIMIT, {"decode limit 4095"}));
  EXPECT_TRUE(FailsWith(zt_component_read_size(o.get(), 0, "data", &n), ZT_ERR_LIMIT,
                        {"decode limit 4095"}));
  opt.max_decoded_bytes = 4096;
  const Opened ok = open_file(t, &opt);
  ASSERT_EQ(ok.status, ZT_OK) << ok.error;
  ASSERT_EQ(zt_component_read_size(ok.get(), 0, "data", &n), ZT_OK) << zt_last_error();
  EXPECT_EQ(n, 4096u);
  EXPECT_EQ(map_component(ok.get(), "w", "data").bytes, data);
}

TEST(Access, DefaultCapRefusesHugeUncompressedLength) {
  // 1 TiB claimed by a 64-byte blob: refused without trying to allocate it.
  FileBuilder b;
  const uint64_t off = b.add_blob(zstd_compress(pattern(10)));
  b.object("huge", "dense", {1ull << 40},
           Json{{"data",
                 {{"dtype", "u8"},
                  {"offset", off},
                  {"length", zstd_compress(pattern(10)).size()},
                  {"encoding", "zstd"},
                  {"uncompressed_length", 1ull << 40}}}});
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const void* p = nullptr;
  uint64_t n = 0;
  EXPECT_TRUE(FailsWith(zt_component_map(o.get(), 0, "data", &p, &n), ZT_ERR_LIMIT,
                        {"uncompressed_length 1099511627776"}));
  EXPECT_TRUE(FailsWith(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_LIMIT));
}

TEST(Access, EmptyZstdComponentDecodesToNothing) {
  FileBuilder b;
  b.object("e", "dense", {0, 4}, Json{{"data", b.zstd("f32", Bytes{})}});
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const Mapped m = map_component(o.get(), "e", "data");
  EXPECT_EQ(m.status, ZT_OK) << zt_last_error();
  EXPECT_TRUE(m.bytes.empty());
  uint64_t written = 7;
  EXPECT_EQ(zt_component_read(o.get(), 0, "data", nullptr, 0, &written), ZT_OK) << zt_last_error();
  EXPECT_EQ(written, 0u);
  EXPECT_EQ(zt_verify(o.get(), nullptr, nullptr), ZT_OK) << zt_last_error();
}

// 1.1.0 zstd components outside dense objects may lack uncompressed_length:
// their size is known only by decoding, bounded by the cap. Such a file,
// its component the zstd frames `stored`.
Bytes v11_unsized_frames(const Bytes& stored) {
  FileBuilder b("1.1.0");
  Json blob = b.raw("u8", stored);
  blob["encoding"] = "zstd";
  b.object("o", "my_format", {1}, Json{{"blob", blob}});
  return b.build();
}

// The same, `data` compressed here.
Bytes v11_unsized_zstd(const Bytes& data) {
  FileBuilder b("1.1.0");
  b.object("o", "my_format", {1}, Json{{"blob", b.zstd("u8", data, false)}});
  b.component("o", "blob").erase("uncompressed_length");
  return b.build();
}

TEST(Access, UnsizedZstdIn11DecodesByStreaming) {
  const Bytes data = pattern(300000, 4);
  const Bytes f = v11_unsized_zstd(data);
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  uint64_t n = 0;
  EXPECT_EQ(zt_component_decoded_size(o.get(), 0, "blob", &n), ZT_ERR_UNSUPPORTED);
  EXPECT_TRUE(FailsWith(zt_component_read_size(o.get(), 0, "blob", &n), ZT_ERR_UNSUPPORTED,
                        {"component \"blob\"", "not known without decoding"}));
  EXPECT_EQ(map_component(o.get(), "o", "blob").bytes, data);
  Bytes buf(data.size() - 1);
  EXPECT_TRUE(FailsWith(zt_component_read(o.get(), 0, "blob", buf.data(), buf.size(), &n),
                        ZT_ERR_ARGUMENT));
  buf.resize(data.size());
  EXPECT_EQ(zt_component_read(o.get(), 0, "blob", buf.data(), buf.size(), &n), ZT_OK);
  EXPECT_EQ(buf, data);
}

TEST(Access, UnsizedZstdIn11IsBoundedByTheCap) {
  const TempFile t(v11_unsized_zstd(pattern(300000, 4)));
  zt_open_options opt;
  zt_open_options_init(&opt);
  opt.max_decoded_bytes = 100000;
  const Opened o = open_file(t, &opt);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const void* p = nullptr;
  uint64_t n = 0;
  EXPECT_TRUE(FailsWith(zt_component_map(o.get(), 0, "blob", &p, &n), ZT_ERR_LIMIT,
                        {"limit of 100000 bytes"}));
}

// A file of one dense u8 object "z" of `shape` whose data is the zstd
// frames `stored`, which decode to `n` bytes.
Bytes dense_over_frames(const Bytes& stored, uint64_t n, const std::vector<uint64_t>& shape) {
  FileBuilder b;
  Json data_component = b.raw("u8", stored);
  data_component["encoding"] = "zstd";
  data_component["uncompressed_length"] = n;
  b.object("z", "dense", shape, Json{{"data", data_component}});
  return b.build();
}

// zt_decode_ranges of the 16 bytes that end 4 KiB before the end of
// object 0's data gives those of `data`.
void expect_range_near_the_end(const zt_reader* r, const Bytes& data) {
  uint8_t part[16] = {};
  zt_decode_range q;
  zt_decode_range_init(&q);
  q.object = 0;
  q.role = "data";
  q.offset = data.size() - 4096 - 16;
  q.dst = part;
  q.length = sizeof part;
  EXPECT_EQ(zt_decode_ranges(r, &q, 1, 1, nullptr, nullptr), ZT_OK) << zt_last_error();
  EXPECT_TRUE(std::equal(part, part + 16, data.begin() + static_cast<ptrdiff_t>(q.offset)));
}

// A frame whose window is over 128 MiB (zstd --long=28 and above, on a
// tensor over 128 MiB) decodes on every path: the streaming ones (ranges,
// verify) refused it where the whole reads took it.
TEST(Access, ZstdWindowsOver128MiBDecodeOnEveryPath) {
  const size_t n = (size_t{129} << 20) + 4096;
  Bytes data(n, 0);
  for (size_t i = 0; i < n; i += 4093) data[i] = static_cast<uint8_t>(i >> 12);
  Bytes stored(ZSTD_compressBound(n));
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ASSERT_NE(c, nullptr);
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
  ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, 28);
  const size_t got = ZSTD_compress2(c, stored.data(), stored.size(), data.data(), n);
  ZSTD_freeCCtx(c);
  ASSERT_FALSE(ZSTD_isError(got));
  stored.resize(got);
  // zt_open_memory's bytes live as long as the reader.
  const Bytes file = dense_over_frames(stored, n, {n});
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  expect_range_near_the_end(o.get(), data);
  uint64_t checked = 0, unchecked = 0;
  EXPECT_EQ(zt_verify(o.get(), &checked, &unchecked), ZT_OK) << zt_last_error();
  const Mapped m = map_component(o.get(), "z", "data");
  ASSERT_EQ(m.status, ZT_OK) << zt_last_error();
  EXPECT_TRUE(m.bytes == data);
}

// A frame whose window is larger than all it decodes and than 128 MiB:
// what `zstd --long=31` writes reading a pipe (no content size, a 2 GiB
// window for a few MiB). Its header is written as such a compressor
// writes it; its blocks come from an ordinary window (offsets within 2 MiB
// are valid in one of 2 GiB), since a compressor given a 2 GiB window
// sets up tables that took minutes under valgrind. `window_log` 27 gives
// a frame a stream takes, with the largest window it takes by default.
Bytes wide_window_frame(const Bytes& data, int window_log = 31) {
  Bytes stored(ZSTD_compressBound(data.size()) + 1024);
  ZSTD_CCtx* c = ZSTD_createCCtx();
  EXPECT_NE(c, nullptr);
  ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, 21);
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0);
  ZSTD_outBuffer out{stored.data(), stored.size(), 0};
  // Fed a piece at a time, as from a pipe: the size is never known.
  constexpr size_t kPiece = 65536;
  for (size_t at = 0; at < data.size(); at += kPiece) {
    ZSTD_inBuffer in{data.data() + at, std::min(kPiece, data.size() - at), 0};
    const ZSTD_EndDirective how = at + kPiece >= data.size() ? ZSTD_e_end : ZSTD_e_continue;
    size_t left = 1;
    while (in.pos < in.size || (how == ZSTD_e_end && left != 0)) {
      left = ZSTD_compressStream2(c, &out, &in, how);
      EXPECT_FALSE(ZSTD_isError(left));
      if (ZSTD_isError(left)) break;
    }
  }
  ZSTD_freeCCtx(c);
  stored.resize(out.pos);
  EXPECT_EQ(ZSTD_getFrameContentSize(stored.data(), stored.size()), ZSTD_CONTENTSIZE_UNKNOWN);
  // RFC 8878 3.1.1.1: no single-segment flag, so a window descriptor
  // follows, whose exponent is the window's log less 10 (mantissa 0).
  EXPECT_EQ(stored[4] & 0x20, 0);
  EXPECT_EQ(10 + (stored[5] >> 3), 21);
  stored[5] = static_cast<uint8_t>((window_log - 10) << 3);
  if (window_log <= 27) return stored;
  // A stream refuses it as it refuses what zstd --long=31 writes.
  ZSTD_DCtx* d = ZSTD_createDCtx();
  EXPECT_NE(d, nullptr);
  Bytes sink(ZSTD_DStreamOutSize());
  ZSTD_inBuffer in{stored.data(), stored.size(), 0};
  ZSTD_outBuffer o{sink.data(), sink.size(), 0};
  EXPECT_EQ(ZSTD_getErrorCode(ZSTD_decompressStream(d, &o, &in)),
            ZSTD_error_frameParameter_windowTooLarge);
  ZSTD_freeDCtx(d);
  return stored;
}

// Such frames, between ordinary ones, as a component's stream.
Bytes wide_and_narrow_frames(const Bytes& data) {
  const size_t third = data.size() / 3;
  Bytes stored = wide_window_frame(Bytes(data.begin(), data.begin() + third));
  const Bytes narrow = zstd_compress(Bytes(data.begin() + third, data.begin() + 2 * third));
  const Bytes wide = wide_window_frame(Bytes(data.begin() + 2 * third, data.end()));
  stored.insert(stored.end(), narrow.begin(), narrow.end());
  stored.insert(stored.end(), wide.begin(), wide.end());
  return stored;
}

// The whole read took them (the one-shot decoder needs no window) where
// the content size was known; the streaming ones (ranges, rows, slices,
// verify, and whole reads of frames without a size) refused them ("Frame
// requires too much memory"). They decode on every path, a frame held as
// what it decodes to, never as its window.
TEST(Access, AZstdWindowLargerThanItsContentDecodesOnEveryPath) {
  const size_t n = size_t{3} << 20;
  Bytes data(n, 0);
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  const Bytes stored = wide_and_narrow_frames(data);
  const TempFile t(dense_over_frames(stored, n, {n / 1024, 1024}));
  const Opened o = open_file(t);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  expect_range_near_the_end(o.get(), data);
  Bytes rows(2048);
  uint64_t written = 0;
  EXPECT_EQ(zt_dense_rows(o.get(), 0, 5, 7, rows.data(), rows.size(), &written), ZT_OK)
      << zt_last_error();
  EXPECT_TRUE(std::equal(rows.begin(), rows.end(), data.begin() + 5 * 1024));
  const uint64_t begin[2] = {1, 16}, end[2] = {3, 48};
  Bytes box(64);
  EXPECT_EQ(zt_dense_slice(o.get(), 0, 2, begin, end, box.data(), box.size(), &written), ZT_OK)
      << zt_last_error();
  EXPECT_TRUE(std::equal(box.begin(), box.begin() + 32, data.begin() + 1024 + 16));
  EXPECT_TRUE(std::equal(box.begin() + 32, box.end(), data.begin() + 2048 + 16));
  uint64_t checked = 0, unchecked = 0;
  EXPECT_EQ(zt_verify(o.get(), &checked, &unchecked), ZT_OK) << zt_last_error();
  const Mapped m = map_component(o.get(), "z", "data");
  ASSERT_EQ(m.status, ZT_OK) << zt_last_error();
  EXPECT_TRUE(m.bytes == data);
}

// A 1.1 component of no stated size (decoded as it grows, to the cap) made
// of such frames: read whole, and refused past the cap as ever.
TEST(Access, AnUnsizedZstdWindowLargerThanItsContentDecodes) {
  const Bytes data = pattern(size_t{1} << 20, 7);
  const TempFile t(v11_unsized_frames(wide_and_narrow_frames(data)));
  const Opened o = open_file(t);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_EQ(map_component(o.get(), "o", "blob").bytes, data);
  uint64_t checked = 0, unchecked = 0;
  EXPECT_EQ(zt_verify(o.get(), &checked, &unchecked), ZT_OK) << zt_last_error();
  zt_open_options opt;
  zt_open_options_init(&opt);
  opt.max_decoded_bytes = data.size() - 1;
  const Opened capped = open_file(t, &opt);
  ASSERT_EQ(capped.status, ZT_OK) << capped.error;
  EXPECT_TRUE(
      FailsWith(map_component(capped.get(), "o", "blob").status, ZT_ERR_LIMIT, {"limit of"}));
}

// A stream of no stated size made of many small frames: the decoder
// returns at each frame's end, and each return grew and zero-filled a
// fresh step as large as all decoded so far (at least 128 KiB): quadratic
// (20,000 frames of 64 bytes: 6.9 s, now 0.15; 8 MiB of them, hours). The
// buffer now grows as the bytes need.
TEST(Access, AnUnsizedStreamOfSmallFramesDecodes) {
  constexpr size_t kFrames = 20000, kFrame = 64;
  const Bytes data = pattern(kFrames * kFrame, 3);
  Bytes stored;
  for (size_t i = 0; i < kFrames; ++i) {
    const auto first = data.begin() + static_cast<ptrdiff_t>(i * kFrame);
    const Bytes one = zstd_compress(Bytes(first, first + kFrame), false);
    stored.insert(stored.end(), one.begin(), one.end());
  }
  const TempFile t(v11_unsized_frames(stored));
  const Opened o = open_file(t);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_EQ(map_component(o.get(), "o", "blob").bytes, data);
}

namespace {
size_t resident_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  unsigned long size = 0, resident = 0;
  if (f) {
    if (std::fscanf(f, "%lu %lu", &size, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

// A decode that fails keeps its error, not its buffer: 64 MiB decoded
// before a corrupt last frame (its checksum) stayed allocated until close.
TEST(Access, AFailedDecodeHoldsNoMemory) {
  const size_t n = size_t{64} << 20;
  const Bytes zeros(n, 0);
  Bytes stored = zstd_compress(zeros);
  Bytes tail(ZSTD_compressBound(16));
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ASSERT_NE(c, nullptr);
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  const Bytes sixteen = pattern(16, 9);
  const size_t got = ZSTD_compress2(c, tail.data(), tail.size(), sixteen.data(), sixteen.size());
  ZSTD_freeCCtx(c);
  ASSERT_FALSE(ZSTD_isError(got));
  tail.resize(got);
  tail.back() ^= 0xff;  // the checksum: the frame parses, its decode fails
  stored.insert(stored.end(), tail.begin(), tail.end());
  FileBuilder b;
  Json data_component = b.raw("u8", stored);
  data_component["encoding"] = "zstd";
  data_component["uncompressed_length"] = n + 16;
  b.object("z", "dense", {n + 16}, Json{{"data", data_component}});
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const size_t before = resident_bytes();
  for (int i = 0; i < 2; ++i) {  // the second answer is the cached error
    const Mapped m = map_component(o.get(), "z", "data");
    EXPECT_EQ(m.status, ZT_ERR_INVALID);
  }
  if (!freed_memory_is_kept()) {
    EXPECT_LT(resident_bytes(), before + (size_t{16} << 20))
        << "the failed decode's buffer is held";
  }
}

// In a child: limits its address space to what it holds and `more` bytes
// (exit 3 if it cannot).
void limit_address_space_to_held_and(rlim_t more) {
  unsigned long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%lu", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  const rlim_t limit = pages * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + more;
  const rlimit as{limit, limit};
  if (pages == 0 || ::setrlimit(RLIMIT_AS, &as) != 0) std::_Exit(3);
}

// In a child: maps `role` of object 0, measuring how much the resident
// size grew at its peak and after.
struct MappedMeasured {
  zt_status status = ZT_OK;
  uint64_t size = 0;
  unsigned long long peak = 0, held = 0;  // bytes
};
MappedMeasured map_measured(const zt_reader* r, const char* role) {
  std::ofstream("/proc/self/clear_refs") << "5";  // the peak starts again from here
  const unsigned long long before = status_kib("VmRSS:");
  MappedMeasured m;
  const void* p = nullptr;
  m.status = zt_component_map(r, 0, role, &p, &m.size);
  m.peak = (status_kib("VmHWM:") - before) << 10;
  m.held = (status_kib("VmRSS:") - before) << 10;
  return m;
}

// A decode whose size only decoding tells grows its buffer to the cap and
// one byte, then is refused: it holds about the cap, not a multiple of it
// (the buffer grew to ~3x the cap before). Measured in a child process as
// its peak resident size, which /proc/self/clear_refs resets.
TEST(Access, AnUnsizedDecodeOverTheCapHoldsAboutTheCap) {
  if (freed_memory_is_kept()) GTEST_SKIP() << "resident sizes say nothing under valgrind or ASan";
  const size_t cap = size_t{64} << 20;
  const Bytes f = v11_unsized_zstd(Bytes(2 * cap, 0));
  zt_open_options opt;
  zt_open_options_init(&opt);
  opt.max_decoded_bytes = cap;
  const TempFile t(f);
  const Opened o = open_file(t, &opt);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  expect_child_passes([&] {
    const MappedMeasured m = map_measured(o.get(), "blob");
    if (m.status != ZT_ERR_LIMIT) {
      std::fprintf(stderr, "status %d: %s\n", static_cast<int>(m.status), zt_last_error());
      std::_Exit(2);
    }
    if (m.peak >= 3 * cap / 2) {  // about the cap, and the zstd decoder's window
      std::fprintf(stderr, "peak resident size grew by %llu bytes (cap %zu)\n", m.peak, cap);
      std::_Exit(1);
    }
    std::_Exit(0);
  });
}

// A decode whose size only decoding tells grows its buffer as it decodes.
// A std::vector's growth held the old and the new buffer at once, zero-
// filled the new one, and kept its capacity: 33 MiB decoded peaked at
// ~96 MiB and held 64 MiB for the reader's life. Grown in place (realloc),
// the peak is what was decoded and the decoder's window, and the map holds
// what was decoded.
TEST(Access, AnUnsizedDecodePeaksAtWhatItDecodes) {
  if (freed_memory_is_kept()) GTEST_SKIP() << "resident sizes say nothing under valgrind or ASan";
  const size_t size = (size_t{33} << 20) + 12345;  // just past a doubling of the buffer
  const TempFile t(v11_unsized_zstd(Bytes(size, 0)));
  const Opened o = open_file(t);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  expect_child_passes([&] {
    const MappedMeasured m = map_measured(o.get(), "blob");
    if (m.status != ZT_OK || m.size != size) {
      std::fprintf(stderr, "status %d, %llu bytes: %s\n", static_cast<int>(m.status),
                   static_cast<unsigned long long>(m.size), zt_last_error());
      std::_Exit(2);
    }
    // Beyond what was decoded: the decoder's window (2 MiB and its blocks)
    // and the decoder's code and tables, first touched here: ~4 MiB.
    const size_t more = size_t{8} << 20;
    if (m.peak >= size + more || m.held >= size + more) {
      std::fprintf(stderr, "decoded %zu bytes: peak resident size grew by %llu, held %llu\n", size,
                   m.peak, m.held);
      std::_Exit(1);
    }
    std::_Exit(0);
  });
}

// A frame decoded whole (its window too large to stream, no content size)
// had room reserved for the most its stored bytes could decode to: 15 GiB
// for a third of a MiB of such a frame, which a machine with less memory
// refuses to reserve (a valid 1 MiB blob was ZT_ERR_NOMEM). The room now
// follows what the frame decodes to. Shown in a child whose address space
// is limited to what it holds and 512 MiB more.
TEST(Access, AFrameDecodedWholeReservesWhatItDecodesNotWhatItCould) {
  if (freed_memory_is_kept())
    GTEST_SKIP() << "valgrind and ASan reserve address space of their own";
  const Bytes data = pattern(size_t{1} << 20, 11);
  const TempFile t(v11_unsized_frames(wide_and_narrow_frames(data)));
  const Opened o = open_file(t);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  expect_child_passes([&] {
    limit_address_space_to_held_and(rlim_t{512} << 20);
    const void* p = nullptr;
    uint64_t n = 0;
    const zt_status s = zt_component_map(o.get(), 0, "blob", &p, &n);
    if (s != ZT_OK) {
      std::fprintf(stderr, "status %d: %s\n", static_cast<int>(s), zt_last_error());
      std::_Exit(2);
    }
    std::_Exit(n == data.size() && std::memcmp(p, data.data(), n) == 0 ? 0 : 1);
  });
}

// A frame decoded whole (a window over 128 MiB, no content size) in a
// component of no stated size: its room grew as fresh buffers, the last
// one then copied into the result (~50 MiB resident for 24 MiB decoded).
// It is decoded straight into the result, grown in place.
TEST(Access, AFrameDecodedWholeIntoAnUnsizedResultPeaksAtWhatItDecodes) {
  if (freed_memory_is_kept()) GTEST_SKIP() << "resident sizes say nothing under valgrind or ASan";
  const Bytes data = pattern(size_t{24} << 20, 13);
  const TempFile t(v11_unsized_frames(wide_window_frame(data)));
  const Opened o = open_file(t);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  expect_child_passes([&] {
    const MappedMeasured m = map_measured(o.get(), "blob");
    if (m.status != ZT_OK || m.size != data.size()) {
      std::fprintf(stderr, "status %d, %llu bytes: %s\n", static_cast<int>(m.status),
                   static_cast<unsigned long long>(m.size), zt_last_error());
      std::_Exit(2);
    }
    // Beyond what was decoded: the decoder's tables and code (no window:
    // the one-shot decoder writes into the result).
    const size_t more = size_t{8} << 20;
    if (m.peak >= data.size() + more || m.held >= data.size() + more) {
      std::fprintf(stderr, "decoded %zu bytes: peak resident size grew by %llu, held %llu\n",
                   data.size(), m.peak, m.held);
      std::_Exit(1);
    }
    std::_Exit(0);
  });
}

// A decoder that cannot allocate its window (128 MiB, all a stream takes
// by default) is short of memory: ZT_ERR_NOMEM, not "corrupt zstd data"
// (ZT_ERR_INVALID, which a caller takes as a verdict on the file), and the
// same call succeeds once memory is there. Shown in a child whose address
// space is limited to what it holds and 64 MiB more.
TEST(Access, AZstdWindowThatCannotBeAllocatedIsNomemNotCorrupt) {
  if (freed_memory_is_kept())
    GTEST_SKIP() << "valgrind and ASan reserve address space of their own";
  const Bytes data = pattern(size_t{1} << 18, 12);
  const TempFile t(v11_unsized_frames(wide_window_frame(data, 27)));
  const Opened o = open_file(t);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  expect_child_passes([&] {
    limit_address_space_to_held_and(rlim_t{64} << 20);
    const void* p = nullptr;
    uint64_t n = 0;
    const zt_status s = zt_component_map(o.get(), 0, "blob", &p, &n);
    const std::string message = zt_last_error();
    if (s != ZT_ERR_NOMEM || message.find("zstd decoder: ") == std::string::npos ||
        message.find("\"blob\"") == std::string::npos) {
      std::fprintf(stderr, "status %d: %s\n", static_cast<int>(s), message.c_str());
      std::_Exit(2);
    }
    std::_Exit(0);
  });
  // Not kept as the component's verdict: with the memory, it decodes.
  EXPECT_EQ(map_component(o.get(), "o", "blob").bytes, data);
}

TEST(Access, ReadNeedsEnoughCapacityAndWritesNothingOtherwise) {
  const TwoObjects t;
  const Opened o = open_memory(t.file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  for (const char* name : {"raw", "packed"}) {
    SCOPED_TRACE(name);
    const size_t i = object_index(o.get(), name);
    const Bytes& want = std::string_view(name) == "raw" ? t.raw_data : t.zstd_data;
    Bytes buf(want.size() + 10, 0xEE);
    uint64_t written = 12345;
    // One byte short: ZT_ERR_ARGUMENT, nothing written.
    EXPECT_TRUE(
        FailsWith(zt_component_read(o.get(), i, "data", buf.data(), want.size() - 1, &written),
                  ZT_ERR_ARGUMENT, {"do not fit"}));
    EXPECT_EQ(written, 12345u);
    EXPECT_EQ(buf, Bytes(want.size() + 10, 0xEE));
    // Exactly enough.
    ASSERT_EQ(zt_component_read(o.get(), i, "data", buf.data(), want.size(), &written), ZT_OK)
        << zt_last_error();
    EXPECT_EQ(written, want.size());
    EXPECT_EQ(Bytes(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(want.size())), want);
    // More than enough: the rest is left alone.
    std::fill(buf.begin(), buf.end(), 0xEE);
    ASSERT_EQ(zt_component_read(o.get(), i, "data", buf.data(), buf.size(), &written), ZT_OK);
    EXPECT_EQ(written, want.size());
    EXPECT_EQ(Bytes(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(want.size())), want);
    EXPECT_EQ(Bytes(buf.begin() + static_cast<ptrdiff_t>(want.size()), buf.end()), Bytes(10, 0xEE));
    // The capacity it needs, said beforehand.
    uint64_t need = 0;
    ASSERT_EQ(zt_component_read_size(o.get(), i, "data", &need), ZT_OK) << zt_last_error();
    EXPECT_EQ(need, want.size());
    EXPECT_EQ(zt_component_read_size(o.get(), i, "data", nullptr), ZT_ERR_ARGUMENT);
    EXPECT_EQ(zt_component_read_size(o.get(), i, "nope", &need), ZT_ERR_NOT_FOUND);
    EXPECT_EQ(zt_component_read_size(o.get(), 99, "data", &need), ZT_ERR_NOT_FOUND);
    EXPECT_EQ(zt_component_read_size(nullptr, i, "data", &need), ZT_ERR_ARGUMENT);
    // Bad arguments.
    EXPECT_EQ(zt_component_read(o.get(), i, "data", nullptr, 0, &written), ZT_ERR_ARGUMENT);
    EXPECT_EQ(zt_component_read(o.get(), i, "data", nullptr, 100, &written), ZT_ERR_ARGUMENT);
    EXPECT_EQ(zt_component_read(o.get(), i, "data", buf.data(), buf.size(), nullptr),
              ZT_ERR_ARGUMENT);
  }
  // read does not fill the cache: the first map still decodes, and maps agree.
  const Mapped m = map_component(o.get(), "packed", "data");
  EXPECT_EQ(m.bytes, t.zstd_data);
}

TEST(Access, CopyModeGivesTheSameBytesAsMapping) {
  const TwoObjects t;
  const TempFile file(t.file);
  zt_open_options opt;
  zt_open_options_init(&opt);
  const Opened mapped = open_file(file, &opt);
  opt.io_mode = ZT_IO_COPY;
  const Opened copied = open_file(file, &opt);
  ASSERT_EQ(mapped.status, ZT_OK) << mapped.error;
  ASSERT_EQ(copied.status, ZT_OK) << copied.error;
  EXPECT_STREQ(zt_manifest_json(mapped.get()), zt_manifest_json(copied.get()));
  for (const char* name : {"raw", "packed"}) {
    const Mapped a = map_component(mapped.get(), name, "data");
    const Mapped b = map_component(copied.get(), name, "data");
    ASSERT_EQ(a.status, ZT_OK);
    ASSERT_EQ(b.status, ZT_OK) << zt_last_error();
    EXPECT_EQ(a.bytes, b.bytes) << name;
    // Copied bytes are cached too.
    EXPECT_EQ(map_component(copied.get(), name, "data").ptr, b.ptr);
    Bytes buf(a.bytes.size());
    uint64_t written = 0;
    EXPECT_EQ(zt_component_read(copied.get(), object_index(copied.get(), name), "data", buf.data(),
                                buf.size(), &written),
              ZT_OK);
    EXPECT_EQ(buf, a.bytes);
  }
  EXPECT_EQ(zt_verify(copied.get(), nullptr, nullptr), ZT_OK) << zt_last_error();
  EXPECT_EQ(zt_prefetch(copied.get(), 0, "data"), ZT_OK);
  EXPECT_EQ(zt_evict(mapped.get(), 0, "data"), ZT_OK);
}

TEST(Access, CopyModeReportsAFileThatShrankAsIo) {
  const TwoObjects t;
  const TempFile file(t.file);
  zt_open_options opt;
  zt_open_options_init(&opt);
  opt.io_mode = ZT_IO_COPY;
  const Opened o = open_file(file, &opt);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  ASSERT_EQ(::truncate(file.path().c_str(), 100), 0);
  const void* p = nullptr;
  uint64_t n = 0;
  EXPECT_TRUE(FailsWith(zt_component_map(o.get(), 0, "data", &p, &n), ZT_ERR_IO, {file.path()}));
  EXPECT_TRUE(FailsWith(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_IO));
}

// A raw component of 16 MiB or more is read in 8 MiB slices on every core
// (zt_component_read, and the cache zt_component_map fills in copy mode):
// the same bytes from memory, a mapping and copy mode, a slice short of
// the end included; a file that shrank under a slice past the first is
// still ZT_ERR_IO, naming the file.
TEST(Access, ALargeRawComponentIsReadInSlicesTheSameEveryWay) {
  const Bytes big = pattern((size_t{40} << 20) + 4099, 9);  // 5 slices, the last short
  FileBuilder b;
  b.dense("big", "u8", {big.size()}, big);
  const Bytes whole = b.build();
  const TempFile file(whole);
  zt_open_options copy;
  zt_open_options_init(&copy);
  copy.io_mode = ZT_IO_COPY;
  const Opened from_memory = open_memory(whole);
  const Opened mapped = open_file(file);
  const Opened copied = open_file(file, &copy);
  for (const Opened* o : {&from_memory, &mapped, &copied}) {
    ASSERT_EQ(o->status, ZT_OK) << o->error;
    Bytes buf(big.size());
    uint64_t written = 0;
    ASSERT_EQ(zt_component_read(o->get(), 0, "data", buf.data(), buf.size(), &written), ZT_OK)
        << zt_last_error();
    EXPECT_EQ(written, big.size());
    EXPECT_TRUE(buf == big);
  }
  const void* p = nullptr;
  uint64_t n = 0;
  ASSERT_EQ(zt_component_map(copied.get(), 0, "data", &p, &n), ZT_OK) << zt_last_error();
  ASSERT_EQ(n, big.size());
  EXPECT_EQ(std::memcmp(p, big.data(), big.size()), 0);
  std::string flags;  // the cache's memory: a GrowingBytes, advised for huge pages
  if (has_transparent_huge_pages()) {
    EXPECT_TRUE(advised_for_huge_pages(p, &flags)) << flags;
  }

  const Opened shrinking = open_file(file, &copy);
  ASSERT_EQ(shrinking.status, ZT_OK) << shrinking.error;
  ASSERT_EQ(::truncate(file.path().c_str(), 64 + (off_t{20} << 20)), 0);  // inside the third slice
  Bytes buf(big.size());
  uint64_t written = 0;
  EXPECT_TRUE(
      FailsWith(zt_component_read(shrinking.get(), 0, "data", buf.data(), buf.size(), &written),
                ZT_ERR_IO, {file.path()}));
  EXPECT_TRUE(
      FailsWith(zt_component_map(shrinking.get(), 0, "data", &p, &n), ZT_ERR_IO, {file.path()}));
}

TEST(Access, OpeningADirectoryOrAnEmptyFileFails) {
  zt_reader* r = nullptr;
  EXPECT_TRUE(FailsWith(zt_open("/", &r), ZT_ERR_IO, {"not a regular file"}));
  // A FIFO is refused at once: its open used to wait for a writer forever
  // (a model's shard name can lead to one).
  const std::string fifo = ::testing::TempDir() + "/zt_access_fifo_" + std::to_string(::getpid());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_TRUE(FailsWith(zt_open(fifo.c_str(), &r), ZT_ERR_IO, {"not a regular file"}));
  ::unlink(fifo.c_str());
  const TempFile empty(Bytes{});
  EXPECT_TRUE(FailsWith(zt_open(empty.path().c_str(), &r), ZT_ERR_FORMAT));
  EXPECT_EQ(r, nullptr);
}

TEST(Access, EvictAndPrefetchKeepTheBytes) {
  const TwoObjects t;
  const Bytes copy = t.file;
  const Opened m = open_memory(t.file);
  ASSERT_EQ(m.status, ZT_OK) << m.error;
  // On a memory reader the hints must not touch the caller's memory.
  EXPECT_EQ(zt_evict(m.get(), 0, "data"), ZT_OK);
  EXPECT_EQ(t.file, copy);
  const TempFile file(t.file);
  const Opened o = open_file(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_EQ(zt_prefetch(o.get(), 0, "data"), ZT_OK);
  EXPECT_EQ(zt_evict(o.get(), 0, "data"), ZT_OK);
  EXPECT_EQ(map_component(o.get(), "raw", "data").bytes, t.raw_data);
  EXPECT_EQ(zt_prefetch(o.get(), 0, "nope"), ZT_ERR_NOT_FOUND);
  EXPECT_EQ(zt_evict(nullptr, 0, "data"), ZT_ERR_ARGUMENT);
}

TEST(Access, EightThreadsMappingOneZstdComponentShareOneDecode) {
  const Bytes data = pattern(1 << 18, 9);
  FileBuilder b;
  b.object("z", "dense", {1 << 16}, Json{{"data", b.zstd("f32", data)}});
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  constexpr int kThreads = 8;
  std::latch start(kThreads);
  std::vector<const void*> ptrs(kThreads);
  std::vector<zt_status> status(kThreads, ZT_ERR_STATE);
  std::vector<int> same(kThreads, 0);  // not vector<bool>: threads write neighbouring elements
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        start.arrive_and_wait();
        uint64_t n = 0;
        status[i] = zt_component_map(o.get(), 0, "data", &ptrs[i], &n);
        same[i] = n == data.size() && std::memcmp(ptrs[i], data.data(), n) == 0;
      });
    }
  }
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_EQ(status[i], ZT_OK) << "thread " << i;
    EXPECT_EQ(ptrs[i], ptrs[0]) << "thread " << i;
    EXPECT_EQ(same[i], 1) << "thread " << i;
  }
}

TEST(Access, ThreadsReadAndVerifyConcurrently) {
  const TwoObjects t;
  const Opened o = open_memory(t.file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  std::vector<int> ok(8, 0);
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < 8; ++i) {
      threads.emplace_back([&, i] {
        Bytes buf(t.zstd_data.size());
        uint64_t n = 0;
        const bool read_ok =
            zt_component_read(o.get(), 1, "data", buf.data(), buf.size(), &n) == ZT_OK &&
            buf == t.zstd_data;
        const bool verify_ok = zt_verify(o.get(), nullptr, nullptr) == ZT_OK;
        const bool json_ok = zt_manifest_json(o.get()) != nullptr;
        ok[i] = read_ok && verify_ok && json_ok;
      });
    }
  }
  EXPECT_EQ(ok, std::vector<int>(8, 1));
}

}  // namespace
}  // namespace zt::test
