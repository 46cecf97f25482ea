// zstd decoding, hot page cache, 256 MiB of weight-like data (level 3):
//  - one thread: our decode vs ZSTD_decompressDCtx on the same stored bytes,
//    as one frame (through zt_component_read) and as 1 MiB frames (through
//    the core's single-thread decoder);
//  - threads: one large multi-frame component (zt_component_read,
//    zt_decode_many) and a whole file of 256 one-frame components
//    (zt_decode_many) vs the same bytes decoded by ZSTD_decompressDCtx in a
//    loop on one thread.
//  - v2 (zt.zstd-seekable/1, 1 MiB frames): an eighth of the rows
//    (zt_dense_rows, only the covering frames decoded) vs the whole part
//    (zt_component_read).
// Readers are opened once per benchmark: the loop times decoding alone.
#include <benchmark/benchmark.h>
#include <zstd.h>

#include <memory>

#include "bench_util.h"
#include "codec/zstd_codec.h"
#include "read/reader.h"

namespace {

constexpr uint64_t kBytes = uint64_t{256} << 20;
constexpr size_t kManyObjects = 256;
constexpr uint64_t kManyBytes = kBytes / kManyObjects;

struct Stored {
  std::vector<std::vector<uint8_t>> blobs;  // each component's stored bytes, in memory
  std::vector<uint64_t> decoded;            // each component's decoded size
};

std::unique_ptr<ztb::FileGuard> g_one_frame, g_frames, g_many, g_seekable;
constexpr uint64_t kSeekableRows = 4096;  // rows of kBytes / kSeekableRows bytes
Stored g_one_frame_bytes, g_frames_bytes, g_many_bytes;
uint8_t* g_dst = nullptr;
ZSTD_DCtx* g_dctx = nullptr;

Stored stored_bytes(const std::string& path) {
  auto r = zt::Reader::open_file(path);
  if (!r) ztb::die(r.error().message);
  Stored s;
  for (const zt::Object& o : (*r)->manifest().objects)
    for (const zt::Component& c : o.components) {
      std::vector<uint8_t> scratch;
      auto bytes = (*r)->stored(o, c, scratch);
      s.blobs.emplace_back(bytes->begin(), bytes->end());
      s.decoded.push_back(*c.uncompressed_length);
    }
  return s;
}

zt_reader* open_reader(const std::string& path) {
  zt_reader* r = nullptr;
  ztb::check(zt_open(path.c_str(), &r), "zt_open");
  return r;
}

void set_bytes(benchmark::State& state, uint64_t n) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}

// ZSTD_decompressDCtx over every stored blob, one after the other, one thread.
void decompress_all(const Stored& s) {
  uint64_t out = 0;
  for (size_t i = 0; i < s.blobs.size(); ++i) {
    const size_t n = ZSTD_decompressDCtx(g_dctx, g_dst + out, s.decoded[i], s.blobs[i].data(),
                                         s.blobs[i].size());
    if (ZSTD_isError(n) || n != s.decoded[i]) ztb::die("ZSTD_decompressDCtx failed");
    out += n;
  }
}

void BM_ST_ZstdDCtx_OneFrame(benchmark::State& state) {
  for (auto _ : state) decompress_all(g_one_frame_bytes);
  set_bytes(state, kBytes);
}

void BM_ST_ZtRead_OneFrame(benchmark::State& state) {
  zt_reader* r = open_reader(g_one_frame->path);
  for (auto _ : state) {
    uint64_t n = 0;
    ztb::check(zt_component_read(r, 0, "data", g_dst, kBytes, &n), "zt_component_read");
  }
  zt_close(r);
  set_bytes(state, kBytes);
}

void BM_ST_ZstdDCtx_Frames(benchmark::State& state) {
  for (auto _ : state) decompress_all(g_frames_bytes);
  set_bytes(state, kBytes);
}

void BM_ST_ZtCoreDecode_Frames(benchmark::State& state) {
  const auto& src = g_frames_bytes.blobs[0];
  for (auto _ : state) {
    auto ok = zt::zstd_decode_exact(src, std::span<uint8_t>(g_dst, kBytes), "bench");
    if (!ok) ztb::die(ok.error().message);
  }
  set_bytes(state, kBytes);
}

void BM_MT_ZtRead_Frames(benchmark::State& state) {
  zt_reader* r = open_reader(g_frames->path);
  for (auto _ : state) {
    uint64_t n = 0;
    ztb::check(zt_component_read(r, 0, "data", g_dst, kBytes, &n), "zt_component_read");
  }
  zt_close(r);
  set_bytes(state, kBytes);
}

void decode_many_all(zt_reader* r, std::vector<zt_decode_request>& reqs) {
  ztb::check(zt_decode_many(r, reqs.data(), reqs.size(), 0), "zt_decode_many");
}

std::vector<zt_decode_request> requests_for_all(zt_reader* r) {
  std::vector<zt_decode_request> reqs(zt_object_count(r));
  uint64_t out = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    zt_decode_request_init(&reqs[i]);
    reqs[i].object = i;
    reqs[i].role = "data";
    ztb::check(zt_component_decoded_size(r, i, "data", &reqs[i].capacity),
               "zt_component_decoded_size");
    reqs[i].dst = g_dst + out;
    out += reqs[i].capacity;
  }
  return reqs;
}

void BM_MT_ZtDecodeMany_Frames(benchmark::State& state) {
  zt_reader* r = open_reader(g_frames->path);
  auto reqs = requests_for_all(r);
  for (auto _ : state) decode_many_all(r, reqs);
  zt_close(r);
  set_bytes(state, kBytes);
}

void BM_Many_ZstdDCtx_Loop(benchmark::State& state) {
  for (auto _ : state) decompress_all(g_many_bytes);
  set_bytes(state, kBytes);
}

void BM_Many_ZtRead_Loop(benchmark::State& state) {
  zt_reader* r = open_reader(g_many->path);
  for (auto _ : state) {
    uint64_t out = 0;
    for (size_t i = 0; i < kManyObjects; ++i) {
      uint64_t n = 0;
      ztb::check(zt_component_read(r, i, "data", g_dst + out, kManyBytes, &n), "zt_component_read");
      out += n;
    }
  }
  zt_close(r);
  set_bytes(state, kBytes);
}

void BM_Many_ZtDecodeMany(benchmark::State& state) {
  zt_reader* r = open_reader(g_many->path);
  auto reqs = requests_for_all(r);
  for (auto _ : state) decode_many_all(r, reqs);
  zt_close(r);
  set_bytes(state, kBytes);
}

// ---- v2 seekable zstd: a range of rows against the whole part ----

void BM_V2_SeekableWhole(benchmark::State& state) {
  zt_reader* r = open_reader(g_seekable->path);
  for (auto _ : state) {
    uint64_t n = 0;
    ztb::check(zt_component_read(r, 0, "data", g_dst, kBytes, &n), "zt_component_read");
  }
  zt_close(r);
  set_bytes(state, kBytes);
}

void BM_V2_SeekableEighthOfRows(benchmark::State& state) {
  zt_reader* r = open_reader(g_seekable->path);
  const uint64_t begin = kSeekableRows / 2, end = begin + kSeekableRows / 8;
  for (auto _ : state) {
    uint64_t n = 0;
    ztb::check(zt_dense_rows(r, 0, begin, end, g_dst, kBytes, &n), "zt_dense_rows");
  }
  zt_close(r);
  set_bytes(state, kBytes / 8);
}

void common(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime()->Iterations(3);
}

BENCHMARK(BM_ST_ZstdDCtx_OneFrame)->Apply(common);
BENCHMARK(BM_ST_ZtRead_OneFrame)->Apply(common);
BENCHMARK(BM_ST_ZstdDCtx_Frames)->Apply(common);
BENCHMARK(BM_ST_ZtCoreDecode_Frames)->Apply(common);
BENCHMARK(BM_MT_ZtRead_Frames)->Apply(common);
BENCHMARK(BM_MT_ZtDecodeMany_Frames)->Apply(common);
BENCHMARK(BM_Many_ZstdDCtx_Loop)->Apply(common);
BENCHMARK(BM_Many_ZtRead_Loop)->Apply(common);
BENCHMARK(BM_Many_ZtDecodeMany)->Apply(common);
BENCHMARK(BM_V2_SeekableWhole)->Apply(common);
BENCHMARK(BM_V2_SeekableEighthOfRows)->Apply(common);

void write_files() {
  const auto data = ztb::weights(kBytes);
  g_one_frame = std::make_unique<ztb::FileGuard>(ztb::bench_path("zstd-one-frame.zt"));
  ztb::write_one(g_one_frame->path, data, "zstd", kBytes);
  g_frames = std::make_unique<ztb::FileGuard>(ztb::bench_path("zstd-frames.zt"));
  ztb::write_one(g_frames->path, data, "zstd", 1 << 20);
  g_many = std::make_unique<ztb::FileGuard>(ztb::bench_path("zstd-many.zt"));
  ztb::write_pieces(g_many->path, data, kManyObjects, kManyBytes, "zstd", ZT_DIGEST_XXH3, 0);

  g_seekable = std::make_unique<ztb::FileGuard>(ztb::bench_path("zstd-seekable-v2.zt"));
  zt_writer_options o;
  zt_writer_options_init(&o);
  o.file_version = 2;
  o.frame_size = 1 << 20;
  zt_writer* v2 = nullptr;
  ztb::check(zt_writer_open_ex(g_seekable->path.c_str(), &o, &v2), "zt_writer_open_ex");
  const uint64_t rows[2] = {kSeekableRows, kBytes / kSeekableRows / 4};
  ztb::check(zt_writer_add_dense(v2, "w", "f32", rows, 2, data.data(), kBytes, "zstd"),
             "zt_writer_add_dense");
  ztb::check(zt_writer_finish(v2), "zt_writer_finish");
}

// zt_decode_many must deliver the bytes that were written, in both files.
void verify_decode_many() {
  const auto data = ztb::weights(kBytes);
  for (const std::string* path : {&g_frames->path, &g_many->path}) {
    zt_reader* r = open_reader(*path);
    auto reqs = requests_for_all(r);
    std::memset(g_dst, 0, kBytes);
    decode_many_all(r, reqs);
    zt_close(r);
    if (std::memcmp(g_dst, data.data(), kBytes) != 0)
      ztb::die("zt_decode_many returned other bytes than were written");
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  write_files();
  g_one_frame_bytes = stored_bytes(g_one_frame->path);
  g_frames_bytes = stored_bytes(g_frames->path);
  g_many_bytes = stored_bytes(g_many->path);
  benchmark::AddCustomContext(
      "stored_over_decoded",
      std::to_string(static_cast<double>(g_frames_bytes.blobs[0].size()) / kBytes));
  g_dst = static_cast<uint8_t*>(std::malloc(kBytes));
  std::memset(g_dst, 1, kBytes);
  g_dctx = ZSTD_createDCtx();
  verify_decode_many();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  ZSTD_freeDCtx(g_dctx);
  std::free(g_dst);
  g_one_frame.reset();
  g_frames.reset();
  g_many.reset();
  g_seekable.reset();
  return 0;
}
