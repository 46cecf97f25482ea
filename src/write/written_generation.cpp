// The two tables of written_generation.h: 1.2.0 and v2 as a writer
// writes them.
#include "write/written_generation.h"

#include <xxhash.h>

#include <cstring>
#include <utility>

#include "cbor/cbor_item.h"
#include "codec/zstd_codec.h"
#include "container/container.h"
#include "manifest/object_format.h"
#include "write/writer_impl.h"

namespace zt {

namespace {

// ---- 1.2.0 ----

uint64_t alignment_12(const WriterOptions&) {
  return kAlignment;
}

Result<void> begin_object_12(Object&, std::string_view) {
  return {};  // the format is stored as given; the reader's rules apply at the end
}

Result<void> check_object_12(const Object&) {
  return {};
}

Result<void> storage_12(const Object& o, std::string_view role, DType& dtype,
                        std::optional<std::string_view>& type) {
  if (dtype == DType::u8 && type == "bool") {
    dtype = DType::boolean;  // v2's bool, back in 1.2's vocabulary
    type = std::nullopt;
  }
  // A packed v2 type sizes its bytes as no 1.2 reader would: refused, not
  // written as bytes a 1.2 reader would take for other values.
  const LogicalType* lt = type ? find_logical_type(*type, true) : nullptr;
  ZT_FAIL_IF(lt && lt->v2_only && lt->per_byte, argument,
             "object \"%s\": component \"%s\": type \"%s\" packs values below a byte and "
             "exists only in zTensor v2; a 1.2 file holds FP4 as \"%.*s\" pairs (the last "
             "dimension halved)",
             o.name.c_str(), shown(role).c_str(), shown(*type).c_str(),
             static_cast<int>(kF4PairsType.size()), kF4PairsType.data());
  return {};
}

Result<std::vector<uint8_t>> attributes_12(std::vector<uint8_t> cbor, unsigned, bool) {
  return cbor;  // stored as given
}

// One zstd frame of nothing for an empty component (1.2 readers expect a
// frame); otherwise the frames are the whole component.
Result<std::vector<uint8_t>> zstd_end_12(Component& out, std::span<const SeekEntry>,
                                         uint64_t decoded_length, int level) {
  out.encoding_text = "zstd";
  std::vector<uint8_t> tail;
  if (decoded_length == 0) ZT_TRY(zstd_compress_frame(std::span<const uint8_t>(), level, tail));
  return tail;
}

// The manifest, then its length (u64 little-endian) and the magic again.
std::vector<uint8_t> manifest_and_footer_12(std::span<const uint8_t> file_attributes,
                                            std::span<const Object> objects, std::span<const Shard>,
                                            uint64_t) {
  std::vector<uint8_t> out = encode_manifest(file_attributes, objects);
  uint64_t n = out.size();
  for (int i = 0; i < 8; ++i, n >>= 8) out.push_back(static_cast<uint8_t>(n & 0xFF));
  out.insert(out.end(), kMagicV1, kMagicV1 + 8);
  return out;
}

// ---- v2 ----

uint64_t alignment_v2(const WriterOptions& opt) {
  return opt.alignment ? opt.alignment : uint64_t{65536};
}

// What a v2 writer stores for a format given in either vocabulary: the
// layout id, and the name the reader will show (docs/v2.md §2).
Result<void> set_v2_layout(Object& o, std::string_view format) {
  if (const ObjectFormat* f = find_object_format(format)) {
    ZT_FAIL_IF(f->layout_ids.empty(), unsupported,
               "object \"%s\": format \"%s\" has no v2 layout that means the same", o.name.c_str(),
               shown(format).c_str());
    o.layout = std::string(f->layout_ids.front());
  } else {
    ZT_FAIL_IF(format != "dense" && !is_v2_profile_id(format), argument,
               "object \"%s\": \"%s\" is not a v2 layout (\"dense\" or "
               "\"<namespace>.<name>/<version>\")",
               o.name.c_str(), shown(format).c_str());
    o.layout = std::string(format);
  }
  o.format = presented_format(o.layout);
  return {};
}

Result<void> begin_object_v2(Object& o, std::string_view format) {
  ZT_FAIL_IF(o.shape.size() > kMaxRankV2 || !shape_product(o.shape), argument,
             "object \"%s\": v2 shapes have at most 64 dimensions and a product that fits "
             "64 bits",
             shown(o.name).c_str());
  return set_v2_layout(o, format);
}

// A v2 object has bytes (v2 spec §3.3): readers refuse one without parts.
Result<void> check_object_v2(const Object& o) {
  ZT_FAIL_IF(o.components.empty(), invalid, "object \"%s\": a v2 object needs at least one part",
             o.name.c_str());
  return {};
}

// v2 has no bool storage type: bool is a logical type over u8 (§4.1).
Result<void> storage_v2(const Object& o, std::string_view role, DType& dtype,
                        std::optional<std::string_view>& type) {
  if (dtype != DType::boolean) return {};
  ZT_FAIL_IF(type && *type != "bool", argument,
             "object \"%s\": component \"%s\": dtype \"bool\" with type \"%s\"", o.name.c_str(),
             shown(role).c_str(), shown(*type).c_str());
  dtype = DType::u8;
  type = "bool";
  return {};
}

// v2 attributes are stored in deterministic encoding, without tags or
// undefined (v2 spec §3.1), and `depth` levels below the manifest root.
Result<std::vector<uint8_t>> attributes_v2(std::vector<uint8_t> cbor, unsigned depth,
                                           bool canonical_form) {
  auto canonical = cbor::canonical_encoding(cbor, kMaxDepthV2 - depth);
  if (!canonical) {
    Error e = std::move(canonical).error();
    if (e.status != Status::nomem) e.status = Status::argument;
    return e;
  }
  ZT_TRY(cbor::for_each_entry(*canonical, [&](std::string_view key, auto) -> Result<void> {
    return check_name("attribute", key, true, canonical_form);
  }));
  return canonical;
}

// zt.zstd-seekable/1: the frames, then their seek table (no frame at all
// for an empty part).
Result<std::vector<uint8_t>> zstd_end_v2(Component& out, std::span<const SeekEntry> frames,
                                         uint64_t, int) {
  out.encoding_text = "zstd";
  out.encoding_id = std::string(kSeekableEncodingId);
  return seek_table(frames);
}

// The manifest at a blob boundary, then the footer that locates it.
std::vector<uint8_t> manifest_and_footer_v2(std::span<const uint8_t> file_attributes,
                                            std::span<const Object> objects,
                                            std::span<const Shard> shards, uint64_t at) {
  std::vector<uint8_t> out = encode_manifest_v2(file_attributes, objects, shards);
  const auto footer = footer_v2(at, out.size(), XXH3_64bits(out.data(), out.size()));
  out.insert(out.end(), footer.begin(), footer.end());
  return out;
}

const WrittenGeneration& written_12() {
  static const WrittenGeneration g{
      .name = "1.2.0",
      .magic = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(kMagicV1), 8),
      .v2_vocabulary = false,
      .digests_cover_content = false,
      .seekable_zstd = false,
      .aligned_manifest = false,
      .alignment = alignment_12,
      .begin_object = begin_object_12,
      .check_object = check_object_12,
      .storage = storage_12,
      .attributes = attributes_12,
      .zstd_end = zstd_end_12,
      .manifest_and_footer = manifest_and_footer_12,
  };
  return g;
}

const WrittenGeneration& written_v2() {
  static const WrittenGeneration g{
      .name = "v2",
      .magic = std::span<const uint8_t>(kMagicV2, 8),
      .v2_vocabulary = true,
      .digests_cover_content = true,
      .seekable_zstd = true,
      .aligned_manifest = true,
      .alignment = alignment_v2,
      .begin_object = begin_object_v2,
      .check_object = check_object_v2,
      .storage = storage_v2,
      .attributes = attributes_v2,
      .zstd_end = zstd_end_v2,
      .manifest_and_footer = manifest_and_footer_v2,
  };
  return g;
}

}  // namespace

const WrittenGeneration& written_generation(unsigned file_version) {
  return file_version == 2 ? written_v2() : written_12();
}

}  // namespace zt
