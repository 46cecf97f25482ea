// A zip archive of untrusted bytes, read with libzip (.npz files and
// PyTorch's zip checkpoints). Opening lists the members and refuses, before
// anything is inflated, entries whose compressed bytes together exceed the
// file (overlapping entries: a non-recursive zip bomb that libzip's own
// consistency check accepts). Reading a member checks its stated size
// against the limit and what deflate can produce, then believes it only as
// the stream proves it: a member that ends early or holds more is refused.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "base/zt_limits.h"

struct zip;

namespace zt::foreign {

struct ZipMember {
  std::string name;
  uint64_t index = 0;
  uint64_t size = 0;        // stated uncompressed size
  uint64_t compressed = 0;  // stated compressed size
  uint32_t crc = 0;
  bool stored = false;    // not compressed, not encrypted
  bool deflated = false;  // deflate, not encrypted
};

// One member's bytes inflated in order, a piece at a time, with the checks
// ZipArchive::read makes: a stream that ends before the stated size, or
// holds more, is refused once read to there (and libzip checks the CRC-32
// at the end). Not thread-safe; reads through its archive, which must
// outlive it and which no other stream or read may use meanwhile.
class ZipMemberStream {
 public:
  ZipMemberStream(ZipMemberStream&&) noexcept;
  ZipMemberStream& operator=(ZipMemberStream&&) noexcept;
  ~ZipMemberStream();

  uint64_t size() const { return size_; }
  uint64_t position() const { return pos_; }
  // The next dst.size() bytes (within the stated size); once the last is
  // read, the end of the stream is checked.
  Result<void> read(std::span<uint8_t> dst);
  // Passes over the next n bytes (inflated into a small buffer, dropped).
  Result<void> skip(uint64_t n);

 private:
  friend class ZipArchive;
  ZipMemberStream() = default;
  struct File;
  std::unique_ptr<File> file_;
  uint64_t size_ = 0, pos_ = 0;
  std::string where_;
};

// How messages name member `name` of the archive at `path`.
inline std::string member_where(const std::string& path, const std::string& name) {
  return path + ": member \"" + name + "\"";
}

// An error of `status` naming `where` unless `bytes` have the CRC-32
// `crc` (the zip format's CRC-32, as gzip's): a member viewed in place is checked so,
// at its first read (Status::digest) or at open where a reader copies out
// of it then (Status::format, as libzip's refusal of a damaged member).
Result<void> check_member_crc(std::span<const uint8_t> bytes, uint32_t crc,
                              const std::string& where, Status status = Status::digest);

class ZipArchive {
 public:
  // Members are listed from the central directory; two members of one name
  // are refused (Status::invalid), as readers would disagree on which is
  // meant.
  static Result<ZipArchive> open(const std::string& path);
  ZipArchive();
  ZipArchive(ZipArchive&&) noexcept;
  ZipArchive& operator=(ZipArchive&&) noexcept;
  ~ZipArchive();

  // Files in the archive (directories left out), in central-directory order.
  const std::vector<ZipMember>& members() const { return members_; }
  const ZipMember* find(const std::string& name) const;

  // The member's bytes; `where` names it in messages. A member stating
  // more than `limit` bytes is refused before anything is allocated.
  Result<std::vector<uint8_t>> read(const ZipMember& m, const std::string& where,
                                    uint64_t limit = Limits::decoded_bytes) const;

  // The member's bytes as a stream, checked as read() checks them up front:
  // refused if it states more than `limit` bytes or more than deflate can
  // make of its compressed ones.
  Result<ZipMemberStream> stream(const ZipMember& m, const std::string& where,
                                 uint64_t limit = Limits::decoded_bytes) const;

  // Stored members viewed in place in `file` (the archive's bytes, mapped):
  // for each member, in members() order, its bytes in the file, or nothing
  // when it is compressed or cannot be proven. A member's data is where
  // libzip itself reads it (the archive is read through a source of ours
  // that notes each read's offset: the central directory's offset, past
  // the local header there), never a place found by searching the bytes;
  // and the bytes are taken only if their CRC-32 (ISA-L's, on every core)
  // equals the central directory's, the proof libzip asks of a member it
  // reads. Members whose CRC differs are left to read(), which refuses them.
  // With check_crcs false the CRC-32s are left to the caller, who must
  // check each member's (check_member_crc) before any of its bytes are
  // handed out: a reader that checks them at the first read opens without
  // reading the members' data.
  std::vector<std::optional<std::span<const uint8_t>>> stored_in_place(
      std::span<const uint8_t> file, bool check_crcs = true) const;

  // A deflated member's deflate stream in `file` (the archive's bytes,
  // mapped), found as stored_in_place finds a stored member's bytes: where
  // libzip reads the member's raw data, its stated compressed size long.
  // Nothing when the member is not deflated or its place cannot be proven.
  // Nothing is inflated or checked here: whoever inflates it checks what
  // read() checks (the stated size, the CRC-32; InflatedMembers).
  std::optional<std::span<const uint8_t>> deflated_in_place(std::span<const uint8_t> file,
                                                            const ZipMember& m) const;

  struct Reads;  // the source libzip reads the archive through

 private:
  // Where libzip's first read of the member's data lands in the file: its
  // bytes as stored (`compressed`) or as they inflate.
  std::optional<uint64_t> data_offset(const ZipMember& m, bool compressed) const;

  // Declared first: libzip's archive, destroyed before it, reads through it.
  std::unique_ptr<Reads> reads_;
  std::unique_ptr<zip, void (*)(zip*)> archive_{nullptr, nullptr};
  std::vector<ZipMember> members_;
  std::unordered_map<std::string, size_t> by_name_;  // member name -> its place in members_
};

}  // namespace zt::foreign
