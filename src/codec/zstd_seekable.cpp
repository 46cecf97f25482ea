#include "codec/zstd_seekable.h"

#include <zstd.h>

#include <algorithm>

#include "base/arithmetic.h"

namespace zt {

namespace {

using ull = unsigned long long;

constexpr uint32_t kSeekTableMagic = 0x184D2A5E;  // a skippable frame's magic
constexpr uint32_t kSeekableFooterMagic = 0x8F92EAB1;
constexpr size_t kSeekFooterBytes = kSeekableFooterBytes;  // frame count, descriptor, magic

uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

void put_le32(std::vector<uint8_t>& out, uint32_t v) {
  const size_t at = out.size();
  out.resize(at + 4);
  for (int i = 0; i < 4; ++i) out[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

// The rules a frame's own header shows: a zstd frame of exactly `csize`
// bytes with a content checksum, whose recorded content size (if any) is
// its entry's.
Result<void> check_frame_header(std::span<const uint8_t> frame, uint64_t csize, uint64_t dsize,
                                uint64_t pos, size_t i, const char* w) {
  // A zstd frame: its magic, then the frame header descriptor, whose bit
  // 2 is Content_Checksum_flag (RFC 8878 §3.1.1.1.1).
  ZT_FAIL_IF(frame.size() != csize || csize < 6 || le32(frame.data()) != ZSTD_MAGICNUMBER, invalid,
             "%s: seek table frame %zu at byte %llu is not a zstd frame", w, i,
             static_cast<ull>(pos));
  const bool has_checksum = (frame[4] & 0x04) != 0;
  const unsigned long long content = ZSTD_getFrameContentSize(frame.data(), frame.size());
  ZT_FAIL_IF(ZSTD_findFrameCompressedSize(frame.data(), frame.size()) != csize, invalid,
             "%s: seek table frame %zu: the frame is not %llu bytes long", w, i,
             static_cast<ull>(csize));
  ZT_FAIL_IF(!has_checksum, invalid,
             "%s: frame %zu has no content checksum (zt.zstd-seekable/1 requires one)", w, i);
  ZT_FAIL_IF(content == ZSTD_CONTENTSIZE_ERROR, invalid, "%s: frame %zu has a malformed header", w,
             i);
  ZT_FAIL_IF(content != ZSTD_CONTENTSIZE_UNKNOWN && content != dsize, invalid,
             "%s: frame %zu records %llu bytes of content, its seek table entry %llu", w, i,
             content, static_cast<ull>(dsize));
  return {};
}

// The rules an entry shows by itself and against frame 0.
Result<void> check_entry_sizes(uint64_t csize, uint64_t dsize, size_t i, size_t count,
                               uint64_t first_content, const char* w) {
  ZT_FAIL_IF(dsize > kSeekableMaxFrameContent, invalid,
             "%s: frame %zu holds %llu bytes, more than 16 MiB (zt.zstd-seekable/1)", w, i,
             static_cast<ull>(dsize));
  ZT_FAIL_IF(dsize > zstd_most_decoded(csize), invalid,
             "%s: frame %zu cannot decode to the %llu bytes its entry claims", w, i,
             static_cast<ull>(dsize));
  ZT_FAIL_IF(i + 1 < count && i > 0 && dsize != first_content, invalid,
             "%s: frame %zu holds %llu bytes, frame 0 %llu: all frames but the last must be "
             "equal (zt.zstd-seekable/1)",
             w, i, static_cast<ull>(dsize), static_cast<ull>(first_content));
  return {};
}

}  // namespace

Result<std::vector<ZstdFrame>> seekable_frames(std::span<const uint8_t> src,
                                               uint64_t decoded_length, const std::string& where) {
  // The same steps, in the same order, as a remote read and decode_many's
  // walk take (read_seekable_index, then check_seekable_frame frame by
  // frame), so that every way of reading a damaged stream refuses it with
  // the same message.
  const auto index = read_seekable_index(
      src.size(), decoded_length,
      [&](uint64_t offset, std::span<uint8_t> dst) -> Result<void> {
        std::copy_n(src.begin() + static_cast<std::ptrdiff_t>(offset), dst.size(), dst.begin());
        return {};
      },
      where);
  ZT_TRY(index);
  std::vector<ZstdFrame> frames;
  frames.reserve(index->size());
  for (size_t i = 0; i < index->size(); ++i) {
    const SeekableFrame& f = (*index)[i];
    ZT_TRY(check_seekable_frame(src.subspan(f.frame.src_offset, f.frame.src_size), f, i, where));
    frames.push_back(f.frame);
  }
  return frames;
}

Result<uint64_t> seekable_table_size(std::span<const uint8_t> footer, uint64_t stored_size,
                                     const std::string& where) {
  const char* w = where.c_str();
  ZT_FAIL_IF(stored_size < 8 + kSeekFooterBytes || footer.size() != kSeekFooterBytes, invalid,
             "%s: %llu bytes cannot end with a zstd seek table (zt.zstd-seekable/1)", w,
             static_cast<ull>(stored_size));
  ZT_FAIL_IF(le32(footer.data() + 5) != kSeekableFooterMagic, invalid,
             "%s: no zstd seek table at the end of the stream (zt.zstd-seekable/1 requires one)",
             w);
  const uint8_t descriptor = footer[4];
  ZT_FAIL_IF((descriptor & 0x7C) != 0, invalid,
             "%s: seek table descriptor 0x%02x sets reserved bits", w, descriptor);
  const uint64_t entry = (descriptor & 0x80) != 0 ? 12 : 8;
  const uint64_t body = uint64_t{le32(footer.data())} * entry + kSeekFooterBytes;
  ZT_FAIL_IF(body + 8 > stored_size, invalid,
             "%s: the seek table lists %u frames, more than the stream holds", w,
             le32(footer.data()));
  return body + 8;
}

Result<std::vector<SeekableFrame>> seekable_index(std::span<const uint8_t> table,
                                                  uint64_t stored_size, uint64_t decoded_length,
                                                  const std::string& where) {
  const char* w = where.c_str();
  ZT_FAIL_IF(table.size() < 8 + kSeekFooterBytes, invalid, "%s: a seek table of %zu bytes", w,
             table.size());
  const auto size = seekable_table_size(table.last(kSeekFooterBytes), stored_size, where);
  ZT_TRY(size);
  ZT_FAIL_IF(*size != table.size(), argument, "%s: the seek table is %llu bytes, not %zu", w,
             static_cast<ull>(*size), table.size());
  const uint8_t* foot = table.data() + table.size() - kSeekFooterBytes;
  const uint32_t count = le32(foot);
  const bool checksums = (foot[4] & 0x80) != 0;
  const uint64_t entry = checksums ? 12 : 8;
  ZT_FAIL_IF(le32(table.data()) != kSeekTableMagic || le32(table.data() + 4) != table.size() - 8,
             invalid, "%s: the seek table's skippable frame header does not match its %u entries",
             w, count);
  const uint64_t frames_end = stored_size - table.size();
  std::vector<SeekableFrame> frames;
  frames.reserve(count);
  uint64_t pos = 0, total = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* e = table.data() + 8 + i * entry;
    const uint64_t csize = le32(e), dsize = le32(e + 4);
    ZT_FAIL_IF(csize > frames_end - pos, invalid,
               "%s: seek table frame %u of %llu bytes runs past the frames", w, i,
               static_cast<ull>(csize));
    ZT_TRY(check_entry_sizes(csize, dsize, i, count,
                             frames.empty() ? dsize : frames[0].frame.content_size, w));
    frames.push_back(
        SeekableFrame{ZstdFrame{pos, csize, dsize}, checksums, checksums ? le32(e + 8) : 0});
    pos += csize;
    total += dsize;  // at most 2^32 frames of 16 MiB: no overflow
  }
  ZT_FAIL_IF(pos != frames_end, invalid,
             "%s: %llu bytes before the seek table are not in any of its frames", w,
             static_cast<ull>(frames_end - pos));
  ZT_FAIL_IF(total != decoded_length, invalid,
             "%s: the frames hold %llu bytes, decoded_length says %llu", w, static_cast<ull>(total),
             static_cast<ull>(decoded_length));
  return frames;
}

Result<std::vector<SeekableFrame>> read_seekable_index(uint64_t stored_size,
                                                       uint64_t decoded_length,
                                                       const StreamRead& read,
                                                       const std::string& where) {
  ZT_FAIL_IF(stored_size < kSeekableFooterBytes, invalid,
             "%s: %llu bytes cannot end with a zstd seek table (zt.zstd-seekable/1)", where.c_str(),
             static_cast<ull>(stored_size));
  uint8_t footer[kSeekableFooterBytes];
  ZT_TRY(read(stored_size - kSeekableFooterBytes, footer));
  const auto table_bytes = seekable_table_size(footer, stored_size, where);
  ZT_TRY(table_bytes);
  std::vector<uint8_t> table(*table_bytes);
  ZT_TRY(read(stored_size - *table_bytes, table));
  return seekable_index(table, stored_size, decoded_length, where);
}

Result<void> check_seekable_frame(std::span<const uint8_t> frame, const SeekableFrame& f,
                                  size_t index, const std::string& where) {
  const char* w = where.c_str();
  ZT_TRY(check_frame_header(frame, f.frame.src_size, f.frame.content_size, f.frame.src_offset,
                            index, w));
  ZT_FAIL_IF(f.has_checksum && f.checksum != le32(frame.data() + frame.size() - 4), invalid,
             "%s: frame %zu: the seek table's checksum differs from the frame's", w, index);
  return {};
}

SeekEntry seek_entry(std::span<const uint8_t> frame, uint64_t content) {
  return SeekEntry{static_cast<uint32_t>(frame.size()), static_cast<uint32_t>(content),
                   frame.size() >= 4 ? le32(frame.data() + frame.size() - 4) : 0};
}

std::vector<uint8_t> seek_table(std::span<const SeekEntry> frames) {
  std::vector<uint8_t> out;
  out.reserve(8 + frames.size() * 12 + kSeekFooterBytes);
  put_le32(out, kSeekTableMagic);
  put_le32(out, static_cast<uint32_t>(frames.size() * 12 + kSeekFooterBytes));
  for (const SeekEntry& e : frames) {
    put_le32(out, e.stored);
    put_le32(out, e.content);
    put_le32(out, e.checksum);
  }
  put_le32(out, static_cast<uint32_t>(frames.size()));
  out.push_back(0x80);  // checksums present
  put_le32(out, kSeekableFooterMagic);
  return out;
}

Result<void> seekable_compress(std::span<const uint8_t> src, uint64_t frame_size, int level,
                               std::vector<uint8_t>& out) {
  ZT_FAIL_IF(frame_size == 0 || frame_size > kSeekableMaxFrameContent, argument,
             "seekable zstd frames hold 1 byte to 16 MiB, not %llu", static_cast<ull>(frame_size));
  std::vector<SeekEntry> entries;
  for (uint64_t at = 0; at < src.size(); at += frame_size) {
    const auto piece = src.subspan(at, std::min<uint64_t>(frame_size, src.size() - at));
    const size_t before = out.size();
    ZT_TRY(zstd_compress_frame(piece, level, out, true));
    entries.push_back(seek_entry(std::span(out).subspan(before), piece.size()));
  }
  const std::vector<uint8_t> table = seek_table(entries);
  out.insert(out.end(), table.begin(), table.end());
  return {};
}

}  // namespace zt
