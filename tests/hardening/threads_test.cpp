// Eight threads share one reader: they open their own readers of the same
// file, then, released together, map the same zstd components for the
// first time (one decode, everyone gets the same bytes), read, render the
// manifest JSON, look names up, fail calls (thread-local messages) and
// verify. Run under ThreadSanitizer (-DZT_SANITIZE=thread) this is the
// race detector's test; in a normal build it checks the results.
#include <barrier>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "hardening_support.h"

namespace zt::hardening {
namespace {

constexpr int kThreads = 8;

std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>((i / 64 + seed) * 2654435761u >> 24);
  return b;
}

class SharedReader : public testing::Test {
 protected:
  void SetUp() override {
    // big: 8 MiB in eight 1 MiB zstd frames (the parallel decode path);
    // small: one small frame; raw: mapped in place; csr: a sparse object.
    big = pattern(8 << 20, 1);
    small = pattern(4096, 2);
    raw = pattern(1 << 16, 3);
    zt_writer_options opt;
    zt_writer_options_init(&opt);
    opt.threads = 2;
    opt.frame_size = 1 << 20;
    zt_writer* w = nullptr;
    ASSERT_EQ(zt_writer_open_ex(path.c_str(), &opt, &w), ZT_OK);
    const uint64_t big_shape[] = {big.size() / 4};
    ASSERT_EQ(zt_writer_add_dense(w, "big", "f32", big_shape, 1, big.data(), big.size(), "zstd"),
              ZT_OK);
    const uint64_t small_shape[] = {small.size() / 2};
    ASSERT_EQ(
        zt_writer_add_dense(w, "small", "u16", small_shape, 1, small.data(), small.size(), "zstd"),
        ZT_OK);
    const uint64_t raw_shape[] = {raw.size()};
    ASSERT_EQ(zt_writer_add_dense(w, "raw", "u8", raw_shape, 1, raw.data(), raw.size(), "raw"),
              ZT_OK);
    const uint64_t csr_shape[] = {3, 4};
    ASSERT_EQ(zt_writer_begin_object(w, "csr", "sparse_csr", csr_shape, 2), ZT_OK);
    const float values[] = {1, 2, 3};
    const uint64_t indices[] = {0, 3, 1}, indptr[] = {0, 2, 2, 3};
    ASSERT_EQ(zt_writer_add_component(w, "values", "f32", nullptr, values, sizeof values, "zstd"),
              ZT_OK);
    ASSERT_EQ(zt_writer_add_component(w, "indices", "u64", nullptr, indices, sizeof indices, "raw"),
              ZT_OK);
    ASSERT_EQ(zt_writer_add_component(w, "indptr", "u64", nullptr, indptr, sizeof indptr, "zstd"),
              ZT_OK);
    ASSERT_EQ(zt_writer_end_object(w), ZT_OK);
    ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  }

  ScratchDir dir;
  std::string path = dir.file("shared.zt");
  std::vector<uint8_t> big, small, raw;
};

// What one thread saw.
struct Seen {
  std::string failure;  // empty if every check passed
  const void* big = nullptr;
  const void* small = nullptr;
  const char* json = nullptr;
};

TEST_F(SharedReader, EightThreadsOpenMapReadDecodeAndVerify) {
  zt_reader* shared = nullptr;
  ASSERT_EQ(zt_open(path.c_str(), &shared), ZT_OK) << zt_last_error();
  std::barrier start(kThreads);
  std::vector<Seen> seen(kThreads);

  auto work = [&](int t) {
    Seen& s = seen[t];
    auto fail = [&](const std::string& what) {
      if (s.failure.empty()) s.failure = what + ": " + zt_last_error();
    };
    // Concurrent opens of the same file, each with its own reader.
    zt_reader* own = nullptr;
    if (zt_open(path.c_str(), &own) != ZT_OK) fail("zt_open");
    size_t big_index = 0, small_index = 0, raw_index = 0, csr_index = 0;
    if (zt_object_find(shared, "big", &big_index) ||
        zt_object_find(shared, "small", &small_index) ||
        zt_object_find(shared, "raw", &raw_index) || zt_object_find(shared, "csr", &csr_index))
      fail("zt_object_find");

    start.arrive_and_wait();  // everyone decodes "big" for the first time at once
    uint64_t n = 0;
    if (zt_component_map(shared, big_index, "data", &s.big, &n) != ZT_OK || n != big.size() ||
        std::memcmp(s.big, big.data(), n) != 0)
      fail("map big");
    if (zt_component_map(shared, small_index, "data", &s.small, &n) != ZT_OK || n != small.size() ||
        std::memcmp(s.small, small.data(), n) != 0)
      fail("map small");
    const void* r = nullptr;
    if (zt_component_map(shared, raw_index, "data", &r, &n) != ZT_OK || n != raw.size() ||
        std::memcmp(r, raw.data(), n) != 0)
      fail("map raw");
    const void* v = nullptr;
    if (zt_component_map(shared, csr_index, t % 2 ? "values" : "indptr", &v, &n) != ZT_OK)
      fail("map csr");

    // Reads into private buffers (no cache) while others use the cache.
    std::vector<uint8_t> buf(big.size());
    uint64_t written = 0;
    if (zt_component_read(shared, big_index, "data", buf.data(), buf.size(), &written) != ZT_OK ||
        written != big.size() || buf != big)
      fail("read big");
    s.json = zt_manifest_json(shared);
    if (!s.json || !std::strstr(s.json, "\"csr\"")) fail("zt_manifest_json");

    // The error message is per thread.
    const std::string missing = "missing-" + std::to_string(t);
    size_t idx = 0;
    if (zt_object_find(shared, missing.c_str(), &idx) != ZT_ERR_NOT_FOUND) fail("find missing");
    std::this_thread::yield();
    if (!std::strstr(zt_last_error(), missing.c_str()))
      s.failure = "message of another thread: " + std::string(zt_last_error());

    uint64_t checked = 0, unchecked = 0;
    if (zt_verify(shared, &checked, &unchecked) != ZT_OK || checked != 6 || unchecked != 0)
      fail("verify shared");
    if (own && zt_verify(own, nullptr, nullptr) != ZT_OK) fail("verify own");
    zt_close(own);
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(work, t);
  for (auto& th : threads) th.join();

  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(seen[t].failure, "") << "thread " << t;
    // One decode: the same cached bytes for everyone.
    EXPECT_EQ(seen[t].big, seen[0].big) << "thread " << t;
    EXPECT_EQ(seen[t].small, seen[0].small) << "thread " << t;
    EXPECT_EQ(seen[t].json, seen[0].json) << "thread " << t;
  }
  zt_close(shared);
}

TEST_F(SharedReader, FirstDecodeFailureIsTheSameForEveryThread) {
  // A corrupt zstd component (its frame magic broken): every thread
  // racing to decode it first gets the same error, none crashes.
  std::vector<uint8_t> file = read_file(path);
  zt_reader* probe = nullptr;
  ASSERT_EQ(zt_open_memory(file.data(), file.size(), &probe), ZT_OK);
  size_t small_index = 0;
  ASSERT_EQ(zt_object_find(probe, "small", &small_index), ZT_OK);
  const char* json = zt_manifest_json(probe);
  ASSERT_NE(json, nullptr);
  const std::string j = json;
  zt_close(probe);
  // The small component's offset, from the manifest JSON.
  const size_t at = j.find("\"offset\"", j.find("\"small\""));
  ASSERT_NE(at, std::string::npos);
  const uint64_t offset = std::stoull(j.substr(j.find(':', at) + 1));
  file[offset] ^= 0xFF;

  zt_reader* shared = nullptr;
  ASSERT_EQ(zt_open_memory(file.data(), file.size(), &shared), ZT_OK);
  std::barrier start(kThreads);
  std::vector<zt_status> got(kThreads, ZT_OK);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      const void* p = nullptr;
      uint64_t n = 0;
      got[t] = zt_component_map(shared, small_index, "data", &p, &n);
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_NE(got[t], ZT_OK) << "thread " << t;
    EXPECT_EQ(got[t], got[0]) << "thread " << t;
  }
  zt_close(shared);
}

}  // namespace
}  // namespace zt::hardening
