// A file that appears at its path whole or not at all, like libgit2's
// filebuf: the bytes go to an unnamed file in the target's directory
// (O_TMPFILE; a named "<path>.tmp-XXXXXX" where the file system has none or
// /proc, through which the unnamed file gets its name, is not mounted,
// the name cut to fit NAME_MAX),
// and publish() makes them durable and visible in one step: fsync, a name
// (linkat), rename over the target, fsync of the directory. A file dropped
// before publish() leaves nothing behind. The writer and every foreign
// writer publish through it, so all outputs get the same durability.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace zt {

// Where a write to `path` lands: `path` itself, or the file a symbolic link
// there leads to (followed as cp and a shell's redirection follow it: the
// link stays, the file it names is replaced, beside it). Status::io for a
// directory, a device, a FIFO or a socket (a writer replaces the file at
// its target: /dev/null written by root would become a regular file) and
// for a link that leads nowhere.
Result<std::string> output_target(const std::string& path);

class OutputFile {
 public:
  // Opens the temporary file beside output_target(path). Status::io naming
  // the step.
  static Result<OutputFile> create(const std::string& path);
  // The same beside `path` itself, a link there not followed: for a file
  // that will be retargeted (a shard, named after its digest), whose
  // temporary belongs in its model's directory whatever `path` holds now.
  static Result<OutputFile> create_here(const std::string& path);

  OutputFile(OutputFile&& o) noexcept;
  OutputFile& operator=(OutputFile&& o) noexcept;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();

  // The open descriptor, for pread, ftruncate and lseek, with every byte
  // written so far flushed to it (flush()'s errors).
  Result<int> fd();
  const std::string& path() const { return path_; }

  // Names another target in the same directory, for a file whose name is
  // known only once its bytes are (a shard named after its digest).
  void retarget(std::string path) { path_ = std::move(path); }
  // publish() gives the file the mode (owner, group) of the file at `path`,
  // if there is one, instead of those of the file it replaces: a model's new
  // shards, whose names are new, take those of the root they come with.
  void keep_like(std::string path) { like_ = std::move(path); }
  // Writes all of `bytes` after those written before (EINTR retried).
  // Writes of less than kGatherBytes are gathered and go out together, at
  // flush() or when the gathered bytes would pass it (a model of many small
  // tensors made two write(2) calls a tensor: its data and the next one's
  // padding); larger ones go out at once, after what was gathered. So a
  // failed write(2) fails this call or a later one (write, flush, fd,
  // settle, publish); the file no longer holds the bytes written and every
  // later call fails with the same error: it can never be published.
  Result<void> write(std::span<const uint8_t> bytes);
  // Writes out the gathered bytes and frees their buffer (a writer that
  // holds many files open, a model's shards, holds none for each).
  Result<void> flush();

  static constexpr size_t kGatherBytes = size_t{64} << 10;
  // fsync, name, rename over the target, fsync the directory. A file that
  // replaces one keeps its mode (and owner and group, where permitted).
  // The file is closed afterwards, whatever the outcome.
  Result<void> publish();
  // Gives the file its temporary name beside the target and closes it, for
  // a writer of more files than it may hold open (a model of thousands of
  // shards): publish() opens it again by that name, and refuses (Status::io)
  // a file that is not the one closed; discard() removes it.
  // Unlike an unnamed file, a named one outlives a crash. Written bytes are
  // not read or written again through this object.
  Result<void> settle();
  // Closes the file and removes its temporary name, if any.
  void discard();

 private:
  OutputFile() = default;
  Error io_error(const char* step) const;
  Result<void> keep_what_it_replaces();
  // Links the unnamed (O_TMPFILE) file to a temporary name beside the
  // target; Status::io naming the step.
  Result<void> name_temporary();

  // Writes all of `bytes` now; a failure breaks the file (broken_).
  Result<void> write_out(std::span<const uint8_t> bytes);

  std::string path_, dir_;
  std::string like_;                            // keep_like's file, if any
  std::string tmp_;                             // the temporary name, once the file has one
  uint64_t settled_dev_ = 0, settled_ino_ = 0;  // the file settle() closed
  std::vector<uint8_t> gathered_;               // small writes not yet written out
  std::optional<Error> broken_;                 // the write(2) failure that lost bytes, if one did
  int fd_ = -1;
  bool anonymous_ = false;  // O_TMPFILE: no name until publish()
};

// Removes the named temporaries in `dir` that a writer left when it died
// (settle()'s "<name>.tmp-<pid>-<n>", for which `ours(name)` holds): those
// of a process that no longer runs, or whose pid now belongs to a process
// started after the file last changed. A writer's own (this process's) and
// those of writers still running stay. Pids are this machine's: a folder
// shared with other machines or pid namespaces may hold the temporaries of
// a live writer there (two writers of one model race anyway). Failures are
// ignored: nothing depends on it.
void remove_dead_writers_temporaries(const std::string& dir,
                                     const std::function<bool(std::string_view)>& ours);

// Puts several files in place as one step as far as failures go (a
// checkpoint folder's weights, index and config): each target that exists
// is first kept as a hard link beside it; should any rename fail, the
// targets renamed so far get their old file back (or are removed, where
// there was none) and the rest are discarded, so the folder holds what it
// held. The kept links are removed either way. A crash part-way can leave a
// mix and named links ("<target>.old-*"): no rename switches several files.
Result<void> publish_together(std::span<OutputFile> files);

}  // namespace zt
