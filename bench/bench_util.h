// Helpers shared by the benchmark programs: where files go, page-cache
// control, the byte-touching loop, test data, memory figures, and files
// written through the public C API.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ztensor.h"

namespace ztb {

// Benchmarks stop at the first failure: a wrong result times nothing.
[[noreturn]] void die(const std::string& what);
void check(zt_status s, const char* what);

// Scratch directory for benchmark files: $ZT_BENCH_DIR, else /tmp.
std::string bench_dir();
// A file name in bench_dir() unique to this process.
std::string bench_path(const std::string& name);

// Removes a file when it goes out of scope (big files must not linger).
struct FileGuard {
  std::string path;
  explicit FileGuard(std::string p) : path(std::move(p)) {}
  FileGuard(const FileGuard&) = delete;
  FileGuard& operator=(const FileGuard&) = delete;
  ~FileGuard() {
    if (!path.empty()) ::unlink(path.c_str());
  }
};

// Writes back and drops a file's pages from the page cache ("cold").
void drop_cache(const std::string& path);

// Pulls a whole file into the page cache ("hot").
void warm_cache(const std::string& path);

// The one loop that touches every byte, used for every access path compared.
[[gnu::noinline]] uint64_t touch_all(const uint8_t* p, size_t n);

// Deterministic data shaped like model weights: bf16 values widened to f32
// (low 16 bits zero), roughly normal. zstd shrinks it to about half, with
// real entropy-decoding work, unlike zeros or random bytes.
void fill_weights(uint8_t* dst, size_t n, uint64_t seed = 42);

std::vector<uint8_t> weights(size_t n, uint64_t seed = 42);

// A value from /proc/self/status ("VmHWM", "VmRSS", "RssAnon", "RssFile") in KiB.
long status_kib(const char* key);

uint64_t file_size(const std::string& path);

// A writer with these options (frames of frame_size bytes).
zt_writer* open_writer(const std::string& path, int level, unsigned threads, zt_digest_algo digest,
                       uint64_t frame_size = 1 << 20);

// One dense f32 object "w" holding `bytes` (a multiple of 4).
void write_one(const std::string& path, const std::vector<uint8_t>& bytes, const char* encoding,
               uint64_t frame_size = 1 << 20, zt_digest_algo digest = ZT_DIGEST_XXH3);

// Names like a transformer checkpoint's: "model.layers.12.mlp.up_proj.weight".
std::string object_name(size_t i);

// A file of `count` dense f32 objects (object_name(i)), object i holding
// data[i * piece, (i + 1) * piece) (piece a multiple of 4), each stored
// with `encoding`, digests `digest`, compressed on `threads` threads.
void write_pieces(const std::string& path, const std::vector<uint8_t>& data, size_t count,
                  uint64_t piece, const char* encoding, zt_digest_algo digest, unsigned threads);

// A file of `count` small dense objects (4 x 4 f32, raw, xxh3 digests).
void write_many_small(const std::string& path, size_t count);
// The same objects as a canonical zTensor v2 file: names in byte order, and
// every tensor holding the same bytes, so all share one blob.
void write_many_small_v2(const std::string& path, size_t count);

// The manifest bytes of a 1.2.0 file, read with pread as any reader would.
std::vector<uint8_t> read_manifest(int fd, uint64_t size);
// The same, opening (open + fstat) and closing the file at `path`.
std::vector<uint8_t> read_manifest(const std::string& path);

}  // namespace ztb
