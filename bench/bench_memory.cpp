// Peak memory, each case in a fresh child process (this program re-executed
// with a mode) so that nothing else shares its peak:
//  - streaming-writing a 1 GiB component in 1 MiB pieces (raw, and zstd on
//    2 threads with 1 MiB frames): bounded by frame size x threads;
//  - opening that 1 GiB file (about the manifest's size), mapping its
//    component, and touching every byte of the mapping (file-backed pages,
//    no private copy);
//  - writing and opening a file of 100,000 objects, against the manifest's
//    size and against the floor: the same manifest decoded by cbor_load
//    (cbor_floor.h), the baseline bench_open times.
// The child reports VmRSS before the operation and VmHWM, RssAnon, RssFile
// after it; the parent adds ru_maxrss from wait4. Prints one JSON object.
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <map>

#include "bench_util.h"
#include "cbor_floor.h"

extern char** environ;

namespace {

constexpr uint64_t kBytes = uint64_t{1} << 30;
constexpr size_t kPiece = size_t{1} << 20;
constexpr size_t kManyObjects = 100000;

void stream_write(const std::string& path, const char* encoding) {
  zt_writer* w = ztb::open_writer(path, 3, 2, ZT_DIGEST_XXH3, kPiece);
  const uint64_t shape[1] = {kBytes / 4};
  ztb::check(zt_writer_begin_object(w, "w", "dense", shape, 1), "zt_writer_begin_object");
  ztb::check(zt_writer_begin_component(w, "data", "f32", nullptr, encoding, kBytes),
             "zt_writer_begin_component");
  std::vector<uint8_t> piece = ztb::weights(kPiece);
  for (uint64_t done = 0; done < kBytes; done += kPiece) {
    piece[0] = static_cast<uint8_t>(done >> 20);  // pieces differ
    ztb::check(zt_writer_write(w, piece.data(), piece.size()), "zt_writer_write");
  }
  ztb::check(zt_writer_end_component(w), "zt_writer_end_component");
  ztb::check(zt_writer_end_object(w), "zt_writer_end_object");
  ztb::check(zt_writer_finish(w), "zt_writer_finish");
}

zt_reader* open_and_enumerate(const std::string& path) {
  zt_reader* r = nullptr;
  ztb::check(zt_open(path.c_str(), &r), "zt_open");
  uint64_t acc = 0;
  for (size_t i = 0, n = zt_object_count(r); i < n; ++i)
    acc += static_cast<uint8_t>(zt_object_name(r, i)[0]);
  if (acc == 1) std::puts("");
  return r;
}

// Runs one case in this (child) process and prints its figures.
int child(const std::string& mode, const std::string& path) {
  const long rss_start = ztb::status_kib("VmRSS");
  zt_reader* r = nullptr;
  if (mode == "write_raw") {
    stream_write(path, "raw");
  } else if (mode == "write_zstd") {
    stream_write(path, "zstd");
  } else if (mode == "write_many") {
    ztb::write_many_small(path, kManyObjects);
  } else if (mode == "open" || mode == "open_many") {
    r = open_and_enumerate(path);
  } else if (mode == "map" || mode == "map_touch") {
    r = open_and_enumerate(path);
    const void* data = nullptr;
    uint64_t n = 0;
    ztb::check(zt_component_map(r, 0, "data", &data, &n), "zt_component_map");
    if (mode == "map_touch" && ztb::touch_all(static_cast<const uint8_t*>(data), n) == 1)
      std::puts("");
  } else if (mode == "cbor_load_many") {
    if (ztb::cbor_load_walk(path) == 1) std::puts("");
  } else if (mode != "idle") {
    ztb::die("unknown mode " + mode);
  }
  std::printf("{\"rss_start_kib\": %ld, \"hwm_kib\": %ld, \"anon_kib\": %ld, \"file_kib\": %ld}\n",
              rss_start, ztb::status_kib("VmHWM"), ztb::status_kib("RssAnon"),
              ztb::status_kib("RssFile"));
  zt_close(r);
  return 0;
}

struct Figures {
  std::string child_json;
  long maxrss_kib = 0;
};

Figures run_child(const std::string& mode, const std::string& path) {
  int fds[2];
  if (::pipe(fds) != 0) ztb::die("pipe failed");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  std::string self = "/proc/self/exe";
  std::vector<char*> argv = {self.data(), const_cast<char*>("--child"),
                             const_cast<char*>(mode.c_str()), const_cast<char*>(path.c_str()),
                             nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv.data(), environ) != 0)
    ztb::die("posix_spawn failed");
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  Figures f;
  char buf[512];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0)
    f.child_json.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  rusage ru{};
  ::wait4(pid, &status, 0, &ru);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ztb::die("child " + mode + " failed");
  f.maxrss_kib = ru.ru_maxrss;
  while (!f.child_json.empty() && (f.child_json.back() == '\n' || f.child_json.back() == '}'))
    f.child_json.pop_back();
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--child") return child(argv[2], argv[3]);
  ztb::FileGuard big(ztb::bench_path("memory-1g.zt"));
  ztb::FileGuard big_zstd(ztb::bench_path("memory-1g-zstd.zt"));
  ztb::FileGuard many(ztb::bench_path("memory-100k.zt"));
  const std::pair<const char*, const std::string*> cases[] = {
      {"idle", &big.path},        {"write_raw", &big.path},  {"write_zstd", &big_zstd.path},
      {"open", &big.path},        {"map", &big.path},        {"map_touch", &big.path},
      {"write_many", &many.path}, {"open_many", &many.path}, {"cbor_load_many", &many.path}};
  std::printf("{");
  bool first = true;
  for (const auto& [mode, path] : cases) {
    const Figures f = run_child(mode, *path);
    std::printf("%s\n \"%s\": %s, \"maxrss_kib\": %ld}", first ? "" : ",", mode,
                f.child_json.c_str(), f.maxrss_kib);
    first = false;
    if (std::string(mode) == "write_zstd") {
      std::printf(",\n \"zstd_file_bytes\": %llu",
                  static_cast<unsigned long long>(ztb::file_size(big_zstd.path)));
      ::unlink(big_zstd.path.c_str());
    }
  }
  const size_t manifest_1g = ztb::read_manifest(big.path).size();
  const size_t manifest_many = ztb::read_manifest(many.path).size();
  std::printf(
      ",\n \"manifest_bytes_1g\": %zu, \"manifest_bytes_100k\": %zu, \"file_bytes_1g\": %llu}\n",
      manifest_1g, manifest_many, static_cast<unsigned long long>(ztb::file_size(big.path)));
  return 0;
}
