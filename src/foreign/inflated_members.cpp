#include "foreign/inflated_members.h"

#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace zt::foreign {

namespace {
using ull = unsigned long long;
}  // namespace

// One member's deflate stream as ISA-L inflates it, `position` bytes out,
// with the CRC-32 of those bytes. Its 85 KiB of state are made by
// isal_inflate_init (made with make_unique_for_overwrite: nothing to zero).
struct InflatedMembers::Inflating {
  inflate_state state;
  uint64_t position = 0;
  uint32_t crc = 0;
};

InflatedMembers::InflatedMembers(std::shared_ptr<const ZipArchive> archive, std::string name)
    : archive_(std::move(archive)), name_(std::move(name)) {}

InflatedMembers::~InflatedMembers() = default;

uint64_t InflatedMembers::add(const ZipMember& m, std::string where,
                              std::optional<std::span<const uint8_t>> deflate_stream) {
  const uint64_t start = size_;
  Member& added = members_.emplace_back();
  added.member = m;
  added.start = start;
  added.where = std::move(where);
  if (deflate_stream) added.deflated = *deflate_stream;
  size_ += m.size;
  return start;
}

Result<void> InflatedMembers::read(uint64_t off, std::span<uint8_t> dst) const {
  ZT_FAIL_IF(off > size_ || dst.size() > size_ - off, io, "%s: a read past its end", name_.c_str());
  while (!dst.empty()) {
    // The member holding `off`: the last that starts at or before it (not
    // an empty one, as the one after it starts there too).
    const auto it = std::upper_bound(members_.begin(), members_.end(), off,
                                     [](uint64_t at, const Member& m) { return at < m.start; }) -
                    1;
    const uint64_t at = off - it->start;
    const auto piece = dst.first(std::min<uint64_t>(dst.size(), it->member.size - at));
    if (it->deflated.empty()) {
      ZT_TRY(read_through_libzip(static_cast<size_t>(it - members_.begin()), at, piece));
    } else {
      ZT_TRY(read_member(*it, at, piece));
    }
    off += piece.size();
    dst = dst.subspan(piece.size());
  }
  return {};
}

namespace {

// One isal_inflate call on `s` into its next_out / avail_out, its input
// (which ends at `end`) fed first where it has taken what it had: avail_in
// is 32 bits, so a stream of more than 4 GiB is fed in steps. Fails where
// the stream is damaged (`position`: the bytes out before the call, for
// the message); else whether the call took any input.
Result<bool> inflate_step(inflate_state& s, const uint8_t* end, uint64_t position, const char* w) {
  const uint8_t* fed_to = s.next_in + s.avail_in;
  if (s.avail_in == 0 && fed_to < end)
    s.avail_in = static_cast<uint32_t>(std::min<uint64_t>(end - fed_to, UINT32_MAX));
  const uint32_t had_in = s.avail_in;
  const int rc = isal_inflate(&s);
  ZT_FAIL_IF(rc < 0 || rc == ISAL_NEED_DICT, format,
             "%s: cannot decompress: a damaged deflate stream (ISA-L %d) after %llu bytes", w, rc,
             static_cast<ull>(position));
  return s.avail_in != had_in;
}

// Inflates the next out.size() bytes of `s`, whose input ends at `end`,
// into `out`; fails where the stream is damaged or ends first.
Result<void> inflate_into(inflate_state& s, const uint8_t* end, std::span<uint8_t> out,
                          uint64_t position, uint64_t size, const std::string& where) {
  const char* w = where.c_str();
  while (!out.empty()) {
    // avail_out is 32 bits too.
    const auto step = out.first(std::min<size_t>(out.size(), size_t{1} << 30));
    s.next_out = step.data();
    s.avail_out = static_cast<uint32_t>(step.size());
    const auto took = inflate_step(s, end, position, w);
    ZT_TRY(took);
    const size_t got = step.size() - s.avail_out;
    // No byte out and none taken in: the stream has ended (or cannot go on).
    ZT_FAIL_IF(got == 0 && !*took, format, "%s: ends after %llu of %llu bytes", w,
               static_cast<ull>(position), static_cast<ull>(size));
    position += got;
    out = out.subspan(got);
  }
  return {};
}

// Past the stated size: the stream must end there, its CRC-32 `crc` that
// of the entry.
Result<void> check_end(inflate_state& s, const uint8_t* end, const ZipMember& m, uint32_t crc,
                       const std::string& where) {
  const char* w = where.c_str();
  while (s.block_state != ISAL_BLOCK_FINISH) {
    uint8_t extra = 0;
    s.next_out = &extra;
    s.avail_out = 1;
    const auto took = inflate_step(s, end, m.size, w);
    ZT_TRY(took);
    ZT_FAIL_IF(s.avail_out == 0, format, "%s: holds more than the %llu bytes its entry states", w,
               static_cast<ull>(m.size));
    ZT_FAIL_IF(s.block_state != ISAL_BLOCK_FINISH && !*took, format,
               "%s: cannot decompress: its deflate stream does not end", w);
  }
  ZT_FAIL_IF(crc != m.crc, format,
             "%s: cannot decompress: CRC-32 mismatch: the archive's central directory says %08x, "
             "its %llu bytes do not",
             w, m.crc, static_cast<ull>(m.size));
  return {};
}

// A stream of `deflated` ready to inflate from its start.
void start(inflate_state& s, std::span<const uint8_t> deflated) {
  isal_inflate_init(&s);
  s.crc_flag = ISAL_DEFLATE;                          // raw deflate: zip's CRC-32 is checked apart
  s.next_in = const_cast<uint8_t*>(deflated.data());  // ISA-L only reads it
  s.avail_in = 0;                                     // fed by inflate_into
}

}  // namespace

Result<std::vector<uint8_t>> inflate_member(std::span<const uint8_t> deflate_stream,
                                            const ZipMember& m, const std::string& where) {
  const auto state = std::make_unique_for_overwrite<inflate_state>();
  start(*state, deflate_stream);
  const uint8_t* end = deflate_stream.data() + deflate_stream.size();
  std::vector<uint8_t> out(static_cast<size_t>(m.size));
  ZT_TRY(inflate_into(*state, end, out, 0, m.size, where));
  ZT_TRY(check_end(*state, end, m, crc32_gzip_refl(0, out.data(), out.size()), where));
  return out;
}

Result<void> InflatedMembers::read_member(const Member& m, uint64_t at,
                                          std::span<uint8_t> dst) const {
  const std::lock_guard lock(m.mu);
  if (!m.open || m.open->position > at) {
    close_stream(m);  // freed before its successor is made
    m.open = std::make_unique_for_overwrite<Inflating>();
    ++open_streams_;
    start(m.open->state, m.deflated);
  }
  Inflating& in = *m.open;
  // Whatever fails leaves no stream half-read behind: the next read starts
  // the member over (and fails the same way).
  const uint8_t* end = m.deflated.data() + m.deflated.size();
  auto run = [&](std::span<uint8_t> out) -> Result<void> {
    ZT_TRY(inflate_into(in.state, end, out, in.position, m.member.size, m.where));
    in.crc = crc32_gzip_refl(in.crc, out.data(), out.size());
    in.position += out.size();
    return {};
  };
  Result<void> done;
  if (in.position < at) {
    std::vector<uint8_t> scratch(
        static_cast<size_t>(std::min<uint64_t>(at - in.position, 64 << 10)));
    while (done && in.position < at)
      done = run(std::span(scratch).first(std::min<uint64_t>(at - in.position, scratch.size())));
  }
  if (done) done = run(dst);
  if (done && in.position == m.member.size)
    done = check_end(in.state, end, m.member, in.crc, m.where);
  // A stream read to its end, or that failed, is closed; one left part-way
  // (rows, a verify's window) is kept for the read that goes on from there,
  // while fewer than kMostOpenStreams are (~85 KiB each).
  if (!done || in.position == m.member.size || open_streams_ > kMostOpenStreams) close_stream(m);
  return done;
}

void InflatedMembers::close_stream(const Member& m) const {
  if (!m.open) return;
  m.open.reset();
  --open_streams_;
}

Result<void> InflatedMembers::read_through_libzip(size_t k, uint64_t at,
                                                  std::span<uint8_t> dst) const {
  const std::lock_guard lock(libzip_mu_);
  if (!libzip_open_ || libzip_member_ != k || libzip_open_->position() > at) {
    libzip_open_.reset();
    auto s = archive_->stream(members_[k].member, members_[k].where);
    ZT_TRY(s);
    libzip_open_ = std::move(*s);
    libzip_member_ = k;
  }
  // Whatever fails leaves no stream half-read behind: the next read starts
  // the member over (and fails the same way).
  auto done = libzip_open_->skip(at - libzip_open_->position());
  if (done) done = libzip_open_->read(dst);
  if (!done || libzip_open_->position() == libzip_open_->size()) libzip_open_.reset();
  return done;
}

}  // namespace zt::foreign
