// Writing and digests.
//  - Durable: the writer from open to finish (fsync, rename, fsync of the
//    directory) vs a write(2) loop of the same 512 MiB with the same fsync,
//    rename and directory fsync.
//  - Write path: the writer's calls up to the last data byte vs the write(2)
//    loop alone, no fsync on either side (the files are dropped unsynced,
//    outside the timed region). This isolates what the writer adds in CPU.
//  - zstd level 1 and 3 on 1 and 2 threads (256 MiB, 1 MiB frames, xxh3) vs
//    libzstd doing the same compression and a write(2) of its output: one
//    thread = ZSTD_compressCCtx per 1 MiB frame; two = libzstd's own
//    multithreaded streaming (ZSTD_c_nbWorkers = 2).
//  - Digests through zt::digest_hex / zt::Hasher vs XXH3_64bits and EVP.
#include <benchmark/benchmark.h>
#include <openssl/evp.h>
#include <xxhash.h>
#include <zstd.h>

#include "bench_util.h"
#include "codec/digest.h"

namespace {

constexpr uint64_t kRawBytes = uint64_t{512} << 20;
constexpr uint64_t kZstdBytes = uint64_t{256} << 20;
constexpr uint64_t kShaBytes = uint64_t{64} << 20;
constexpr size_t kPiece = size_t{1} << 20;

std::vector<uint8_t> g_data;
std::string g_target;  // where every benchmark writes (removed after each iteration)

void write_loop(int fd, const uint8_t* p, uint64_t n) {
  uint64_t done = 0;
  while (done < n) {
    const ssize_t k = ::write(fd, p + done, n - done);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) ztb::die("write failed");
    done += static_cast<uint64_t>(k);
  }
}

void fsync_dir(const std::string& path) {
  const std::string dir = path.substr(0, path.rfind('/'));
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ::fsync(dfd);
  ::close(dfd);
}

void remove_target(benchmark::State& state) {
  state.PauseTiming();
  ::unlink(g_target.c_str());
  state.ResumeTiming();
}

void set_bytes(benchmark::State& state, uint64_t n) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}

zt_writer* dense_writer(zt_digest_algo digest, int level, unsigned threads, const char* encoding,
                        uint64_t n) {
  zt_writer* w = ztb::open_writer(g_target, level, threads, digest);
  const uint64_t shape[1] = {n / 4};
  ztb::check(zt_writer_add_dense(w, "w", "f32", shape, 1, g_data.data(), n, encoding),
             "zt_writer_add_dense");
  return w;
}

// ---- durable ----

// The baseline files are created as the writer creates its own: an unnamed
// temporary file in the target's directory (O_TMPFILE), so that both sides
// pay the same file-system costs.
int open_unnamed() {
  const std::string dir = g_target.substr(0, g_target.rfind('/'));
  const int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) ztb::die("O_TMPFILE is not supported in " + dir);
  return fd;
}

// write(2) loop, then the writer's publication: fsync, link, rename, fsync of the directory.
void BM_Durable_WriteLoop(benchmark::State& state) {
  const std::string tmp = g_target + ".tmp";
  for (auto _ : state) {
    const int fd = open_unnamed();
    write_loop(fd, g_data.data(), kRawBytes);
    ::fsync(fd);
    const std::string proc = "/proc/self/fd/" + std::to_string(fd);
    if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, tmp.c_str(), AT_SYMLINK_FOLLOW) != 0)
      ztb::die("linkat failed");
    ::rename(tmp.c_str(), g_target.c_str());
    ::close(fd);
    fsync_dir(g_target);
    remove_target(state);
  }
  set_bytes(state, kRawBytes);
}

void durable_zt(benchmark::State& state, zt_digest_algo digest) {
  for (auto _ : state) {
    zt_writer* w = dense_writer(digest, 3, 0, "raw", kRawBytes);
    ztb::check(zt_writer_finish(w), "zt_writer_finish");
    remove_target(state);
  }
  set_bytes(state, kRawBytes);
}

void BM_Durable_ZtRaw(benchmark::State& state) {
  durable_zt(state, ZT_DIGEST_NONE);
}
void BM_Durable_ZtRawXxh3(benchmark::State& state) {
  durable_zt(state, ZT_DIGEST_XXH3);
}

// ---- write path (no fsync) ----

void BM_Path_WriteLoop(benchmark::State& state) {
  for (auto _ : state) {
    const int fd = open_unnamed();
    write_loop(fd, g_data.data(), kRawBytes);
    state.PauseTiming();
    ::close(fd);  // unnamed: its dirty pages are dropped, never synced
    state.ResumeTiming();
  }
  set_bytes(state, kRawBytes);
}

void path_zt(benchmark::State& state, zt_digest_algo digest) {
  for (auto _ : state) {
    zt_writer* w = dense_writer(digest, 3, 0, "raw", kRawBytes);
    state.PauseTiming();
    zt_writer_abort(w);  // unnamed temporary file: its dirty pages are dropped, never synced
    state.ResumeTiming();
  }
  set_bytes(state, kRawBytes);
}

void BM_Path_ZtRaw(benchmark::State& state) {
  path_zt(state, ZT_DIGEST_NONE);
}
void BM_Path_ZtRawXxh3(benchmark::State& state) {
  path_zt(state, ZT_DIGEST_XXH3);
}
// Canonical v2 (§6.3): raw parts with xxh3 at 64 KiB boundaries, the
// identical-blob lookup, against the 1.2 writer with xxh3 on the same bytes.
void BM_Path_ZtCanonicalV2(benchmark::State& state) {
  for (auto _ : state) {
    zt_writer_options o;
    zt_writer_options_init(&o);
    o.file_version = 2;
    o.canonical = 1;
    zt_writer* w = nullptr;
    ztb::check(zt_writer_open_ex(g_target.c_str(), &o, &w), "zt_writer_open_ex");
    const uint64_t shape[1] = {kRawBytes / 4};
    ztb::check(zt_writer_add_dense(w, "w", "f32", shape, 1, g_data.data(), kRawBytes, "raw"),
               "zt_writer_add_dense");
    state.PauseTiming();
    zt_writer_abort(w);  // unnamed temporary file: its dirty pages are dropped, never synced
    state.ResumeTiming();
  }
  set_bytes(state, kRawBytes);
}

void BM_Path_ZtRawSha256(benchmark::State& state) {
  path_zt(state, ZT_DIGEST_SHA256);
}

// ---- zstd: args (level, threads) ----

void BM_Zstd_Zt(benchmark::State& state) {
  const int level = static_cast<int>(state.range(0));
  const unsigned threads = static_cast<unsigned>(state.range(1));
  for (auto _ : state) {
    zt_writer* w = dense_writer(ZT_DIGEST_XXH3, level, threads, "zstd", kZstdBytes);
    state.PauseTiming();
    zt_writer_abort(w);
    state.ResumeTiming();
  }
  set_bytes(state, kZstdBytes);
}

// The same bytes streamed in 1 MiB pieces (zt_writer_write), as a converter
// writes a tensor it produces piece by piece.
void BM_ZstdStream_Zt(benchmark::State& state) {
  const int level = static_cast<int>(state.range(0));
  const unsigned threads = static_cast<unsigned>(state.range(1));
  for (auto _ : state) {
    zt_writer* w = ztb::open_writer(g_target, level, threads, ZT_DIGEST_XXH3);
    const uint64_t shape[1] = {kZstdBytes / 4};
    ztb::check(zt_writer_begin_object(w, "w", "dense", shape, 1), "zt_writer_begin_object");
    ztb::check(zt_writer_begin_component(w, "data", "f32", nullptr, "zstd", kZstdBytes),
               "zt_writer_begin_component");
    for (uint64_t at = 0; at < kZstdBytes; at += kPiece)
      ztb::check(zt_writer_write(w, g_data.data() + at, kPiece), "zt_writer_write");
    ztb::check(zt_writer_end_component(w), "zt_writer_end_component");
    state.PauseTiming();
    zt_writer_abort(w);
    state.ResumeTiming();
  }
  set_bytes(state, kZstdBytes);
}

void BM_Zstd_Lib(benchmark::State& state) {
  const int level = static_cast<int>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  std::vector<uint8_t> out(ZSTD_compressBound(threads > 1 ? kZstdBytes : kPiece));
  std::memset(out.data(), 0, out.size());
  for (auto _ : state) {
    const int fd = open_unnamed();
    if (threads == 1) {
      for (uint64_t at = 0; at < kZstdBytes; at += kPiece) {
        const size_t n =
            ZSTD_compressCCtx(cctx, out.data(), out.size(), g_data.data() + at, kPiece, level);
        if (ZSTD_isError(n)) ztb::die("ZSTD_compressCCtx failed");
        write_loop(fd, out.data(), n);
      }
    } else {
      ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
      ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
      if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_nbWorkers, threads)))
        ztb::die("libzstd was built without multithreading");
      ZSTD_inBuffer in{g_data.data(), kZstdBytes, 0};
      ZSTD_outBuffer o{out.data(), out.size(), 0};
      const size_t left = ZSTD_compressStream2(cctx, &o, &in, ZSTD_e_end);
      if (ZSTD_isError(left) || left != 0) ztb::die("ZSTD_compressStream2 failed");
      write_loop(fd, out.data(), o.pos);
    }
    state.PauseTiming();
    ::close(fd);
    state.ResumeTiming();
  }
  ZSTD_freeCCtx(cctx);
  set_bytes(state, kZstdBytes);
}

// ---- digests ----

void BM_Digest_Xxh3_Direct(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(XXH3_64bits(g_data.data(), kRawBytes));
  set_bytes(state, kRawBytes);
}

void BM_Digest_Xxh3_Zt(benchmark::State& state) {
  for (auto _ : state)
    benchmark::DoNotOptimize(
        zt::digest_hex(zt::DigestAlgo::xxh3, std::span(g_data.data(), kRawBytes)));
  set_bytes(state, kRawBytes);
}

void BM_Digest_Xxh3Pieces_Direct(benchmark::State& state) {
  XXH3_state_t* s = XXH3_createState();
  for (auto _ : state) {
    XXH3_64bits_reset(s);
    for (uint64_t at = 0; at < kRawBytes; at += kPiece)
      XXH3_64bits_update(s, g_data.data() + at, kPiece);
    benchmark::DoNotOptimize(XXH3_64bits_digest(s));
  }
  XXH3_freeState(s);
  set_bytes(state, kRawBytes);
}

void BM_Digest_Xxh3Pieces_Zt(benchmark::State& state) {
  for (auto _ : state) {
    zt::Hasher h(zt::DigestAlgo::xxh3);
    for (uint64_t at = 0; at < kRawBytes; at += kPiece)
      h.update(std::span(g_data.data() + at, kPiece));
    benchmark::DoNotOptimize(h.finish_hex());
  }
  set_bytes(state, kRawBytes);
}

void BM_Digest_Sha256_Direct(benchmark::State& state) {
  for (auto _ : state) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(g_data.data(), kShaBytes, md, &len, EVP_sha256(), nullptr);
    benchmark::DoNotOptimize(md[0]);
  }
  set_bytes(state, kShaBytes);
}

void BM_Digest_Sha256_Zt(benchmark::State& state) {
  for (auto _ : state)
    benchmark::DoNotOptimize(
        zt::digest_hex(zt::DigestAlgo::sha256, std::span(g_data.data(), kShaBytes)));
  set_bytes(state, kShaBytes);
}

void BM_Digest_Sha256Pieces_Direct(benchmark::State& state) {
  for (auto _ : state) {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
    for (uint64_t at = 0; at < kShaBytes; at += kPiece)
      EVP_DigestUpdate(ctx, g_data.data() + at, kPiece);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx, md, &len);
    EVP_MD_CTX_free(ctx);
    benchmark::DoNotOptimize(md[0]);
  }
  set_bytes(state, kShaBytes);
}

void BM_Digest_Sha256Pieces_Zt(benchmark::State& state) {
  for (auto _ : state) {
    zt::Hasher h(zt::DigestAlgo::sha256);
    for (uint64_t at = 0; at < kShaBytes; at += kPiece)
      h.update(std::span(g_data.data() + at, kPiece));
    benchmark::DoNotOptimize(h.finish_hex());
  }
  set_bytes(state, kShaBytes);
}

void io(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime()->Iterations(2);
}
void cpu(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime()->Iterations(4);
}
// The write path is short and memory-bound, the most disturbed by other jobs:
// more repetitions, whatever ZT_BENCH_REPS says.
void path(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMillisecond)
      ->MeasureProcessCPUTime()
      ->UseRealTime()
      ->Iterations(2)
      ->Repetitions(11);
}
void levels(benchmark::internal::Benchmark* b) {
  b->ArgNames({"level", "threads"})
      ->Args({1, 1})
      ->Args({1, 2})
      ->Args({3, 1})
      ->Args({3, 2})
      ->Apply(io);
}

BENCHMARK(BM_Durable_WriteLoop)->Apply(io);
BENCHMARK(BM_Durable_ZtRaw)->Apply(io);
BENCHMARK(BM_Durable_ZtRawXxh3)->Apply(io);
BENCHMARK(BM_Path_WriteLoop)->Apply(path);
BENCHMARK(BM_Path_ZtRaw)->Apply(path);
BENCHMARK(BM_Path_ZtRawXxh3)->Apply(path);
BENCHMARK(BM_Path_ZtRawSha256)->Apply(path);
BENCHMARK(BM_Path_ZtCanonicalV2)->Apply(path);
BENCHMARK(BM_Zstd_Zt)->Apply(levels);
BENCHMARK(BM_Zstd_Lib)->Apply(levels);
BENCHMARK(BM_ZstdStream_Zt)->Args({3, 1})->Args({3, 2})->ArgNames({"level", "threads"})->Apply(io);
BENCHMARK(BM_Digest_Xxh3_Direct)->Apply(cpu);
BENCHMARK(BM_Digest_Xxh3_Zt)->Apply(cpu);
BENCHMARK(BM_Digest_Xxh3Pieces_Direct)->Apply(cpu);
BENCHMARK(BM_Digest_Xxh3Pieces_Zt)->Apply(cpu);
BENCHMARK(BM_Digest_Sha256_Direct)->Apply(cpu);
BENCHMARK(BM_Digest_Sha256_Zt)->Apply(cpu);
BENCHMARK(BM_Digest_Sha256Pieces_Direct)->Apply(cpu);
BENCHMARK(BM_Digest_Sha256Pieces_Zt)->Apply(cpu);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  g_data = ztb::weights(kRawBytes);
  g_target = ztb::bench_path("write.zt");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  ::unlink(g_target.c_str());
  ::unlink((g_target + ".tmp").c_str());
  return 0;
}
