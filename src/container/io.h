// Where a file's bytes come from: a read-only memory mapping, a caller's
// memory, or pread(2) copies (for files that may change while open: a
// mapping of a truncated file raises SIGBUS, a copying read returns an error).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"

namespace zt {

class Source {
 public:
  enum class Mode { map, copy };

  static Result<Source> open_file(const std::string& path, Mode mode);
  static Source from_memory(std::span<const uint8_t> bytes);

  Source() = default;
  Source(Source&& o) noexcept;
  Source& operator=(Source&& o) noexcept;
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;
  ~Source();

  uint64_t size() const { return size_; }
  // The whole file as memory, or nullptr in copy mode.
  const uint8_t* base() const { return base_; }

  // Bytes [off, off + len): a view into the mapping, or read into `scratch`
  // and viewed there. The range must lie inside the file.
  Result<std::span<const uint8_t>> bytes(uint64_t off, uint64_t len,
                                         std::vector<uint8_t>& scratch) const;
  // Copies bytes [off, off + dst.size()) into dst.
  Result<void> read_into(uint64_t off, std::span<uint8_t> dst) const;
  // madvise over a range of a mapping (no-op in other modes).
  void advise(uint64_t off, uint64_t len, int advice) const;

 private:
  bool starts_resident(uint64_t off, uint64_t len) const;

  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  bool owns_mapping_ = false;
  int fd_ = -1;
  std::string path_;
};

}  // namespace zt
