#include "foreign.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cbor_value.h"
#include "gguf.h"
#include "npy.h"
#include "safetensors.h"
#include "zt_limits.h"

namespace zt::formats {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

FileKind kind_from_path(std::string_view path) {
  if (ends_with(path, ".zt")) return FileKind::zt;
  if (ends_with(path, ".safetensors")) return FileKind::safetensors;
  if (ends_with(path, ".gguf")) return FileKind::gguf;
  if (ends_with(path, ".npy")) return FileKind::npy;
  if (ends_with(path, ".npz")) return FileKind::npz;
  return FileKind::unknown;
}

std::string_view kind_name(FileKind k) {
  switch (k) {
    case FileKind::zt:
      return "zt";
    case FileKind::safetensors:
      return "safetensors";
    case FileKind::gguf:
      return "gguf";
    case FileKind::npy:
      return "npy";
    case FileKind::npz:
      return "npz";
    case FileKind::unknown:
      break;
  }
  return "unknown";
}

namespace {

Result<ForeignFile> read_by_kind(const std::string& path) {
  switch (kind_from_path(path)) {
    case FileKind::safetensors:
      return read_safetensors(path);
    case FileKind::gguf:
      return read_gguf(path);
    case FileKind::npy:
      return read_npy(path);
    case FileKind::npz:
      return read_npz(path);
    case FileKind::zt:
    case FileKind::unknown:
      break;
  }
  return make_error(Status::unsupported,
                    "%s: unknown file type (expected .zt, .safetensors, .gguf, .npy or .npz)",
                    path.c_str());
}

// What a reader returns goes straight to zt::Writer: refuse here, naming the
// file, what the writer would refuse later (found by fuzzing, F6).
Result<void> check_writable(const std::string& path, const ForeignFile& f) {
  for (const ForeignObject& o : f.objects) {
    ZT_FAIL_IF(o.name.empty() || o.name.size() > Limits::name_bytes || o.name.find('\0') != std::string::npos ||
                   !cbor::is_valid_utf8(o.name),
               invalid, "%s: tensor name \"%s\" is empty, longer than %llu bytes, holds a NUL byte or is not UTF-8",
               path.c_str(), o.name.substr(0, 100).c_str(), static_cast<unsigned long long>(Limits::name_bytes));
    for (const ForeignComponent& c : o.components) {
      if (c.dtype != DType::boolean) continue;
      const auto bad = std::find_if(c.bytes.begin(), c.bytes.end(), [](uint8_t b) { return b > 1; });
      ZT_FAIL_IF(bad != c.bytes.end(), invalid, "%s: tensor \"%s\": bool byte 0x%02x at element %zu is neither 0 nor 1",
                 path.c_str(), o.name.c_str(), *bad, static_cast<size_t>(bad - c.bytes.begin()));
    }
  }
  return {};
}

}  // namespace

Result<ForeignFile> read_foreign(const std::string& path) {
  auto f = read_by_kind(path);
  ZT_TRY(f);
  ZT_TRY(check_writable(path, *f));
  return f;
}

bool Cursor::take(uint64_t n, std::span<const uint8_t>& out) {
  if (n > left()) return false;
  out = bytes_.subspan(pos_, n);
  pos_ += n;
  return true;
}


Result<AtomicFile> AtomicFile::create(const std::string& path) {
  AtomicFile f;
  f.path_ = path;
  f.tmp_ = path + ".tmp-XXXXXX";
  f.fd_ = ::mkostemp(f.tmp_.data(), O_CLOEXEC);
  ZT_FAIL_IF(f.fd_ < 0, io, "%s: cannot create a temporary file beside it: %s", path.c_str(),
             std::strerror(errno));
  // mkostemp creates 0600; the published file gets the usual 0666 & ~umask.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(f.fd_, 0666 & ~mask);
  return f;
}

AtomicFile::AtomicFile(AtomicFile&& o) noexcept
    : path_(std::move(o.path_)), tmp_(std::move(o.tmp_)), fd_(std::exchange(o.fd_, -1)) {
  o.tmp_.clear();
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

Result<void> AtomicFile::write(std::span<const uint8_t> bytes) {
  ZT_FAIL_IF(fd_ < 0, state, "%s: the file is already closed", path_.c_str());
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ZT_FAIL_IF(n < 0, io, "%s: write failed: %s", path_.c_str(), std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return {};
}

Result<void> AtomicFile::commit() {
  ZT_FAIL_IF(fd_ < 0, state, "%s: the file is already closed", path_.c_str());
  ZT_FAIL_IF(::fsync(fd_) != 0, io, "%s: fsync failed: %s", path_.c_str(), std::strerror(errno));
  ::close(fd_);
  fd_ = -1;
  ZT_FAIL_IF(::rename(tmp_.c_str(), path_.c_str()) != 0, io,
             "%s: rename onto the target failed: %s", path_.c_str(), std::strerror(errno));
  tmp_.clear();
  return {};
}

}  // namespace zt::formats
