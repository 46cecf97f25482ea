// The zstd seekable format as v2's zt.zstd-seekable/1 profile requires it
// (decision 23 of docs/v2.md): independent frames, each with a content
// checksum and at most 16 MiB of content, all but the last of equal size,
// followed by the seek table (a skippable frame) that lists them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "container/zstd_codec.h"

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
