#include "read/validate.h"

#include <algorithm>
#include <string>

#include "container/container.h"
#include "formats/object_format.h"

namespace zt {

namespace {

struct Blob {
  uint64_t begin, end;
  const Object* obj;
  const Component* comp;
};

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

// Blobs are either the same range (shared, allowed) or disjoint.
Result<void> check_overlaps(std::vector<Blob>& blobs) {
  std::sort(blobs.begin(), blobs.end(), [](const Blob& a, const Blob& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  for (size_t i = 1; i < blobs.size(); ++i) {
    const Blob& a = blobs[i - 1];
    const Blob& b = blobs[i];
    if (b.begin >= a.end || (b.begin == a.begin && b.end == a.end)) continue;
    return make_error(Status::invalid, "%s: blob [%llu, %llu) overlaps %s: blob [%llu, %llu)",
                      component_where(*b.obj, *b.comp).c_str(), static_cast<ull>(b.begin),
                      static_cast<ull>(b.end), component_where(*a.obj, *a.comp).c_str(),
                      static_cast<ull>(a.begin), static_cast<ull>(a.end));
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

Result<void> check_format_rules(const Object& o) {
  const ObjectFormat* f = format_of(o);
  if (!f) return {};  // unknown format: structural checks only
  for (const auto r : f->required_roles)
    ZT_FAIL_IF(!o.find(r), invalid, "object \"%s\": format \"%s\" requires component \"%.*s\"",
               o.name.c_str(), o.format.c_str(), static_cast<int>(r.size()), r.data());
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

Result<void> validate(const Manifest& m, uint64_t file_size, uint64_t manifest_start) {
  std::vector<Blob> blobs;
  for (const Object& o : m.objects)
    for (const Component& c : o.components)
      ZT_TRY(check_placement(o, c, file_size, manifest_start, blobs));
  ZT_TRY(check_overlaps(blobs));
  for (const Object& o : m.objects) ZT_TRY(validate_object(o));
  return {};
}

}  // namespace zt
