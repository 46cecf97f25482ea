// A writer run as a separate process for the fault tests (they need
// LD_PRELOAD, resource limits and SIGKILL, none of which a test can apply
// to itself). Usage: zt_write_helper MODE TARGET
//   small  two small objects, then finish
//   big    one 4 MiB object, then finish
//   slow   a 1 GiB streamed component written in 64 KiB pieces, forever;
//          prints "ready" once the first piece is written
//   abort  one object, then zt_writer_abort
//   append       appends one 4 MiB object to the v2 file TARGET, then finish
//   append-slow  appends a 1 GiB streamed object as "slow" does
//   shards       three 100 KB objects as a v2 model split into shards of
//                128 KiB (TARGET is the root; <stem>-0000N.zt beside it)
// ZT_HELPER_FSIZE=N sets RLIMIT_FSIZE to N bytes with SIGXFSZ ignored, so
// writes past N fail with EFBIG as on a full disk.
// Exit code: the status of the last call, or 100 + the status of an
// earlier call that failed; after such a failure the helper still calls
// zt_writer_finish, as a caller must, which fails (ZT_ERR_STATE, else exit
// code 5) and has to clean up.
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ztensor.h"

namespace {

int earlier(zt_status s, zt_writer* w = nullptr) {
  std::fprintf(stderr, "zt_write_helper: %s: %s\n", zt_status_name(s), zt_last_error());
  if (w && zt_writer_finish(w) != ZT_ERR_STATE) return 5;
  return 100 + static_cast<int>(s);
}

int finish(zt_writer* w) {
  const zt_status s = zt_writer_finish(w);
  if (s)
    std::fprintf(stderr, "zt_write_helper: finish: %s: %s\n", zt_status_name(s), zt_last_error());
  return static_cast<int>(s);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: zt_write_helper small|big|slow|abort TARGET\n");
    return 2;
  }
  const std::string mode = argv[1];
  if (const char* fsize = std::getenv("ZT_HELPER_FSIZE")) {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlim_t n = std::strtoull(fsize, nullptr, 10);
    const struct rlimit rl = {n, n};
    if (::setrlimit(RLIMIT_FSIZE, &rl) != 0) return 3;
  }
  zt_writer_options opt;
  zt_writer_options_init(&opt);
  opt.threads = 1;
  zt_writer* w = nullptr;
  const bool append = mode.rfind("append", 0) == 0;
  if (mode == "shards" || mode == "shards-b") {
    opt.file_version = 2;
    opt.shard_bytes = 2 * 65536;
  }
  if (append) {
    if (const zt_status s = zt_writer_open_append(argv[2], &opt, &w)) return earlier(s);
  } else if (const zt_status s = zt_writer_open_ex(argv[2], &opt, &w)) {
    return earlier(s);
  }

  const std::vector<float> small = {1, 2, 3, 4, 5, 6};
  const uint64_t shape_small[] = {2, 3};
  if (mode == "small" || mode == "abort") {
    if (zt_status s = zt_writer_add_dense(w, "a", "f32", shape_small, 2, small.data(), 24, "raw"))
      return earlier(s, w);
    if (mode == "abort") {
      zt_writer_abort(w);
      return 0;
    }
    if (zt_status s = zt_writer_add_dense(w, "b", "f32", shape_small, 2, small.data(), 24, "zstd"))
      return earlier(s, w);
    return finish(w);
  }
  if (mode == "big" || mode == "append") {
    std::vector<uint8_t> big(4u << 20);
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
    const uint64_t shape[] = {big.size()};
    if (zt_status s = zt_writer_add_dense(w, "big", "u8", shape, 1, big.data(), big.size(), "raw"))
      return earlier(s, w);
    return finish(w);
  }
  if (mode == "shards" || mode == "shards-b") {
    // shards-b: another model of the same shape (other bytes, other shards).
    const unsigned mul = mode == "shards" ? 31u : 77u;
    std::vector<uint8_t> data(100000);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * mul >> 3);
    const uint64_t shape[] = {data.size()};
    for (const char* name : {"x", "y", "z"})
      if (zt_status s =
              zt_writer_add_dense(w, name, "u8", shape, 1, data.data(), data.size(), "raw"))
        return earlier(s, w);
    return finish(w);
  }
  if (mode == "slow" || mode == "append-slow") {
    const uint64_t total = uint64_t{1} << 30;
    const uint64_t shape[] = {total};
    if (zt_status s = zt_writer_begin_object(w, "stream", "dense", shape, 1)) return earlier(s, w);
    if (zt_status s = zt_writer_begin_component(w, "data", "u8", nullptr, "raw", total))
      return earlier(s, w);
    std::vector<uint8_t> piece(64 << 10, 7);
    for (uint64_t done = 0; done < total; done += piece.size()) {
      if (zt_status s = zt_writer_write(w, piece.data(), piece.size())) return earlier(s, w);
      if (done == 0) {
        std::printf("ready\n");
        std::fflush(stdout);
      }
      ::usleep(1000);
    }
    return 4;  // never reached in the tests: the process is killed
  }
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
