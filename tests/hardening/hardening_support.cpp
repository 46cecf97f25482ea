#include "hardening_support.h"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace zt::hardening {

namespace {

void put_u64_le(Bytes& out, uint64_t v) {
  for (int i = 0; i < 8; ++i, v >>= 8) out.push_back(static_cast<uint8_t>(v & 0xFF));
}

void pad_to_64(Bytes& b) {
  b.resize((b.size() + 63) / 64 * 64, 0);
}

}  // namespace

Bytes assemble(std::span<const uint8_t> blobs, std::span<const uint8_t> manifest) {
  Bytes out = {'Z', 'T', 'E', 'N', '1', '0', '0', '0'};
  append(out, blobs);
  pad_to_64(out);
  append(out, manifest);
  put_u64_le(out, manifest.size());
  for (const char c : std::string_view("ZTEN1000")) out.push_back(static_cast<uint8_t>(c));
  return out;
}

uint64_t Blobs::add(std::span<const uint8_t> bytes) {
  // File offset = 8 (header) + position in bytes_.
  const uint64_t at = (8 + bytes_.size() + 63) / 64 * 64;
  bytes_.resize(at - 8, 0);
  bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
  return at;
}

void component(CborWriter& w, std::string_view dtype, uint64_t offset, uint64_t length, bool zstd,
               std::optional<uint64_t> uncompressed_length) {
  w.map(3 + (zstd ? 1 : 0) + (uncompressed_length ? 1 : 0));
  w.text("dtype");
  w.text(dtype);
  w.text("offset");
  w.uint(offset);
  w.text("length");
  w.uint(length);
  if (zstd) {
    w.text("encoding");
    w.text("zstd");
  }
  if (uncompressed_length) {
    w.text("uncompressed_length");
    w.uint(*uncompressed_length);
  }
}

void begin_one_object(CborWriter& w, std::string_view version, std::string_view name,
                      size_t fields) {
  w.map(2);
  w.text("version");
  w.text(version);
  w.text("objects");
  w.map(1);
  w.text(name);
  w.map(fields);
}

Bytes dense_manifest(std::string_view version, std::string_view name, std::string_view dtype,
                     std::span<const uint64_t> shape, uint64_t offset, uint64_t length, bool zstd,
                     std::optional<uint64_t> uncompressed_length, std::string_view format) {
  CborWriter w;
  begin_one_object(w, version, name, 3);
  w.text("shape");
  w.array(shape.size());
  for (const uint64_t d : shape) w.uint(d);
  w.text("format");
  w.text(format);
  w.text("components");
  w.map(1);
  w.text("data");
  component(w, dtype, offset, length, zstd, uncompressed_length);
  return w.take();
}

Bytes zstd_frame(std::span<const uint8_t> src, int level) {
  Bytes out(ZSTD_compressBound(src.size()));
  const size_t n = ZSTD_compress(out.data(), out.size(), src.data(), src.size(), level);
  if (ZSTD_isError(n)) throw std::runtime_error(ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

ScratchDir::ScratchDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/zt-hardening-XXXXXX";
  if (!::mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
  path_ = templ;
}

ScratchDir::~ScratchDir() {
  for (const std::string& n : list()) ::unlink(file(n).c_str());
  ::rmdir(path_.c_str());
}

std::vector<std::string> ScratchDir::list() const {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(path_.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        names.emplace_back(e->d_name);
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

void write_file(const std::string& path, std::span<const uint8_t> bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

Bytes read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  return Bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

namespace {

ChildOutcome fork_and_wait(const std::function<int()>& body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    int rc = 125;
    try {
      rc = body();
    } catch (...) {
      rc = 124;
    }
    std::fflush(nullptr);
    ::_exit(rc);
  }
  int status = 0;
  struct rusage ru {};
  ChildOutcome out;
  if (::wait4(pid, &status, 0, &ru) != pid) throw std::runtime_error("wait4 failed");
  out.exited = WIFEXITED(status);
  out.exit_code = out.exited ? WEXITSTATUS(status) : -1;
  out.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  out.peak_rss = static_cast<uint64_t>(ru.ru_maxrss) * 1024;
  return out;
}

}  // namespace

ChildOutcome run_child(const std::function<int()>& body) {
  // An idle child forked from the same parent state first: what the
  // inherited pages alone cost.
  const uint64_t baseline = fork_and_wait([] { return 0; }).peak_rss;
  ChildOutcome out = fork_and_wait(body);
  out.baseline_rss = baseline;
  return out;
}

}  // namespace zt::hardening
