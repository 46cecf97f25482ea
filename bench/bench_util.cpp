#include "bench_util.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ztb {

void die(const std::string& what) {
  std::fprintf(stderr, "bench: %s\n", what.c_str());
  std::exit(2);
}

void check(zt_status s, const char* what) {
  if (s != ZT_OK) die(std::string(what) + ": " + zt_status_name(s) + ": " + zt_last_error());
}

std::string bench_dir() {
  const char* d = std::getenv("ZT_BENCH_DIR");
  std::string dir = d && *d ? d : "/tmp";
  ::mkdir(dir.c_str(), 0755);
  return dir;
}

std::string bench_path(const std::string& name) {
  return bench_dir() + "/ztbench-" + std::to_string(::getpid()) + "-" + name;
}

void drop_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) die("drop_cache: cannot open " + path);
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

void warm_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) die("warm_cache: cannot open " + path);
  std::vector<char> buf(1 << 20);
  while (::read(fd, buf.data(), buf.size()) > 0) {
  }
  ::close(fd);
}

uint64_t touch_all(const uint8_t* p, size_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t v[4];
    std::memcpy(v, p + i, 32);
    a += v[0], b += v[1], c += v[2], d += v[3];
  }
  for (; i < n; ++i) a += p[i];
  return a ^ b ^ c ^ d;
}

void fill_weights(uint8_t* dst, size_t n, uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&s] {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return s;
  };
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const uint64_t r = next();
    // Sum of four uniforms ~ normal; scale like a weight init (std ~0.02).
    const float u =
        static_cast<float>((r & 0xFFFF) + ((r >> 16) & 0xFFFF) + ((r >> 32) & 0xFFFF) + (r >> 48)) /
            65536.0f -
        2.0f;
    float f = u * 0.035f;
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bits &= 0xFFFF0000u;
    std::memcpy(dst + i, &bits, 4);
  }
  for (; i < n; ++i) dst[i] = 0;
}

std::vector<uint8_t> weights(size_t n, uint64_t seed) {
  std::vector<uint8_t> v(n);
  fill_weights(v.data(), n, seed);
  return v;
}

long status_kib(const char* key) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  const size_t klen = std::strlen(key);
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, key, klen) == 0 && line[klen] == ':')
      v = std::strtol(line + klen + 1, nullptr, 10);
  std::fclose(f);
  return v;
}

uint64_t file_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) die("cannot stat " + path);
  return static_cast<uint64_t>(st.st_size);
}

zt_writer* open_writer(const std::string& path, int level, unsigned threads, zt_digest_algo digest,
                       uint64_t frame_size) {
  zt_writer_options o;
  zt_writer_options_init(&o);
  o.zstd_level = level;
  o.threads = threads;
  o.digest = digest;
  o.frame_size = frame_size;
  zt_writer* w = nullptr;
  check(zt_writer_open_ex(path.c_str(), &o, &w), "zt_writer_open_ex");
  return w;
}

void write_one(const std::string& path, const std::vector<uint8_t>& bytes, const char* encoding,
               uint64_t frame_size, zt_digest_algo digest) {
  zt_writer* w = open_writer(path, 3, 0, digest, frame_size);
  const uint64_t shape[1] = {bytes.size() / 4};
  check(zt_writer_add_dense(w, "w", "f32", shape, 1, bytes.data(), bytes.size(), encoding),
        "zt_writer_add_dense");
  check(zt_writer_finish(w), "zt_writer_finish");
}

std::string object_name(size_t i) {
  static const char* const kParts[] = {
      "attn.q_proj.weight", "attn.k_proj.weight",   "attn.v_proj.weight", "attn.o_proj.weight",
      "mlp.up_proj.weight", "mlp.down_proj.weight", "input_norm.weight",  "post_norm.weight"};
  return "model.layers." + std::to_string(i / 8) + "." + kParts[i % 8];
}

void write_pieces(const std::string& path, const std::vector<uint8_t>& data, size_t count,
                  uint64_t piece, const char* encoding, zt_digest_algo digest, unsigned threads) {
  if (count * piece > data.size()) die("write_pieces: the pieces run past the data");
  zt_writer* w = open_writer(path, 3, threads, digest);
  const uint64_t shape[1] = {piece / 4};
  for (size_t i = 0; i < count; ++i)
    check(zt_writer_add_dense(w, object_name(i).c_str(), "f32", shape, 1, data.data() + i * piece,
                              piece, encoding),
          "zt_writer_add_dense");
  check(zt_writer_finish(w), "zt_writer_finish");
}

void write_many_small(const std::string& path, size_t count) {
  zt_writer* w = open_writer(path, 3, 1, ZT_DIGEST_XXH3);
  const std::vector<uint8_t> data = weights(64);
  const uint64_t shape[2] = {4, 4};
  for (size_t i = 0; i < count; ++i)
    check(zt_writer_add_dense(w, object_name(i).c_str(), "f32", shape, 2, data.data(), data.size(),
                              "raw"),
          "zt_writer_add_dense");
  check(zt_writer_finish(w), "zt_writer_finish");
}

void write_many_small_v2(const std::string& path, size_t count) {
  zt_writer_options o;
  zt_writer_options_init(&o);
  o.threads = 1;
  o.file_version = 2;
  o.canonical = 1;
  zt_writer* w = nullptr;
  check(zt_writer_open_ex(path.c_str(), &o, &w), "zt_writer_open_ex");
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) names.push_back(object_name(i));
  std::sort(names.begin(), names.end());
  const std::vector<uint8_t> data = weights(64);
  const uint64_t shape[2] = {4, 4};
  for (const std::string& name : names)
    check(zt_writer_add_dense(w, name.c_str(), "f32", shape, 2, data.data(), data.size(), "raw"),
          "zt_writer_add_dense");
  check(zt_writer_finish(w), "zt_writer_finish");
}

std::vector<uint8_t> read_manifest(int fd, uint64_t size) {
  uint8_t tail[16];
  if (::pread(fd, tail, 16, static_cast<off_t>(size - 16)) != 16) die("read_manifest: short read");
  uint64_t msize = 0;
  for (int i = 7; i >= 0; --i) msize = (msize << 8) | tail[i];
  std::vector<uint8_t> m(msize);
  size_t done = 0;
  while (done < msize) {
    const ssize_t n =
        ::pread(fd, m.data() + done, msize - done, static_cast<off_t>(size - 16 - msize + done));
    if (n <= 0) die("read_manifest: read failed");
    done += static_cast<size_t>(n);
  }
  return m;
}

std::vector<uint8_t> read_manifest(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) die("cannot open " + path);
  struct stat st {};
  ::fstat(fd, &st);
  std::vector<uint8_t> m = read_manifest(fd, static_cast<uint64_t>(st.st_size));
  ::close(fd);
  return m;
}
}  // namespace ztb
