// The C ABI over the core, writing half.
#include <cstring>
#include <span>

#include "capi_internal.h"

using namespace zt::capi;

namespace {

std::span<const uint8_t> bytes_of(const void* data, uint64_t nbytes) {
  return {static_cast<const uint8_t*>(data), static_cast<size_t>(nbytes)};
}

std::string_view encoding_or_raw(const char* encoding) { return encoding ? encoding : "raw"; }

zt_status check_writer(const zt_writer* w) { return w ? ZT_OK : fail(ZT_ERR_ARGUMENT, "writer is NULL"); }

zt_status check_shape(const uint64_t* shape, size_t ndim) {
  return shape || ndim == 0 ? ZT_OK : fail(ZT_ERR_ARGUMENT, "shape is NULL");
}

zt_status check_data(const void* data, uint64_t nbytes) {
  return data || nbytes == 0 ? ZT_OK : fail(ZT_ERR_ARGUMENT, "data is NULL");
}

}  // namespace

extern "C" {

void zt_writer_options_init_sized(zt_writer_options* opt, size_t size) {
  const zt::WriterOptions d;
  zt_writer_options o{};
  o.zstd_level = d.zstd_level;
  o.threads = d.threads;
  o.digest = ZT_DIGEST_XXH3;
  o.frame_size = d.frame_size;
  o.auto_min_ratio = d.auto_min_ratio;
  init_sized(opt, size, o);
}

namespace {

// The options as the core takes them (NULL: the defaults); fields beyond
// the caller's struct_size keep their defaults.
zt_status core_options(const zt_writer_options* opt, zt::WriterOptions& o) {
  if (opt) {
    if (opt->struct_size < sizeof(uint32_t) || opt->struct_size > sizeof *opt)
      return fail(ZT_ERR_ARGUMENT,
                  "zt_writer_options.struct_size is not one this library knows (use its _init)");
    if (ZT_HAS_FIELD(opt, zstd_level)) o.zstd_level = opt->zstd_level;
    if (ZT_HAS_FIELD(opt, threads)) o.threads = opt->threads;
    if (ZT_HAS_FIELD(opt, digest)) {
      if (opt->digest > ZT_DIGEST_NONE)
        return fail(ZT_ERR_ARGUMENT, "zt_writer_options.digest is unknown");
      o.digest = opt->digest == ZT_DIGEST_SHA256 ? zt::DigestAlgo::sha256
                 : opt->digest == ZT_DIGEST_NONE ? zt::DigestAlgo::none
                                                 : zt::DigestAlgo::xxh3;
    }
    if (ZT_HAS_FIELD(opt, frame_size)) {
      if (opt->frame_size < 1024)
        return fail(ZT_ERR_ARGUMENT, "zt_writer_options.frame_size is below 1024 bytes");
      o.frame_size = opt->frame_size;
    }
    if (ZT_HAS_FIELD(opt, auto_min_ratio)) o.auto_min_ratio = opt->auto_min_ratio;
    if (ZT_HAS_FIELD(opt, file_version)) o.file_version = opt->file_version;
    if (ZT_HAS_FIELD(opt, alignment)) o.alignment = opt->alignment;
    if (ZT_HAS_FIELD(opt, canonical)) o.canonical = opt->canonical != 0;
    if (ZT_HAS_FIELD(opt, shard_bytes)) o.shard_bytes = opt->shard_bytes;
  }
  return ZT_OK;
}

}  // namespace

zt_status zt_writer_open_ex(const char* path, const zt_writer_options* opt, zt_writer** out) {
  if (!path) return fail(ZT_ERR_ARGUMENT, "path is NULL");
  if (!out) return fail(ZT_ERR_ARGUMENT, "out is NULL");
  return guard([&] {
    zt::WriterOptions o;
    if (zt_status s = core_options(opt, o)) return s;
    auto w = zt::Writer::open(path, o);
    if (!w) return set_error(w.error());
    *out = new zt_writer{std::move(*w)};
    return ZT_OK;
  });
}

zt_status zt_writer_open_append(const char* path, const zt_writer_options* opt, zt_writer** out) {
  if (!path) return fail(ZT_ERR_ARGUMENT, "path is NULL");
  if (!out) return fail(ZT_ERR_ARGUMENT, "out is NULL");
  return guard([&] {
    zt::WriterOptions o;
    if (zt_status s = core_options(opt, o)) return s;
    auto w = zt::Writer::open_append(path, o);
    if (!w) return set_error(w.error());
    *out = new zt_writer{std::move(*w)};
    return ZT_OK;
  });
}

zt_status zt_writer_open(const char* path, zt_writer** out) { return zt_writer_open_ex(path, nullptr, out); }

namespace {

// zt_writer_add_dense's arguments past the writer and the names, checked
// and added: what one object of zt_writer_add_dense_many is too.
zt_status add_dense_checked(zt_writer* w, const char* name, const char* dtype,
                            const uint64_t* shape, size_t ndim, const void* data, uint64_t nbytes,
                            std::string_view encoding) {
  if (zt_status s = check_shape(shape, ndim)) return s;
  if (zt_status s = check_data(data, nbytes)) return s;
  return to_status(w->impl->add_dense(name, dtype, std::span<const uint64_t>(shape, ndim),
                                      bytes_of(data, nbytes), encoding));
}

}  // namespace

zt_status zt_writer_add_dense(zt_writer* w, const char* name, const char* dtype, const uint64_t* shape, size_t ndim,
                              const void* data, uint64_t nbytes, const char* encoding) {
  if (zt_status s = check_writer(w)) return s;
  if (!name || !dtype) return fail(ZT_ERR_ARGUMENT, "name or dtype is NULL");
  return guard([&] {
    return add_dense_checked(w, name, dtype, shape, ndim, data, nbytes, encoding_or_raw(encoding));
  });
}

void zt_dense_item_init(zt_dense_item* item) {
  if (!item) return;
  std::memset(item, 0, sizeof *item);
  item->struct_size = sizeof *item;
}

zt_status zt_writer_add_dense_many(zt_writer* w, const zt_dense_item* items, size_t count,
                                   const char* encoding, size_t* added) {
  if (added) *added = 0;
  if (zt_status s = check_writer(w)) return s;
  if (!items && count > 0) return fail(ZT_ERR_ARGUMENT, "items is NULL");
  return guard([&] {
    if (zt_status s = check_struct_sizes(items, count, "items")) return s;
    const std::string_view enc = encoding_or_raw(encoding);
    for (size_t i = 0; i < count; ++i) {
      const zt_dense_item& item = items[i];
      if (!item.name || !item.dtype)
        return set_error(
            zt::make_error(zt::Status::argument, "items[%zu]: name or dtype is NULL", i));
      if (zt_status s = add_dense_checked(w, item.name, item.dtype, item.shape, item.ndim,
                                          item.data, item.nbytes, enc))
        return s;
      if (added) *added = i + 1;
    }
    return ZT_OK;
  });
}

zt_status zt_writer_begin_object(zt_writer* w, const char* name, const char* format, const uint64_t* shape,
                                 size_t ndim) {
  if (zt_status s = check_writer(w)) return s;
  if (!name || !format) return fail(ZT_ERR_ARGUMENT, "name or format is NULL");
  if (zt_status s = check_shape(shape, ndim)) return s;
  return guard([&] { return to_status(w->impl->begin_object(name, format, std::span<const uint64_t>(shape, ndim))); });
}

zt_status zt_writer_add_component(zt_writer* w, const char* role, const char* dtype, const char* type,
                                  const void* data, uint64_t nbytes, const char* encoding) {
  if (zt_status s = check_writer(w)) return s;
  if (!role || !dtype) return fail(ZT_ERR_ARGUMENT, "role or dtype is NULL");
  if (zt_status s = check_data(data, nbytes)) return s;
  return guard([&] {
    const auto t = type ? std::optional<std::string_view>(type) : std::nullopt;
    return to_status(w->impl->add_component(role, dtype, t, bytes_of(data, nbytes), encoding_or_raw(encoding)));
  });
}

zt_status zt_writer_end_object(zt_writer* w) {
  if (zt_status s = check_writer(w)) return s;
  return guard([&] { return to_status(w->impl->end_object()); });
}

zt_status zt_writer_cancel_object(zt_writer* w) {
  if (zt_status s = check_writer(w)) return s;
  return guard([&] { return to_status(w->impl->cancel_object()); });
}

zt_status zt_writer_begin_component(zt_writer* w, const char* role, const char* dtype, const char* type,
                                    const char* encoding, uint64_t decoded_size) {
  if (zt_status s = check_writer(w)) return s;
  if (!role || !dtype) return fail(ZT_ERR_ARGUMENT, "role or dtype is NULL");
  return guard([&] {
    const auto t = type ? std::optional<std::string_view>(type) : std::nullopt;
    return to_status(w->impl->begin_component(role, dtype, t, encoding_or_raw(encoding), decoded_size));
  });
}

zt_status zt_writer_write(zt_writer* w, const void* data, uint64_t nbytes) {
  if (zt_status s = check_writer(w)) return s;
  if (zt_status s = check_data(data, nbytes)) return s;
  return guard([&] { return to_status(w->impl->write(bytes_of(data, nbytes))); });
}

zt_status zt_writer_end_component(zt_writer* w) {
  if (zt_status s = check_writer(w)) return s;
  return guard([&] { return to_status(w->impl->end_component()); });
}

zt_status zt_writer_set_file_attributes_json(zt_writer* w, const char* json) {
  if (zt_status s = check_writer(w)) return s;
  if (!json) return fail(ZT_ERR_ARGUMENT, "json is NULL");
  return guard([&] { return to_status(w->impl->set_file_attributes_json(json)); });
}

zt_status zt_writer_set_object_attributes_json(zt_writer* w, const char* json) {
  if (zt_status s = check_writer(w)) return s;
  if (!json) return fail(ZT_ERR_ARGUMENT, "json is NULL");
  return guard([&] { return to_status(w->impl->set_object_attributes_json(json)); });
}

zt_status zt_writer_set_file_attributes_cbor(zt_writer* w, const void* cbor, size_t size) {
  if (zt_status s = check_writer(w)) return s;
  if (!cbor) return fail(ZT_ERR_ARGUMENT, "cbor is NULL");
  return guard([&] {
    return to_status(
        w->impl->set_file_attributes_cbor(std::span(static_cast<const uint8_t*>(cbor), size)));
  });
}

zt_status zt_writer_set_object_attributes_cbor(zt_writer* w, const void* cbor, size_t size) {
  if (zt_status s = check_writer(w)) return s;
  if (!cbor) return fail(ZT_ERR_ARGUMENT, "cbor is NULL");
  return guard([&] {
    return to_status(
        w->impl->set_object_attributes_cbor(std::span(static_cast<const uint8_t*>(cbor), size)));
  });
}

zt_status zt_writer_finish(zt_writer* w) {
  if (zt_status s = check_writer(w)) return s;
  const zt_status st = guard([&] { return to_status(w->impl->finish()); });
  delete w;
  return st;
}

void zt_writer_abort(zt_writer* w) {
  if (!w) return;
  w->impl->abort();
  delete w;
}

}  // extern "C"
