// Shared by the C ABI's translation units: handles, the thread-local error
// message, the exception barrier and the lookup of components.
#pragma once

#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <type_traits>

#include "base/error.h"
#include "read/reader.h"
#include "write/writer.h"
#include "ztensor.h"

struct zt_reader {
  std::unique_ptr<zt::Reader> impl;
};

struct zt_writer {
  std::unique_ptr<zt::Writer> impl;
};

namespace zt::capi {

zt_status set_error(const Error& e);
zt_status fail(zt_status s, const char* msg);
void set_message(std::string msg);
// Component `role` of `object` as *k (its index), or the error set.
zt_status locate(const zt_reader* r, size_t object, const char* role, size_t* k);

// The exception barrier: nothing thrown by the core (bad_alloc, a library's
// exception) gets past a C call.
template <typename F>
zt_status guard(F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return fail(ZT_ERR_NOMEM, "out of memory");
  } catch (const std::exception& e) {
    try {
      set_message(std::string("internal error: ") + e.what());
    } catch (...) {  // no memory for the text: a short one (no allocation)
      return fail(ZT_ERR_INVALID, "internal error");
    }
    return ZT_ERR_INVALID;
  } catch (...) {
    return fail(ZT_ERR_INVALID, "internal error");
  }
}

template <typename T, typename F>
T guard_value(T fallback, F&& f) noexcept {
  try {
    return f();
  } catch (...) {
    return fallback;
  }
}

// zt_open_options in the core's terms (NULL: the defaults); the argument
// errors zt_open_ex and zt_open_source report for a bad struct.
Result<OpenOptions> open_options_from(const zt_open_options* opt);

inline zt_status to_status(const Result<void>& r) { return r ? ZT_OK : set_error(r.error()); }

// An array of frozen-layout structs (zt_decode_request, zt_decode_range,
// zt_dense_item): ZT_ERR_ARGUMENT naming the first element whose
// struct_size is not this library's ("<what>[i].struct_size N ..."), before
// any element is acted on; ZT_OK otherwise.
template <class Item>
zt_status check_struct_sizes(const Item* items, size_t count, const char* what) {
  for (size_t i = 0; i < count; ++i)
    if (items[i].struct_size != sizeof(Item))
      return set_error(make_error(Status::argument,
                                  "%s[%zu].struct_size %u is not one this library knows", what, i,
                                  items[i].struct_size));
  return ZT_OK;
}

// What every zt_open_* call ends with: the reader handed to the caller in
// *out, or the error set.
inline zt_status hand_out(Result<std::unique_ptr<Reader>> r, zt_reader** out) {
  if (!r) return set_error(r.error());
  *out = new zt_reader{std::move(*r)};
  return ZT_OK;
}

// The one lookup of a component by (object index, role) behind every call
// that names one, with the statuses and messages the header promises. The
// failures come back as Errors: a caller that returns zt_status makes one
// the thread's message (to_status, set_error); zt_decode_many keeps one per
// request.

// The reader and the object index.
inline Result<void> check_object(const zt_reader* r, size_t object) {
  if (!r) return make_error(Status::argument, "reader is NULL");
  const size_t n = r->impl->manifest().objects.size();
  if (object >= n)
    return make_error(Status::not_found,
                      "object index %zu is out of range (the file has %zu objects)", object, n);
  return {};
}

// The index of component `role` in object `object`. A NULL reader is named
// first, then a NULL role, then a bad object index: argument checks come
// before lookups.
inline Result<size_t> find_component(const zt_reader* r, size_t object, const char* role) {
  if (r && !role) return make_error(Status::argument, "role is NULL");
  if (const Result<void> c = check_object(r, object); !c) return c.error();
  const Object& o = r->impl->manifest().objects[object];
  for (size_t k = 0; k < o.components.size(); ++k)
    if (o.components[k].role == role) return k;
  return make_error(Status::not_found, "object \"%s\" has no component \"%s\"", o.name.c_str(),
                    role);
}

// *_init_sized: writes `defaults` into the caller's struct, but no more than
// the `size` bytes the caller's header says it has, and records that size.
template <typename T>
void init_sized(T* p, size_t size, T defaults) {
  if (!p || size < sizeof(uint32_t)) return;
  const size_t n = size < sizeof(T) ? size : sizeof(T);
  defaults.struct_size = static_cast<uint32_t>(n);
  std::memcpy(static_cast<void*>(p), &defaults, n);
}

// Whether a caller's struct of `struct_size` bytes holds the field at
// [offset, offset + width).
inline bool has_field(uint32_t struct_size, size_t offset, size_t width) { return struct_size >= offset + width; }
#define ZT_HAS_FIELD(ptr, field) \
  ::zt::capi::has_field((ptr)->struct_size, offsetof(std::remove_pointer_t<decltype(ptr)>, field), sizeof((ptr)->field))

}  // namespace zt::capi
