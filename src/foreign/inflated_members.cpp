#include "foreign/inflated_members.h"

#include <algorithm>
#include <utility>

namespace zt::foreign {

InflatedMembers::InflatedMembers(std::shared_ptr<const ZipArchive> archive, std::string name)
    : archive_(std::move(archive)), name_(std::move(name)) {}

uint64_t InflatedMembers::add(const ZipMember& m, std::string where) {
  const uint64_t start = size_;
  members_.push_back({m, start, std::move(where)});
  size_ += m.size;
  return start;
}

Result<void> InflatedMembers::read(uint64_t off, std::span<uint8_t> dst) const {
  ZT_FAIL_IF(off > size_ || dst.size() > size_ - off, io, "%s: a read past its end", name_.c_str());
  const std::lock_guard lock(mu_);
  while (!dst.empty()) {
    // The member holding `off`: the last that starts at or before it (not
    // an empty one, as the one after it starts there too).
    const auto it = std::upper_bound(members_.begin(), members_.end(), off,
                                     [](uint64_t at, const Member& m) { return at < m.start; }) -
                    1;
    const uint64_t at = off - it->start;
    const auto piece = dst.first(std::min<uint64_t>(dst.size(), it->member.size - at));
    ZT_TRY(read_member(static_cast<size_t>(it - members_.begin()), at, piece));
    off += piece.size();
    dst = dst.subspan(piece.size());
  }
  return {};
}

Result<void> InflatedMembers::read_member(size_t k, uint64_t at, std::span<uint8_t> dst) const {
  if (!open_ || open_member_ != k || open_->position() > at) {
    open_.reset();
    auto s = archive_->stream(members_[k].member, members_[k].where);
    ZT_TRY(s);
    open_ = std::move(*s);
    open_member_ = k;
  }
  // Whatever fails leaves no stream half-read behind: the next read starts
  // the member over (and fails the same way).
  auto done = open_->skip(at - open_->position());
  if (done) done = open_->read(dst);
  if (!done || open_->position() == open_->size()) open_.reset();
  return done;
}

}  // namespace zt::foreign
