#include "write/output_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "base/path_parts.h"
#include "source/http_source.h"

namespace zt {

namespace {

// The process's umask, read without changing it (/proc/self/status, Linux
// 4.7+): umask(0) then umask(mask) would leave a window in which another
// thread creates files without a mask. Falls back to that where /proc
// has no answer.
mode_t current_umask() {
  if (FILE* f = std::fopen("/proc/self/status", "re")) {
    char line[256];
    unsigned mask = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f))
      found = std::sscanf(line, "Umask: %o", &mask) == 1;
    std::fclose(f);
    if (found) return static_cast<mode_t>(mask);
  }
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return mask;
}

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// `path` with `suffix` added to its last component, that component cut
// (before the suffix) to fit NAME_MAX: a temporary name beside any target
// whose own name is valid.
std::string temporary_name(const std::string& path, const std::string& suffix) {
  const size_t slash = path.rfind('/');
  const size_t base = slash == std::string::npos ? 0 : slash + 1;
  const size_t room = NAME_MAX > suffix.size() ? NAME_MAX - suffix.size() : 0;
  return path.substr(0, base + std::min(room, path.size() - base)) + suffix;
}

// Seconds since the epoch at which process `pid` started, from
// /proc/<pid>/stat (its 22nd field, clock ticks after boot) and /proc/stat's
// btime; nullopt where /proc does not say.
std::optional<double> started_at(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return std::nullopt;
  const size_t name_end = line.rfind(')');  // the command name may hold spaces and parens
  if (name_end == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(name_end + 1));
  std::string field;
  for (int k = 3; k < 22 && fields >> field; ++k) {
  }
  unsigned long long ticks = 0;
  if (!(fields >> ticks)) return std::nullopt;
  std::ifstream all("/proc/stat");
  unsigned long long boot = 0;
  while (std::getline(all, line))
    if (std::sscanf(line.c_str(), "btime %llu", &boot) == 1) break;
  const long hz = ::sysconf(_SC_CLK_TCK);
  if (boot == 0 || hz <= 0) return std::nullopt;
  return static_cast<double>(boot) + static_cast<double>(ticks) / static_cast<double>(hz);
}

// Whether process `pid` may still be writing a file last changed at
// `mtime`: it runs, and it started before then (else the pid was reused).
bool may_be_writing(pid_t pid, time_t mtime) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  const std::optional<double> start = started_at(pid);
  return !start || *start <= static_cast<double>(mtime) + 1;
}

// The pid in a name ending ".tmp-<pid>-<n>", and where that suffix starts.
std::optional<std::pair<pid_t, size_t>> temporary_of(std::string_view name) {
  const size_t at = name.rfind(".tmp-");
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view rest = name.substr(at + 5);
  const size_t dash = rest.find('-');
  const auto digits = [](std::string_view d) { return d.size() < 10 && all_decimal_digits(d); };
  if (dash == std::string_view::npos || !digits(rest.substr(0, dash)) ||
      !digits(rest.substr(dash + 1)))
    return std::nullopt;
  return std::pair{static_cast<pid_t>(std::stol(std::string(rest.substr(0, dash)))), at};
}

}  // namespace

void remove_dead_writers_temporaries(const std::string& dir,
                                     const std::function<bool(std::string_view)>& ours) {
  struct Close {
    void operator()(DIR* d) const { ::closedir(d); }
  };
  const std::unique_ptr<DIR, Close> d(::opendir(dir.c_str()));
  if (!d) return;
  const int dfd = ::dirfd(d.get());
  while (const dirent* e = ::readdir(d.get())) {
    const std::string_view name = e->d_name;
    const auto temporary = temporary_of(name);
    if (!temporary || temporary->first <= 0 || !ours(name.substr(0, temporary->second))) continue;
    struct stat st {};
    if (::fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    if (!may_be_writing(temporary->first, st.st_mtime)) ::unlinkat(dfd, e->d_name, 0);
  }
}

Result<std::string> output_target(const std::string& path) {
  const std::string shown = location_for_messages(path);
  struct stat link {};
  if (::lstat(path.c_str(), &link) != 0)
    return path;  // nothing there yet (or unreadable: create says)
  struct stat st {};
  if (S_ISLNK(link.st_mode) && ::stat(path.c_str(), &st) != 0)
    return make_error(Status::io, "%s: a symbolic link that leads to no file (%s)", shown.c_str(),
                      std::strerror(errno));
  if (!S_ISLNK(link.st_mode)) st = link;
  ZT_FAIL_IF(!S_ISREG(st.st_mode), io,
             "%s is %s: a writer replaces the file at its target, so it writes regular files only",
             shown.c_str(), kind_of(st.st_mode));
  if (!S_ISLNK(link.st_mode)) return path;
  std::unique_ptr<char, decltype(&::free)> real(::realpath(path.c_str(), nullptr), &::free);
  if (!real)
    return make_error(Status::io, "%s: following the symbolic link failed: %s", shown.c_str(),
                      std::strerror(errno));
  return std::string(real.get());
}

Error OutputFile::io_error(const char* step) const {
  return make_error(Status::io, "%s: %s failed: %s", location_for_messages(path_).c_str(), step,
                    std::strerror(errno));
}

Result<OutputFile> OutputFile::create(const std::string& path) {
  auto target = output_target(path);
  ZT_TRY(target);
  return create_here(*target);
}

Result<OutputFile> OutputFile::create_here(const std::string& path) {
  OutputFile f;
  f.path_ = path;
  f.dir_ = directory_of(f.path_);
#ifdef O_TMPFILE
  // An unnamed file is named at publish() through /proc/self/fd (linkat
  // with AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH): without /proc, as in
  // some containers and chroots, the temporary is named from the start.
  if (::access("/proc/self/fd", X_OK) == 0) {
    f.fd_ = ::open(f.dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0666);
    f.anonymous_ = f.fd_ >= 0;
  }
#endif
  if (f.fd_ < 0) {
    std::string tmp = temporary_name(f.path_, ".tmp-XXXXXX");
    f.fd_ = ::mkostemp(tmp.data(), O_CLOEXEC);
    if (f.fd_ < 0) return f.io_error("creating a temporary file beside the target");
    f.tmp_ = std::move(tmp);
    // mkostemp creates 0600; a new file gets the usual 0666 & ~umask
    // (one replacing a file takes that file's mode at publish()).
    ::fchmod(f.fd_, 0666 & ~current_umask());
  }
  return f;
}

OutputFile::OutputFile(OutputFile&& o) noexcept {
  *this = std::move(o);
}

OutputFile& OutputFile::operator=(OutputFile&& o) noexcept {
  if (this != &o) {
    discard();
    path_ = std::move(o.path_);
    dir_ = std::move(o.dir_);
    like_ = std::move(o.like_);
    tmp_ = std::exchange(o.tmp_, std::string());
    settled_dev_ = o.settled_dev_;
    settled_ino_ = o.settled_ino_;
    gathered_ = std::exchange(o.gathered_, {});
    broken_ = std::exchange(o.broken_, std::nullopt);
    fd_ = std::exchange(o.fd_, -1);
    anonymous_ = o.anonymous_;
  }
  return *this;
}

OutputFile::~OutputFile() {
  discard();
}

Result<void> OutputFile::write(std::span<const uint8_t> bytes) {
  ZT_FAIL_IF(fd_ < 0, state, "%s: the file is already closed", path_.c_str());
  if (broken_) return *broken_;
  if (gathered_.size() + bytes.size() > kGatherBytes) {
    // The buffer keeps its memory for the small writes after (it was freed
    // and made again at each large object).
    ZT_TRY(write_out(gathered_));
    gathered_.clear();
  }
  // A large write goes out on its own, not in one writev(2) with the bytes
  // gathered before it: the file's first page would then share the first
  // tensor's large page-cache folio, which Linux maps whole (up to 2 MiB)
  // at a reader's first touch of the header.
  if (bytes.size() >= kGatherBytes) return write_out(bytes);
  if (gathered_.capacity() == 0) gathered_.reserve(kGatherBytes);
  gathered_.insert(gathered_.end(), bytes.begin(), bytes.end());
  return {};
}

Result<void> OutputFile::write_out(std::span<const uint8_t> bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      broken_ = io_error("write");
      return *broken_;
    }
    done += static_cast<size_t>(n);
  }
  return {};
}

Result<void> OutputFile::flush() {
  ZT_FAIL_IF(fd_ < 0, state, "%s: the file is already closed", path_.c_str());
  if (broken_) return *broken_;
  const std::vector<uint8_t> gathered = std::exchange(gathered_, {});
  return write_out(gathered);
}

Result<int> OutputFile::fd() {
  ZT_TRY(flush());
  return fd_;
}

Result<void> OutputFile::name_temporary() {
  char proc[64];
  std::snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd_);
  for (int attempt = 0; attempt < 100 && tmp_.empty(); ++attempt) {
    std::string name =
        temporary_name(path_, ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(attempt));
    if (::linkat(AT_FDCWD, proc, AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) == 0)
      tmp_ = std::move(name);
    else if (errno != EEXIST)
      return io_error("linking the temporary file");
  }
  if (tmp_.empty()) return io_error("naming the temporary file");
  anonymous_ = false;
  return {};
}

Result<void> OutputFile::settle() {
  ZT_FAIL_IF(fd_ < 0, state, "%s: the file is already closed", path_.c_str());
  if (auto flushed = flush(); !flushed) {
    discard();
    return flushed;
  }
  if (anonymous_) {
    if (auto named = name_temporary(); !named) {
      discard();
      return named;
    }
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const Error e = io_error("fstat of the file");
    discard();
    return e;
  }
  settled_dev_ = static_cast<uint64_t>(st.st_dev);
  settled_ino_ = static_cast<uint64_t>(st.st_ino);
  ::close(fd_);
  fd_ = -1;
  return {};
}

Result<void> OutputFile::publish() {
  // A settled file is opened again by its temporary name (no link followed).
  if (fd_ < 0 && !tmp_.empty()) {
    fd_ = ::open(tmp_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd_ < 0) {
      const Error e = io_error("opening the temporary file again");
      discard();
      return e;
    }
    // The file closed, not one put under its name since (its bytes were
    // hashed as it was settled: another file would be published under a
    // digest that is not its own).
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || static_cast<uint64_t>(st.st_dev) != settled_dev_ ||
        static_cast<uint64_t>(st.st_ino) != settled_ino_) {
      const Error e =
          make_error(Status::io, "%s: the temporary file %s was replaced since it was written",
                     location_for_messages(path_).c_str(), location_for_messages(tmp_).c_str());
      ::close(fd_);
      fd_ = -1;
      tmp_.clear();  // not ours to remove
      return e;
    }
  }
  ZT_FAIL_IF(fd_ < 0, state, "%s: the file is already closed", path_.c_str());
  if (auto flushed = flush(); !flushed) {
    discard();
    return flushed;
  }
  auto failed = [this](const char* step) {
    const Error e = io_error(step);
    discard();
    return e;
  };
  ZT_TRY(keep_what_it_replaces());
  if (::fsync(fd_) != 0) return failed("fsync");
  if (anonymous_) {
    // Give the unnamed file a temporary name, then rename it over the target.
    if (auto named = name_temporary(); !named) {
      discard();
      return named;
    }
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) return failed("rename onto the target");
  tmp_.clear();
  discard();
  const int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

Result<void> publish_together(std::span<OutputFile> files) {
  struct Kept {
    std::string target, link;  // link: empty where no file was there
  };
  std::vector<Kept> kept;
  // Undoes the first `published` renames; removes every kept link left.
  const auto undo = [&](size_t published) {
    for (size_t k = 0; k < kept.size(); ++k) {
      if (k < published && kept[k].link.empty())
        ::unlink(kept[k].target.c_str());
      else if (k < published)
        ::rename(kept[k].link.c_str(), kept[k].target.c_str());
      else if (!kept[k].link.empty())
        ::unlink(kept[k].link.c_str());
    }
  };
  const auto give_up = [&](size_t published, size_t from, Error e) {
    undo(published);
    for (size_t k = from; k < files.size(); ++k) files[k].discard();
    return e;
  };
  for (size_t k = 0; k < files.size(); ++k) {
    Kept one{files[k].path(), {}};
    struct stat st {};
    const bool there = ::lstat(one.target.c_str(), &st) == 0;
    for (int attempt = 0; there && one.link.empty() && attempt < 100; ++attempt) {
      std::string name = temporary_name(
          one.target, ".old-" + std::to_string(::getpid()) + "-" + std::to_string(attempt));
      if (::link(one.target.c_str(), name.c_str()) == 0) {
        one.link = std::move(name);
      } else if (errno != EEXIST) {
        const int err = errno;
        return give_up(0, 0,
                       make_error(Status::io,
                                  "%s: keeping the file it replaces (a link beside it) failed: %s; "
                                  "nothing was replaced",
                                  location_for_messages(one.target).c_str(), std::strerror(err)));
      }
    }
    if (there && one.link.empty())  // a hundred names taken: the old file could not be kept
      return give_up(0, 0,
                     make_error(Status::io,
                                "%s: no free name beside it to keep the file it "
                                "replaces; nothing was replaced",
                                location_for_messages(one.target).c_str()));
    kept.push_back(std::move(one));
  }
  for (size_t k = 0; k < files.size(); ++k) {
    auto r = files[k].publish();
    if (!r) {
      Error e = std::move(r).error();
      e.message += "; the files put in place before it were put back";
      return give_up(k, k + 1, std::move(e));
    }
  }
  undo(0);  // the kept links only
  return {};
}

// A file rewritten in place keeps its mode, and its owner and group where
// this process may set them (root may; an owner may set a group it is in;
// otherwise the new file is the process's, as any new file would be).
// Compared with the new file's own owner, not the process's: in a setgid
// directory a new file takes the directory's group.
// fchown first: it may clear set-id bits, which fchmod then restores.
Result<void> OutputFile::keep_what_it_replaces() {
  struct stat old;
  const std::string& model = like_.empty() ? path_ : like_;
  if (::stat(model.c_str(), &old) != 0 || !S_ISREG(old.st_mode)) return {};
  struct stat now;
  if (::fstat(fd_, &now) != 0) {
    const Error e = io_error("fstat of the new file");
    discard();
    return e;
  }
  if (old.st_uid != now.st_uid || old.st_gid != now.st_gid) {
    if (::fchown(fd_, old.st_uid, old.st_gid) != 0)
      (void)::fchown(fd_, static_cast<uid_t>(-1), old.st_gid);
  }
  if (::fchmod(fd_, old.st_mode & 07777) != 0) {
    const Error e = io_error("keeping the mode of the file it replaces");
    discard();
    return e;
  }
  return {};
}

void OutputFile::discard() {
  gathered_ = {};
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
}

}  // namespace zt
