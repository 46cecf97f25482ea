#include "read/validate.h"

#include <algorithm>
#include <string>

#include "container/container.h"
#include "manifest/object_format.h"

namespace zt {

namespace {

struct Blob {
  uint64_t begin, end;
  const Object* obj;  // nullptr: the manifest blob (v2)
  const Component* comp;
  uint32_t file = 0;  // v2: 0 this file, i + 1 shard i
};

std::string blob_where(const Blob& b) {
  return b.obj ? component_where(*b.obj, *b.comp) : std::string("the manifest");
}

using ull = unsigned long long;

Result<void> check_placement(const Object& o, const Component& c, uint64_t file_size,
                             uint64_t manifest_start, std::vector<Blob>& blobs) {
  // Messages are built only on failure: this runs for every component.
  ZT_FAIL_IF(c.offset % kAlignment != 0, invalid, "%s: offset %llu is not a multiple of 64",
             component_where(o, c).c_str(), static_cast<ull>(c.offset));
  uint64_t end = 0;
  ZT_FAIL_IF(__builtin_add_overflow(c.offset, c.length, &end) || end > file_size, invalid,
             "%s: offset %llu + length %llu exceeds the file size %llu", component_where(o, c).c_str(),
             static_cast<ull>(c.offset), static_cast<ull>(c.length), static_cast<ull>(file_size));
  if (c.length == 0) return {};
  ZT_FAIL_IF(c.offset < 8, invalid, "%s: blob [%llu, %llu) overlaps the header", component_where(o, c).c_str(),
             static_cast<ull>(c.offset), static_cast<ull>(end));
  ZT_FAIL_IF(end > manifest_start, invalid, "%s: blob [%llu, %llu) overlaps the manifest at %llu",
             component_where(o, c).c_str(), static_cast<ull>(c.offset), static_cast<ull>(end),
             static_cast<ull>(manifest_start));
  blobs.push_back(Blob{c.offset, end, &o, &c});
  return {};
}

// v2 (spec §2.4, §3.6.3): every blob, zero-length ones too, at a multiple
// of 4096 that is at least 4096 and ending by the footer of the file it is
// in (this one, or a shard by the size the table gives it).
Result<void> check_placement_v2(const Manifest& m, const Object& o, const Component& c,
                                uint64_t file_size, std::vector<Blob>& blobs) {
  const uint64_t size = c.shard ? m.shards[*c.shard].size : file_size;
  const uint64_t data_end = size - kFooterBytesV2;  // sizes are at least one footer
  ZT_FAIL_IF(c.offset % kAlignmentV2 != 0 || c.offset < kAlignmentV2, invalid,
             "%s: offset %llu is not a multiple of 4096 at or after 4096 (v2 spec §2.4)",
             component_where(o, c).c_str(), static_cast<ull>(c.offset));
  uint64_t end = 0;
  ZT_FAIL_IF(__builtin_add_overflow(c.offset, c.length, &end) || end > data_end, invalid,
             "%s: blob [%llu, +%llu) runs past the data region of %s, which ends at %llu",
             component_where(o, c).c_str(), static_cast<ull>(c.offset), static_cast<ull>(c.length),
             c.shard ? ("shard \"" + m.shards[*c.shard].name + "\"").c_str() : "the file",
             static_cast<ull>(data_end));
  // Zero-length blobs are exempt from the overlap rule, not from placement.
  if (c.length > 0) blobs.push_back(Blob{c.offset, end, &o, &c, c.shard ? *c.shard + 1 : 0});
  return {};
}

// Blobs in one file are either the same range (shared, allowed) or disjoint.
Result<void> check_overlaps(std::vector<Blob>& blobs) {
  std::sort(blobs.begin(), blobs.end(), [](const Blob& a, const Blob& b) {
    if (a.file != b.file) return a.file < b.file;
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  for (size_t i = 1; i < blobs.size(); ++i) {
    const Blob& a = blobs[i - 1];
    const Blob& b = blobs[i];
    if (a.file != b.file || b.begin >= a.end || (b.begin == a.begin && b.end == a.end)) continue;
    return make_error(Status::invalid, "%s: blob [%llu, %llu) overlaps %s: blob [%llu, %llu)",
                      blob_where(b).c_str(), static_cast<ull>(b.begin), static_cast<ull>(b.end),
                      blob_where(a).c_str(), static_cast<ull>(a.begin), static_cast<ull>(a.end));
  }
  return {};
}

}  // namespace

Result<void> check_whole_elements(const Object& o, const Component& c, uint64_t decoded) {
  const unsigned unit = c.width() * c.ratio();
  ZT_FAIL_IF(decoded % unit != 0, invalid,
             "%s: %llu bytes is not a whole number of %u-byte elements",
             component_where(o, c).c_str(), static_cast<ull>(decoded), unit);
  return {};
}

namespace {

// A v2 part its profile does not list, refused with the parts it does list.
Error extra_part(const Object& o, const ObjectFormat& f, const Component& c) {
  std::string parts;
  const auto add = [&](const char* prefix, std::string_view r) {
    parts.append(parts.empty() ? "" : ", ").append(prefix).append("\"").append(r).append("\"");
  };
  for (const auto r : f.required_roles) add("", r);
  for (const auto r : f.optional_roles) add("optional ", r);
  if (f.required_roles.size() == 1 && f.optional_roles.empty())
    return make_error(Status::invalid,
                      "object \"%s\": layout \"%s\" has exactly one part, %s (not \"%s\")",
                      o.name.c_str(), o.layout.c_str(), parts.c_str(), c.role.c_str());
  return make_error(Status::invalid,
                    "object \"%s\": layout \"%s\" has no part \"%s\" (its parts are exactly %s)",
                    o.name.c_str(), o.layout.c_str(), c.role.c_str(), parts.c_str());
}

Result<void> check_format_rules(const Object& o) {
  const ObjectFormat* f = format_of(o);
  if (!f) return {};  // unknown format: structural checks only
  for (const auto r : f->required_roles)
    ZT_FAIL_IF(!o.find(r), invalid, "object \"%s\": format \"%s\" requires component \"%.*s\"",
               o.name.c_str(), o.format.c_str(), static_cast<int>(r.size()), r.data());
  // v2 profiles list their parts "exactly"; 1.x carries extra components.
  if (!o.layout.empty())
    for (const Component& c : o.components)
      if (!is_allowed_role(*f, c.role)) return extra_part(o, *f, c);
  return f->check_structure ? f->check_structure(o) : Result<void>{};
}

}  // namespace

Result<void> validate_object(const Object& o) {
  if (!o.unsupported.empty()) return {};  // listed only; refused on access
  ZT_TRY(check_format_rules(o));  // first: its messages say more (a dense size against the shape)
  // Every format, known or not: the writer stores only whole elements, so a
  // file the reader accepts can be copied.
  for (const Component& c : o.components)
    if (const auto n = decoded_size(c)) ZT_TRY(check_whole_elements(o, c, *n));
  return {};
}

Result<void> validate(const Manifest& m, uint64_t file_size, uint64_t manifest_start,
                      uint64_t manifest_length) {
  std::vector<Blob> blobs;
  if (m.generation == Generation::v2) {
    // The manifest is a blob of this file (v2 spec §2.4): a part may share
    // its range exactly (decision 3), not overlap it in part.
    blobs.push_back(Blob{manifest_start, manifest_start + manifest_length, nullptr, nullptr});
    for (const Object& o : m.objects)
      for (const Component& c : o.components) ZT_TRY(check_placement_v2(m, o, c, file_size, blobs));
  } else {
    for (const Object& o : m.objects)
      for (const Component& c : o.components)
        ZT_TRY(check_placement(o, c, file_size, manifest_start, blobs));
  }
  ZT_TRY(check_overlaps(blobs));
  for (const Object& o : m.objects) ZT_TRY(validate_object(o));
  return {};
}

}  // namespace zt
