// Helpers shared by the fuzz targets: a check that aborts with a message
// (libFuzzer and the regression driver both report an abort as a crash), a
// reader of fuzzed bytes that never runs out (missing bytes read as zero),
// and a scratch directory on tmpfs.
#pragma once

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace zt::fuzz {

[[noreturn]] inline void check_failed(const char* file, int line, const char* cond,
                                      const std::string& detail) {
  std::fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n  %s\n", file, line, cond,
               detail.c_str());
  std::abort();
}

// FUZZ_CHECK(cond, detail): `detail` is a std::string expression evaluated
// only on failure.
#define FUZZ_CHECK(cond, detail)                                                \
  do {                                                                          \
    if (!(cond)) ::zt::fuzz::check_failed(__FILE__, __LINE__, #cond, (detail)); \
  } while (0)

// Consumes fuzzed bytes front to back; past the end every read gives zeros,
// so any input is a complete program.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : p_(data), n_(size) {}

  bool empty() const { return pos_ >= n_; }
  size_t remaining() const { return empty() ? 0 : n_ - pos_; }

  uint8_t u8() { return pos_ < n_ ? p_[pos_++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(u8()) << (8 * i);
    return v;
  }
  // Up to n bytes (fewer at the end of the input).
  std::vector<uint8_t> bytes(size_t n) {
    const size_t take = n < remaining() ? n : remaining();
    std::vector<uint8_t> out(p_ + pos_, p_ + pos_ + take);
    pos_ += take;
    return out;
  }
  std::string text(size_t n) {
    const std::vector<uint8_t> b = bytes(n);
    return std::string(b.begin(), b.end());
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

// A directory for files the targets write: on tmpfs when there is one (the
// writer fsyncs), one per process so that parallel fuzzing jobs do not meet.
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    struct stat st {};
    const char* env = std::getenv("TMPDIR");
    std::string base =
        ::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : (env ? env : "/tmp");
    std::string d = base + "/zt-fuzz-" + std::to_string(::getpid());
    ::mkdir(d.c_str(), 0700);
    return d;
  }();
  return dir;
}

// Names in a directory (not "." or "..").
inline std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        names.emplace_back(e->d_name);
    ::closedir(d);
  }
  return names;
}

inline void remove_all_in(const std::string& dir) {
  for (const std::string& n : list_dir(dir)) ::unlink((dir + "/" + n).c_str());
}

inline bool write_file(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = (size == 0 || std::fwrite(data, 1, size, f) == size);
  return std::fclose(f) == 0 && ok;
}

inline bool read_file(const std::string& path, std::vector<uint8_t>& out) {
  out.clear();
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  uint8_t buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.insert(out.end(), buf, buf + n);
  const bool ok = !std::ferror(f);
  std::fclose(f);
  return ok;
}

inline std::string str(const char* s) {
  return s ? std::string(s) : std::string("(null)");
}

}  // namespace zt::fuzz
