// The C ABI of where components' bytes lie, for a program that maps or
// reads them itself: zt_component_extent(s) in the file the reader was
// opened on, zt_component_files among the model's files.
#include <optional>
#include <string_view>
#include <vector>

#include "base/core_count.h"
#include "capi_internal.h"

using namespace zt::capi;

namespace {

// Objects first .. first + count - 1 exist (the batch calls' range), else
// ZT_ERR_NOT_FOUND with the message set.
zt_status check_range(const zt::Reader& reader, size_t first, size_t count) {
  const size_t n = reader.manifest().objects.size();
  if (first <= n && count <= n - first) return ZT_OK;
  return set_error(zt::make_error(zt::Status::not_found,
                                  "objects %zu to %zu run past the last one (%zu objects)", first,
                                  first + count - 1, n));
}

// The component of `o` with role `role`, or nullptr: the batch calls mark
// an object without one instead of failing.
const zt::Component* component_named(const zt::Object& o, std::string_view role) {
  for (const zt::Component& c : o.components)
    if (c.role == role) return &c;
  return nullptr;
}

// component_named of objects first .. first + count - 1.
std::vector<const zt::Component*> components_named(const std::vector<zt::Object>& objects,
                                                   size_t first, size_t count,
                                                   std::string_view role) {
  std::vector<const zt::Component*> out(count);
  for (size_t i = 0; i < count; ++i) out[i] = component_named(objects[first + i], role);
  return out;
}

}  // namespace

extern "C" {

zt_status zt_component_extent(const zt_reader* r, size_t object, const char* role, uint64_t* offset,
                              uint64_t* nbytes) {
  if (!offset || !nbytes) return fail(ZT_ERR_ARGUMENT, "offset or nbytes is NULL");
  size_t k = 0;
  if (const zt_status s = locate(r, object, role, &k)) return s;
  const zt::Object& o = r->impl->manifest().objects[object];
  const zt::Component& c = o.components[k];
  // A zip member's CRC-32 not checked yet is checked first: bytes a
  // program maps itself are those a read would hand out, or none.
  if (const zt_status s = to_status(r->impl->check_data(c))) return s;
  if (c.shard || c.held)
    return set_error(zt::make_error(
        zt::Status::unsupported, "%s: its bytes are not in this file (%s)",
        zt::component_where(o, c).c_str(),
        c.shard ? "in another file: a shard"
                : "in another file of the model, or reordered, gathered or inflated into memory"));
  *offset = c.offset;
  *nbytes = c.length;
  return ZT_OK;
}

zt_status zt_component_extents(const zt_reader* r, const char* role, size_t first, size_t count,
                               uint64_t* offsets, uint64_t* nbytes, const char** encodings) {
  if (!r || !role || (count > 0 && (!offsets || !nbytes)))
    return fail(ZT_ERR_ARGUMENT, "reader, role, offsets or nbytes is NULL");
  return guard([&] {
    if (const zt_status s = check_range(*r->impl, first, count)) return s;
    const std::vector<zt::Object>& objects = r->impl->manifest().objects;
    const std::vector<const zt::Component*> asked = components_named(objects, first, count, role);
    r->impl->run_checks(asked, zt::core_count());
    for (size_t i = 0; i < count; ++i) {
      const zt::Component* c = asked[i];
      if (c && !r->impl->check_data(*c)) c = nullptr;  // its bytes are handed out nowhere
      // What zt_component_extent refuses (no such component, bytes in
      // another file) is marked, not failed: one object's absence says
      // nothing about the others'.
      const bool here = c && !c->shard && !c->held;
      offsets[i] = here ? c->offset : UINT64_MAX;
      nbytes[i] = here ? c->length : 0;
      if (encodings)
        encodings[i] = !c ? nullptr : c->encoding_text ? c->encoding_text->c_str() : "raw";
    }
    return ZT_OK;
  });
}

zt_status zt_component_files(const zt_reader* r, const char* role, size_t first, size_t count,
                             const char** files, uint64_t* offsets, uint64_t* nbytes,
                             uint64_t* devices, uint64_t* inodes) {
  if (!r || !role || (count > 0 && (!files || !offsets || !nbytes)))
    return fail(ZT_ERR_ARGUMENT, "reader, role, files, offsets or nbytes is NULL");
  return guard([&] {
    const zt::Reader& reader = *r->impl;
    if (const zt_status s = check_range(reader, first, count)) return s;
    const std::vector<zt::Object>& objects = reader.manifest().objects;
    // A shard that cannot be opened is marked as memory is (its objects'
    // reads give the refusal; the other objects are still placed), and is
    // asked once a call.
    std::vector<bool> unopened(reader.manifest().shards.size());
    const std::vector<const zt::Component*> asked = components_named(objects, first, count, role);
    reader.run_checks(asked, zt::core_count());
    for (size_t i = 0; i < count; ++i) {
      const zt::Component* c = asked[i];
      std::optional<zt::FileIdentity> file;
      if (c && !(c->shard && unopened[*c->shard])) {
        auto f = reader.file_of(*c);
        if (f)
          file = *f;
        else if (c->shard)
          unopened[*c->shard] = true;
      }
      files[i] = file ? file->path.data() : nullptr;
      offsets[i] = file ? c->offset : UINT64_MAX;
      nbytes[i] = file ? c->length : 0;
      if (devices) devices[i] = file ? file->device : 0;
      if (inodes) inodes[i] = file ? file->inode : 0;
    }
    return ZT_OK;
  });
}

}  // extern "C"
