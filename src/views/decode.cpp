// One decode of any object into a dense row-major array, whole or a chunk
// at a time: each format's descriptor says how.
#include <vector>

#include "manifest/object_format.h"
#include "views/kernels.h"

namespace zt {

using namespace zt::views;

template <typename T>
Result<uint64_t> decode_object_as(const Reader& r, size_t object, std::span<T> dst) {
  const Object& o = r.manifest().objects[object];
  auto n = decode_capacity(r, object, sizeof(T));
  ZT_TRY(n);
  ZT_TRY(fits(object_where(o), *n, dst));
  ZT_TRY(format_of(o)->decoder<T>().whole(r, object, dst.first(*n)));
  return *n;
}

template <typename T>
Result<uint64_t> decode_object_chunked(const Reader& r, size_t object, uint64_t chunk_values,
                                       const ValueSink<T>& sink) {
  const Object& o = r.manifest().objects[object];
  auto n = decoded_value_count(r, object);
  ZT_TRY(n);
  if (*n == 0) return uint64_t{0};
  if (*n <= chunk_values || o.shape.empty()) {  // one chunk (a rank-0 object has one value)
    std::vector<T> all(*n);
    ZT_TRY(decode_object_as(r, object, std::span<T>(all)));
    ZT_TRY(sink(all));
    return *n;
  }
  ZT_TRY(format_of(o)->decoder<T>().chunks(r, object, *n, chunk_values, sink));
  return *n;
}

template Result<uint64_t> decode_object_as<float>(const Reader&, size_t, std::span<float>);
template Result<uint64_t> decode_object_as<double>(const Reader&, size_t, std::span<double>);
template Result<uint64_t> decode_object_chunked<float>(const Reader&, size_t, uint64_t,
                                                       const ValueSink<float>&);
template Result<uint64_t> decode_object_chunked<double>(const Reader&, size_t, uint64_t,
                                                        const ValueSink<double>&);

}  // namespace zt
