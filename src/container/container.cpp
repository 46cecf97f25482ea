#include "container/container.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/zt_limits.h"

namespace zt {

using ull = unsigned long long;

uint64_t load_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

namespace {

template <typename Char>
bool is_magic(std::span<const uint8_t> at, const Char (&magic)[8]) {
  return at.size() >= 8 && std::memcmp(at.data(), magic, 8) == 0;
}

uint32_t load_u32_le(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

// v2 (spec §2.3, §8 steps 1-4): the footer, then the manifest blob's
// bounds, size cap and XXH3-64, all before a byte of it is parsed.
Result<Located> locate_v2(const Source& src, std::vector<uint8_t>& storage) {
  const uint64_t size = src.size();
  ZT_FAIL_IF(size < 8 + kFooterBytesV2, format,
             "zTensor v2 file is %llu bytes, shorter than magic + footer (48)",
             static_cast<ull>(size));
  uint8_t footer[kFooterBytesV2];
  ZT_TRY(src.read_into(size - kFooterBytesV2, footer));
  ZT_FAIL_IF(!is_magic(std::span<const uint8_t>(footer + 32, 8), kMagicV2), format,
             "bad v2 footer magic (truncated file, or a crashed append?)");
  const uint64_t offset = load_u64_le(footer);
  const uint64_t length = load_u64_le(footer + 8);
  const uint64_t hash = load_u64_le(footer + 16);
  const uint32_t version = load_u32_le(footer + 24);  // footer + 28: reserved, ignored
  ZT_FAIL_IF(version != kFooterVersionV2, unsupported,
             "zTensor footer version %u: this library reads version 2", version);
  if (length == 0) {
    ZT_FAIL_IF(offset != 0 || hash != 0, invalid,
               "v2 footer: no manifest (length 0) but offset %llu and hash %016llx are not 0",
               static_cast<ull>(offset), static_cast<ull>(hash));
    return make_error(Status::unsupported,
                      "a zTensor v2 data shard (no manifest): it is read through the manifest "
                      "that names it");
  }
  ZT_FAIL_IF(length > Limits::manifest_bytes, limit,
             "manifest size %llu exceeds the %llu-byte limit", static_cast<ull>(length),
             static_cast<ull>(Limits::manifest_bytes));
  const uint64_t data_end = size - kFooterBytesV2;
  ZT_FAIL_IF(offset % kAlignmentV2 != 0 || offset < kAlignmentV2, invalid,
             "manifest blob offset %llu is not a multiple of 4096 of at least 4096",
             static_cast<ull>(offset));
  ZT_FAIL_IF(offset > data_end || length > data_end - offset, invalid,
             "manifest blob [%llu, +%llu) runs past the data region, which ends at the footer "
             "(%llu)",
             static_cast<ull>(offset), static_cast<ull>(length), static_cast<ull>(data_end));
  Located l;
  l.generation = Generation::v2;
  l.manifest_start = offset;
  auto bytes = src.bytes(offset, length, storage);
  ZT_TRY(bytes);
  l.manifest = *bytes;
  const uint64_t actual = XXH3_64bits(l.manifest.data(), l.manifest.size());
  ZT_FAIL_IF(actual != hash, digest,
             "manifest XXH3-64 is %016llx, the footer says %016llx (corrupt manifest)",
             static_cast<ull>(actual), static_cast<ull>(hash));
  return l;
}

}  // namespace

std::string shard_file_path(std::string_view root_path, std::string_view name) {
  const size_t slash = root_path.rfind('/');
  const size_t name_at = slash == std::string_view::npos ? 0 : slash + 1;
  std::string_view stem = root_path.substr(name_at);
  if (stem.ends_with(".zt")) stem.remove_suffix(3);
  std::string p(root_path.substr(0, name_at));
  p.append(stem).append("-").append(name).append(".zt");
  return p;
}

Result<void> check_shard_container(const Source& src, const std::string& where) {
  const uint64_t size = src.size();
  ZT_FAIL_IF(size < 8 + kFooterBytesV2, format, "%s: %llu bytes, shorter than magic + footer (48)",
             where.c_str(), static_cast<ull>(size));
  uint8_t head[8];
  ZT_TRY(src.read_into(0, head));
  ZT_FAIL_IF(!is_magic(std::span<const uint8_t>(head, 8), kMagicV2), format,
             "%s: bad header magic (not a zTensor v2 file)", where.c_str());
  uint8_t footer[kFooterBytesV2];
  ZT_TRY(src.read_into(size - kFooterBytesV2, footer));
  ZT_FAIL_IF(!is_magic(std::span<const uint8_t>(footer + 32, 8), kMagicV2), format,
             "%s: bad v2 footer magic", where.c_str());
  const uint32_t version = load_u32_le(footer + 24);
  ZT_FAIL_IF(version != kFooterVersionV2, unsupported,
             "%s: footer version %u, this library reads version 2", where.c_str(), version);
  return {};
}

namespace {

Result<uint64_t> u64_at(const Source& src, uint64_t off) {
  uint8_t b[8];
  ZT_TRY(src.read_into(off, b));
  return load_u64_le(b);
}

Result<Located> locate_v0(const Source& src, std::vector<uint8_t>& storage) {
  const uint64_t size = src.size();
  ZT_FAIL_IF(size < 17, format, "legacy 0.1.0 file is %llu bytes, shorter than the minimum 17",
             static_cast<ull>(size));
  auto msize = u64_at(src, size - 8);
  ZT_TRY(msize);
  ZT_FAIL_IF(*msize > Limits::manifest_bytes, limit,
             "legacy index size %llu exceeds the %llu-byte limit", static_cast<ull>(*msize),
             static_cast<ull>(Limits::manifest_bytes));
  ZT_FAIL_IF(*msize > size - 16, format, "legacy index size %llu does not fit in a %llu-byte file",
             static_cast<ull>(*msize), static_cast<ull>(size));
  Located l;
  l.generation = Generation::v0_1;
  l.manifest_start = size - 8 - *msize;
  auto bytes = src.bytes(l.manifest_start, *msize, storage);
  ZT_TRY(bytes);
  l.manifest = *bytes;
  return l;
}

// A "ZTEN1000" file without the footer is 1.0.x only if its last 8 bytes are
// a size that fits and the bytes before them decode to a map with "tensors".
std::optional<Located> detect_v100(const Source& src, std::vector<uint8_t>& storage) {
  const uint64_t size = src.size();
  auto msize = u64_at(src, size - 8);
  if (!msize || *msize > size - 16 || *msize > Limits::manifest_bytes) return std::nullopt;
  Located l;
  l.generation = Generation::v1_0;
  l.manifest_start = size - 8 - *msize;
  auto bytes = src.bytes(l.manifest_start, *msize, storage);
  if (!bytes) return std::nullopt;
  l.manifest = *bytes;
  auto doc = cbor::decode(l.manifest);
  if (!doc || doc->root().kind != cbor::Kind::map || !doc->find(0, "tensors")) return std::nullopt;
  l.doc = std::move(*doc);
  return l;
}

}  // namespace

Result<Located> locate_manifest(const Source& src, std::vector<uint8_t>& storage) {
  const uint64_t size = src.size();
  ZT_FAIL_IF(size < 8, format, "file is %llu bytes, too short for a zTensor file",
             static_cast<ull>(size));
  uint8_t head[8];
  ZT_TRY(src.read_into(0, head));
  if (is_magic(head, kMagicV0)) return locate_v0(src, storage);
  if (is_magic(head, kMagicV2)) return locate_v2(src, storage);
  ZT_FAIL_IF(!is_magic(head, kMagicV1), format, "bad header magic (not a zTensor file)");
  ZT_FAIL_IF(size < 24, format, "file is %llu bytes, shorter than header + manifest size + footer",
             static_cast<ull>(size));
  uint8_t tail[16];
  ZT_TRY(src.read_into(size - 16, tail));
  if (!is_magic(std::span<const uint8_t>(tail + 8, 8), kMagicV1)) {
    auto v100 = detect_v100(src, storage);
    ZT_FAIL_IF(
        !v100, format,
        "bad footer magic (truncated file?), and no 1.0.x manifest precedes the last 8 bytes");
    return std::move(*v100);
  }
  const uint64_t msize = load_u64_le(tail);
  ZT_FAIL_IF(msize > Limits::manifest_bytes, limit,
             "manifest size %llu exceeds the %llu-byte limit", static_cast<ull>(msize),
             static_cast<ull>(Limits::manifest_bytes));
  ZT_FAIL_IF(msize > size - 24, format, "manifest size %llu does not fit in a %llu-byte file",
             static_cast<ull>(msize), static_cast<ull>(size));
  Located l;
  l.manifest_start = size - 16 - msize;
  auto bytes = src.bytes(l.manifest_start, msize, storage);
  ZT_TRY(bytes);
  l.manifest = *bytes;
  return l;
}

Result<void> prefetch_for_open(const Source& src) {
  const RangeCache* cache = src.ranges();
  if (!cache) return {};
  const uint64_t size = src.size();
  const uint64_t tail = std::min(size, kOpenTailBytes);
  const std::pair<uint64_t, uint64_t> tail_range{size - tail, tail};
  ZT_TRY(cache->prefetch(std::span(&tail_range, 1)));
  std::vector<std::pair<uint64_t, uint64_t>> next{{0, std::min<uint64_t>(size, 8)}};
  if (size >= 8 + kFooterBytesV2) {
    uint8_t footer[kFooterBytesV2];
    ZT_TRY(src.read_into(size - kFooterBytesV2, footer));  // in the tail
    const uint64_t data_end = size - kFooterBytesV2;
    if (is_magic(std::span<const uint8_t>(footer + 32, 8), kMagicV2)) {
      const uint64_t offset = load_u64_le(footer);
      const uint64_t length = load_u64_le(footer + 8);
      if (offset >= 8 && offset <= data_end && length <= data_end - offset &&
          length <= Limits::manifest_bytes)
        next.emplace_back(offset, length);
    } else if (is_magic(std::span<const uint8_t>(footer + 32, 8), kMagicV1)) {
      const uint64_t msize = load_u64_le(footer + 24);
      if (msize <= size - 24 && msize <= Limits::manifest_bytes)
        next.emplace_back(size - 16 - msize, msize);
    }
  }
  return cache->prefetch(next);
}

std::array<uint8_t, kFooterBytesV2> footer_v2(uint64_t offset, uint64_t length, uint64_t hash) {
  std::array<uint8_t, kFooterBytesV2> f{};
  auto put = [&](size_t at, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) f[at + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  put(0, offset, 8);
  put(8, length, 8);
  put(16, hash, 8);
  put(24, kFooterVersionV2, 4);
  for (size_t i = 0; i < 8; ++i) f[32 + i] = kMagicV2[i];
  return f;
}

}  // namespace zt
