// zt_dense_slice: N-d boxes of dense objects against the same box cut out
// of the whole data, for every rank, dtype width and storage (raw mapped,
// raw in copy mode, one zstd frame, many frames), the typed variants, the
// refusals, and proof that only the frames holding the box are decoded.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "test_files.h"

namespace zt::test {
namespace {

struct Dense {
  std::vector<uint64_t> shape;
  std::string dtype;  // f32, i16, f64, or c64 (f32 + type complex64)
  unsigned width = 4;
  unsigned ratio = 1;  // storage elements per element
  Bytes bytes;
};

class Slice : public testing::Test {
 protected:
  // One object "x", written by the library with `encoding` and frames of
  // frame_size bytes; opened in map or copy mode.
  ReaderPtr write_and_open(const Dense& d, const char* encoding, uint64_t frame_size, bool copy,
                           unsigned file_version = 0) {
    const std::string path = dir_ + "/s.zt";
    zt_writer_options wo;
    zt_writer_options_init(&wo);
    wo.frame_size = frame_size;
    wo.file_version = file_version;
    zt_writer* w = nullptr;
    EXPECT_EQ(zt_writer_open_ex(path.c_str(), &wo, &w), ZT_OK) << zt_last_error();
    const bool complex = d.dtype == "c64";
    EXPECT_EQ(zt_writer_begin_object(w, "x", "dense", d.shape.data(), d.shape.size()), ZT_OK);
    EXPECT_EQ(zt_writer_add_component(w, "data", complex ? "f32" : d.dtype.c_str(),
                                      complex ? "complex64" : nullptr, d.bytes.data(),
                                      d.bytes.size(), encoding),
              ZT_OK)
        << zt_last_error();
    EXPECT_EQ(zt_writer_end_object(w), ZT_OK) << zt_last_error();
    EXPECT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
    zt_open_options o;
    zt_open_options_init(&o);
    o.io_mode = copy ? ZT_IO_COPY : ZT_IO_MAP;
    zt_reader* r = nullptr;
    EXPECT_EQ(zt_open_ex(path.c_str(), &o, &r), ZT_OK) << zt_last_error();
    return ReaderPtr(r);
  }

  TempDir tmp_{"zt_slice_"};
  const std::string dir_ = tmp_.path();
};

Dense make_dense(std::vector<uint64_t> shape, const std::string& dtype, std::mt19937& rng) {
  Dense d;
  d.shape = std::move(shape);
  d.dtype = dtype;
  d.width = dtype == "i16" ? 2 : dtype == "f64" ? 8 : 4;
  d.ratio = dtype == "c64" ? 2 : 1;
  uint64_t n = d.ratio;
  for (const uint64_t s : d.shape) n *= s;
  d.bytes.resize(n * d.width);
  // Small integers in every element, so that f32 conversions are exact.
  for (uint64_t i = 0; i < n; ++i) {
    const int v = static_cast<int>(rng() % 2001) - 1000;
    if (d.dtype == "i16") {
      const auto x = static_cast<int16_t>(v);
      std::memcpy(&d.bytes[i * 2], &x, 2);
    } else if (d.dtype == "f64") {
      const double x = v;
      std::memcpy(&d.bytes[i * 8], &x, 8);
    } else {
      const float x = static_cast<float>(v);
      std::memcpy(&d.bytes[i * 4], &x, 4);
    }
  }
  return d;
}

// The box cut out of the whole data, element by element (the reference).
Bytes cut(const Dense& d, const std::vector<uint64_t>& begin, const std::vector<uint64_t>& end) {
  const size_t n = d.shape.size();
  const uint64_t elem = d.width * d.ratio;
  Bytes out;
  uint64_t count = 1;
  for (size_t k = 0; k < n; ++k) count *= end[k] - begin[k];
  if (count == 0) return out;
  std::vector<uint64_t> idx(begin);
  for (uint64_t e = 0; e < count; ++e) {
    uint64_t flat = 0;
    for (size_t k = 0; k < n; ++k) flat = flat * d.shape[k] + idx[k];
    out.insert(out.end(), d.bytes.begin() + static_cast<ptrdiff_t>(flat * elem),
               d.bytes.begin() + static_cast<ptrdiff_t>((flat + 1) * elem));
    for (size_t k = n; k-- > 0;) {
      if (++idx[k] < end[k]) break;
      idx[k] = begin[k];
    }
  }
  return out;
}

std::vector<float> as_f32(const Dense& d, const Bytes& b) {
  std::vector<float> out(b.size() / d.width);
  for (size_t i = 0; i < out.size(); ++i) {
    if (d.dtype == "i16") {
      int16_t x;
      std::memcpy(&x, &b[i * 2], 2);
      out[i] = x;
    } else if (d.dtype == "f64") {
      double x;
      std::memcpy(&x, &b[i * 8], 8);
      out[i] = static_cast<float>(x);
    } else {
      std::memcpy(&out[i], &b[i * 4], 4);
    }
  }
  return out;
}

TEST_F(Slice, EveryBoxEqualsTheSameBoxCutFromTheWholeData) {
  std::mt19937 rng(20261126);
  const std::vector<std::vector<uint64_t>> shapes = {{},           {7},      {5, 6},   {3, 4, 5},
                                                     {2, 3, 1, 4}, {64, 40}, {3, 1, 9}};
  const char* dtypes[] = {"f32", "i16", "f64", "c64"};
  struct Storage {
    const char* encoding;
    uint64_t frame;
    bool copy;
  };
  // Frames of 1 KiB (the least allowed) over a 64 x 40 f64 object: 20 frames.
  const Storage storages[] = {{"raw", 1 << 20, false},
                              {"raw", 1 << 20, true},
                              {"zstd", 1 << 20, false},
                              {"zstd", 1024, false},
                              {"zstd", 1024, true}};
  int boxes = 0;
  for (const auto& shape : shapes)
    for (const char* dtype : dtypes)
      for (const Storage& st : storages) {
        const Dense d = make_dense(shape, dtype, rng);
        const ReaderPtr r = write_and_open(d, st.encoding, st.frame, st.copy);
        ASSERT_NE(r, nullptr);
        for (int trial = 0; trial < 12; ++trial) {
          std::vector<uint64_t> begin(shape.size()), end(shape.size());
          for (size_t k = 0; k < shape.size(); ++k) {
            begin[k] = rng() % (shape[k] + 1);
            end[k] = begin[k] + rng() % (shape[k] - begin[k] + 1);
            if (trial % 3 == 0) begin[k] = 0, end[k] = shape[k];  // whole dims, too
          }
          const Bytes want = cut(d, begin, end);
          Bytes got(want.size() + 8, 0xEE);
          uint64_t written = 0;
          ASSERT_EQ(zt_dense_slice(r.get(), 0, shape.size(), begin.data(), end.data(), got.data(),
                                   got.size(), &written),
                    ZT_OK)
              << zt_last_error();
          ASSERT_EQ(written, want.size());
          got.resize(written);
          ASSERT_EQ(got, want) << dtype << " " << st.encoding << " frame " << st.frame << " trial "
                               << trial;
          std::vector<float> f(want.size() / d.width + 1);
          ASSERT_EQ(zt_dense_slice_f32(r.get(), 0, shape.size(), begin.data(), end.data(), f.data(),
                                       f.size(), &written),
                    ZT_OK)
              << zt_last_error();
          f.resize(written);
          EXPECT_EQ(f, as_f32(d, want));
          ++boxes;
        }
      }
  EXPECT_EQ(boxes, 7 * 4 * 5 * 12);
}

TEST_F(Slice, RefusalsAreArgumentErrorsThatWriteNothing) {
  std::mt19937 rng(1);
  const Dense d = make_dense({4, 6}, "f32", rng);
  const ReaderPtr r = write_and_open(d, "raw", 1 << 20, false);
  std::vector<uint8_t> dst(1024, 0xEE);
  uint64_t written = 77;
  const uint64_t b2[] = {1, 2}, e2[] = {3, 5}, bad_end[] = {3, 7}, inverted[] = {3, 1};
  const uint64_t b1[] = {1}, e1[] = {2};
  EXPECT_TRUE(FailsWith(zt_dense_slice(r.get(), 0, 1, b1, e1, dst.data(), dst.size(), &written),
                        ZT_ERR_ARGUMENT, {"2 dimensions", "gives 1"}));
  EXPECT_TRUE(
      FailsWith(zt_dense_slice(r.get(), 0, 2, b2, bad_end, dst.data(), dst.size(), &written),
                ZT_ERR_ARGUMENT, {"[2, 7) is not within [0, 6) in dimension 1"}));
  EXPECT_TRUE(
      FailsWith(zt_dense_slice(r.get(), 0, 2, b2, inverted, dst.data(), dst.size(), &written),
                ZT_ERR_ARGUMENT));
  EXPECT_TRUE(
      FailsWith(zt_dense_slice(r.get(), 0, 2, nullptr, e2, dst.data(), dst.size(), &written),
                ZT_ERR_ARGUMENT, {"NULL"}));
  // 2 x 3 f32 = 24 bytes into 23.
  EXPECT_TRUE(FailsWith(zt_dense_slice(r.get(), 0, 2, b2, e2, dst.data(), 23, &written),
                        ZT_ERR_ARGUMENT, {"24 bytes", "23"}));
  EXPECT_EQ(dst[0], 0xEE);
  EXPECT_EQ(written, 77u);
  EXPECT_TRUE(FailsWith(zt_dense_slice(r.get(), 5, 2, b2, e2, dst.data(), dst.size(), &written),
                        ZT_ERR_NOT_FOUND));
  // An empty extent is an empty box.
  const uint64_t eb[] = {2, 2}, ee[] = {2, 6};
  ASSERT_EQ(zt_dense_slice(r.get(), 0, 2, eb, ee, dst.data(), 0, &written), ZT_OK);
  EXPECT_EQ(written, 0u);
}

// zt_dense_slice of object 0's box [begin, end) into `out` (its size is the
// capacity), cut to the bytes written when it succeeds.
zt_status read_box(const zt_reader* r, const std::vector<uint64_t>& begin,
                   const std::vector<uint64_t>& end, Bytes& out) {
  uint64_t written = 0;
  const zt_status st = zt_dense_slice(r, 0, begin.size(), begin.data(), end.data(), out.data(),
                                      out.size(), &written);
  if (st == ZT_OK) out.resize(written);
  return st;
}

// A box of many runs in copy mode (a rank's columns: 2,048 runs of 6 KiB,
// 12 MiB) is read in shares on every core (several on the 2-core machines);
// a file cut short after the open fails the box with ZT_ERR_IO, whichever
// share holds the cut, and the box before the cut still reads.
TEST_F(Slice, ALargeBoxInCopyModeIsReadInSharesAndFailsPastACut) {
  std::mt19937 rng(7);
  const Dense d = make_dense({2048, 2048}, "f32", rng);
  const ReaderPtr r = write_and_open(d, "raw", 1 << 20, true);
  ASSERT_NE(r, nullptr);
  const std::vector<uint64_t> begin = {0, 100}, end = {2048, 1636};
  const Bytes want = cut(d, begin, end);
  Bytes got(want.size(), 0xEE);
  ASSERT_EQ(read_box(r.get(), begin, end, got), ZT_OK) << zt_last_error();
  EXPECT_TRUE(got == want);
  // Cut the file in the middle of row 1,536 (data starts near the front):
  // the last share of the runs, on any core count, holds the cut.
  std::filesystem::resize_file(dir_ + "/s.zt", 1536 * 2048 * 4);
  EXPECT_TRUE(FailsWith(read_box(r.get(), begin, end, got), ZT_ERR_IO));
  const std::vector<uint64_t> before = {1024, 1200};
  got.assign(want.size(), 0xEE);
  ASSERT_EQ(read_box(r.get(), begin, before, got), ZT_OK) << zt_last_error();
  EXPECT_TRUE(got == cut(d, begin, before));
}

// A box or rows of compressed data of 4 MiB and more decode their frames in
// shares on every core (several on the 2-core machines), a frame that two
// shares cut decoded by both: 12 MiB of columns and 14 MiB of rows of a
// 16 MiB object in frames of 96 KiB (no share ends on a frame's end), as
// 1.x zstd, v2 seekable zstd and v2 byte planes, mapped and in copy mode.
TEST_F(Slice, LargeBoxesAndRowsOfFramesDecodeInSharesAsTheWholeData) {
  std::mt19937 rng(9);
  const Dense d = make_dense({2048, 2048}, "f32", rng);
  struct Storage {
    const char* encoding;
    unsigned version;
  };
  for (const Storage st : {Storage{"zstd", 0}, Storage{"zstd", 2}, Storage{"planes", 2}})
    for (const bool copy : {false, true}) {
      const ReaderPtr r = write_and_open(d, st.encoding, 96 << 10, copy, st.version);
      ASSERT_NE(r, nullptr);
      const std::vector<uint64_t> begin = {0, 100}, end = {2048, 1636};
      Bytes got(12 << 20, 0xEE);
      ASSERT_EQ(read_box(r.get(), begin, end, got), ZT_OK) << zt_last_error();
      EXPECT_TRUE(got == cut(d, begin, end))
          << st.encoding << " v" << st.version << " copy " << copy;
      const Bytes rows = cut(d, {100, 0}, {1900, 2048});
      got.assign(rows.size(), 0xEE);
      uint64_t written = 0;
      ASSERT_EQ(zt_dense_rows(r.get(), 0, 100, 1900, got.data(), got.size(), &written), ZT_OK)
          << zt_last_error();
      EXPECT_EQ(written, rows.size());
      EXPECT_TRUE(got == rows) << st.encoding << " v" << st.version << " copy " << copy;
    }
}

TEST_F(Slice, OnlyTheFramesHoldingTheBoxAreDecoded) {
  // 256 rows of 1 KiB (256 f32) in 1 KiB frames: one frame per row. A
  // corrupt frame outside the box does not stop the slice; reading the
  // whole object fails on it.
  std::mt19937 rng(7);
  const Dense d = make_dense({256, 256}, "f32", rng);
  const ReaderPtr r0 = write_and_open(d, "zstd", 1024, false);
  // Where the component is stored; then junk over the end of its last
  // frame (row 255) on disk.
  const std::string path = dir_ + "/s.zt";
  const Json m = Json::parse(zt_manifest_json(r0.get()));
  const uint64_t off = m["objects"]["x"]["components"]["data"]["offset"];
  const uint64_t len = m["objects"]["x"]["components"]["data"]["length"];
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(off + len - 40));
    const char junk[8] = {'\x55', '\x55', '\x55', '\x55', '\x55', '\x55', '\x55', '\x55'};
    f.write(junk, 8);
  }
  zt_reader* raw = nullptr;
  ASSERT_EQ(zt_open(path.c_str(), &raw), ZT_OK) << zt_last_error();
  const ReaderPtr r(raw);
  const uint64_t begin[] = {10, 64}, end[] = {20, 96};
  std::vector<float> box(10 * 32);
  uint64_t written = 0;
  ASSERT_EQ(zt_dense_slice_f32(r.get(), 0, 2, begin, end, box.data(), box.size(), &written), ZT_OK)
      << zt_last_error();
  EXPECT_EQ(written, box.size());
  EXPECT_EQ(as_f32(d, cut(d, {10, 64}, {20, 96})), box);
  std::vector<float> all(256 * 256);
  EXPECT_NE(zt_object_read_f32(r.get(), 0, all.data(), all.size(), &written), ZT_OK);
  // The corrupt frame holds the last row: a box that reaches it fails.
  const uint64_t last_b[] = {250, 0}, last_e[] = {256, 8};
  EXPECT_NE(zt_dense_slice_f32(r.get(), 0, 2, last_b, last_e, box.data(), box.size(), &written),
            ZT_OK);
}

TEST_F(Slice, F4E2m1BoxesConvertAndWholeRowsHaveAByteForm) {
  // v2 f4_e2m1: 3 x 5 values, two a byte (low nibble first), 8 bytes.
  const uint64_t shape[] = {3, 5};
  Bytes packed(8);
  for (size_t i = 0; i < packed.size(); ++i)
    packed[i] = static_cast<uint8_t>((2 * i) | ((2 * i + 1) << 4));
  packed.back() &= 0x0F;  // the nibble after the last value is zero
  const std::string path = dir_ + "/f4.zt";
  zt_writer_options wo;
  zt_writer_options_init(&wo);
  wo.file_version = 2;
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open_ex(path.c_str(), &wo, &w), ZT_OK) << zt_last_error();
  ASSERT_EQ(zt_writer_begin_object(w, "x", "dense", shape, 2), ZT_OK) << zt_last_error();
  ASSERT_EQ(
      zt_writer_add_component(w, "data", "u8", "f4_e2m1", packed.data(), packed.size(), "raw"),
      ZT_OK)
      << zt_last_error();
  ASSERT_EQ(zt_writer_end_object(w), ZT_OK) << zt_last_error();
  ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  zt_reader* raw = nullptr;
  ASSERT_EQ(zt_open(path.c_str(), &raw), ZT_OK) << zt_last_error();
  const ReaderPtr r(raw);
  std::vector<float> all(15);
  uint64_t written = 0;
  ASSERT_EQ(zt_object_read_f32(r.get(), 0, all.data(), all.size(), &written), ZT_OK);
  const uint64_t b[] = {1, 1}, e[] = {3, 4};
  std::vector<float> box(6);
  ASSERT_EQ(zt_dense_slice_f32(r.get(), 0, 2, b, e, box.data(), box.size(), &written), ZT_OK)
      << zt_last_error();
  EXPECT_EQ(box, (std::vector<float>{all[6], all[7], all[8], all[11], all[12], all[13]}));
  Bytes bytes(8);
  EXPECT_TRUE(FailsWith(zt_dense_slice(r.get(), 0, 2, b, e, bytes.data(), bytes.size(), &written),
                        ZT_ERR_UNSUPPORTED, {"zt_dense_slice_f32"}));
  const uint64_t rb[] = {0, 0}, re[] = {2, 5};  // rows 0 and 1: values 0..9, bytes 0..4
  ASSERT_EQ(zt_dense_slice(r.get(), 0, 2, rb, re, bytes.data(), bytes.size(), &written), ZT_OK)
      << zt_last_error();
  EXPECT_EQ(Bytes(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(written)),
            Bytes(packed.begin(), packed.begin() + 5));
}

}  // namespace
}  // namespace zt::test
