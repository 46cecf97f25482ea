// Shared by the C ABI's translation units: handles, the thread-local error
// message, and the exception barrier.
#pragma once

#include <cstddef>
#include <cstring>
#include <exception>
#include <type_traits>
#include <memory>
#include <new>
#include <string>

#include "error.h"
#include "reader.h"
#include "writer.h"
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

// The exception barrier: nothing thrown by the core (bad_alloc, a library's
// exception) gets past a C call.
template <typename F>
zt_status guard(F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return fail(ZT_ERR_NOMEM, "out of memory");
  } catch (const std::exception& e) {
    set_message(std::string("internal error: ") + e.what());
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

inline zt_status to_status(const Result<void>& r) { return r ? ZT_OK : set_error(r.error()); }

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
