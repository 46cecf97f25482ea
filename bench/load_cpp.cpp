// One timed load for the report (bench/bench_cpp.sh): open + every tensor
// of a model into memory of its own through the C++ wrapper, by
// Reader::read_many (`read-many`) or by Reader::decode_many into
// std::vector<std::byte>s of their sizes (`by-hand`, the obvious C++ way),
// or the floor: a thread a core pread(2)ing the file into one new buffer
// (`floor`: new std::byte[n], 4 KiB pages; `floor-huge`: a Bytes, in huge
// pages as read_many's large ones are). One load a process (a program's
// first load), printed as `go test -bench` prints one iteration, for
// bench/report.py:
//   bench_load_cpp llm|small read-many|by-hand|floor|floor-huge DIR
// `llm` is 32 x 32 MiB and 500 x 256 KiB bf16 (1.1 GiB), `small` 4,096 x
// 64 KiB; each is written into DIR by the first run that needs it.
// Links the public library alone, as a user's program does.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>
#include <ztensor.hpp>

namespace {

namespace fs = std::filesystem;

fs::path model(const fs::path& dir, std::string_view which) {
  const bool llm = which == "llm";
  const std::size_t big = llm ? 32 : 0, big_bytes = std::size_t{32} << 20;
  const std::size_t small = llm ? 500 : 4096, small_bytes = llm ? 256 << 10 : 64 << 10;
  const fs::path p = dir / ("cpp-" + std::string(which) + ".zt");
  if (fs::exists(p)) return p;
  std::vector<std::byte> data(llm ? big_bytes : small_bytes);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i * 131 + (i >> 9));
  ztensor::Writer w(p);
  for (std::size_t k = 0; k < big; ++k)
    w.add_dense("big." + std::to_string(k), "bf16", {big_bytes / 2},
                std::span<const std::byte>(data).first(big_bytes));
  for (std::size_t k = 0; k < small; ++k)
    w.add_dense("small." + std::to_string(k), "bf16", {small_bytes / 2},
                std::span<const std::byte>(data).first(small_bytes));
  w.finish();
  return p;
}

std::vector<ztensor::Reader::Item> every_tensor(const ztensor::Reader& r) {
  std::vector<ztensor::Reader::Item> items;
  items.reserve(r.size());
  for (std::size_t i = 0; i < r.size(); ++i) items.push_back({i});
  return items;
}

std::size_t read_many(const fs::path& p) {
  const ztensor::Reader r(p);
  const std::vector<ztensor::Bytes> tensors = r.read_many(every_tensor(r));
  std::size_t n = 0;
  for (const ztensor::Bytes& t : tensors) n += t.size();
  return n;
}

std::size_t by_hand(const fs::path& p) {
  const ztensor::Reader r(p);
  std::vector<std::vector<std::byte>> tensors;
  std::vector<ztensor::Reader::Request> requests;
  tensors.reserve(r.size());
  for (std::size_t i = 0; i < r.size(); ++i) {
    tensors.emplace_back(r[i].data().decoded_size().value());
    requests.push_back({i, "data", tensors.back()});
  }
  r.decode_many(requests);
  std::size_t n = 0;
  for (const auto& t : tensors) n += t.size();
  return n;
}

// The file into `into` (its size) on a thread a core, 8 MiB a pread.
void read_file(const fs::path& p, std::span<std::byte> into) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), p.string());
  const std::size_t threads = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t share = (into.size() + threads - 1) / threads;
  std::vector<std::thread> workers;
  for (std::size_t t = 0; t < threads && t * share < into.size(); ++t)
    workers.emplace_back([&, t] {
      const std::size_t end = std::min(into.size(), (t + 1) * share);
      for (std::size_t at = t * share; at < end;) {
        const ssize_t got = ::pread(fd, into.data() + at, std::min<std::size_t>(end - at, 8 << 20),
                                    static_cast<off_t>(at));
        if (got <= 0) std::abort();  // the file is the model just written
        at += static_cast<std::size_t>(got);
      }
    });
  for (std::thread& w : workers) w.join();
  ::close(fd);
}

std::size_t floor(const fs::path& p) {
  const std::size_t n = fs::file_size(p);
  const auto buf = std::make_unique_for_overwrite<std::byte[]>(n);
  read_file(p, {buf.get(), n});
  return n;
}

std::size_t floor_huge(const fs::path& p) {
  ztensor::Bytes buf = ztensor::Bytes::uninitialized(fs::file_size(p));
  read_file(p, buf.span());
  return buf.size();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view which = argc == 4 ? argv[1] : "", how = argc == 4 ? argv[2] : "";
  if ((which != "llm" && which != "small") ||
      (how != "read-many" && how != "by-hand" && how != "floor" && how != "floor-huge")) {
    std::fprintf(stderr,
                 "usage: bench_load_cpp llm|small read-many|by-hand|floor|floor-huge DIR\n");
    return 2;
  }
  const fs::path p = model(argv[3], which);
  const auto start = std::chrono::steady_clock::now();
  const std::size_t bytes = how == "read-many" ? read_many(p)
                            : how == "by-hand" ? by_hand(p)
                            : how == "floor"   ? floor(p)
                                               : floor_huge(p);
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  const char* model_name = which == "llm" ? "LLM" : "Small";
  const char* what = how == "read-many" ? "ReadMany"
                     : how == "by-hand" ? "ByHand"
                     : how == "floor"   ? "Floor"
                                        : "FloorHuge";
  std::printf("BenchmarkCppLoad%s%s   1   %lld ns/op   (%zu bytes)\n", model_name, what,
              static_cast<long long>(ns), bytes);
  return 0;
}
