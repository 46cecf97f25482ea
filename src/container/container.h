// The container stage: magic, footer, manifest size, and which generation of
// the format a file is. Reads only the first 8 bytes and the tail.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "cbor/cbor_value.h"
#include "container/generation.h"
#include "source/io.h"

namespace zt {

inline constexpr char kMagicV1[8] = {'Z', 'T', 'E', 'N', '1', '0', '0', '0'};
inline constexpr char kMagicV0[8] = {'Z', 'T', 'E', 'N', '0', '0', '0', '1'};
inline constexpr uint64_t kAlignment = 64;

// zTensor v2 (its spec §2): 0x89 "ZT2" CR LF SUB LF at offset 0 and at the
// end of a 40-byte footer; every blob, the manifest included, at a multiple
// of 4096 that is at least 4096.
inline constexpr uint8_t kMagicV2[8] = {0x89, 'Z', 'T', '2', '\r', '\n', 0x1a, '\n'};
inline constexpr uint64_t kFooterBytesV2 = 40;
inline constexpr uint64_t kAlignmentV2 = 4096;
inline constexpr uint32_t kFooterVersionV2 = 2;

struct Located {
  Generation generation = Generation::v1;
  uint64_t manifest_start = 0;        // file offset of the manifest
  std::span<const uint8_t> manifest;  // views the source or `storage`
  std::optional<cbor::Document> doc;  // already decoded (1.0.x detection needs it)
};

// Finds the manifest. In copy mode its bytes are read into `storage`, which
// must outlive the result. Errors: format (bad magic, truncated, size does
// not fit), limit (manifest over 1 GiB), io. A v2 file's manifest is also
// placed (invalid: misaligned, over the footer) and hashed (digest: its
// XXH3-64 differs from the footer's); a v2 data shard, which has no
// manifest, is unsupported: it is read through the manifest that names it.
Result<Located> locate_manifest(const Source& src, std::vector<uint8_t>& storage);

uint64_t load_u64_le(const uint8_t* p);

// The bytes a remote open reads speculatively from the end of the file.
inline constexpr uint64_t kOpenTailBytes = uint64_t{64} << 10;

// For a remote source (Source::ranges()), fetches what locate_manifest is
// about to read in two round trips at most: the last kOpenTailBytes (none
// if the cache holds them), then the header magic and whatever of the
// manifest the tail does not hold, together. A footer that does not parse
// fetches nothing more: locate_manifest reports it. A no-op for local
// sources.
Result<void> prefetch_for_open(const Source& src);

// The first rung of the shard ladder (v2 spec §7.3): a file serving as a
// shard starts with the v2 magic and ends with a v2 footer of version 2
// (with or without a manifest: any v2 file may serve, §7.2). `where`
// names the shard in messages.
Result<void> check_shard_container(const Source& src, const std::string& where);

// Where shard `name` of the root at `root_path` lives, by the positional
// convention of the v2 spec's Appendix B: <dir>/<stem>-<name>.zt for a root
// <dir>/<stem>.zt (a root name without ".zt" is the stem as a whole).
std::string shard_file_path(std::string_view root_path, std::string_view name);

// The 40-byte v2 footer (v2 spec §2.3) for a manifest blob at
// [offset, offset + length) whose XXH3-64 is `hash`: version 2, reserved 0.
std::array<uint8_t, kFooterBytesV2> footer_v2(uint64_t offset, uint64_t length, uint64_t hash);

}  // namespace zt
