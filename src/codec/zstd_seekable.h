// The zstd seekable format as v2's zt.zstd-seekable/1 profile requires it
// (decision 23 of docs/v2.md): independent frames, each with a content
// checksum and at most 16 MiB of content, all but the last of equal size,
// followed by the seek table (a skippable frame) that lists them.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "codec/zstd_codec.h"

namespace zt {

inline constexpr uint64_t kSeekableMaxFrameContent = uint64_t{16} << 20;
inline constexpr std::string_view kSeekableEncodingId = "zt.zstd-seekable/1";

// Checks `src` against every rule of the profile that the frame headers and
// the seek table show, without decoding: the table's framing and magic, its
// entries against each frame (compressed size, content size when the
// header records one, checksum flag, the table's checksum against the
// frame's own when the table has checksums), the size rules, and that the
// contents add up to decoded_length. The frames decode to what their
// checksums say when they are decoded (zstd checks them). Returns the
// frames (the table itself left out); Status::invalid naming `where` and
// the rule otherwise.
Result<std::vector<ZstdFrame>> seekable_frames(std::span<const uint8_t> src,
                                               uint64_t decoded_length, const std::string& where);

// A remote reader reads a seekable stream piecewise: the footer (its last
// kSeekableFooterBytes bytes) tells the seek table's size, the table the
// frames, and only the frames a read needs are fetched, each checked by
// check_seekable_frame before it is decoded. seekable_frames runs the same
// checks on a whole stream.
inline constexpr uint64_t kSeekableFooterBytes = 9;

struct SeekableFrame {
  ZstdFrame frame;            // offsets within the stored stream
  bool has_checksum = false;  // the table records the frame's checksum
  uint32_t checksum = 0;
};

// The seek table's size (its skippable frame through the footer), from the
// footer of a stream of stored_size bytes.
Result<uint64_t> seekable_table_size(std::span<const uint8_t> footer, uint64_t stored_size,
                                     const std::string& where);
// The frames listed by `table` (the stream's last seekable_table_size
// bytes), checked against every rule the table alone shows: framing, frame
// sizes adding up to the stream, 16 MiB and equal-size content, contents
// adding up to decoded_length.
Result<std::vector<SeekableFrame>> seekable_index(std::span<const uint8_t> table,
                                                  uint64_t stored_size, uint64_t decoded_length,
                                                  const std::string& where);
// The rules one frame's own bytes show: a zstd frame of exactly the listed
// size, with a content checksum (equal to the table's, when it has one), a
// content size in the header equal to the entry's.
Result<void> check_seekable_frame(std::span<const uint8_t> frame, const SeekableFrame& f,
                                  size_t index, const std::string& where);

// Reads dst.size() bytes at `offset` within the stream into dst.
using StreamRead = std::function<Result<void>(uint64_t offset, std::span<uint8_t> dst)>;
// The frames of a seekable stream of stored_size bytes from its end alone:
// the footer, then the seek table, both read through `read`, checked by
// seekable_index. No frame is read: the caller checks each with
// check_seekable_frame when it reads it (a remote read of the frames a run
// needs; decode_many's walk, frame by frame, queuing each to be decoded).
Result<std::vector<SeekableFrame>> read_seekable_index(uint64_t stored_size,
                                                       uint64_t decoded_length,
                                                       const StreamRead& read,
                                                       const std::string& where);

// One frame of a seekable stream as its seek table lists it.
struct SeekEntry {
  uint32_t stored = 0;    // compressed bytes
  uint32_t content = 0;   // decoded bytes
  uint32_t checksum = 0;  // the frame's content checksum (its last 4 bytes)
};
// The entry of a zstd frame just compressed with its checksum.
SeekEntry seek_entry(std::span<const uint8_t> frame, uint64_t content);

// The seek table (a skippable frame, with checksums) listing `frames`.
std::vector<uint8_t> seek_table(std::span<const SeekEntry> frames);

// Appends src as a seekable stream: frames of frame_size bytes of content
// (the last may be shorter), each with its checksum, and the seek table with
// checksums. frame_size must be 1 to kSeekableMaxFrameContent.
Result<void> seekable_compress(std::span<const uint8_t> src, uint64_t frame_size, int level,
                               std::vector<uint8_t>& out);

}  // namespace zt
