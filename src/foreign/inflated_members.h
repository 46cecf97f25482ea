// Deflated zip members served as they are read, not inflated up front: the
// members of an archive laid end to end as one RangeSource (the first at 0,
// each next one after the last's stated size). A reader holds one through
// a RangeCache, as it holds a remote file, so that a component that lies
// in a deflated .npz member costs memory only when, and as far as, it is
// read (zt_open touches no data bytes, and a member that inflates to a
// thousand times its size is never all in memory at once unless asked for).
#pragma once

#include <cstdint>
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

class InflatedMembers final : public RangeSource {
 public:
  InflatedMembers(std::shared_ptr<const ZipArchive> archive, std::string name);

  // Appends member m (its stated size; `where` names it in messages) and
  // returns where it starts in this source.
  uint64_t add(const ZipMember& m, std::string where);

  uint64_t size() const override { return size_; }
  // Inflates what [off, off + dst.size()) covers: a read that goes on from
  // where the last one ended (a component read in pieces, as verify reads
  // it) continues one stream; any other starts its member over. A read that
  // reaches a member's end checks it (its stated size, its CRC-32). One
  // read at a time (libzip's archive is not shared between threads).
  Result<void> read(uint64_t off, std::span<uint8_t> dst) const override;
  const std::string& name() const override { return name_; }

 private:
  struct Member {
    ZipMember member;
    uint64_t start = 0;
    std::string where;
  };
  Result<void> read_member(size_t k, uint64_t at, std::span<uint8_t> dst) const;

  std::shared_ptr<const ZipArchive> archive_;
  std::string name_;
  std::vector<Member> members_;
  uint64_t size_ = 0;
  mutable std::mutex mu_;
  mutable std::optional<ZipMemberStream> open_;  // the stream of member open_member_
  mutable size_t open_member_ = 0;
};

}  // namespace zt::foreign
