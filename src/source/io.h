// Where a file's bytes come from: a read-only memory mapping, a caller's
// memory, pread(2) copies (for files that may change while open: a
// mapping of a truncated file raises SIGBUS, a copying read returns an
// error), or a RangeSource behind its cache (callbacks, HTTP).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "source/range_source.h"

namespace zt {

// A file as a Source opened it: for a program that maps the file itself,
// which checks that what it opens by the path is still that file.
struct FileIdentity {
  std::string_view path;  // as it was opened (the Source's own text)
  uint64_t device = 0;    // st_dev and st_ino then
  uint64_t inode = 0;
};

class Source {
 public:
  enum class Mode { map, copy };

  static Result<Source> open_file(const std::string& path, Mode mode);
  static Source from_memory(std::span<const uint8_t> bytes);
  // The mapping of `file` (opened mapped) as memory this Source does not
  // own, which still knows the file (file()): how a foreign model's reader
  // holds the files its ForeignFile mapped.
  static Source view_of(const Source& file);
  // Bytes fetched by range through `cache`; base() is nullptr, as in copy
  // mode, so every reading path copies.
  static Source from_ranges(std::shared_ptr<const RangeCache> cache);

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
  // Several ranges (sorted, not overlapping) at once: one request for a
  // remote source, a preadv(2) per run of neighbouring ranges for a file
  // (mapped or not).
  Result<void> read_many(std::span<const RangeRead> reads) const;
  // The cache of a remote source, or nullptr.
  const RangeCache* ranges() const { return ranges_.get(); }
  // The file this Source reads (open_file) or views (view_of); nullopt for
  // memory and remote sources.
  std::optional<FileIdentity> file() const {
    if (!is_file_) return std::nullopt;
    return FileIdentity{path_, dev_, ino_};
  }
  // madvise over a range of a mapping (no-op in other modes).
  void advise(uint64_t off, uint64_t len, int advice) const;
  // Closes the file's descriptor, for a reader of many files (a model of a
  // thousand shards) under the process's descriptor limit. A mapped file's
  // copies then come from the mapping (memcpy instead of pread); a file in
  // copy mode is opened again for each read and must still be the file
  // first opened (same device and inode: Status::io if it was replaced or
  // removed). Does nothing for memory and remote sources.
  void release_descriptor();

 private:
  void release();
  // pread(2) until dst is full; a file that shrank is Status::io.
  Result<void> pread_into(uint64_t off, std::span<uint8_t> dst) const;
  // One preadv(2) of the first reads that lie close together: how many it
  // took, and whether it read them all (not on an error or a short read).
  struct Run {
    size_t reads;
    bool complete;
  };
  Run preadv_run(int fd, std::span<const RangeRead> reads) const;
  // The descriptor a read goes through: the one held, or for a released
  // file in copy mode the file opened again (closed by the holder).
  class ReadFd;
  Result<ReadFd> read_fd() const;

  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  bool owns_mapping_ = false;
  int fd_ = -1;
  bool reopens_ = false;        // copy mode, descriptor released: opened per read
  bool no_links_ = false;       // opened under LinksRefused: so is each reopen
  bool is_file_ = false;        // open_file, or view_of one: path_, dev_ and ino_ name it
  uint64_t dev_ = 0, ino_ = 0;  // the file opened, which a reopen must find again
  std::string path_;
  std::shared_ptr<const RangeCache> ranges_;
};

// While one lives on a thread, Source::open_file on that thread follows
// no symbolic link in any component of the path (openat2 with
// RESOLVE_NO_SYMLINKS; without openat2, O_NOFOLLOW and the descriptor's
// path as /proc tells it). For the files a model names beside itself: their real
// path was checked to lie in the model's folder (resolve_beside_model), and
// a link put in that path since the check must not lead the open outside.
// The readers that open such a file (a shard's, however many times its
// format's reader opens it) run on the thread that made the guard.
class LinksRefused {
 public:
  LinksRefused();
  ~LinksRefused();
  LinksRefused(const LinksRefused&) = delete;
  LinksRefused& operator=(const LinksRefused&) = delete;

 private:
  bool was_;
};

// Whether `opened`, the path /proc/self/fd gives for a descriptor opened by
// `path` (LinksRefused's check where there is no openat2), is that path:
// the same text, or the same with " (deleted)" after it, which the kernel
// adds when the file was removed after the open (the file opened was the
// one asked for; refusing it named a link that was never there).
bool opened_as_asked(std::string_view opened, std::string_view path);

// How many mapped files one reader keeps descriptors for besides its own
// (a sharded model's shards): an eighth of the process's soft limit on
// open files (RLIMIT_NOFILE), between 16 and 256.
size_t shard_descriptor_budget();

}  // namespace zt
