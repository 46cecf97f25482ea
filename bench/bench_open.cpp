// Open + enumerate every object of files with 1k, 10k and 100k objects,
// against the floor: the same manifest bytes read with pread and decoded by
// libcbor's cbor_load, plus a walk of every item. The Stage_* benchmarks
// split our open into its stages (CBOR tape, manifest model, validation) to
// show where the time goes.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>

#include "bench_util.h"
#include "cbor_floor.h"
#include "cbor/cbor_value.h"
#include "manifest/manifest.h"
#include "read/validate.h"

namespace {

std::map<int64_t, std::unique_ptr<ztb::FileGuard>> g_files;
// The same objects in zTensor v2 (canonical, one shared blob).
std::map<int64_t, std::unique_ptr<ztb::FileGuard>> g_files_v2;

const std::string& file_for(int64_t objects) {
  return g_files.at(objects)->path;
}

uint64_t enumerate(const zt_reader* r) {
  uint64_t acc = 0;
  const size_t n = zt_object_count(r);
  for (size_t i = 0; i < n; ++i) {
    acc += static_cast<uint8_t>(zt_object_name(r, i)[0]);
    acc += static_cast<uint8_t>(zt_object_format(r, i)[0]);
    size_t ndim = 0;
    const uint64_t* shape = zt_object_shape(r, i, &ndim);
    for (size_t d = 0; d < ndim; ++d) acc += shape[d];
    const size_t nc = zt_component_count(r, i);
    for (size_t k = 0; k < nc; ++k) {
      const char* role = zt_component_role(r, i, k);
      acc += static_cast<uint8_t>(zt_component_dtype(r, i, role)[0]);
      acc += static_cast<uint8_t>(zt_component_encoding(r, i, role)[0]);
      uint64_t stored = 0;
      zt_component_stored_size(r, i, role, &stored);
      acc += stored;
    }
  }
  return acc;
}

// Open + enumerate of `path`, timed per object.
void open_enumerate(benchmark::State& state, const std::string& path) {
  for (auto _ : state) {
    zt_reader* r = nullptr;
    ztb::check(zt_open(path.c_str(), &r), "zt_open");
    benchmark::DoNotOptimize(enumerate(r));
    zt_close(r);
  }
  state.counters["ns_per_object"] = benchmark::Counter(
      static_cast<double>(state.range(0)),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_ZtOpenEnumerate(benchmark::State& state) {
  open_enumerate(state, file_for(state.range(0)));
}

// v2 adds the deterministic-CBOR check of the manifest bytes and their
// XXH3-64 to what 1.2's open does: the same objects, ratio against 1.2.
void BM_ZtOpenEnumerateV2(benchmark::State& state) {
  open_enumerate(state, g_files_v2.at(state.range(0))->path);
}

void BM_CborLoadWalk(benchmark::State& state) {
  const std::string& path = file_for(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(ztb::cbor_load_walk(path));
  state.counters["ns_per_object"] = benchmark::Counter(
      static_cast<double>(state.range(0)),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// Stages of our open on the same manifest bytes (already in memory).
std::vector<uint8_t> manifest_of(int64_t objects) {
  return ztb::read_manifest(file_for(objects));
}

void BM_Stage_CborTape(benchmark::State& state) {
  const auto m = manifest_of(state.range(0));
  for (auto _ : state) {
    auto doc = zt::cbor::decode(m);
    if (!doc) ztb::die(doc.error().message);
    benchmark::DoNotOptimize(doc->size());
  }
}

void BM_Stage_TapeAndModel(benchmark::State& state) {
  const auto m = manifest_of(state.range(0));
  for (auto _ : state) {
    auto doc = zt::cbor::decode(m);
    auto man = zt::parse_manifest(zt::Generation::v1, std::move(*doc));
    if (!man) ztb::die(man.error().message);
    benchmark::DoNotOptimize(man->objects.size());
  }
}

void BM_Stage_TapeModelValidate(benchmark::State& state) {
  const auto m = manifest_of(state.range(0));
  const uint64_t size = ztb::file_size(file_for(state.range(0)));
  for (auto _ : state) {
    auto doc = zt::cbor::decode(m);
    auto man = zt::parse_manifest(zt::Generation::v1, std::move(*doc));
    auto ok = zt::validate(*man, size, size - 16 - m.size(), m.size());
    if (!ok) ztb::die(ok.error().message);
    benchmark::DoNotOptimize(man->objects.size());
  }
}

void sizes(benchmark::internal::Benchmark* b) {
  b->Arg(1000)
      ->Arg(10000)
      ->Arg(100000)
      ->Unit(benchmark::kMicrosecond)
      ->MeasureProcessCPUTime()
      ->UseRealTime()
      ->MinTime(0.2);
}

BENCHMARK(BM_ZtOpenEnumerate)->Apply(sizes);
BENCHMARK(BM_ZtOpenEnumerateV2)->Apply(sizes);
BENCHMARK(BM_CborLoadWalk)->Apply(sizes);
BENCHMARK(BM_Stage_CborTape)->Apply(sizes);
BENCHMARK(BM_Stage_TapeAndModel)->Apply(sizes);
BENCHMARK(BM_Stage_TapeModelValidate)->Apply(sizes);

}  // namespace

int main(int argc, char** argv) {
  for (const int64_t n : {1000, 10000, 100000}) {
    auto guard =
        std::make_unique<ztb::FileGuard>(ztb::bench_path("open-" + std::to_string(n) + ".zt"));
    ztb::write_many_small(guard->path, static_cast<size_t>(n));
    ztb::warm_cache(guard->path);
    g_files.emplace(n, std::move(guard));
    auto v2 =
        std::make_unique<ztb::FileGuard>(ztb::bench_path("open-v2-" + std::to_string(n) + ".zt"));
    ztb::write_many_small_v2(v2->path, static_cast<size_t>(n));
    ztb::warm_cache(v2->path);
    g_files_v2.emplace(n, std::move(v2));
    benchmark::AddCustomContext("manifest_bytes_" + std::to_string(n),
                                std::to_string(manifest_of(n).size()));
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  g_files.clear();
  g_files_v2.clear();
  return 0;
}
