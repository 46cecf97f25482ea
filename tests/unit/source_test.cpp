// zt_open_source: a file read through a caller's callbacks. Every call
// gives what the same file opened by path gives; the open reads the tail,
// then the magic with the manifest (two callbacks); later calls read only
// their ranges; short reads, failures and lies of the callbacks become
// precise statuses; `close` runs exactly once; a source without
// ZT_SOURCE_CONCURRENT is never entered by two threads at once.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "source/http_response.h"
#include "source/io.h"
#include "source/range_source.h"
#include "test_files.h"

namespace zt::test {
namespace {

// A file in memory behind the callbacks, recording what was asked.
struct Remote {
  Bytes file;
  size_t max_chunk = SIZE_MAX;      // short reads: at most this many bytes per call
  uint64_t fail_at = UINT64_MAX;    // a read touching this offset fails...
  zt_status fail_with = ZT_ERR_IO;  // ...with this status
  uint64_t end_at = UINT64_MAX;     // the data "ends" here (reads return 0 bytes)
  bool overclaim = false;           // *done says one byte more than asked
  zt_status size_status = ZT_OK;
  std::mutex mu;
  std::vector<std::pair<uint64_t, size_t>> reads;  // (offset, length) of each call
  uint64_t bytes = 0;
  int closed = 0;
  std::atomic<int> inside{0};
  std::atomic<int> most_inside{0};

  static zt_status read_at(void* ctx, uint64_t off, size_t len, void* buf, size_t* done) {
    auto* r = static_cast<Remote*>(ctx);
    const int now = ++r->inside;
    for (int seen = r->most_inside.load();
         now > seen && !r->most_inside.compare_exchange_weak(seen, now);) {
    }
    std::this_thread::yield();
    zt_status st = ZT_OK;
    {
      std::lock_guard lock(r->mu);
      r->reads.emplace_back(off, len);
    }
    if (off <= r->fail_at && r->fail_at < off + len) {
      st = r->fail_with;
    } else if (off >= r->end_at) {
      *done = 0;
    } else {
      const size_t n = std::min({len, r->max_chunk, static_cast<size_t>(r->end_at - off)});
      std::memcpy(buf, r->file.data() + off, n);
      *done = r->overclaim ? len + 1 : n;
      std::lock_guard lock(r->mu);
      r->bytes += n;
    }
    --r->inside;
    return st;
  }
  static zt_status size(void* ctx, uint64_t* out) {
    auto* r = static_cast<Remote*>(ctx);
    *out = r->file.size();
    return r->size_status;
  }
  static void close(void* ctx) { ++static_cast<Remote*>(ctx)->closed; }

  zt_source source(uint32_t flags = 0) {
    zt_source s;
    zt_source_init(&s);
    s.flags = flags;
    s.ctx = this;
    s.read_at = read_at;
    s.size = size;
    s.close = close;
    s.name = "test://remote/model.zt";
    return s;
  }
  void forget() {
    std::lock_guard lock(mu);
    reads.clear();
    bytes = 0;
  }
};

Opened open_source(Remote& remote, const zt_open_options* opt = nullptr, uint32_t flags = 0) {
  const zt_source s = remote.source(flags);
  zt_reader* r = nullptr;
  Opened o;
  o.status = zt_open_source(&s, opt, &r);
  o.error = zt_last_error();
  o.reader.reset(r);
  return o;
}

class Source : public testing::Test {
 protected:
  // `count` small raw objects t0..., one 64 KiB raw object "big", one
  // zstd object "z" of 1 MiB in 64 KiB frames, with xxh3 digests.
  Bytes write_model(size_t count) {
    const std::string path = dir_ + "/m.zt";
    zt_writer_options wo;
    zt_writer_options_init(&wo);
    wo.frame_size = 64 << 10;
    zt_writer* w = nullptr;
    EXPECT_EQ(zt_writer_open_ex(path.c_str(), &wo, &w), ZT_OK) << zt_last_error();
    for (size_t i = 0; i < count; ++i) {
      const std::vector<float> v{static_cast<float>(i), 1.5f, -2.0f};
      const uint64_t shape[] = {3};
      EXPECT_EQ(zt_writer_add_dense(w, numbered("t", i).c_str(), "f32", shape, 1, v.data(),
                                    v.size() * 4, "raw"),
                ZT_OK)
          << zt_last_error();
    }
    const Bytes big = pattern(64 << 10, 7);
    const uint64_t big_shape[] = {128, 128};
    EXPECT_EQ(zt_writer_add_dense(w, "big", "f32", big_shape, 2, big.data(), big.size(), "raw"),
              ZT_OK);
    const Bytes z = pattern(1 << 20, 3);
    const uint64_t z_shape[] = {512, 512};
    EXPECT_EQ(zt_writer_add_dense(w, "z", "f32", z_shape, 2, z.data(), z.size(), "zstd"), ZT_OK);
    EXPECT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), {});
  }

  // A file of one dense zstd object "m" of `dtype` written with `wo`.
  template <typename T>
  Bytes write_one_zstd(const char* file, const zt_writer_options& wo, const char* dtype,
                       std::span<const uint64_t> shape, const std::vector<T>& values) {
    const std::string path = dir_ + "/" + file;
    zt_writer* w = nullptr;
    EXPECT_EQ(zt_writer_open_ex(path.c_str(), &wo, &w), ZT_OK) << zt_last_error();
    EXPECT_EQ(zt_writer_add_dense(w, "m", dtype, shape.data(), shape.size(), values.data(),
                                  values.size() * sizeof(T), "zstd"),
              ZT_OK)
        << zt_last_error();
    EXPECT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), {});
  }

  TempDir tmp_{"zt_source_"};
  const std::string dir_ = tmp_.path();
};

size_t index_of(zt_reader* r, const char* name) {
  size_t i = SIZE_MAX;
  EXPECT_EQ(zt_object_find(r, name, &i), ZT_OK) << name;
  return i;
}

Bytes read_all(zt_reader* r, size_t object, const char* role) {
  uint64_t n = 0;
  EXPECT_EQ(zt_component_decoded_size(r, object, role, &n), ZT_OK) << zt_last_error();
  Bytes out(n);
  uint64_t written = 0;
  EXPECT_EQ(zt_component_read(r, object, role, out.data(), out.size(), &written), ZT_OK)
      << zt_last_error();
  EXPECT_EQ(written, n);
  return out;
}

TEST_F(Source, EveryCallGivesWhatTheFileGives) {
  Remote remote;
  remote.file = write_model(20);
  const Opened local = open_memory(remote.file);
  ASSERT_EQ(local.status, ZT_OK) << local.error;
  const Opened o = open_source(remote);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  zt_reader* r = o.get();
  EXPECT_STREQ(zt_manifest_json(r), zt_manifest_json(local.get()));
  EXPECT_STREQ(zt_file_version(r), "1.2.0");
  EXPECT_STREQ(zt_file_format(r), "zt");
  ASSERT_EQ(zt_object_count(r), 22u);
  for (size_t i = 0; i < zt_object_count(r); ++i) {
    EXPECT_EQ(read_all(r, i, "data"), read_all(local.get(), i, "data")) << i;
    const void* p = nullptr;
    uint64_t n = 0;
    ASSERT_EQ(zt_component_map(r, i, "data", &p, &n), ZT_OK) << zt_last_error();
    const Bytes mapped(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
    EXPECT_EQ(mapped, read_all(local.get(), i, "data")) << i;
  }
  // Views, slices and the batch decoder.
  zt_dense_info v;
  zt_dense_info_init(&v);
  ASSERT_EQ(zt_dense_view(r, index_of(r, "big"), &v), ZT_OK) << zt_last_error();
  EXPECT_EQ(v.zero_copy, 0u);
  const uint64_t begin[] = {10, 32}, end[] = {20, 40};
  std::vector<float> a(80), b(80);
  uint64_t wa = 0, wb = 0;
  ASSERT_EQ(zt_dense_slice_f32(r, index_of(r, "z"), 2, begin, end, a.data(), a.size(), &wa), ZT_OK)
      << zt_last_error();
  ASSERT_EQ(zt_dense_slice_f32(local.get(), index_of(local.get(), "z"), 2, begin, end, b.data(),
                               b.size(), &wb),
            ZT_OK);
  EXPECT_EQ(wa, 80u);
  EXPECT_EQ(a, b);
  std::vector<zt_decode_request> reqs(zt_object_count(r));
  std::vector<Bytes> outs(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    zt_decode_request_init(&reqs[i]);
    reqs[i].object = i;
    reqs[i].role = "data";
    outs[i].resize(1 << 20);
    reqs[i].dst = outs[i].data();
    reqs[i].capacity = outs[i].size();
  }
  ASSERT_EQ(zt_decode_many(r, reqs.data(), reqs.size(), 4), ZT_OK) << zt_last_error();
  for (size_t i = 0; i < reqs.size(); ++i) {
    outs[i].resize(reqs[i].written);
    EXPECT_EQ(outs[i], read_all(local.get(), i, "data")) << i;
  }
  uint64_t checked = 0, unchecked = 0;
  ASSERT_EQ(zt_verify(r, &checked, &unchecked), ZT_OK) << zt_last_error();
  EXPECT_EQ(checked, 22u);
  EXPECT_EQ(unchecked, 0u);
  // Without ZT_SOURCE_CONCURRENT, one call at a time even with 4 threads.
  EXPECT_EQ(remote.most_inside.load(), 1);
}

TEST_F(Source, OpenReadsTheTailThenTheMagicWithTheManifest) {
  Remote remote;
  remote.file = write_model(10000);  // a manifest far beyond the 64 KiB tail
  uint64_t msize = 0;                // the manifest size before the footer
  std::memcpy(&msize, remote.file.data() + remote.file.size() - 16, 8);
  ASSERT_GT(msize, 256u << 10);
  const Opened o = open_source(remote);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  ASSERT_EQ(remote.reads.size(), 3u);  // tail; then magic and manifest, one read_many
  EXPECT_EQ(remote.reads[0].first, remote.file.size() - (64 << 10));
  EXPECT_EQ(remote.reads[1], (std::pair<uint64_t, size_t>{0, 8}));
  EXPECT_LE(remote.bytes, msize + 16 + (64 << 10) + 8);
  // One 64 KiB tensor costs its own bytes, nothing more.
  remote.forget();
  const Bytes big = read_all(o.get(), index_of(o.get(), "big"), "data");
  EXPECT_EQ(big.size(), 64u << 10);
  EXPECT_EQ(remote.bytes, 64u << 10);
  ASSERT_EQ(remote.reads.size(), 1u);
  // A small component read twice is fetched once (the cache).
  remote.forget();
  const size_t t5 = index_of(o.get(), "t5");
  EXPECT_EQ(read_all(o.get(), t5, "data"), read_all(o.get(), t5, "data"));
  EXPECT_EQ(remote.reads.size(), 1u);
}

// zt_decode_many of many small tensors calls the source once per run of
// neighbours (decode_many gathers them; RangeSource::read_many reads a run
// with one call), not once a tensor, and gives each its bytes.
TEST_F(Source, ManySmallTensorsAreFetchedInFewCalls) {
  Remote remote;
  remote.file = write_model(3000);  // t0...: 12 bytes each, 64 apart
  const Opened local = open_memory(remote.file);
  ASSERT_EQ(local.status, ZT_OK) << local.error;
  const Opened o = open_source(remote);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  std::vector<zt_decode_request> reqs(3000);
  std::vector<Bytes> outs(reqs.size(), Bytes(12));
  for (size_t i = 0; i < reqs.size(); ++i) {
    zt_decode_request_init(&reqs[i]);
    reqs[i].object = index_of(o.get(), numbered("t", i).c_str());
    reqs[i].role = "data";
    reqs[i].dst = outs[i].data();
    reqs[i].capacity = outs[i].size();
  }
  remote.forget();
  ASSERT_EQ(zt_decode_many(o.get(), reqs.data(), reqs.size(), 2), ZT_OK) << zt_last_error();
  EXPECT_LE(remote.reads.size(), 3u);  // 3 gathers of at most 1,024 tensors
  EXPECT_LE(remote.bytes, 3000u * 64);
  for (size_t i = 0; i < reqs.size(); i += 97)
    EXPECT_EQ(outs[i], read_all(local.get(), reqs[i].object, "data")) << i;
}

// Small zstd tensors too: their stored bytes are fetched together into
// the cache first (3 calls for 300, not 300); where that fetch fails, each
// tensor is fetched again on its own, and only the one whose bytes fail
// gets the error, raw or zstd alike.
TEST_F(Source, SmallZstdTensorsAreFetchedTogetherAndFailAlone) {
  const std::string path = dir_ + "/z.zt";
  std::vector<Bytes> values;
  {
    zt_writer* w = nullptr;
    ASSERT_EQ(zt_writer_open(path.c_str(), &w), ZT_OK) << zt_last_error();
    for (size_t i = 0; i < 300; ++i) {
      values.push_back(pattern(4000, static_cast<uint8_t>(i)));
      const uint64_t shape[] = {1000};
      ASSERT_EQ(zt_writer_add_dense(w, numbered("z", i).c_str(), "f32", shape, 1,
                                    values.back().data(), 4000, i % 2 ? "raw" : "zstd"),
                ZT_OK)
          << zt_last_error();
    }
    ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  }
  Remote remote;
  std::ifstream in(path, std::ios::binary);
  remote.file = Bytes(std::istreambuf_iterator<char>(in), {});
  // Where a component's bytes start, from the manifest's JSON.
  auto offset_of = [](zt_reader* r, const std::string& name) {
    const std::string json = zt_manifest_json(r);
    const size_t at = json.find("\"offset\":", json.find("\"" + name + "\""));
    return std::stoull(json.substr(at + 9));
  };
  auto decode_all = [&](zt_reader* r, std::vector<Bytes>& outs) {
    std::vector<zt_decode_request> reqs(values.size());
    outs.assign(values.size(), Bytes(4000));
    for (size_t i = 0; i < reqs.size(); ++i) {
      zt_decode_request_init(&reqs[i]);
      reqs[i].object = index_of(r, numbered("z", i).c_str());
      reqs[i].role = "data";
      reqs[i].dst = outs[i].data();
      reqs[i].capacity = outs[i].size();
    }
    (void)zt_decode_many(r, reqs.data(), reqs.size(), 2);
    return reqs;
  };
  {
    const Opened o = open_source(remote);
    ASSERT_EQ(o.status, ZT_OK) << o.error;
    remote.forget();
    std::vector<Bytes> outs;
    for (const auto& q : decode_all(o.get(), outs)) ASSERT_EQ(q.status, ZT_OK);
    EXPECT_LE(remote.reads.size(), 4u);  // one gather of 150 raw, one fetch of 150 zstd
    for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(outs[i], values[i]) << i;
  }
  for (const size_t bad : {size_t{40}, size_t{41}}) {  // a zstd tensor, a raw one
    const Opened o = open_source(remote);
    ASSERT_EQ(o.status, ZT_OK) << o.error;
    remote.fail_at = offset_of(o.get(), numbered("z", bad)) + 10;
    std::vector<Bytes> outs;
    const auto reqs = decode_all(o.get(), outs);
    remote.fail_at = UINT64_MAX;
    for (size_t i = 0; i < values.size(); ++i) {
      if (i == bad) {
        EXPECT_EQ(reqs[i].status, ZT_ERR_IO) << i;
      } else {
        EXPECT_EQ(reqs[i].status, ZT_OK) << i;
        EXPECT_EQ(outs[i], values[i]) << i;
      }
    }
  }
}

TEST_F(Source, ACacheOfFewBytesKeepsNothingBig) {
  Remote remote;
  remote.file = write_model(3);
  zt_open_options opt;
  zt_open_options_init(&opt);
  opt.cache_bytes = 32;  // keeps reads of at most 8 bytes
  const Opened o = open_source(remote, &opt);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  remote.forget();
  const size_t t1 = index_of(o.get(), "t1");
  EXPECT_EQ(read_all(o.get(), t1, "data"), read_all(o.get(), t1, "data"));
  EXPECT_EQ(remote.reads.size(), 2u);  // 12 bytes: not kept, fetched each time
}

TEST_F(Source, ALargeReadIsNotSplitByCachedPieces) {
  Remote remote;
  remote.file = write_model(2);
  zt_open_options opt;
  zt_open_options_init(&opt);
  opt.cache_bytes = 128 << 10;  // keeps reads up to 32 KiB; "big" is 64 KiB
  const Opened o = open_source(remote, &opt);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const size_t big = index_of(o.get(), "big");
  const uint64_t begin[] = {0, 16}, end[] = {128, 24};  // 128 runs of 32 bytes, now cached
  std::vector<float> cols(128 * 8);
  uint64_t w = 0;
  ASSERT_EQ(zt_dense_slice_f32(o.get(), big, 2, begin, end, cols.data(), cols.size(), &w), ZT_OK)
      << zt_last_error();
  remote.forget();
  const Bytes all = read_all(o.get(), big, "data");
  EXPECT_EQ(remote.reads.size(), 1u);  // one read, not one per gap between cached runs
  const Opened local = open_memory(remote.file);
  EXPECT_EQ(all, read_all(local.get(), index_of(local.get(), "big"), "data"));
}

TEST_F(Source, ASliceOf1xZstdFetchesThePrefixThatReachesIt) {
  // "z": 1 MiB of f32 [512, 512] in 1.2's zstd frames of 64 KiB (32 rows
  // each), no seek table: where a frame ends is known only by reading it.
  Remote remote;
  remote.file = write_model(3);
  const std::string path = dir_ + "/m.zt";
  zt_reader* raw = nullptr;
  ASSERT_EQ(zt_open(path.c_str(), &raw), ZT_OK) << zt_last_error();
  ReaderPtr local(raw);
  const size_t z = index_of(local.get(), "z");
  const Bytes all = read_all(local.get(), z, "data");
  uint64_t stored = 0;
  ASSERT_EQ(zt_component_stored_size(local.get(), z, "data", &stored), ZT_OK);
  Opened o = open_source(remote);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const auto value = [&](uint64_t row, uint64_t col) {
    float f;
    std::memcpy(&f, all.data() + (row * 512 + col) * 4, 4);
    return f;
  };
  const auto slice = [&](uint64_t r0, uint64_t r1, uint64_t c0, uint64_t c1) {
    remote.forget();
    const uint64_t begin[] = {r0, c0}, end[] = {r1, c1};
    std::vector<float> box((r1 - r0) * (c1 - c0));
    uint64_t written = 0;
    EXPECT_EQ(zt_dense_slice_f32(o.get(), z, 2, begin, end, box.data(), box.size(), &written),
              ZT_OK)
        << zt_last_error();
    for (uint64_t r = r0; r < r1; ++r)
      for (uint64_t c = c0; c < c1; ++c)
        EXPECT_EQ(box[(r - r0) * (c1 - c0) + c - c0], value(r, c)) << r << "," << c;
  };
  // Rows 40..50 lie in frame 1: the first two frames' bytes and a margin
  // are fetched in one read, not the 16 frames.
  slice(40, 50, 10, 20);
  EXPECT_EQ(remote.reads.size(), 1u);
  EXPECT_LT(remote.bytes, stored / 2) << remote.bytes << " of " << stored;
  // The last rows need every frame before them.
  slice(500, 512, 0, 512);
  EXPECT_LE(remote.bytes, stored);
  // Every row: the whole component, decoded frame by frame.
  slice(0, 512, 511, 512);
  // Rows read as rows (zt_dense_rows) take the same path.
  {
    Opened fresh = open_source(remote);  // nothing cached
    ASSERT_EQ(fresh.status, ZT_OK) << fresh.error;
    remote.forget();
    std::vector<float> rows(10 * 512);
    uint64_t written = 0;
    ASSERT_EQ(zt_dense_rows_f32(fresh.get(), z, 40, 50, rows.data(), rows.size(), &written), ZT_OK)
        << zt_last_error();
    EXPECT_EQ(rows[0], value(40, 0));
    EXPECT_EQ(rows.back(), value(49, 511));
    EXPECT_EQ(remote.reads.size(), 1u);
    EXPECT_LT(remote.bytes, stored / 2) << remote.bytes << " of " << stored;
  }

  // The same slices from a file in copy mode.
  zt_open_options opt;
  zt_open_options_init(&opt);
  opt.io_mode = ZT_IO_COPY;
  ASSERT_EQ(zt_open_ex(path.c_str(), &opt, &raw), ZT_OK) << zt_last_error();
  ReaderPtr copy(raw);
  const uint64_t begin[] = {40, 10}, end[] = {50, 20};
  std::vector<float> box(100);
  uint64_t written = 0;
  ASSERT_EQ(zt_dense_slice_f32(copy.get(), z, 2, begin, end, box.data(), box.size(), &written),
            ZT_OK)
      << zt_last_error();
  EXPECT_EQ(box[0], value(40, 10));
  EXPECT_EQ(box[99], value(49, 19));

  // A stream that is not frames (its first magic damaged): the walk gives
  // up and the whole decode names the object.
  const Json mj = Json::parse(zt_manifest_json(o.get()));
  const uint64_t blob = mj["objects"]["z"]["components"]["data"]["offset"].get<uint64_t>();
  remote.file[blob] ^= 0xff;
  o = open_source(remote);  // nothing cached
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const uint64_t top[] = {40, 10}, top_end[] = {42, 12};
  std::vector<float> corner(4);
  EXPECT_TRUE(FailsWith(zt_dense_slice_f32(o.get(), z, 2, top, top_end, corner.data(), 4, &written),
                        ZT_ERR_INVALID, {"object \"z\""}));
}

TEST_F(Source, ASliceOfOneLargeZstdFrameFetchesItOnce) {
  // 24 MiB of noise in one zstd frame (other writers' usual form): a slice
  // must decode it whole; a 64 KiB probe tells so before a large prefix is
  // fetched, so the component's bytes are fetched once, not twice.
  zt_writer_options wo;
  zt_writer_options_init(&wo);
  wo.frame_size = 32 << 20;
  std::vector<uint32_t> m(3 << 21);  // [3072, 2048]
  uint32_t x = 2463534242u;
  for (uint32_t& v : m) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    v = x;
  }
  const uint64_t shape[] = {3072, 2048};
  Remote remote;
  remote.file = write_one_zstd("one.zt", wo, "u32", shape, m);
  const Opened o = open_source(remote);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  uint64_t stored = 0;
  ASSERT_EQ(zt_component_stored_size(o.get(), 0, "data", &stored), ZT_OK);
  ASSERT_GT(stored, uint64_t{20} << 20);
  remote.forget();
  const uint64_t begin[] = {3000, 7}, end[] = {3072, 9};
  std::vector<uint32_t> box(72 * 2);
  uint64_t written = 0;
  ASSERT_EQ(zt_dense_slice(o.get(), 0, 2, begin, end, box.data(), box.size() * 4, &written), ZT_OK)
      << zt_last_error();
  EXPECT_EQ(box[0], m[3000 * 2048 + 7]);
  EXPECT_EQ(box.back(), m[3071 * 2048 + 8]);
  EXPECT_LE(remote.bytes, stored + (64 << 10)) << remote.bytes << " for " << stored << " stored";
  // Decoded once into the reader's cache: the next slice reads nothing.
  remote.forget();
  ASSERT_EQ(zt_dense_slice(o.get(), 0, 2, begin, end, box.data(), box.size() * 4, &written), ZT_OK);
  EXPECT_EQ(remote.bytes, 0u);
}

TEST_F(Source, ASliceOfSeekableZstdFetchesTheTableAndItsFrames) {
  // v2: 1 MiB of f32 [512, 512] in seekable frames of 64 KiB (32 rows each).
  const std::string path = dir_ + "/v2.zt";
  zt_writer_options wo;
  zt_writer_options_init(&wo);
  wo.file_version = 2;
  wo.frame_size = 64 << 10;
  std::vector<float> m(512 * 512);
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<float>(i % 9973);
  const uint64_t shape[] = {512, 512};
  Remote remote;
  remote.file = write_one_zstd("v2.zt", wo, "f32", shape, m);
  const Opened o = open_source(remote);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  uint64_t stored = 0;
  ASSERT_EQ(zt_component_stored_size(o.get(), 0, "data", &stored), ZT_OK);
  ASSERT_STREQ(zt_component_encoding_id(o.get(), 0, "data"), "zt.zstd-seekable/1");

  // Rows 40..50, columns 10..20: all in frame 1 (rows 32..63).
  remote.forget();
  const uint64_t begin[] = {40, 10}, end[] = {50, 20};
  std::vector<float> box(100);
  uint64_t written = 0;
  ASSERT_EQ(zt_dense_slice_f32(o.get(), 0, 2, begin, end, box.data(), box.size(), &written), ZT_OK)
      << zt_last_error();
  for (uint64_t r = 0; r < 10; ++r)
    for (uint64_t c = 0; c < 10; ++c)
      ASSERT_EQ(box[r * 10 + c], m[(40 + r) * 512 + 10 + c]) << r << "," << c;
  // The footer, the table (both may be in the cache from the open's tail),
  // one frame: at most three reads, a small part of the blob.
  EXPECT_LE(remote.reads.size(), 3u);
  EXPECT_LT(remote.bytes, stored / 4) << remote.bytes << " of " << stored;

  // Rows 33..40 (zt_dense_rows): the same reads, frame 1 only.
  remote.forget();
  std::vector<float> rows(7 * 512);
  ASSERT_EQ(zt_dense_rows_f32(o.get(), 0, 33, 40, rows.data(), rows.size(), &written), ZT_OK)
      << zt_last_error();
  EXPECT_EQ(rows[0], m[33 * 512]);
  EXPECT_EQ(rows.back(), m[40 * 512 - 1]);
  EXPECT_LE(remote.reads.size(), 3u);
  EXPECT_LT(remote.bytes, stored / 4) << remote.bytes << " of " << stored;

  // The same from a file in copy mode (pread only those ranges).
  zt_open_options opt;
  zt_open_options_init(&opt);
  opt.io_mode = ZT_IO_COPY;
  zt_reader* raw = nullptr;
  ASSERT_EQ(zt_open_ex(path.c_str(), &opt, &raw), ZT_OK) << zt_last_error();
  ReaderPtr copy(raw);
  std::vector<float> box2(100);
  ASSERT_EQ(zt_dense_slice_f32(copy.get(), 0, 2, begin, end, box2.data(), box2.size(), &written),
            ZT_OK);
  EXPECT_EQ(box, box2);

  // A damaged frame outside the box does not matter; inside it, it is named.
  const Json mj = Json::parse(zt_manifest_json(o.get()));
  const uint64_t blob = mj["objects"]["m"]["components"]["data"]["offset"].get<uint64_t>();
  remote.file[blob + 10] ^= 0xff;  // inside frame 0
  const uint64_t top[] = {0, 0}, top_end[] = {2, 2};
  std::vector<float> corner(4);
  EXPECT_EQ(zt_dense_slice_f32(o.get(), 0, 2, begin, end, box.data(), box.size(), &written), ZT_OK)
      << zt_last_error();
  EXPECT_TRUE(FailsWith(zt_dense_slice_f32(o.get(), 0, 2, top, top_end, corner.data(), 4, &written),
                        ZT_ERR_INVALID, {"object \"m\""}));
}

TEST_F(Source, ShortReadsGiveTheSameBytes) {
  Remote remote;
  remote.file = write_model(5);
  remote.max_chunk = 7;
  const Opened o = open_source(remote);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const Opened local = open_memory(remote.file);
  for (size_t i = 0; i < zt_object_count(o.get()); ++i)
    EXPECT_EQ(read_all(o.get(), i, "data"), read_all(local.get(), i, "data")) << i;
  uint64_t checked = 0;
  EXPECT_EQ(zt_verify(o.get(), &checked, nullptr), ZT_OK) << zt_last_error();
  EXPECT_EQ(checked, 7u);
}

TEST_F(Source, CallbackFailuresArePreciseStatuses) {
  Bytes file = write_model(5);
  {  // at open: the status the callback gave, named
    Remote remote;
    remote.file = file;
    remote.fail_at = 3;
    remote.fail_with = ZT_ERR_LIMIT;
    const Opened o = open_source(remote);
    EXPECT_EQ(o.status, ZT_ERR_LIMIT);
    EXPECT_NE(o.error.find("test://remote/model.zt: read_at(0, 8) returned ZT_ERR_LIMIT"),
              std::string::npos)
        << o.error;
    EXPECT_EQ(remote.closed, 1);
  }
  {  // later: the component read fails, the reader stays usable
    Remote remote;
    remote.file = file;
    const Opened o = open_source(remote);
    ASSERT_EQ(o.status, ZT_OK) << o.error;
    const size_t big = index_of(o.get(), "big");
    uint64_t offset = 0;
    const Json m = Json::parse(zt_manifest_json(o.get()));
    offset = m["objects"]["big"]["components"]["data"]["offset"].get<uint64_t>();
    remote.fail_at = offset + 100;
    Bytes out(64 << 10);
    uint64_t written = 0;
    EXPECT_TRUE(FailsWith(zt_component_read(o.get(), big, "data", out.data(), out.size(), &written),
                          ZT_ERR_IO, {"test://remote/model.zt: read_at(", "returned ZT_ERR_IO"}));
    remote.fail_at = UINT64_MAX;
    EXPECT_EQ(zt_component_read(o.get(), big, "data", out.data(), out.size(), &written), ZT_OK);
    EXPECT_EQ(remote.closed, 0);
  }
  {  // a name that is a pre-signed URL is shown without its credentials
    Remote remote;
    remote.file = file;
    remote.fail_at = 3;
    zt_source s = remote.source();
    s.name = "https://user:secret@store.example/m.zt?X-Signature=hidden#frag";
    zt_reader* r = nullptr;
    EXPECT_TRUE(FailsWith(zt_open_source(&s, nullptr, &r), ZT_ERR_IO,
                          {"https://store.example/m.zt: read_at(0, 8) returned ZT_ERR_IO"}));
    const std::string message = zt_last_error();
    EXPECT_EQ(message.find("secret"), std::string::npos) << message;
    EXPECT_EQ(message.find("hidden"), std::string::npos) << message;
    EXPECT_EQ(r, nullptr);
  }
  {  // a status this library does not know reads as ZT_ERR_IO
    Remote remote;
    remote.file = file;
    remote.fail_at = 0;
    remote.fail_with = static_cast<zt_status>(13);
    EXPECT_EQ(open_source(remote).status, ZT_ERR_IO);
  }
  {  // data that ends before the size
    Remote remote;
    remote.file = file;
    remote.end_at = file.size() - 10;
    const Opened o = open_source(remote);
    EXPECT_EQ(o.status, ZT_ERR_IO);
    EXPECT_NE(o.error.find("the data ended at"), std::string::npos) << o.error;
    EXPECT_EQ(remote.closed, 1);
  }
  {  // a callback that claims more than it was asked
    Remote remote;
    remote.file = file;
    remote.overclaim = true;
    const Opened o = open_source(remote);
    EXPECT_EQ(o.status, ZT_ERR_IO);
    EXPECT_NE(o.error.find("says it read"), std::string::npos) << o.error;
  }
  {  // the size callback's failure
    Remote remote;
    remote.file = file;
    remote.size_status = ZT_ERR_NOT_FOUND;
    const Opened o = open_source(remote);
    EXPECT_EQ(o.status, ZT_ERR_NOT_FOUND);
    EXPECT_NE(o.error.find("the size callback returned ZT_ERR_NOT_FOUND"), std::string::npos);
    EXPECT_EQ(remote.closed, 1);
  }
  {  // a truncated file: the size is believed, the footer is not there
    Remote remote;
    remote.file = Bytes(file.begin(), file.end() - 5);
    const Opened o = open_source(remote);
    EXPECT_EQ(o.status, ZT_ERR_FORMAT) << o.error;
    EXPECT_EQ(remote.closed, 1);
  }
}

TEST_F(Source, ArgumentsAreChecked) {
  Remote remote;
  remote.file = write_model(1);
  zt_reader* r = nullptr;
  EXPECT_EQ(zt_open_source(nullptr, nullptr, &r), ZT_ERR_ARGUMENT);
  zt_source s = remote.source();
  s.read_at = nullptr;
  EXPECT_TRUE(FailsWith(zt_open_source(&s, nullptr, &r), ZT_ERR_ARGUMENT, {"read_at"}));
  EXPECT_EQ(remote.closed, 1);
  s = remote.source();
  EXPECT_EQ(zt_open_source(&s, nullptr, nullptr), ZT_ERR_ARGUMENT);
  EXPECT_EQ(remote.closed, 2);
  s.struct_size = 3;
  EXPECT_EQ(zt_open_source(&s, nullptr, &r), ZT_ERR_ARGUMENT);
  EXPECT_EQ(remote.closed, 2);  // an unknown struct: its close is not trusted
  EXPECT_EQ(r, nullptr);
  // An older caller's struct without `name` is read as far as it goes.
  s = remote.source();
  s.struct_size = offsetof(zt_source, name);
  ASSERT_EQ(zt_open_source(&s, nullptr, &r), ZT_OK) << zt_last_error();
  zt_close(r);
  EXPECT_EQ(remote.closed, 3);
}

TEST_F(Source, ConcurrentSourcesAreCalledFromManyThreads) {
  Remote remote;
  remote.file = write_model(200);
  const Opened o = open_source(remote, nullptr, ZT_SOURCE_CONCURRENT);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = static_cast<size_t>(t); i < 200; i += 4) {
        float v[3];
        uint64_t w = 0;
        if (zt_component_read(o.get(), i, "data", v, sizeof v, &w) != ZT_OK ||
            v[0] != static_cast<float>(i))
          ++failures;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace zt::test

namespace zt::test {
namespace {

// Bytes in memory as a RangeSource that counts the reads reaching it.
class CountedBytes final : public RangeSource {
 public:
  CountedBytes(Bytes bytes, std::string name) : bytes_(std::move(bytes)), name_(std::move(name)) {}
  uint64_t size() const override { return bytes_.size(); }
  Result<void> read(uint64_t off, std::span<uint8_t> dst) const override {
    ++reads;
    std::memcpy(dst.data(), bytes_.data() + off, dst.size());
    return {};
  }
  const std::string& name() const override { return name_; }
  mutable std::atomic<int> reads{0};

 private:
  Bytes bytes_;
  std::string name_;
};

// The caches of one reader's files (a sharded model's root and shards)
// share one budget: cache_bytes bounds what they hold together, the least
// recently used entry of any of them dropped first.
TEST(CacheBudget, TheCachesOfOneReaderShareOneBudget) {
  const auto budget = std::make_shared<const CacheBudget>(400);  // keeps reads up to 100 bytes
  const Bytes a_bytes = pattern(4096, 1), b_bytes = pattern(4096, 2);
  const auto a_src = std::make_shared<const CountedBytes>(a_bytes, "a");
  const auto b_src = std::make_shared<const CountedBytes>(b_bytes, "b");
  const auto a = std::make_shared<const RangeCache>(a_src, budget);
  auto b = std::make_shared<const RangeCache>(b_src, budget);
  Bytes buf(100);
  auto expect_read = [&](const RangeCache& c, const Bytes& file, uint64_t off, int fetched,
                         const CountedBytes& src) {
    const int before = src.reads;
    ASSERT_TRUE(c.read(off, buf));
    EXPECT_EQ(src.reads - before, fetched) << src.name() << " at " << off;
    EXPECT_TRUE(std::equal(buf.begin(), buf.end(), file.begin() + static_cast<ptrdiff_t>(off)));
  };
  for (uint64_t off : {0, 100, 200}) expect_read(*a, a_bytes, off, 1, *a_src);
  EXPECT_EQ(budget->held(), 300u);
  // b's reads push out a's oldest: 600 bytes asked, 400 kept.
  for (uint64_t off : {0, 100, 200}) expect_read(*b, b_bytes, off, 1, *b_src);
  EXPECT_EQ(budget->held(), 400u);
  expect_read(*a, a_bytes, 200, 0, *a_src);  // still there
  expect_read(*a, a_bytes, 0, 1, *a_src);    // dropped: fetched again, b's oldest goes
  expect_read(*b, b_bytes, 200, 0, *b_src);
  expect_read(*b, b_bytes, 0, 1, *b_src);
  EXPECT_EQ(budget->held(), 400u);
  // A cache that goes away gives its bytes back to the budget.
  b.reset();
  EXPECT_LE(budget->held(), 200u);
  expect_read(*a, a_bytes, 0, 0, *a_src);
}

}  // namespace
}  // namespace zt::test

namespace zt::test {
namespace {

// A multipart/byteranges answer to a request for bytes 100-109 and
// 300-309 of a 1000-byte file, its body in one piece: the error that
// stopped it, or "" when every asked byte came.
std::string multipart_answer(const std::string& parts, Bytes& a, Bytes& b) {
  const RangeRead reads[] = {{100, a}, {300, b}};
  http::Exchange ex;
  ex.reads = reads;
  ex.size = 1000;
  for (const char* line : {"HTTP/1.1 206 Partial Content\r\n",
                           "Content-Type: multipart/byteranges; boundary=B\r\n", "\r\n"})
    http::take_header_line(ex, line);
  const std::string body = parts + "--B--\r\n";
  if (!http::take_body(ex, std::span(reinterpret_cast<const uint8_t*>(body.data()), body.size()),
                       "http://host/m.zt"))
    return ex.error ? ex.error->message : "stopped";
  return http::first_missing(reads, ex.delivered) ? "missing" : "";
}

std::string part(uint64_t first, const std::string& bytes) {
  return "--B\r\nContent-Range: bytes " + std::to_string(first) + "-" +
         std::to_string(first + bytes.size() - 1) + "/1000\r\n\r\n" + bytes + "\r\n";
}

// A status line may have no reason phrase: "HTTP/1.1 206\r\n" is 206
// (it was read as status 0, and every request to such a server failed).
TEST(HttpResponse, AStatusLineWithoutAReasonPhraseKeepsItsCode) {
  for (const auto& [line, code] :
       std::vector<std::pair<const char*, long>>{{"HTTP/1.1 206\r\n", 206},
                                                 {"HTTP/1.1 206 \r\n", 206},
                                                 {"HTTP/2 200\r\n", 200},
                                                 {"HTTP/1.1 404 Not Found\r\n", 404},
                                                 {"HTTP/1.1 2x6\r\n", 0}}) {
    http::Exchange ex;
    http::take_header_line(ex, line);
    EXPECT_EQ(ex.status, code) << line;
  }
}

// A server may coalesce the ranges asked for, never send others.
TEST(HttpResponse, AMultipartPartOutsideTheRangesAskedIsRefused) {
  Bytes a(10), b(10);
  EXPECT_EQ(multipart_answer(part(100, "AAAAAAAAAA") + part(300, "BBBBBBBBBB"), a, b), "");
  EXPECT_EQ(a, Bytes(10, 'A'));
  EXPECT_EQ(b, Bytes(10, 'B'));
  // Coalesced into one part with the gap: taken.
  EXPECT_EQ(multipart_answer(part(100, std::string(210, 'C')), a, b), "");
  EXPECT_EQ(b, Bytes(10, 'C'));
  // A third part between them, meeting neither: refused, named.
  const std::string e = multipart_answer(
      part(100, "AAAAAAAAAA") + part(200, "XXXXXXXXXX") + part(300, "BBBBBBBBBB"), a, b);
  EXPECT_NE(e.find("http://host/m.zt: a multipart/byteranges part of bytes 200-209, outside the "
                   "ranges asked for"),
            std::string::npos)
      << e;
}

// An open that means to take a file whole (an index, a config.json) is
// refused for the size its answer announces, before a byte of the body.
TEST(HttpResponse, AnOpenOverItsMaxSizeIsRefusedAtTheHeaders) {
  for (const bool whole : {false, true}) {
    http::Exchange ex;
    ex.window = {1001, OpenWindow::End::tail};
    ex.window.max_size = 1000;
    http::take_header_line(ex, whole ? "HTTP/1.1 200 OK\r\n" : "HTTP/1.1 206 Partial Content\r\n");
    http::take_header_line(
        ex, whole ? "Content-Length: 5000\r\n" : "Content-Range: bytes 3999-4999/5000\r\n");
    const uint8_t byte = 0;
    EXPECT_FALSE(
        http::take_body(ex, std::span(&byte, 1), "http://host/model.safetensors.index.json"));
    ASSERT_TRUE(ex.error);
    EXPECT_EQ(ex.error->status, Status::limit);
    EXPECT_EQ(ex.error->message,
              "http://host/model.safetensors.index.json: 5000 bytes, more than the limit of 1000");
    EXPECT_EQ(ex.body, 0u);
  }
}

}  // namespace
}  // namespace zt::test

namespace zt::test {
namespace {

namespace fs = std::filesystem;

// A file a model names is opened by the real path resolve_beside_model
// checked; while a LinksRefused lives, a link put into that path since is
// not followed, wherever it sits in the path.
TEST(LinksRefused, NoLinkInThePathIsFollowedWhileOneLives) {
  const TempDir tmp("zt-links-");
  const fs::path dir = tmp.path();
  fs::create_directory(dir / "real");
  std::ofstream(dir / "real" / "f.bin") << "bytes";
  fs::create_directory_symlink(dir / "real", dir / "link");
  fs::create_symlink(dir / "real" / "f.bin", dir / "real" / "g.bin");
  const auto opens = [](const fs::path& p) {
    return zt::Source::open_file(p, zt::Source::Mode::copy);
  };
  EXPECT_TRUE(opens(dir / "link" / "f.bin"));
  {
    const zt::LinksRefused refused;
    EXPECT_TRUE(opens(dir / "real" / "f.bin"));
    for (const fs::path& p : {dir / "link" / "f.bin", dir / "real" / "g.bin"}) {
      auto s = opens(p);
      ASSERT_FALSE(s) << p;
      EXPECT_EQ(s.error().status, zt::Status::io);
      EXPECT_NE(s.error().message.find("a symbolic link is in its path"), std::string::npos)
          << s.error().message;
    }
    { const zt::LinksRefused nested; }
    EXPECT_FALSE(opens(dir / "link" / "f.bin"));  // still refused: the outer guard lives
  }
  EXPECT_TRUE(opens(dir / "link" / "f.bin"));
  EXPECT_TRUE(opens(dir / "real" / "g.bin"));
}

// Without openat2 the descriptor's path as /proc tells it must be the path
// asked for; a file removed after its open is told " (deleted)" and is still
// the file asked for (it was refused as "a symbolic link in its path").
TEST(OpenedAsAsked, ThePathOrThePathOfAFileRemovedSinceItsOpen) {
  EXPECT_TRUE(opened_as_asked("/m/model-00001.zt", "/m/model-00001.zt"));
  EXPECT_TRUE(opened_as_asked("/m/model-00001.zt (deleted)", "/m/model-00001.zt"));
  EXPECT_FALSE(opened_as_asked("/elsewhere/model-00001.zt", "/m/model-00001.zt"));
  EXPECT_FALSE(opened_as_asked("/elsewhere/model-00001.zt (deleted)", "/m/model-00001.zt"));
  EXPECT_FALSE(opened_as_asked("/m/model-00001.zt (deleted)", "/m/model-00001"));
  EXPECT_FALSE(opened_as_asked("/m/x", "/m/x (deleted)"));
  EXPECT_FALSE(opened_as_asked("/m/x (deleted) (deleted)", "/m/x"));
  EXPECT_FALSE(opened_as_asked("", "/m/x"));
}

}  // namespace
}  // namespace zt::test
