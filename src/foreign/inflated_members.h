// Deflated zip members served as they are read, not inflated up front: the
// members of an archive laid end to end as one RangeSource (the first at 0,
// each next one after the last's stated size). A reader holds one through
// a RangeCache, as it holds a remote file, so that a component that lies
// in a deflated .npz member costs memory only when, and as far as, it is
// read (zt_open touches no data bytes, and a member that inflates to a
// thousand times its size is never all in memory at once unless asked for).
//
// A member whose deflate stream lies in the mapped file is inflated there
// by ISA-L (~2x zlib's speed), each member on its own: a decode_many of
// many members inflates them on every core. Others (another method, a
// place libzip could not show) go through libzip, one read at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "foreign/zip_archive.h"
#include "source/range_source.h"

namespace zt::foreign {

// Member m's bytes, inflated whole by ISA-L from its deflate stream in the
// mapped archive (ZipArchive::deflated_in_place) and checked as a read
// that reaches a member's end is: its stated size both ways, its CRC-32, a
// stream that is damaged or does not end (Status::format, naming `where`).
// For members whose stated size the caller has accepted allocating.
Result<std::vector<uint8_t>> inflate_member(std::span<const uint8_t> deflate_stream,
                                            const ZipMember& m, const std::string& where);

class InflatedMembers final : public RangeSource {
 public:
  InflatedMembers(std::shared_ptr<const ZipArchive> archive, std::string name);
  ~InflatedMembers() override;

  // Appends member m (its stated size; `where` names it in messages) and
  // returns where it starts in this source. `deflate_stream`: its
  // compressed bytes in the mapped archive (ZipArchive::deflated_in_place),
  // which must outlive this source; nullopt reads it through libzip.
  uint64_t add(const ZipMember& m, std::string where,
               std::optional<std::span<const uint8_t>> deflate_stream = std::nullopt);

  uint64_t size() const override { return size_; }
  // Inflates what [off, off + dst.size()) covers: a read that goes on from
  // where the last one of its member ended (a component read in pieces, as
  // verify reads it) continues that member's stream; any other starts the
  // member over. A read that reaches a member's end checks it (its stated
  // size, its CRC-32). Reads of different members run side by side.
  Result<void> read(uint64_t off, std::span<uint8_t> dst) const override;
  const std::string& name() const override { return name_; }
  bool streams() const override { return true; }
  // Members' streams open now, left part-way by a read (at most
  // kMostOpenStreams once the reads return).
  size_t open_streams() const { return open_streams_; }

 private:
  struct Inflating;  // one member's ISA-L stream, where it stands
  struct Member {
    ZipMember member;
    uint64_t start = 0;
    std::string where;
    std::span<const uint8_t> deflated;  // empty: read through libzip
    mutable std::mutex mu;              // its stream, one read at a time
    mutable std::unique_ptr<Inflating> open;
  };
  Result<void> read_member(const Member& m, uint64_t at, std::span<uint8_t> dst) const;
  void close_stream(const Member& m) const;  // with m.mu held
  Result<void> read_through_libzip(size_t k, uint64_t at, std::span<uint8_t> dst) const;

  std::shared_ptr<const ZipArchive> archive_;
  std::string name_;
  std::deque<Member> members_;  // stable: each holds its own mutex
  uint64_t size_ = 0;
  // Streams kept open part-way: memory bounded whatever the members' count.
  static constexpr size_t kMostOpenStreams = 32;
  mutable std::atomic<size_t> open_streams_{0};
  // libzip's archive serves one read at a time.
  mutable std::mutex libzip_mu_;
  mutable std::optional<ZipMemberStream> libzip_open_;  // the stream of member libzip_member_
  mutable size_t libzip_member_ = 0;
};

}  // namespace zt::foreign
