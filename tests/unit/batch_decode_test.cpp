// zt_decode_many: many components into caller buffers on several threads,
// with per-request statuses, in mapped and copy mode.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

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

INSTANTIATE_TEST_SUITE_P(Modes, BatchDecode, ::testing::Values(ZT_IO_MAP, ZT_IO_COPY));

}  // namespace
