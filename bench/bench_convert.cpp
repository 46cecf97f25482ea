// Converting a 1 GiB PyTorch checkpoint (issue 18): `zt convert IN.pt
// OUT.zt`, run in-process, against copying the same file's bytes durably
// (read and write in 4 MiB pieces, fsync, rename: what any converter must
// at least do). Both torch.save containers: the zip format (members stored,
// viewed in place once their CRC-32 is checked) and the legacy format
// (storages viewed in place).
//
// The checkpoints are written here as torch.save writes them (no PyTorch
// in the bench): 16 f32 tensors of 64 MiB, a protocol-2 pickle of
// _rebuild_tensor_v2 calls, stored zip members 64-byte aligned by libzip's
// defaults or not (alignment does not change the reading).
#include <benchmark/benchmark.h>
#include <zip.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bench_util.h"
#include "commands.h"

namespace {

constexpr size_t kTensors = 16;
constexpr size_t kTensorBytes = size_t{64} << 20;
constexpr size_t kTotal = kTensors * kTensorBytes;

std::string g_zip, g_legacy, g_target;

// ---- pickle bytes, as Python's pickler writes them (protocol 2) ----

void text(std::string& p, const std::string& s) {
  p += '\x8c';
  p += static_cast<char>(s.size());
  p += s;
}
void int32(std::string& p, uint32_t v) {
  p += 'J';
  for (int i = 0; i < 4; ++i) p += static_cast<char>((v >> (8 * i)) & 0xFF);
}
void global(std::string& p, const char* module, const char* name) {
  p += 'c';
  p += module;
  p += '\n';
  p += name;
  p += '\n';
}

std::string state_dict_pickle() {
  std::string p = "\x80\x02}(";
  for (size_t i = 0; i < kTensors; ++i) {
    text(p, "layer" + std::to_string(i) + ".weight");
    global(p, "torch._utils", "_rebuild_tensor_v2");
    p += "((";
    text(p, "storage");
    global(p, "torch", "FloatStorage");
    text(p, std::to_string(i));
    text(p, "cpu");
    int32(p, kTensorBytes / 4);
    p += "tQ";  // the persistent id
    int32(p, 0);
    p += '(';
    int32(p, 4096);
    int32(p, kTensorBytes / 4 / 4096);
    p += "t(";
    int32(p, kTensorBytes / 4 / 4096);
    int32(p, 1);
    p += "t\x89";
    global(p, "collections", "OrderedDict");
    p += ")RtR";
  }
  p += "u.";
  return p;
}

std::string pickle_of_int(const std::string& long1) {
  return "\x80\x02" + long1 + ".";
}

void write_zip(const std::string& path, const std::vector<uint8_t>& data) {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  if (!z) ztb::die("zip_open failed");
  const std::string pkl = state_dict_pickle();
  const auto add = [&](const std::string& name, const void* bytes, size_t n) {
    zip_source_t* s = zip_source_buffer(z, bytes, n, 0);
    const zip_int64_t i = s ? zip_file_add(z, name.c_str(), s, ZIP_FL_ENC_UTF_8) : -1;
    if (i < 0) ztb::die("zip_file_add failed");
    zip_set_file_compression(z, static_cast<zip_uint64_t>(i), ZIP_CM_STORE, 0);
  };
  add("archive/data.pkl", pkl.data(), pkl.size());
  for (size_t i = 0; i < kTensors; ++i)
    add("archive/data/" + std::to_string(i), data.data() + i * kTensorBytes, kTensorBytes);
  add("archive/version", "3\n", 2);
  if (zip_close(z) != 0) ztb::die("zip_close failed");
}

void write_legacy(const std::string& path, const std::vector<uint8_t>& data) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) ztb::die("cannot write " + path);
  const std::string magic =
      pickle_of_int(std::string("\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", 12));
  const std::string protocol = "\x80\x02M\xe9\x03.";  // 1001
  const std::string info = "\x80\x02}.";              // little-endian by default
  std::string pkl = state_dict_pickle();
  // The legacy id has a sixth field (view metadata): None.
  for (size_t at = 0; (at = pkl.find("tQ", at)) != std::string::npos; at += 3) pkl.insert(at, 1, 'N');  // (a count: GCC 12 -Wrestrict misreads a literal here)
  std::string keys = "\x80\x02](";
  for (size_t i = 0; i < kTensors; ++i) text(keys, std::to_string(i));
  keys += "e.";
  for (const std::string* s : {&magic, &protocol, &info, static_cast<const std::string*>(&pkl),
                               static_cast<const std::string*>(&keys)})
    std::fwrite(s->data(), 1, s->size(), f);
  for (size_t i = 0; i < kTensors; ++i) {
    const uint64_t count = kTensorBytes / 4;
    std::fwrite(&count, 8, 1, f);  // little-endian on the machines we bench
    std::fwrite(data.data() + i * kTensorBytes, 1, kTensorBytes, f);
  }
  std::fclose(f);
}

void BM_Convert_CopyFile(benchmark::State& state) {
  std::vector<uint8_t> buf(size_t{4} << 20);
  const std::string tmp = g_target + ".tmp";
  for (auto _ : state) {
    const int in = ::open(g_zip.c_str(), O_RDONLY);
    const int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0) ztb::die("cannot open for the copy");
    for (ssize_t n; (n = ::read(in, buf.data(), buf.size())) > 0;)
      if (::write(out, buf.data(), static_cast<size_t>(n)) != n) ztb::die("short write");
    ::fsync(out);
    ::close(in);
    ::close(out);
    ::rename(tmp.c_str(), g_target.c_str());
    ::unlink(g_target.c_str());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kTotal));
}

void convert(benchmark::State& state, const std::string& in) {
  for (auto _ : state) {
    std::string a0 = "zt", a1 = "convert", a2 = in, a3 = g_target;
    char* argv[] = {a0.data(), a1.data(), a2.data(), a3.data(), nullptr};
    // zt prints "wrote ...": keep it out of the benchmark's own output.
    std::fflush(stdout);
    const int saved = ::dup(1);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    const int rc = zt::cli::run_zt(4, argv);
    std::fflush(stdout);
    ::dup2(saved, 1);
    ::close(saved);
    ::close(null);
    if (rc != 0) ztb::die("zt convert " + in + " failed");
    ::unlink(g_target.c_str());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kTotal));
}

void BM_Convert_PytorchZip(benchmark::State& state) {
  convert(state, g_zip);
}
void BM_Convert_PytorchLegacy(benchmark::State& state) {
  convert(state, g_legacy);
}

void io(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
}

BENCHMARK(BM_Convert_CopyFile)->Apply(io);
BENCHMARK(BM_Convert_PytorchZip)->Apply(io);
BENCHMARK(BM_Convert_PytorchLegacy)->Apply(io);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  g_zip = ztb::bench_path("checkpoint.pt");
  g_legacy = ztb::bench_path("checkpoint_legacy.pt");
  g_target = ztb::bench_path("checkpoint.zt");
  {
    const std::vector<uint8_t> data = ztb::weights(kTotal);
    write_zip(g_zip, data);
    write_legacy(g_legacy, data);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  ::unlink(g_zip.c_str());
  ::unlink(g_legacy.c_str());
  ::unlink(g_target.c_str());
  return 0;
}
