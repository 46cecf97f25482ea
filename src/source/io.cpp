#include "source/io.h"

#include <fcntl.h>
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>  // Linux 5.6 headers; older ones: the fallback below
#endif
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "source/http_source.h"

namespace zt {

using ull = unsigned long long;

namespace {

thread_local bool links_refused = false;

// open(2) of `path` (a real path: resolve_beside_model's) following no
// symbolic link in it: openat2 where the kernel has it (Linux 5.6; a
// seccomp filter or valgrind may answer ENOSYS or EPERM), else O_NOFOLLOW
// for the last component and, for the others, the path the descriptor was
// opened by as /proc tells it, which must be the path asked (where /proc
// has no answer, the last component only). ELOOP when a link was in it.
int open_without_links(const char* path, int flags) {
#if defined(SYS_openat2) && defined(RESOLVE_NO_SYMLINKS)
  open_how how{};
  how.flags = static_cast<uint64_t>(flags);
  how.resolve = RESOLVE_NO_SYMLINKS;
  const long got = ::syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
  if (got >= 0 || (errno != ENOSYS && errno != EPERM)) return static_cast<int>(got);
#endif
  const int fd = ::open(path, flags | O_NOFOLLOW);
  if (fd < 0 || path[0] != '/') return fd;
  char proc[64];
  std::snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  std::string opened(PATH_MAX, '\0');
  const ssize_t n = ::readlink(proc, opened.data(), opened.size());
  if (n <= 0 || static_cast<size_t>(n) >= opened.size()) return fd;
  opened.resize(static_cast<size_t>(n));
  if (opened_as_asked(opened, path)) return fd;
  ::close(fd);
  errno = ELOOP;
  return -1;
}

}  // namespace

bool opened_as_asked(std::string_view opened, std::string_view path) {
  constexpr std::string_view kDeleted = " (deleted)";
  if (opened.size() == path.size() + kDeleted.size() && opened.ends_with(kDeleted))
    opened.remove_suffix(kDeleted.size());
  return opened == path;
}

LinksRefused::LinksRefused() : was_(links_refused) {
  links_refused = true;
}
LinksRefused::~LinksRefused() {
  links_refused = was_;
}

Result<Source> Source::open_file(const std::string& path, Mode mode) {
  Source s;
  s.path_ = path;
  // A URL handed to a path's call is named without its secrets too.
  const std::string shown = location_for_messages(path);
  // O_NONBLOCK: a FIFO at the path (a shard named by a model, say) would
  // block the open until a writer came; it is refused below instead. Reads
  // of a regular file ignore the flag, which is cleared all the same.
  constexpr int kFlags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;
  s.no_links_ = links_refused;
  s.fd_ = links_refused ? open_without_links(path.c_str(), kFlags) : ::open(path.c_str(), kFlags);
  ZT_FAIL_IF(s.fd_ < 0 && links_refused && errno == ELOOP, io,
             "%s: cannot open: a symbolic link is in its path, put there after the path was "
             "checked to lie in the model's folder (it is not followed)",
             shown.c_str());
  ZT_FAIL_IF(s.fd_ < 0, io, "%s: cannot open: %s", shown.c_str(), std::strerror(errno));
  struct stat st {};
  ZT_FAIL_IF(::fstat(s.fd_, &st) != 0, io, "%s: cannot stat: %s", shown.c_str(),
             std::strerror(errno));
  ZT_FAIL_IF(!S_ISREG(st.st_mode), io, "%s: not a regular file", shown.c_str());
  ZT_FAIL_IF(::fcntl(s.fd_, F_SETFL, ::fcntl(s.fd_, F_GETFL) & ~O_NONBLOCK) != 0, io,
             "%s: cannot set its flags: %s", shown.c_str(), std::strerror(errno));
  s.size_ = static_cast<uint64_t>(st.st_size);
  s.dev_ = static_cast<uint64_t>(st.st_dev);
  s.ino_ = static_cast<uint64_t>(st.st_ino);
  s.is_file_ = true;
  if (mode == Mode::map && s.size_ > 0) {
    void* p = ::mmap(nullptr, s.size_, PROT_READ, MAP_SHARED, s.fd_, 0);
    ZT_FAIL_IF(p == MAP_FAILED, io, "%s: cannot mmap %llu bytes: %s", shown.c_str(),
               static_cast<ull>(s.size_), std::strerror(errno));
    s.base_ = static_cast<const uint8_t*>(p);
    s.owns_mapping_ = true;  // the descriptor stays open for cold copies (read_into)
  }
  return s;
}

Source Source::from_memory(std::span<const uint8_t> bytes) {
  Source s;
  s.base_ = bytes.data();
  s.size_ = bytes.size();
  return s;
}

Source Source::view_of(const Source& file) {
  Source s = from_memory(std::span<const uint8_t>(file.base_, file.size_));
  s.path_ = file.path_;
  s.dev_ = file.dev_;
  s.ino_ = file.ino_;
  s.is_file_ = file.is_file_ && file.base_;
  return s;
}

Source Source::from_ranges(std::shared_ptr<const RangeCache> cache) {
  Source s;
  s.size_ = cache->size();
  s.path_ = cache->name();
  s.ranges_ = std::move(cache);
  return s;
}

Source::Source(Source&& o) noexcept {
  *this = std::move(o);
}

Source& Source::operator=(Source&& o) noexcept {
  if (this != &o) {
    release();
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
    owns_mapping_ = std::exchange(o.owns_mapping_, false);
    fd_ = std::exchange(o.fd_, -1);
    reopens_ = std::exchange(o.reopens_, false);
    no_links_ = o.no_links_;
    is_file_ = std::exchange(o.is_file_, false);
    dev_ = o.dev_;
    ino_ = o.ino_;
    path_ = std::move(o.path_);
    ranges_ = std::move(o.ranges_);
  }
  return *this;
}

Source::~Source() {
  release();
}

// What the destructor does, without ending the members' lifetime (an
// explicit ~Source() in operator= would destroy path_ and ranges_).
void Source::release() {
  ranges_.reset();
  if (owns_mapping_ && base_) ::munmap(const_cast<uint8_t*>(base_), size_);
  if (fd_ >= 0) ::close(fd_);
  base_ = nullptr;
  owns_mapping_ = false;
  fd_ = -1;
  reopens_ = false;
}

void Source::release_descriptor() {
  if (fd_ < 0 || ranges_) return;
  ::close(fd_);
  fd_ = -1;
  reopens_ = !owns_mapping_;
}

class Source::ReadFd {
 public:
  ReadFd(int fd, bool owned) : fd_(fd), owned_(owned) {}
  ReadFd(ReadFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)), owned_(o.owned_) {}
  ReadFd& operator=(ReadFd&&) = delete;
  ~ReadFd() {
    if (owned_ && fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
  bool owned_;
};

Result<Source::ReadFd> Source::read_fd() const {
  if (!reopens_) return ReadFd(fd_, false);
  // Opened again, checked to be the file first opened: a shard replaced
  // under a model (or removed) is not read as if it were the same.
  // Opened as at first: no link followed where the path was checked to lie
  // in its model's folder (a link put there since is not, even for the
  // moment before the identity check refuses the file it leads to).
  constexpr int kFlags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;
  ReadFd fd(no_links_ ? open_without_links(path_.c_str(), kFlags) : ::open(path_.c_str(), kFlags),
            true);
  const std::string shown = location_for_messages(path_);
  ZT_FAIL_IF(fd.get() < 0 && no_links_ && errno == ELOOP, io,
             "%s: cannot open again: a symbolic link is in its path (it is not followed)",
             shown.c_str());
  ZT_FAIL_IF(fd.get() < 0, io, "%s: cannot open again: %s", shown.c_str(), std::strerror(errno));
  struct stat st {};
  ZT_FAIL_IF(::fstat(fd.get(), &st) != 0, io, "%s: cannot stat: %s", shown.c_str(),
             std::strerror(errno));
  ZT_FAIL_IF(static_cast<uint64_t>(st.st_dev) != dev_ || static_cast<uint64_t>(st.st_ino) != ino_,
             io, "%s: the file was replaced since it was opened", shown.c_str());
  return fd;
}

size_t shard_descriptor_budget() {
  // Asked at each shard's open (one system call): the limit may change.
  struct rlimit lim {};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return 256;
  return std::clamp<size_t>(static_cast<size_t>(lim.rlim_cur / 8), 16, 256);
}

Result<void> Source::read_into(uint64_t off, std::span<uint8_t> dst) const {
  if (dst.empty()) return {};
  if (ranges_) return ranges_->read(off, dst);
  // A copy of 64 KiB or more goes through pread even where the file is
  // mapped: copying from the mapping first maps every 4 KiB page into this
  // process (page-table work per page, paid again on each fresh mapping),
  // which pread does not do. On the project's 2-core VM a hot load of
  // 1 GiB of tensors took 300 ms from the mapping and 100 ms with pread
  // (64 KiB tensors: 138 and 76 ms); cold, pread also gets the kernel's
  // readahead (0.8 of pread through the mapping). A truncated file then
  // gives ZT_ERR_IO, not SIGBUS. Smaller copies (headers, footers) come
  // from the mapping: a page or two, no system call.
  constexpr uint64_t kPreadFrom = uint64_t{64} << 10;
  if (base_ && (fd_ < 0 || dst.size() < kPreadFrom)) {
    std::memcpy(dst.data(), base_ + off, dst.size());
    return {};
  }
  return pread_into(off, dst);
}

Result<void> Source::pread_into(uint64_t off, std::span<uint8_t> dst) const {
  auto fd = read_fd();
  ZT_TRY(fd);
  size_t done = 0;
  while (done < dst.size()) {
    const ssize_t n =
        ::pread(fd->get(), dst.data() + done, dst.size() - done, static_cast<off_t>(off + done));
    if (n < 0 && errno == EINTR) continue;
    ZT_FAIL_IF(n < 0, io, "%s: read of %zu bytes at %llu failed: %s", path_.c_str(), dst.size(),
               static_cast<ull>(off), std::strerror(errno));
    ZT_FAIL_IF(n == 0, io, "%s: file shrank while open (read at %llu)", path_.c_str(),
               static_cast<ull>(off + done));
    done += static_cast<size_t>(n);
  }
  return {};
}

Result<void> Source::read_many(std::span<const RangeRead> reads) const {
  if (ranges_) return ranges_->read_many(reads);
  if (fd_ < 0 && !reopens_) {
    for (const RangeRead& r : reads) ZT_TRY(read_into(r.offset, r.dst));
    return {};
  }
  auto fd = read_fd();
  ZT_TRY(fd);
  for (size_t i = 0; i < reads.size();) {
    const Run run = preadv_run(fd->get(), reads.subspan(i));
    if (!run.complete) {  // a short read or an error: each read on its own says which
      for (const RangeRead& r : reads.subspan(i, run.reads)) ZT_TRY(pread_into(r.offset, r.dst));
    }
    i += run.reads;
  }
  return {};
}

// Reads with gaps of at most kReadRunGap bytes between them are one run: one
// preadv(2), the gaps read into a scratch buffer. Many small tensors lie
// back to back (64-byte alignment); read one by one from a fresh mapping,
// each page is first faulted into the process (~8 us a 4 KiB page on the
// project's VM).
Source::Run Source::preadv_run(int fd, std::span<const RangeRead> reads) const {
  uint8_t gap[kReadRunGap];
  iovec iov[IOV_MAX];
  int n = 0;
  size_t taken = 0;
  uint64_t bytes = 0;
  for (; taken < reads.size(); ++taken) {
    const RangeRead& r = reads[taken];
    if (taken > 0) {
      const uint64_t skip = r.offset - end_of(reads[taken - 1]);
      if (skip > kReadRunGap || n + 2 > IOV_MAX) break;
      if (skip) iov[n++] = iovec{gap, static_cast<size_t>(skip)};
      bytes += skip;
    }
    iov[n++] = iovec{r.dst.data(), r.dst.size()};
    bytes += r.dst.size();
  }
  ssize_t got;
  do {
    got = ::preadv(fd, iov, n, static_cast<off_t>(reads[0].offset));
  } while (got < 0 && errno == EINTR);
  return Run{taken, got >= 0 && static_cast<uint64_t>(got) == bytes};
}

Result<std::span<const uint8_t>> Source::bytes(uint64_t off, uint64_t len,
                                               std::vector<uint8_t>& scratch) const {
  if (base_) return std::span<const uint8_t>(base_ + off, len);
  scratch.resize(len);
  ZT_TRY(read_into(off, scratch));
  return std::span<const uint8_t>(scratch);
}

void Source::advise(uint64_t off, uint64_t len, int advice) const {
  if (!owns_mapping_ || len == 0) return;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = off / page * page;
  ::madvise(const_cast<uint8_t*>(base_) + start, len + (off - start), advice);
}

}  // namespace zt
