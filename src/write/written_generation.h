// What a writer does differently for each generation of the format it
// writes (1.2.0 and v2), in one table each, so that the writer's state
// machine asks the table instead of branching on the version. Internal to
// src/write.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "base/dtype.h"
#include "base/error.h"
#include "codec/zstd_seekable.h"
#include "manifest/manifest.h"
#include "write/writer.h"

namespace zt {

struct WrittenGeneration {
  std::string_view name;           // "1.2.0", "v2": for messages
  std::span<const uint8_t> magic;  // the file's first 8 bytes
  bool v2_vocabulary;              // names, logical types and layouts of v2 (§3.5, §4)
  bool digests_cover_content;      // v2: the decoded bytes; 1.2: the stored bytes
  bool seekable_zstd;              // v2: zt.zstd-seekable/1 (checksummed frames, seek table)
  bool aligned_manifest;           // v2: the manifest starts at a blob boundary

  // Blob alignment: 64 (1.2), or the v2 option (65536 by default).
  uint64_t (*alignment)(const WriterOptions& opt);

  // A begun object as this generation stores it: its layout and the
  // limits its shape must meet.
  Result<void> (*begin_object)(Object& o, std::string_view format);

  // An ended object: what this generation refuses beyond the reader's rules.
  Result<void> (*check_object)(const Object& o);

  // A component's storage dtype and logical type in this generation's
  // vocabulary (bool is a dtype in 1.2, a type over u8 in v2).
  Result<void> (*storage)(const Object& o, std::string_view role, DType& dtype,
                          std::optional<std::string_view>& type);

  // Attributes as this generation stores them, `depth` levels below the
  // manifest root (v2: re-encoded deterministically, §3.1).
  Result<std::vector<uint8_t>> (*attributes)(std::vector<uint8_t> cbor, unsigned depth,
                                             bool canonical);

  // The bytes after a zstd component's frames (v2: the seek table; 1.2: an
  // empty frame for an empty component), and what the component says of
  // its encoding.
  Result<std::vector<uint8_t>> (*zstd_end)(Component& out, std::span<const SeekEntry> frames,
                                           uint64_t decoded_length, int level);

  // The manifest and what ends the file after it, the manifest starting at
  // file offset `at`.
  std::vector<uint8_t> (*manifest_and_footer)(std::span<const uint8_t> file_attributes,
                                              std::span<const Object> objects,
                                              std::span<const Shard> shards, uint64_t at);
};

// The table for a WriterOptions::file_version (0: 1.2.0, 2: v2), which
// writer_open.cpp has checked.
const WrittenGeneration& written_generation(unsigned file_version);

}  // namespace zt
