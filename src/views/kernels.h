// Element access and loops that the view files share: loading
// little-endian elements at any alignment, dispatching on an integer
// dtype's C++ type, converting a whole component, checking a destination's
// size. Internal to src/views and the format descriptors.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "base/byte_order.h"
#include "views/views.h"

namespace zt::views {

// Calls f(I{}) with I the C++ type of an integer dtype.
template <typename F>
void with_index_type(DType d, F&& f) {
  switch (d) {
    case DType::u8:
      return f(uint8_t{});
    case DType::u16:
      return f(uint16_t{});
    case DType::u32:
      return f(uint32_t{});
    case DType::u64:
      return f(uint64_t{});
    case DType::i8:
      return f(int8_t{});
    case DType::i16:
      return f(int16_t{});
    case DType::i32:
      return f(int32_t{});
    case DType::i64:
      return f(int64_t{});
    default:
      return;  // views are built only over integer index components
  }
}

// Calls f(W{}) with W the unsigned integer type of `width` bytes.
template <typename F>
void with_word_type(unsigned width, F&& f) {
  switch (width) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    default:
      return f(uint64_t{});
  }
}

// Unsigned bit pattern of word i of an integer component.
inline uint64_t word_at(std::span<const uint8_t> bytes, unsigned width, uint64_t i) {
  const uint8_t* p = bytes.data() + i * width;
  switch (width) {
    case 1:
      return *p;
    case 2:
      return load_unaligned<uint16_t>(p);
    case 4:
      return load_unaligned<uint32_t>(p);
    default:
      return load_unaligned<uint64_t>(p);
  }
}

// The first n values of a component (n storage elements; f4_e2m1: n
// nibbles), which the caller has checked it holds.
template <typename T>
std::vector<T> converted(const ComponentView& v, const NumericFormat& f, uint64_t n) {
  std::vector<T> out(n);
  convert_values(v.bytes.data(), f, n, out.data());
  return out;
}

inline size_t index_of(const Object& o, const Component* c) {
  return static_cast<size_t>(c - o.components.data());
}

template <typename T>
constexpr DType kNativeDType = std::is_same_v<T, float> ? DType::f32 : DType::f64;

template <typename T>
Result<void> fits(const std::string& what, uint64_t n, std::span<T> dst) {
  ZT_FAIL_IF(n > dst.size(), argument, "%s: %llu values do not fit in a buffer of %zu",
             what.c_str(), static_cast<unsigned long long>(n), dst.size());
  return {};
}

// A component through the reader's map (zero-copy or cached), checked to
// hold whole elements.
Result<ComponentView> view_of(const Reader& r, size_t object, const Component& c);
// The numeric format of a component that must hold real scalars
// (Status::unsupported for complex ones).
Result<NumericFormat> scalar_format(const Object& o, const Component& c);
// Runs the content rules of zt_verify over the components already mapped.
Result<void> check_structure(const Reader& r, const Object& o,
                             std::initializer_list<const ComponentView*> views);

// The object, if it can be interpreted and has format f; Status::argument
// naming both formats (and `hint`) if not.
Result<const Object*> object_of_format(const Reader& r, size_t object, const ObjectFormat& f,
                                       const char* hint);

}  // namespace zt::views
