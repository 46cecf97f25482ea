// The C ABI over the C++ core, reading half: handle translation and one
// exception barrier per call. Errors become zt_status plus a thread-local
// message.
#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "capi_internal.h"
#include "foreign/foreign_reader.h"
#include "source/http_source.h"

// Every zt_status with the zt::Status of the same value. set_error hands a
// core Status out as the zt_status of that value, so the two enums must
// agree value for value: a status appended to ztensor.h needs a line here
// and a zt::Status of the same value.
#define ZT_STATUSES(X)               \
  X(ZT_OK, ok)                       \
  X(ZT_ERR_IO, io)                   \
  X(ZT_ERR_FORMAT, format)           \
  X(ZT_ERR_INVALID, invalid)         \
  X(ZT_ERR_UNSUPPORTED, unsupported) \
  X(ZT_ERR_DIGEST, digest)           \
  X(ZT_ERR_LIMIT, limit)             \
  X(ZT_ERR_NOT_FOUND, not_found)     \
  X(ZT_ERR_ARGUMENT, argument)       \
  X(ZT_ERR_STATE, state)             \
  X(ZT_ERR_NOMEM, nomem)

#define ZT_SAME_STATUS(c, core) \
  static_assert(static_cast<int>(zt::Status::core) == (c), #c " differs from zt::Status::" #core);
ZT_STATUSES(ZT_SAME_STATUS)
#undef ZT_SAME_STATUS

namespace {

// The other direction: a switch over zt::Status without a default, so that
// -Wswitch (an error in the project's builds) names a core status missing
// from ZT_STATUSES, which set_error would hand out as an unknown zt_status.
constexpr bool listed(zt::Status s) {
  switch (s) {
#define ZT_CORE_CASE(c, core) case zt::Status::core:
    ZT_STATUSES(ZT_CORE_CASE)
#undef ZT_CORE_CASE
    return true;
  }
  return false;
}
static_assert(listed(zt::Status::ok));

}  // namespace

namespace zt::capi {

thread_local std::string g_last_error;

zt_status set_error(const Error& e) {
  // An error made without its text (memory ran out while building it).
  if (e.message.empty() && e.status == Status::nomem) return fail(ZT_ERR_NOMEM, "out of memory");
  g_last_error = e.message;
  return static_cast<zt_status>(e.status);
}

zt_status fail(zt_status s, const char* msg) {
  g_last_error = msg;
  return s;
}

void set_message(std::string msg) {
  g_last_error = std::move(msg);
}

const Object* object_at(const zt_reader* r, size_t i) {
  if (!r || i >= r->impl->manifest().objects.size()) return nullptr;
  return &r->impl->manifest().objects[i];
}

// find_component for the calls that return zt_status.
zt_status locate(const zt_reader* r, size_t object, const char* role, size_t* k) {
  Result<size_t> found = find_component(r, object, role);
  if (!found) return set_error(found.error());
  *k = *found;
  return ZT_OK;
}

const Component* component_of(const zt_reader* r, size_t object, const char* role) {
  size_t k = 0;
  if (locate(r, object, role, &k) != ZT_OK) return nullptr;
  return &r->impl->manifest().objects[object].components[k];
}

}  // namespace zt::capi

namespace zt::capi {

Result<OpenOptions> open_options_from(const zt_open_options* opt) {
  OpenOptions o;
  if (!opt) return o;
  if (opt->struct_size < sizeof(uint32_t) || opt->struct_size > sizeof *opt)
    return make_error(Status::argument,
                      "zt_open_options.struct_size is not one this library knows (use its _init)");
  if (ZT_HAS_FIELD(opt, io_mode)) {
    if (opt->io_mode > ZT_IO_COPY)
      return make_error(Status::argument, "zt_open_options.io_mode is unknown");
    o.mode = opt->io_mode == ZT_IO_COPY ? Source::Mode::copy : Source::Mode::map;
  }
  if (ZT_HAS_FIELD(opt, max_decoded_bytes)) o.max_decoded_bytes = opt->max_decoded_bytes;
  if (ZT_HAS_FIELD(opt, cache_bytes) && opt->cache_bytes) o.cache_bytes = opt->cache_bytes;
  if (ZT_HAS_FIELD(opt, http_headers) && opt->http_headers) {
    std::string_view all(opt->http_headers);
    while (!all.empty()) {
      const size_t nl = all.find('\n');
      std::string_view line = all.substr(0, nl);
      if (line.ends_with('\r')) line.remove_suffix(1);
      if (!line.empty()) o.http.headers.emplace_back(line);
      all = nl == std::string_view::npos ? std::string_view{} : all.substr(nl + 1);
    }
  }
  if (ZT_HAS_FIELD(opt, http_timeout_ms) && opt->http_timeout_ms)
    o.http.timeout_ms = opt->http_timeout_ms;
  if (ZT_HAS_FIELD(opt, http_retries)) o.http.retries = opt->http_retries;
  if (ZT_HAS_FIELD(opt, http_connections) && opt->http_connections)
    o.http.connections = opt->http_connections;
  return o;
}

}  // namespace zt::capi

using namespace zt::capi;

namespace {

bool allows_foreign(const zt_open_options* opt) {
  return opt && ZT_HAS_FIELD(opt, allow_foreign) && opt->allow_foreign;
}

// A foreign file opened without allow_foreign: say how to read it.
zt::Error with_foreign_hint(const char* path, const zt_open_options* opt, zt::Error e) {
  const auto* format = zt::foreign::foreign_format(zt::foreign::kind_from_path(path));
  if (e.status == zt::Status::format && format && !allows_foreign(opt))
    e.message.append(" (a ")
        .append(format->id)
        .append(" file: zt_open_options.allow_foreign reads it)");
  return e;
}

}  // namespace

extern "C" {

// A switch over zt_status without a default: -Wswitch names an enumerator
// missing from ZT_STATUSES, so the known range is the enum's own and no count
// is written down twice.
const char* zt_status_name(zt_status s) {
  switch (s) {
#define ZT_STATUS_CASE(c, core) \
  case c:                       \
    return #c;
    ZT_STATUSES(ZT_STATUS_CASE)
#undef ZT_STATUS_CASE
  }
  return "ZT_ERR_UNKNOWN";
}

const char* zt_last_error(void) {
  return g_last_error.c_str();
}

// Built from the header's macros, the one source of the version.
#define ZT_STRINGIFY_TEXT(x) #x
#define ZT_STRINGIFY(x) ZT_STRINGIFY_TEXT(x)
const char* zt_version(void) {
  return ZT_STRINGIFY(ZT_VERSION_MAJOR) "." ZT_STRINGIFY(ZT_VERSION_MINOR) "." ZT_STRINGIFY(
      ZT_VERSION_PATCH);
}
unsigned zt_version_number(void) {
  return ZT_VERSION_NUMBER;
}

size_t zt_url_for_messages(const char* location, char* out, size_t size) {
  if (out && size > 0) out[0] = '\0';  // what a failure leaves
  return guard_value(size_t{0}, [&] {
    const std::string shown = location ? zt::location_for_messages(location) : std::string();
    if (out && size > 0) {
      const size_t n = std::min(shown.size(), size - 1);
      std::memcpy(out, shown.data(), n);
      out[n] = '\0';
    }
    return shown.size();
  });
}

void zt_open_options_init_sized(zt_open_options* opt, size_t size) {
  zt_open_options d{};
  d.io_mode = ZT_IO_MAP;
  d.http_retries = 3;
  init_sized(opt, size, d);
}

zt_status zt_open_ex(const char* path, const zt_open_options* opt, zt_reader** out) {
  return guard([&] {
    if (!path) return fail(ZT_ERR_ARGUMENT, "path is NULL");
    if (!out) return fail(ZT_ERR_ARGUMENT, "out is NULL");
    // A URL is not a path: every message below would show it whole (user
    // info and query included) as a file that does not exist.
    if (zt::is_http_url(path))
      return fail(ZT_ERR_ARGUMENT,
                  (zt::url_for_messages(path) + ": a URL (zt_open_url reads it)").c_str());
    auto o = open_options_from(opt);
    if (!o) return set_error(o.error());
    if (allows_foreign(opt)) {
      // A model folder or its config.json: the file that holds its tensors.
      auto entry = zt::foreign::model_entry(path);
      if (!entry) return set_error(std::move(entry).error());
      const std::string file = entry->value_or(path);
      if (zt::foreign::foreign_format(zt::foreign::kind_from_path(file)))
        return hand_out(zt::foreign::open_foreign(file, *o), out);
    }
    auto r = zt::Reader::open_file(path, *o);
    if (!r) return set_error(with_foreign_hint(path, opt, std::move(r).error()));
    return hand_out(std::move(r), out);
  });
}

zt_status zt_open_url(const char* url, const zt_open_options* opt, zt_reader** out) {
  return guard([&] {
    if (!url) return fail(ZT_ERR_ARGUMENT, "url is NULL");
    if (!out) return fail(ZT_ERR_ARGUMENT, "out is NULL");
    auto o = open_options_from(opt);
    if (!o) return set_error(o.error());
    const std::string shown = zt::url_for_messages(url);  // its path, without the query
    if (allows_foreign(opt) && zt::foreign::foreign_format(zt::foreign::kind_from_path(shown)))
      return hand_out(zt::foreign::open_foreign_url(url, *o), out);
    auto r = zt::Reader::open_url(url, *o);
    if (!r) return set_error(with_foreign_hint(shown.c_str(), opt, std::move(r).error()));
    return hand_out(std::move(r), out);
  });
}

zt_status zt_open(const char* path, zt_reader** out) {
  return zt_open_ex(path, nullptr, out);
}

zt_status zt_open_memory(const void* data, size_t size, zt_reader** out) {
  return guard([&] {
    if (!data) return fail(ZT_ERR_ARGUMENT, "data is NULL");
    if (!out) return fail(ZT_ERR_ARGUMENT, "out is NULL");
    return hand_out(
        zt::Reader::open_memory(std::span<const uint8_t>(static_cast<const uint8_t*>(data), size)),
        out);
  });
}

void zt_close(zt_reader* r) {
  delete r;
}

const char* zt_file_version(const zt_reader* r) {
  return r ? r->impl->manifest().version.c_str() : nullptr;
}

const char* zt_file_format(const zt_reader* r) {
  if (!r) return nullptr;
  const std::string& foreign = r->impl->manifest().foreign;
  return foreign.empty() ? "zt" : foreign.c_str();
}

const char* zt_manifest_json(const zt_reader* r) {
  if (!r) return nullptr;
  return guard_value<const char*>(nullptr, [&] { return r->impl->manifest_json().c_str(); });
}

namespace {

// The layout as written: v2's id, or a 1.x object's format.
const char* layout_of(const zt::Object& o) {
  return o.layout.empty() ? o.format.c_str() : o.layout.c_str();
}

// One object's zt_object_summary: pointers into the manifest, which lives
// as long as the reader.
void summarize(const zt::Object& o, zt_object_summary& s) {
  s.ndim = static_cast<uint32_t>(o.shape.size());
  s.name = o.name.c_str();
  s.format = o.format.c_str();
  s.layout = layout_of(o);
  s.shape = o.shape.data();
  s.dtype = nullptr;
  s.type = nullptr;
  const auto data = std::ranges::find(o.components, std::string_view("data"), &zt::Component::role);
  if (data != o.components.end()) {
    s.dtype = zt::dtype_name(data->dtype).data();
    s.type = data->type ? data->type->c_str() : nullptr;
  }
  s.components = o.components.size();
  s.attributes_size = o.attributes.present ? o.attributes.encoded.size() : 0;
}

zt_status attributes_out(const zt::Attributes& a, const void** data, size_t* size) {
  *data = a.present ? a.encoded.data() : nullptr;
  *size = a.present ? a.encoded.size() : 0;
  return ZT_OK;
}

}  // namespace

zt_status zt_file_attributes_cbor(const zt_reader* r, const void** data, size_t* size) {
  if (!r || !data || !size) return fail(ZT_ERR_ARGUMENT, "reader, data or size is NULL");
  return attributes_out(r->impl->manifest().attributes, data, size);
}

zt_status zt_object_attributes_cbor(const zt_reader* r, size_t object, const void** data,
                                    size_t* size) {
  if (!r || !data || !size) return fail(ZT_ERR_ARGUMENT, "reader, data or size is NULL");
  const zt::Object* o = object_at(r, object);
  if (!o) return fail(ZT_ERR_NOT_FOUND, "object index out of range");
  return attributes_out(o->attributes, data, size);
}

size_t zt_object_count(const zt_reader* r) {
  return r ? r->impl->manifest().objects.size() : 0;
}

const char* zt_object_name(const zt_reader* r, size_t i) {
  const zt::Object* o = object_at(r, i);
  return o ? o->name.c_str() : nullptr;
}

zt_status zt_object_find(const zt_reader* r, const char* name, size_t* index) {
  if (!r || !name || !index) return fail(ZT_ERR_ARGUMENT, "reader, name or index is NULL");
  return guard([&] {
    const auto i = r->impl->manifest().find(name);
    if (!i) {
      g_last_error = std::string("no object \"") + name + "\"";
      return ZT_ERR_NOT_FOUND;
    }
    *index = *i;
    return ZT_OK;
  });
}

const char* zt_object_format(const zt_reader* r, size_t i) {
  const zt::Object* o = object_at(r, i);
  return o ? o->format.c_str() : nullptr;
}

const char* zt_object_layout(const zt_reader* r, size_t i) {
  const zt::Object* o = object_at(r, i);
  return o ? layout_of(*o) : nullptr;
}

const uint64_t* zt_object_shape(const zt_reader* r, size_t i, size_t* ndim) {
  const zt::Object* o = object_at(r, i);
  if (ndim) *ndim = o ? o->shape.size() : 0;
  return o ? o->shape.data() : nullptr;
}

void zt_object_summary_init(zt_object_summary* s) {
  if (!s) return;
  std::memset(s, 0, sizeof *s);
  s->struct_size = sizeof *s;
}

zt_status zt_object_summaries(const zt_reader* r, size_t first, zt_object_summary* summaries,
                              size_t count) {
  if (!r || (!summaries && count > 0)) return fail(ZT_ERR_ARGUMENT, "reader or summaries is NULL");
  return guard([&] {
    for (size_t i = 0; i < count; ++i)
      if (summaries[i].struct_size != sizeof(zt_object_summary))
        return set_error(
            zt::make_error(zt::Status::argument,
                           "summaries[%zu].struct_size %u is not one this library knows "
                           "(use zt_object_summary_init)",
                           i, summaries[i].struct_size));
    const std::vector<zt::Object>& objects = r->impl->manifest().objects;
    if (first > objects.size() || count > objects.size() - first)
      return set_error(zt::make_error(zt::Status::not_found,
                                      "objects %zu to %zu run past the last one (%zu objects)",
                                      first, first + count - 1, objects.size()));
    for (size_t i = 0; i < count; ++i) summarize(objects[first + i], summaries[i]);
    return ZT_OK;
  });
}

size_t zt_component_count(const zt_reader* r, size_t object) {
  const zt::Object* o = object_at(r, object);
  return o ? o->components.size() : 0;
}

const char* zt_component_role(const zt_reader* r, size_t object, size_t k) {
  const zt::Object* o = object_at(r, object);
  return o && k < o->components.size() ? o->components[k].role.c_str() : nullptr;
}

const char* zt_component_dtype(const zt_reader* r, size_t object, const char* role) {
  const zt::Component* c = component_of(r, object, role);
  return c ? zt::dtype_name(c->dtype).data() : nullptr;
}

const char* zt_component_type(const zt_reader* r, size_t object, const char* role) {
  const zt::Component* c = component_of(r, object, role);
  return c && c->type ? c->type->c_str() : nullptr;
}

const char* zt_component_encoding(const zt_reader* r, size_t object, const char* role) {
  const zt::Component* c = component_of(r, object, role);
  if (!c) return nullptr;
  return c->encoding_text ? c->encoding_text->c_str() : "raw";
}

const char* zt_component_encoding_id(const zt_reader* r, size_t object, const char* role) {
  const zt::Component* c = component_of(r, object, role);
  return c && c->encoding_id ? c->encoding_id->c_str() : nullptr;
}

const char* zt_component_shard(const zt_reader* r, size_t object, const char* role) {
  const zt::Component* c = component_of(r, object, role);
  if (!c || !c->shard) return nullptr;
  return r->impl->manifest().shards[*c->shard].name.c_str();
}

zt_status zt_component_stored_size(const zt_reader* r, size_t object, const char* role,
                                   uint64_t* nbytes) {
  if (!nbytes) return fail(ZT_ERR_ARGUMENT, "nbytes is NULL");
  size_t k = 0;
  if (const zt_status s = locate(r, object, role, &k)) return s;
  *nbytes = r->impl->manifest().objects[object].components[k].length;
  return ZT_OK;
}

zt_status zt_component_decoded_size(const zt_reader* r, size_t object, const char* role,
                                    uint64_t* nbytes) {
  if (!nbytes) return fail(ZT_ERR_ARGUMENT, "nbytes is NULL");
  size_t k = 0;
  if (const zt_status s = locate(r, object, role, &k)) return s;
  const auto n = r->impl->known_decoded_size(object, k);
  if (!n) return fail(ZT_ERR_UNSUPPORTED, "the decoded size is not known without decoding");
  *nbytes = *n;
  return ZT_OK;
}

zt_status zt_component_map(const zt_reader* r, size_t object, const char* role, const void** data,
                           uint64_t* nbytes) {
  if (!data || !nbytes) return fail(ZT_ERR_ARGUMENT, "data or nbytes is NULL");
  return guard([&] {
    size_t k = 0;
    if (const zt_status s = locate(r, object, role, &k)) return s;
    auto m = r->impl->map(object, k);
    if (!m) return set_error(m.error());
    *data = m->data();
    *nbytes = m->size();
    return ZT_OK;
  });
}

zt_status zt_component_read(const zt_reader* r, size_t object, const char* role, void* dst,
                            uint64_t capacity, uint64_t* written) {
  if (!dst && capacity > 0) return fail(ZT_ERR_ARGUMENT, "dst is NULL");
  if (!written) return fail(ZT_ERR_ARGUMENT, "written is NULL");
  return guard([&] {
    size_t k = 0;
    if (const zt_status s = locate(r, object, role, &k)) return s;
    // NULL with capacity 0 reads an empty component; for any other the
    // buffer is missing, unless the object is one the reader cannot hand
    // out, whose refusal (as zt_decode_many's) comes first.
    if (!dst && r->impl->manifest().objects[object].unsupported.empty()) {
      const auto n = r->impl->known_decoded_size(object, k);
      if (!n || *n > 0) return fail(ZT_ERR_ARGUMENT, "dst is NULL");
    }
    static uint8_t empty;
    auto n = r->impl->read(object, k,
                           std::span<uint8_t>(dst ? static_cast<uint8_t*>(dst) : &empty, capacity));
    if (!n) return set_error(n.error());
    *written = *n;
    return ZT_OK;
  });
}

zt_status zt_component_read_size(const zt_reader* r, size_t object, const char* role,
                                 uint64_t* nbytes) {
  if (!nbytes) return fail(ZT_ERR_ARGUMENT, "nbytes is NULL");
  return guard([&] {
    size_t k = 0;
    if (const zt_status s = locate(r, object, role, &k)) return s;
    const auto n = r->impl->read_size(object, k);
    if (!n) return set_error(n.error());
    *nbytes = *n;
    return ZT_OK;
  });
}

zt_status zt_verify(const zt_reader* r, uint64_t* checked, uint64_t* unchecked) {
  if (!r) return fail(ZT_ERR_ARGUMENT, "reader is NULL");
  return guard([&] {
    auto v = r->impl->verify();
    if (!v) return set_error(v.error());
    if (checked) *checked = v->checked;
    if (unchecked) *unchecked = v->unchecked;
    return ZT_OK;
  });
}

zt_status zt_content_digest(const zt_reader* r, const char* algorithm, char* out, size_t out_size) {
  if (!r || !out) return fail(ZT_ERR_ARGUMENT, "reader or out is NULL");
  if (out_size < ZT_CONTENT_DIGEST_SIZE)
    return fail(ZT_ERR_ARGUMENT, "out_size is below ZT_CONTENT_DIGEST_SIZE");
  return guard([&] {
    const std::string_view name = algorithm ? algorithm : "sha256";
    const zt::DigestAlgo algo = zt::digest_algo_from_name(name);
    if (algo != zt::DigestAlgo::xxh3 && algo != zt::DigestAlgo::sha256)
      return fail(ZT_ERR_ARGUMENT, "the content digest algorithm is \"sha256\" or \"xxh3\"");
    auto d = zt::content_digest(r->impl->manifest(), algo);
    if (!d) return set_error(d.error());
    std::memcpy(out, d->c_str(), d->size() + 1);
    return ZT_OK;
  });
}

static zt_status advise(const zt_reader* r, size_t object, const char* role, int advice) {
  const zt::Component* c = component_of(r, object, role);
  if (!c) return r && role ? ZT_ERR_NOT_FOUND : ZT_ERR_ARGUMENT;
  return guard([&] {
    // A hint: a shard that cannot be opened gets none, and the read that
    // follows says why.
    if (auto src = r->impl->source_of(*c)) (*src)->advise(c->offset, c->length, advice);
    return ZT_OK;
  });
}

zt_status zt_prefetch(const zt_reader* r, size_t object, const char* role) {
  return advise(r, object, role, MADV_WILLNEED);
}
zt_status zt_evict(const zt_reader* r, size_t object, const char* role) {
  return advise(r, object, role, MADV_DONTNEED);
}

}  // extern "C"
