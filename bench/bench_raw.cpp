// Raw data, hot and cold page cache, on one 1 GiB raw component:
//  - touching every byte through zt_component_map vs the same loop over a
//    plain mmap of the file;
//  - zt_component_read (mapped and copy mode) and zt_decode_many vs pread
//    into the same buffer;
//  - a copy-mode reader's zt_component_map (the component read into the
//    reader's decode cache) vs pread into fresh memory, 4 KiB pages or
//    advised for huge pages;
//  - the component is a [16384, 16384] f32 matrix: an eighth of its columns
//    (zt_dense_slice: 16384 runs of 8 KiB) vs zt_component_read of it whole.
// And a file of 20,000 tensors of 1 KiB (hot): zt_decode_many of all of
// them from a freshly opened reader vs one pread of the span that holds
// them and a copy of each out of it (the floor), and vs a pread each; and
// one zt_decode_ranges call a tensor vs zt_component_read of each.
// Argument 0 = hot (pages cached), 1 = cold (posix_fadvise DONTNEED before
// every iteration, outside the timed region).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "bench_util.h"
#include "read/reader.h"

namespace {

constexpr uint64_t kBytes = uint64_t{1} << 30;
constexpr uint64_t kSide = 16384;  // kBytes as a square f32 matrix

std::unique_ptr<ztb::FileGuard> g_file;
uint64_t g_offset = 0;  // the component's offset in the file
uint8_t* g_buffer = nullptr;

constexpr size_t kTinyCount = 20000;
constexpr uint64_t kTinyBytes = 1024;
std::unique_ptr<ztb::FileGuard> g_tiny;
std::vector<uint64_t> g_tiny_offsets;  // each tensor's offset in the file

const std::string& path() {
  return g_file->path;
}

void prepare(benchmark::State& state) {
  if (state.range(0) == 0) ztb::warm_cache(path());
}

void before_iteration(benchmark::State& state) {
  if (state.range(0) == 0) return;
  state.PauseTiming();
  ztb::drop_cache(path());
  state.ResumeTiming();
}

void set_bytes(benchmark::State& state) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBytes));
}

zt_reader* open_reader(zt_io_mode mode) {
  zt_open_options o;
  zt_open_options_init(&o);
  o.io_mode = mode;
  zt_reader* r = nullptr;
  ztb::check(zt_open_ex(path().c_str(), &o, &r), "zt_open_ex");
  return r;
}

void BM_Touch_Mmap(benchmark::State& state) {
  prepare(state);
  for (auto _ : state) {
    before_iteration(state);
    const int fd = ::open(path().c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    ::fstat(fd, &st);
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) ztb::die("mmap failed");
    benchmark::DoNotOptimize(ztb::touch_all(static_cast<const uint8_t*>(p) + g_offset, kBytes));
    ::munmap(p, static_cast<size_t>(st.st_size));
    ::close(fd);
  }
  set_bytes(state);
}

void touch_through_zt(benchmark::State& state, bool prefetch) {
  prepare(state);
  for (auto _ : state) {
    before_iteration(state);
    zt_reader* r = open_reader(ZT_IO_MAP);
    if (prefetch) ztb::check(zt_prefetch(r, 0, "data"), "zt_prefetch");
    const void* data = nullptr;
    uint64_t n = 0;
    ztb::check(zt_component_map(r, 0, "data", &data, &n), "zt_component_map");
    benchmark::DoNotOptimize(ztb::touch_all(static_cast<const uint8_t*>(data), n));
    zt_close(r);
  }
  set_bytes(state);
}

void BM_Touch_ZtMap(benchmark::State& state) {
  touch_through_zt(state, false);
}
void BM_Touch_ZtMapPrefetch(benchmark::State& state) {
  touch_through_zt(state, true);
}

void BM_Read_Pread(benchmark::State& state) {
  prepare(state);
  for (auto _ : state) {
    before_iteration(state);
    const int fd = ::open(path().c_str(), O_RDONLY | O_CLOEXEC);
    uint64_t done = 0;
    while (done < kBytes) {
      const ssize_t n =
          ::pread(fd, g_buffer + done, kBytes - done, static_cast<off_t>(g_offset + done));
      if (n <= 0) ztb::die("pread failed");
      done += static_cast<uint64_t>(n);
    }
    ::close(fd);
    benchmark::DoNotOptimize(g_buffer);
  }
  set_bytes(state);
}

void read_through_zt(benchmark::State& state, zt_io_mode mode) {
  prepare(state);
  for (auto _ : state) {
    before_iteration(state);
    zt_reader* r = open_reader(mode);
    uint64_t written = 0;
    ztb::check(zt_component_read(r, 0, "data", g_buffer, kBytes, &written), "zt_component_read");
    zt_close(r);
    benchmark::DoNotOptimize(g_buffer);
  }
  set_bytes(state);
}

void BM_Read_ZtRead(benchmark::State& state) {
  read_through_zt(state, ZT_IO_MAP);
}
void BM_Read_ZtReadCopyMode(benchmark::State& state) {
  read_through_zt(state, ZT_IO_COPY);
}

void BM_Read_ZtDecodeMany(benchmark::State& state) {
  prepare(state);
  for (auto _ : state) {
    before_iteration(state);
    zt_reader* r = open_reader(ZT_IO_MAP);
    zt_decode_request q;
    zt_decode_request_init(&q);
    q.object = 0;
    q.role = "data";
    q.dst = g_buffer;
    q.capacity = kBytes;
    ztb::check(zt_decode_many(r, &q, 1, static_cast<unsigned>(state.range(1))), "zt_decode_many");
    zt_close(r);
    benchmark::DoNotOptimize(g_buffer);
  }
  set_bytes(state);
}

// The floor of a buffer the library fills and keeps (a copy-mode reader's
// decode cache, what zt_component_map hands out for zstd or copy-mode
// data): one pread of the component into fresh anonymous memory, mapped
// for the iteration (4 KiB pages, or advised for huge pages first, as the
// library advises its own buffers of 4 MiB or more).
void pread_into_fresh(benchmark::State& state, bool huge) {
  prepare(state);
  for (auto _ : state) {
    before_iteration(state);
    void* m = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) ztb::die("mmap failed");
    if (huge) ::madvise(m, kBytes, MADV_HUGEPAGE);
    const int fd = ::open(path().c_str(), O_RDONLY | O_CLOEXEC);
    uint64_t done = 0;
    while (done < kBytes) {
      const ssize_t n = ::pread(fd, static_cast<uint8_t*>(m) + done, kBytes - done,
                                static_cast<off_t>(g_offset + done));
      if (n <= 0) ztb::die("pread failed");
      done += static_cast<uint64_t>(n);
    }
    ::close(fd);
    benchmark::DoNotOptimize(m);
    ::munmap(m, kBytes);
  }
  set_bytes(state);
}

void BM_Cache_PreadFresh(benchmark::State& state) {
  pread_into_fresh(state, false);
}
void BM_Cache_PreadFreshHuge(benchmark::State& state) {
  pread_into_fresh(state, true);
}

// A copy-mode reader's zt_component_map: the component read into the
// reader's decode cache, memory it allocates (freed by zt_close).
void BM_Cache_ZtMapCopyMode(benchmark::State& state) {
  prepare(state);
  for (auto _ : state) {
    before_iteration(state);
    zt_reader* r = open_reader(ZT_IO_COPY);
    const void* data = nullptr;
    uint64_t n = 0;
    ztb::check(zt_component_map(r, 0, "data", &data, &n), "zt_component_map");
    benchmark::DoNotOptimize(data);
    zt_close(r);
  }
  set_bytes(state);
}

// Columns [0, kSide / 8) of every row, from a hot page cache.
void BM_Slice_EighthOfColumns(benchmark::State& state) {
  prepare(state);
  zt_reader* r = open_reader(ZT_IO_MAP);
  const uint64_t begin[2] = {0, 0}, end[2] = {kSide, kSide / 8};
  for (auto _ : state) {
    uint64_t written = 0;
    ztb::check(zt_dense_slice(r, 0, 2, begin, end, g_buffer, kBytes, &written), "zt_dense_slice");
    benchmark::DoNotOptimize(g_buffer);
  }
  zt_close(r);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBytes / 8));
}

// The same matrix read whole with the reader opened once, as above.
void BM_Slice_Whole(benchmark::State& state) {
  prepare(state);
  zt_reader* r = open_reader(ZT_IO_MAP);
  for (auto _ : state) {
    uint64_t written = 0;
    ztb::check(zt_component_read(r, 0, "data", g_buffer, kBytes, &written), "zt_component_read");
    benchmark::DoNotOptimize(g_buffer);
  }
  zt_close(r);
  set_bytes(state);
}

void hot_and_cold(benchmark::internal::Benchmark* b) {
  b->ArgName("cold")
      ->Arg(0)
      ->Arg(1)
      ->Unit(benchmark::kMillisecond)
      ->MeasureProcessCPUTime()
      ->UseRealTime()
      ->Iterations(2);
}

BENCHMARK(BM_Touch_Mmap)->Apply(hot_and_cold);
BENCHMARK(BM_Touch_ZtMap)->Apply(hot_and_cold);
BENCHMARK(BM_Touch_ZtMapPrefetch)->Apply(hot_and_cold);
BENCHMARK(BM_Read_Pread)->Apply(hot_and_cold);
BENCHMARK(BM_Read_ZtRead)->Apply(hot_and_cold);
BENCHMARK(BM_Read_ZtReadCopyMode)->Apply(hot_and_cold);
BENCHMARK(BM_Cache_PreadFresh)->Apply(hot_and_cold);
BENCHMARK(BM_Cache_PreadFreshHuge)->Apply(hot_and_cold);
BENCHMARK(BM_Cache_ZtMapCopyMode)->Apply(hot_and_cold);
BENCHMARK(BM_Read_ZtDecodeMany)
    ->ArgNames({"cold", "threads"})
    ->Args({0, 1})
    ->Args({0, 2})
    ->Args({1, 1})
    ->Args({1, 2})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime()
    ->Iterations(2);
BENCHMARK(BM_Slice_Whole)
    ->ArgName("cold")
    ->Arg(0)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);
BENCHMARK(BM_Slice_EighthOfColumns)
    ->ArgName("cold")
    ->Arg(0)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

// ---- 20,000 tensors of 1 KiB, hot ----

void set_tiny_bytes(benchmark::State& state) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kTinyCount * kTinyBytes));
}

// The floor: the span that holds every tensor in one pread, then each
// tensor copied to its own place (what a reader that knew the layout
// would do at best).
void BM_Tiny_PreadSpan(benchmark::State& state) {
  const uint64_t first = *std::min_element(g_tiny_offsets.begin(), g_tiny_offsets.end());
  const uint64_t end = *std::max_element(g_tiny_offsets.begin(), g_tiny_offsets.end()) + kTinyBytes;
  std::vector<uint8_t> span(end - first);
  std::memset(span.data(), 1, span.size());
  for (auto _ : state) {
    const int fd = ::open(g_tiny->path.c_str(), O_RDONLY | O_CLOEXEC);
    uint64_t done = 0;
    while (done < span.size()) {
      const ssize_t n =
          ::pread(fd, span.data() + done, span.size() - done, static_cast<off_t>(first + done));
      if (n <= 0) ztb::die("pread failed");
      done += static_cast<uint64_t>(n);
    }
    ::close(fd);
    for (size_t i = 0; i < kTinyCount; ++i)
      std::memcpy(g_buffer + i * kTinyBytes, span.data() + (g_tiny_offsets[i] - first), kTinyBytes);
    benchmark::DoNotOptimize(g_buffer);
  }
  set_tiny_bytes(state);
}

// A pread a tensor.
void BM_Tiny_PreadEach(benchmark::State& state) {
  for (auto _ : state) {
    const int fd = ::open(g_tiny->path.c_str(), O_RDONLY | O_CLOEXEC);
    for (size_t i = 0; i < kTinyCount; ++i)
      if (::pread(fd, g_buffer + i * kTinyBytes, kTinyBytes,
                  static_cast<off_t>(g_tiny_offsets[i])) != static_cast<ssize_t>(kTinyBytes))
        ztb::die("pread failed");
    ::close(fd);
    benchmark::DoNotOptimize(g_buffer);
  }
  set_tiny_bytes(state);
}

// zt_decode_many of every tensor, each into its own place, from a reader
// opened (untimed) for each iteration: a fresh mapping, as a load has.
void BM_Tiny_ZtDecodeMany(benchmark::State& state) {
  std::vector<zt_decode_request> q(kTinyCount);
  for (size_t i = 0; i < kTinyCount; ++i) {
    zt_decode_request_init(&q[i]);
    q[i].object = i;
    q[i].role = "data";
    q[i].dst = g_buffer + i * kTinyBytes;
    q[i].capacity = kTinyBytes;
  }
  for (auto _ : state) {
    state.PauseTiming();
    zt_open_options o;
    zt_open_options_init(&o);
    zt_reader* r = nullptr;
    ztb::check(zt_open_ex(g_tiny->path.c_str(), &o, &r), "zt_open_ex");
    state.ResumeTiming();
    ztb::check(zt_decode_many(r, q.data(), q.size(), static_cast<unsigned>(state.range(0))),
               "zt_decode_many");
    state.PauseTiming();
    zt_close(r);
    state.ResumeTiming();
    benchmark::DoNotOptimize(g_buffer);
  }
  set_tiny_bytes(state);
}

// Every tiny tensor into its place by read_one(reader, i), the reader
// opened once.
template <class ReadOne>
void each_tiny(benchmark::State& state, ReadOne read_one) {
  zt_reader* r = nullptr;
  ztb::check(zt_open(g_tiny->path.c_str(), &r), "zt_open");
  for (auto _ : state) {
    for (size_t i = 0; i < kTinyCount; ++i) read_one(r, i);
    benchmark::DoNotOptimize(g_buffer);
  }
  zt_close(r);
  set_tiny_bytes(state);
}

// One zt_decode_ranges call a tensor (what a get_tensor loop does), against
// zt_component_read of each: the fixed cost of one decode call.
void BM_Tiny_OneRangeACall(benchmark::State& state) {
  each_tiny(state, [](zt_reader* r, size_t i) {
    zt_decode_range q;
    zt_decode_range_init(&q);
    q.object = i;
    q.role = "data";
    q.dst = g_buffer + i * kTinyBytes;
    q.length = kTinyBytes;
    ztb::check(zt_decode_ranges(r, &q, 1, 0, nullptr, nullptr), "zt_decode_ranges");
  });
}

void BM_Tiny_ComponentReadEach(benchmark::State& state) {
  each_tiny(state, [](zt_reader* r, size_t i) {
    uint64_t written = 0;
    ztb::check(zt_component_read(r, i, "data", g_buffer + i * kTinyBytes, kTinyBytes, &written),
               "zt_component_read");
  });
}

void tiny(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(20);
}

BENCHMARK(BM_Tiny_PreadSpan)->Apply(tiny);
BENCHMARK(BM_Tiny_PreadEach)->Apply(tiny);
BENCHMARK(BM_Tiny_ZtDecodeMany)->ArgName("threads")->Arg(2)->Apply(tiny);
BENCHMARK(BM_Tiny_OneRangeACall)->Apply(tiny);
BENCHMARK(BM_Tiny_ComponentReadEach)->Apply(tiny);

// Every tensor a different 1 KiB of weights; the file warm, the offsets known.
void write_tiny(const std::string& path) {
  ztb::write_pieces(path, ztb::weights(kTinyCount * kTinyBytes, 7), kTinyCount, kTinyBytes, "raw",
                    ZT_DIGEST_NONE, 1);
  auto r = zt::Reader::open_file(path);
  if (!r) ztb::die(r.error().message);
  for (const auto& object : (*r)->manifest().objects)
    g_tiny_offsets.push_back(object.components[0].offset);
  ztb::warm_cache(path);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  g_file = std::make_unique<ztb::FileGuard>(ztb::bench_path("raw-1g.zt"));
  // The destination buffer, faulted in once so no benchmark pays for that.
  g_buffer = static_cast<uint8_t*>(std::malloc(kBytes));
  std::memset(g_buffer, 1, kBytes);
  {
    const auto data = ztb::weights(kBytes);
    zt_writer* w = ztb::open_writer(path(), 3, 0, ZT_DIGEST_NONE, 1 << 20);
    const uint64_t shape[2] = {kSide, kSide};
    ztb::check(zt_writer_add_dense(w, "w", "f32", shape, 2, data.data(), kBytes, "raw"),
               "zt_writer_add_dense");
    ztb::check(zt_writer_finish(w), "zt_writer_finish");
    auto r = zt::Reader::open_file(path());
    if (!r) ztb::die(r.error().message);
    g_offset = (*r)->manifest().objects[0].components[0].offset;
    // Every path compared must deliver the same bytes.
    zt_reader* zr = open_reader(ZT_IO_MAP);
    zt_decode_request q;
    zt_decode_request_init(&q);
    q.role = "data";
    q.dst = g_buffer;
    q.capacity = kBytes;
    ztb::check(zt_decode_many(zr, &q, 1, 0), "zt_decode_many");
    zt_close(zr);
    if (q.written != kBytes || std::memcmp(g_buffer, data.data(), kBytes) != 0)
      ztb::die("zt_decode_many returned other bytes than were written");
  }
  g_tiny = std::make_unique<ztb::FileGuard>(ztb::bench_path("raw-tiny.zt"));
  write_tiny(g_tiny->path);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::free(g_buffer);
  g_file.reset();
  g_tiny.reset();
  return 0;
}
