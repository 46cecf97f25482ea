// zt_decode_many: many components into caller buffers on several threads,
// with per-request statuses, in mapped and copy mode.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "codec/zstd_seekable.h"
#include "test_files.h"
#include "ztensor.h"

namespace {

std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    v[i] = static_cast<uint8_t>((x >> 24) & 0x0F);  // compressible
  }
  return v;
}

class BatchDecode : public ::testing::TestWithParam<zt_io_mode> {
 protected:
  static constexpr size_t kBig = size_t{6} << 20;  // 6 frames of 1 MiB
  std::string path = ::testing::TempDir() + "batch-" + std::to_string(::getpid()) + ".zt";
  std::vector<uint8_t> big = pattern(kBig, 1), small = pattern(4000, 2);
  zt_reader* r = nullptr;

  void SetUp() override {
    zt_writer_options o;
    zt_writer_options_init(&o);
    o.frame_size = 1 << 20;
    zt_writer* w = nullptr;
    ASSERT_EQ(zt_writer_open_ex(path.c_str(), &o, &w), ZT_OK);
    const uint64_t big_shape[1] = {kBig / 4}, small_shape[1] = {1000}, empty_shape[1] = {0};
    ASSERT_EQ(zt_writer_add_dense(w, "z", "f32", big_shape, 1, big.data(), big.size(), "zstd"), ZT_OK);
    ASSERT_EQ(zt_writer_add_dense(w, "r", "f32", big_shape, 1, big.data(), big.size(), "raw"), ZT_OK);
    ASSERT_EQ(zt_writer_add_dense(w, "s", "f32", small_shape, 1, small.data(), small.size(), "zstd"), ZT_OK);
    ASSERT_EQ(zt_writer_add_dense(w, "e", "f32", empty_shape, 1, nullptr, 0, "raw"), ZT_OK);
    ASSERT_EQ(zt_writer_finish(w), ZT_OK);
    zt_open_options oo;
    zt_open_options_init(&oo);
    oo.io_mode = GetParam();
    ASSERT_EQ(zt_open_ex(path.c_str(), &oo, &r), ZT_OK);
  }
  void TearDown() override {
    zt_close(r);
    ::unlink(path.c_str());
  }

  // A file of the tests' own, opened in this instance's mode.
  static zt::test::Opened open_in_mode(const zt::test::TempFile& file) {
    zt_open_options oo;
    zt_open_options_init(&oo);
    oo.io_mode = GetParam();
    return zt::test::open_file(file, &oo);
  }

  // `values` as raw u8 tensors t0, t1, ... into `file`, replacing it.
  static void write_u8_tensors(const zt::test::TempFile& file,
                               const std::vector<std::vector<uint8_t>>& values) {
    zt_writer* w = nullptr;
    ASSERT_EQ(zt_writer_open(file.path().c_str(), &w), ZT_OK);
    for (size_t i = 0; i < values.size(); ++i) {
      const uint64_t shape[1] = {values[i].size()};
      ASSERT_EQ(zt_writer_add_dense(w, ("t" + std::to_string(i)).c_str(), "u8", shape, 1,
                                    values[i].data(), values[i].size(), "raw"),
                ZT_OK);
    }
    ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  }

  static zt_decode_request request(size_t object, const char* role, void* dst, uint64_t capacity) {
    zt_decode_request q;
    zt_decode_request_init(&q);
    q.object = object;
    q.role = role;
    q.dst = dst;
    q.capacity = capacity;
    return q;
  }
};

TEST_P(BatchDecode, DecodesEveryKindIntoCallerBuffers) {
  std::vector<uint8_t> a(kBig), b(kBig), c(small.size());
  zt_decode_request q[4] = {request(0, "data", a.data(), a.size()), request(1, "data", b.data(), b.size()),
                            request(2, "data", c.data(), c.size()), request(3, "data", nullptr, 0)};
  for (unsigned threads : {1u, 2u, 0u}) {
    std::fill(a.begin(), a.end(), 0xEE);
    std::fill(b.begin(), b.end(), 0xEE);
    ASSERT_EQ(zt_decode_many(r, q, 4, threads), ZT_OK) << zt_last_error();
    EXPECT_EQ(a, big);
    EXPECT_EQ(b, big);
    EXPECT_EQ(c, small);
    EXPECT_EQ(q[0].written, kBig);
    EXPECT_EQ(q[1].written, kBig);
    EXPECT_EQ(q[2].written, small.size());
    EXPECT_EQ(q[3].written, 0u);
    for (const auto& x : q) EXPECT_EQ(x.status, ZT_OK);
  }
}

TEST_P(BatchDecode, EveryRequestGetsItsOwnStatus) {
  std::vector<uint8_t> a(kBig), b(kBig);
  zt_decode_request q[4] = {request(0, "nope", a.data(), a.size()), request(1, "data", b.data(), 100),
                            request(99, "data", a.data(), a.size()), request(0, "data", a.data(), a.size())};
  EXPECT_EQ(zt_decode_many(r, q, 4, 2), ZT_ERR_NOT_FOUND);
  EXPECT_NE(std::string(zt_last_error()).find("no component \"nope\""), std::string::npos) << zt_last_error();
  EXPECT_EQ(q[0].status, ZT_ERR_NOT_FOUND);
  EXPECT_EQ(q[1].status, ZT_ERR_ARGUMENT);  // buffer too small, as zt_component_read
  EXPECT_EQ(q[2].status, ZT_ERR_NOT_FOUND);
  EXPECT_EQ(q[3].status, ZT_OK);  // the others do not stop it
  EXPECT_EQ(q[1].written, 0u);
  EXPECT_EQ(a, big);
}

TEST_P(BatchDecode, ShortBufferForAMultiFrameComponentIsRefused) {
  std::vector<uint8_t> a(kBig - 1);
  zt_decode_request q = request(0, "data", a.data(), a.size());
  EXPECT_EQ(zt_decode_many(r, &q, 1, 0), ZT_ERR_ARGUMENT);
  EXPECT_EQ(q.status, ZT_ERR_ARGUMENT);
}

TEST_P(BatchDecode, UnknownStructSizeIsRefusedBeforeAnyWork) {
  std::vector<uint8_t> a(kBig, 0xEE);
  zt_decode_request q = request(0, "data", a.data(), a.size());
  q.struct_size = 8;
  EXPECT_EQ(zt_decode_many(r, &q, 1, 0), ZT_ERR_ARGUMENT);
  EXPECT_EQ(a[0], 0xEE);
  EXPECT_EQ(zt_decode_many(nullptr, &q, 1, 0), ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_decode_many(r, nullptr, 1, 0), ZT_ERR_ARGUMENT);
  EXPECT_EQ(zt_decode_many(r, nullptr, 0, 0), ZT_OK);
}

// zt_decode_ranges: parts of components, each told to a callback once.
zt_decode_range range(size_t object, uint64_t offset, void* dst, uint64_t length) {
  zt_decode_range q;
  zt_decode_range_init(&q);
  q.object = object;
  q.role = "data";
  q.offset = offset;
  q.dst = dst;
  q.length = length;
  return q;
}

struct Completions {
  std::mutex m;
  std::vector<std::pair<size_t, zt_status>> seen;
  static void record(void* ctx, size_t index, zt_status status) {
    auto* self = static_cast<Completions*>(ctx);
    std::lock_guard<std::mutex> lock(self->m);
    self->seen.emplace_back(index, status);
  }
};

TEST_P(BatchDecode, RangesStitchEveryComponentBackTogether) {
  // Pieces of odd sizes that cut frames (1 MiB) and raw slices anywhere;
  // objects 0 (6 frames), 1 (raw), 2 (one small frame).
  const uint64_t piece[3] = {(uint64_t{1} << 20) / 3 + 7, 999'983, 333};
  std::vector<uint8_t> out[3] = {std::vector<uint8_t>(kBig, 0xEE), std::vector<uint8_t>(kBig, 0xEE),
                                 std::vector<uint8_t>(small.size(), 0xEE)};
  std::vector<zt_decode_range> ranges;
  for (size_t o = 0; o < 3; ++o)
    for (uint64_t at = 0; at < out[o].size(); at += piece[o]) {
      const uint64_t n = std::min<uint64_t>(piece[o], out[o].size() - at);
      ranges.push_back(range(o, at, out[o].data() + at, n));
    }
  Completions done;
  ASSERT_EQ(zt_decode_ranges(r, ranges.data(), ranges.size(), 0, &Completions::record, &done),
            ZT_OK)
      << zt_last_error();
  EXPECT_EQ(out[0], big);
  EXPECT_EQ(out[1], big);
  EXPECT_EQ(out[2], small);
  ASSERT_EQ(done.seen.size(), ranges.size());  // once each
  std::sort(done.seen.begin(), done.seen.end());
  for (size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_EQ(done.seen[i], std::make_pair(i, ZT_OK));
    EXPECT_EQ(ranges[i].written, ranges[i].length);
  }
}

TEST_P(BatchDecode, ARangeInsideOneFrameWritesOnlyItsBytes) {
  std::vector<uint8_t> a(kBig + 2, 0xEE);
  const uint64_t at = (uint64_t{3} << 20) + 5, n = 1000;
  zt_decode_range q = range(0, at, a.data() + 1, n);
  ASSERT_EQ(zt_decode_ranges(r, &q, 1, 2, nullptr, nullptr), ZT_OK) << zt_last_error();
  EXPECT_EQ(a[0], 0xEE);
  EXPECT_EQ(a[n + 1], 0xEE);
  EXPECT_TRUE(std::equal(a.begin() + 1, a.begin() + 1 + n, big.begin() + at));
}

TEST_P(BatchDecode, RangesOutsideTheDecodedBytesAreRefusedAlone) {
  std::vector<uint8_t> a(kBig), b(64), c(small.size());
  zt_decode_range q[5] = {range(0, kBig - 10, b.data(), 11),       // past the end of frames
                          range(1, kBig + 1, b.data(), 0),         // starts past raw data
                          range(2, 1, c.data(), small.size()),     // one byte too many, one frame
                          range(0, 0, a.data(), kBig),             // fine
                          range(1, UINT64_MAX - 3, b.data(), 8)};  // offset + length overflows
  Completions done;
  EXPECT_EQ(zt_decode_ranges(r, q, 5, 0, &Completions::record, &done), ZT_ERR_ARGUMENT);
  EXPECT_NE(std::string(zt_last_error()).find("not within"), std::string::npos) << zt_last_error();
  for (size_t i : {0u, 1u, 2u, 4u}) {
    EXPECT_EQ(q[i].status, ZT_ERR_ARGUMENT) << i;
    EXPECT_EQ(q[i].written, 0u) << i;
  }
  EXPECT_EQ(q[3].status, ZT_OK);
  EXPECT_EQ(a, big);
  std::sort(done.seen.begin(), done.seen.end());
  ASSERT_EQ(done.seen.size(), 5u);
  for (size_t i = 0; i < 5; ++i)
    EXPECT_EQ(done.seen[i], std::make_pair(i, static_cast<zt_status>(q[i].status)));
}

TEST_P(BatchDecode, RefusedRangesAreToldToo) {
  std::vector<uint8_t> a(16);
  zt_decode_range q[2] = {range(99, 0, a.data(), 4), range(1, 0, nullptr, 4)};
  Completions done;
  EXPECT_EQ(zt_decode_ranges(r, q, 2, 0, &Completions::record, &done), ZT_ERR_NOT_FOUND);
  EXPECT_EQ(q[1].status, ZT_ERR_ARGUMENT);  // dst NULL
  ASSERT_EQ(done.seen.size(), 2u);
  q[0].struct_size = 4;
  done.seen.clear();
  EXPECT_EQ(zt_decode_ranges(r, q, 2, 0, &Completions::record, &done), ZT_ERR_ARGUMENT);
  EXPECT_TRUE(done.seen.empty());  // refused before any work: nothing to tell
}

// A 1.x stream whose frames stop indexing it after the walk has queued
// some (its last frame records no content size): the request is then read
// whole, as zt_component_read reads it, once the frames queued have ended,
// and each request is told once.
TEST_P(BatchDecode, AStreamWhoseLastFrameRecordsNoSizeIsReadWhole) {
  namespace t = zt::test;
  const t::Bytes data = t::pattern(6 * 4096 + 100, 3);
  t::Bytes stored;
  for (size_t at = 0; at < data.size(); at += 4096) {
    const size_t n = std::min<size_t>(4096, data.size() - at);
    t::append(stored, t::zstd_compress(std::span(data).subspan(at, n), at + n < data.size()));
  }
  t::FileBuilder b;
  t::Json c = b.raw("u8", stored);
  c["encoding"] = "zstd";
  c["uncompressed_length"] = data.size();
  b.object("w", "dense", {data.size()}, t::Json{{"data", c}});
  const t::TempFile file(b.build());
  const t::Opened o = open_in_mode(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;

  t::Bytes read(data.size());
  uint64_t n = 0;
  ASSERT_EQ(zt_component_read(o.get(), 0, "data", read.data(), read.size(), &n), ZT_OK);
  ASSERT_EQ(read, data);
  for (unsigned threads : {1u, 2u, 4u}) {
    t::Bytes whole(data.size(), 0xEE);
    zt_decode_request q = request(0, "data", whole.data(), whole.size());
    ASSERT_EQ(zt_decode_many(o.get(), &q, 1, threads), ZT_OK) << zt_last_error();
    EXPECT_EQ(q.written, data.size());
    EXPECT_EQ(whole, data);
    // Ranges that cut frames: each request walks the stream on its own.
    t::Bytes parts(data.size(), 0xEE);
    const uint64_t cuts[] = {0, 5000, 13000, data.size()};
    std::vector<zt_decode_range> ranges;
    for (int i = 0; i < 3; ++i)
      ranges.push_back(range(0, cuts[i], parts.data() + cuts[i], cuts[i + 1] - cuts[i]));
    Completions done;
    ASSERT_EQ(zt_decode_ranges(o.get(), ranges.data(), ranges.size(), threads,
                               &Completions::record, &done),
              ZT_OK)
        << zt_last_error();
    EXPECT_EQ(parts, data);
    std::sort(done.seen.begin(), done.seen.end());
    ASSERT_EQ(done.seen.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(done.seen[i], std::make_pair(i, ZT_OK));
      EXPECT_EQ(ranges[i].written, ranges[i].length);
    }
  }
}

// A v2 seekable stream's frames are found from its seek table, each checked
// against its entry as the walk reaches it: an entry whose checksum is not
// its frame's (the frame itself intact, so zstd would decode it) is refused
// as zt_component_read refuses it, and so is a range that takes bytes of
// that frame; a range that takes nothing of it checks what it reads, as
// zt_dense_rows does, and gets its bytes (in every mode).
TEST_P(BatchDecode, EverySeekableFrameIsCheckedAgainstItsEntry) {
  namespace t = zt::test;
  const t::Bytes data = t::pattern(6 * 4096 + 100, 4);
  t::Bytes stored;
  ASSERT_TRUE(zt::seekable_compress(data, 4096, 3, stored).ok());
  const size_t frames = 7, table = 8 + frames * 12 + zt::kSeekableFooterBytes;
  stored[stored.size() - table + 8 + 2 * 12 + 8] ^= 1;  // frame 2's checksum in the table
  t::FileBuilderV2 b;
  b.object("w", "dense", {data.size()}, t::Json{{"data", b.raw("u8", stored)}});
  b.part("w", "data")["encoding"] = "zt.zstd-seekable/1";
  b.part("w", "data")["decoded_length"] = data.size();
  const t::TempFile file(b.build());
  const t::Opened o = open_in_mode(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;

  t::Bytes out(data.size());
  uint64_t n = 0;
  EXPECT_TRUE(t::FailsWith(zt_component_read(o.get(), 0, "data", out.data(), out.size(), &n),
                           ZT_ERR_INVALID, {"frame 2", "checksum"}));
  for (unsigned threads : {1u, 2u}) {
    zt_decode_request q = request(0, "data", out.data(), out.size());
    EXPECT_TRUE(t::FailsWith(zt_decode_many(o.get(), &q, 1, threads), ZT_ERR_INVALID,
                             {"frame 2", "checksum"}));
    EXPECT_EQ(q.status, ZT_ERR_INVALID);
    zt_decode_range g = range(0, 2 * 4096 - 10, out.data(), 4096 + 20);
    EXPECT_TRUE(t::FailsWith(zt_decode_ranges(o.get(), &g, 1, threads, nullptr, nullptr),
                             ZT_ERR_INVALID, {"frame 2", "checksum"}));
    std::fill(out.begin(), out.end(), 0);
    g = range(0, 0, out.data(), 2 * 4096);
    EXPECT_EQ(zt_decode_ranges(o.get(), &g, 1, threads, nullptr, nullptr), ZT_OK)
        << zt_last_error();
    EXPECT_TRUE(std::equal(data.begin(), data.begin() + 2 * 4096, out.begin()));
    uint64_t got = 0;
    EXPECT_EQ(zt_dense_rows(o.get(), 0, 0, 2 * 4096, out.data(), out.size(), &got), ZT_OK);
    EXPECT_TRUE(
        t::FailsWith(zt_dense_rows(o.get(), 0, 2 * 4096, 3 * 4096, out.data(), out.size(), &got),
                     ZT_ERR_INVALID, {"frame 2", "checksum"}));
  }
}

// Small raw tensors are read together (Plan gathers: one read_many each,
// a preadv(2) per run of neighbours from a file). 1,100 tensors of 1 to
// 3,000 bytes, some runs split by a 2 MiB tensor between them (read on
// its own: a gap no preadv bridges), more than one gather's 1,024 reads:
// each whole request gets exactly its bytes, however large its buffer; a
// range request and a second request for the same bytes (reads that
// overlap) too.
TEST_P(BatchDecode, SmallRawTensorsReadTogetherGiveEachItsBytes) {
  const zt::test::TempFile file(zt::test::Bytes{});
  std::vector<std::vector<uint8_t>> values;
  for (size_t i = 0; i < 1100; ++i)
    values.push_back(pattern(i % 400 == 399 ? size_t{2} << 20 : 1 + (i * 7919) % 3000,
                             static_cast<uint32_t>(i)));
  write_u8_tensors(file, values);
  const zt::test::Opened o = open_in_mode(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  constexpr uint8_t kUntouched = 0xEE;
  std::vector<std::vector<uint8_t>> out;
  std::vector<zt_decode_request> q;
  for (size_t i = 0; i < values.size(); ++i) {
    out.emplace_back(values[i].size() + 16, kUntouched);  // a capacity beyond the tensor
    q.push_back(request(i, "data", out.back().data(), out.back().size()));
  }
  out.emplace_back(values[5].size(), kUntouched);  // object 5 again: the same bytes twice
  q.push_back(request(5, "data", out.back().data(), out.back().size()));
  for (unsigned threads : {1u, 0u}) {
    for (auto& b : out) std::fill(b.begin(), b.end(), kUntouched);
    ASSERT_EQ(zt_decode_many(o.get(), q.data(), q.size(), threads), ZT_OK) << zt_last_error();
    for (size_t i = 0; i < q.size(); ++i) {
      const auto& want = values[i < values.size() ? i : 5];
      ASSERT_EQ(q[i].status, ZT_OK) << i;
      ASSERT_EQ(q[i].written, want.size()) << i;
      ASSERT_TRUE(std::equal(want.begin(), want.end(), out[i].begin())) << i;
      ASSERT_TRUE(std::all_of(out[i].begin() + want.size(), out[i].end(),
                              [](uint8_t b) { return b == kUntouched; }))
          << "request " << i << " wrote past its tensor";
    }
  }
  std::vector<uint8_t> part(1000, kUntouched);
  zt_decode_range one[2] = {range(399, 5000, part.data(), 500), range(3, 1, part.data() + 500, 2)};
  ASSERT_EQ(zt_decode_ranges(o.get(), one, 2, 2, nullptr, nullptr), ZT_OK) << zt_last_error();
  EXPECT_TRUE(std::equal(part.begin(), part.begin() + 500, values[399].begin() + 5000));
  EXPECT_TRUE(std::equal(part.begin() + 500, part.begin() + 502, values[3].begin() + 1));
  EXPECT_EQ(part[502], kUntouched);
}

// A file cut short after the open: the tensors still inside it are read,
// each one past the cut fails alone with ZT_ERR_IO (in map mode too: small
// reads together are read with preadv, not copied out of the mapping,
// which would raise SIGBUS).
TEST_P(BatchDecode, TensorsPastTheEndOfAShrunkFileFailAlone) {
  const zt::test::TempFile file(zt::test::Bytes{});
  std::vector<std::vector<uint8_t>> values;
  for (size_t i = 0; i < 80; ++i) values.push_back(pattern(1000, static_cast<uint32_t>(i)));
  write_u8_tensors(file, values);
  const zt::test::Opened o = open_in_mode(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  // 1.2's layout: the first component at byte 64, each 1,000-byte one
  // padded to 1,024; object 40's bytes are where the file is cut.
  const uint64_t offset_40 = 64 + 40 * 1024;
  {
    std::ifstream in(file.path(), std::ios::binary);
    std::vector<uint8_t> at(1000);
    in.seekg(static_cast<std::streamoff>(offset_40));
    in.read(reinterpret_cast<char*>(at.data()), 1000);
    ASSERT_EQ(at, values[40]);
  }
  ASSERT_EQ(::truncate(file.path().c_str(), static_cast<off_t>(offset_40)), 0);
  std::vector<std::vector<uint8_t>> out(values.size(), std::vector<uint8_t>(1000));
  std::vector<zt_decode_request> q;
  for (size_t i = 0; i < values.size(); ++i)
    q.push_back(request(i, "data", out[i].data(), out[i].size()));
  EXPECT_EQ(zt_decode_many(o.get(), q.data(), q.size(), 2), ZT_ERR_IO);
  for (size_t i = 0; i < values.size(); ++i) {
    if (i < 40) {
      EXPECT_EQ(q[i].status, ZT_OK) << i;
      EXPECT_EQ(out[i], values[i]) << i;
    } else {
      EXPECT_EQ(q[i].status, ZT_ERR_IO) << i;
      EXPECT_EQ(q[i].written, 0u) << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, BatchDecode, ::testing::Values(ZT_IO_MAP, ZT_IO_COPY));

}  // namespace
