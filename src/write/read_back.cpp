#include "write/read_back.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "codec/decoded_windows.h"

namespace zt {

namespace {

using ull = unsigned long long;

// Bytes [offset, offset + length) of a file (a part's stored, compressed
// bytes), mapped read-only; where the file system cannot map the file (some
// FUSE mounts), read into memory instead.
class StoredRange {
 public:
  static Result<StoredRange> of(int fd, uint64_t offset, uint64_t length,
                                const std::string& where) {
    StoredRange m;
    if (length == 0) return m;
    const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const uint64_t start = offset / page * page;
    const auto size = static_cast<size_t>(offset + length - start);
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(start));
    if (p == MAP_FAILED) {
      m.copy_.resize(static_cast<size_t>(length));
      ZT_TRY(read_back_bytes(fd, offset, m.copy_, where));
      m.bytes_ = m.copy_;
      return m;
    }
    m.base_ = static_cast<uint8_t*>(p);
    m.size_ = size;
    m.bytes_ = std::span<const uint8_t>(m.base_ + (offset - start), static_cast<size_t>(length));
    return m;
  }
  StoredRange() = default;
  StoredRange(StoredRange&& o) noexcept
      : base_(std::exchange(o.base_, nullptr)),
        size_(o.size_),
        copy_(std::move(o.copy_)),
        bytes_(base_ ? o.bytes_ : std::span<const uint8_t>(copy_)) {}
  StoredRange& operator=(StoredRange&&) = delete;
  ~StoredRange() {
    if (base_) ::munmap(base_, size_);
  }
  std::span<const uint8_t> bytes() const { return bytes_; }

 private:
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
  std::vector<uint8_t> copy_;  // the bytes, where they could not be mapped
  std::span<const uint8_t> bytes_;
};

class RawWindows final : public ByteWindows {
 public:
  RawWindows(int fd, uint64_t offset, uint64_t length, std::string where)
      : fd_(fd), offset_(offset), length_(length), where_(std::move(where)) {}
  Result<std::span<const uint8_t>> next() override {
    constexpr uint64_t kPiece = uint64_t{1} << 20;  // a multiple of every element width
    const auto n = static_cast<size_t>(std::min(kPiece, length_ - at_));
    buffer_.resize(n);
    ZT_TRY(read_back_bytes(fd_, offset_ + at_, buffer_, where_));
    at_ += n;
    return std::span<const uint8_t>(buffer_);
  }

 private:
  int fd_;
  uint64_t offset_, length_, at_ = 0;
  std::string where_;
  std::vector<uint8_t> buffer_;
};

// Decoded windows (codec/decoded_windows.h) over a part's stored bytes,
// which they hold.
class StoredWindows final : public ByteWindows {
 public:
  explicit StoredWindows(StoredRange m) : map_(std::move(m)) {}
  std::span<const uint8_t> bytes() const { return map_.bytes(); }
  void decode_with(std::unique_ptr<ByteWindows> w) { decoded_ = std::move(w); }
  Result<std::span<const uint8_t>> next() override { return decoded_->next(); }

 private:
  StoredRange map_;  // before decoded_, which views it
  std::unique_ptr<ByteWindows> decoded_;
};

}  // namespace

Result<void> read_back_bytes(int fd, uint64_t offset, std::span<uint8_t> dst,
                             const std::string& where) {
  for (size_t done = 0; done < dst.size();) {
    const ssize_t r =
        ::pread(fd, dst.data() + done, dst.size() - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    ZT_FAIL_IF(r <= 0, io, "%s: reading back the written bytes failed: %s", where.c_str(),
               r == 0 ? "end of file" : std::strerror(errno));
    done += static_cast<size_t>(r);
  }
  return {};
}

Result<std::unique_ptr<ByteWindows>> read_back_windows(int fd, const Component& c,
                                                       std::string where) {
  if (c.encoding == Encoding::raw)
    return std::unique_ptr<ByteWindows>(
        std::make_unique<RawWindows>(fd, c.offset, c.length, std::move(where)));
  const uint64_t decoded = c.uncompressed_length.value_or(0);
  auto m = StoredRange::of(fd, c.offset, c.length, where);
  ZT_TRY(m);
  auto w = std::make_unique<StoredWindows>(std::move(*m));
  if (c.encoding == Encoding::byte_planes) {
    auto index = byte_planes_index(w->bytes(), decoded, where);
    ZT_TRY(index);
    w->decode_with(std::make_unique<PlanesDecodedWindows>(w->bytes(), std::move(*index), where));
  } else {
    w->decode_with(std::make_unique<ZstdDecodedWindows>(w->bytes(), decoded, decoded, where));
  }
  return std::unique_ptr<ByteWindows>(std::move(w));
}

}  // namespace zt
