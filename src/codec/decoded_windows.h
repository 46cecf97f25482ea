// Decoded windows of encoded bytes held in memory (a mapping or a buffer
// the caller keeps alive): zstd a decoder window at a time with its size
// checked, byte planes a frame at a time. What the reader walks for verify
// and copies (read/reader.h's DecodedWindows) and the writer for its
// read-back of what it wrote (write/read_back.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/byte_windows.h"
#include "codec/byte_planes.h"
#include "codec/zstd_codec.h"

namespace zt {

class ZstdDecodedWindows final : public ByteWindows {
 public:
  // `expected`: what the frames must decode to, when the manifest says
  // (more or fewer bytes is Status::invalid); without it decoding stops at
  // `limit` (Status::limit). `where` names the component in messages.
  ZstdDecodedWindows(std::span<const uint8_t> src, std::optional<uint64_t> expected, uint64_t limit,
                     std::string where);
  // Each frame must decode to the matching size (a seek table's entries).
  void expect_frames(std::vector<uint64_t> contents) { zstd_.expect_frames(std::move(contents)); }
  Result<std::span<const uint8_t>> next() override;

 private:
  std::string where_;
  std::optional<uint64_t> expected_;
  ZstdWindows zstd_;
};

class PlanesDecodedWindows final : public ByteWindows {
 public:
  PlanesDecodedWindows(std::span<const uint8_t> stored, PlanesIndex index, std::string where)
      : stored_(stored), index_(std::move(index)), where_(std::move(where)) {}
  Result<std::span<const uint8_t>> next() override;

 private:
  std::span<const uint8_t> stored_;
  PlanesIndex index_;
  std::string where_;
  size_t next_ = 0;
  std::vector<uint8_t> frame_;
};

}  // namespace zt
