#include "cbor_floor.h"

#include <cbor.h>

#include "bench_util.h"

namespace ztb {
namespace {

uint64_t text_value(const unsigned char* h, size_t n) {
  return n + (n ? h[0] : 0);
}

uint64_t walk(const cbor_item_t* it) {
  switch (cbor_typeof(it)) {
    case CBOR_TYPE_UINT:
    case CBOR_TYPE_NEGINT:
      return cbor_get_int(it);
    case CBOR_TYPE_BYTESTRING:
      if (cbor_bytestring_is_indefinite(it)) return 1;
      return text_value(cbor_bytestring_handle(it), cbor_bytestring_length(it));
    case CBOR_TYPE_STRING:
      if (cbor_string_is_indefinite(it)) return 1;
      return text_value(cbor_string_handle(it), cbor_string_length(it));
    case CBOR_TYPE_ARRAY: {
      uint64_t acc = 0;
      cbor_item_t** items = cbor_array_handle(it);
      for (size_t i = 0, n = cbor_array_size(it); i < n; ++i) acc += walk(items[i]);
      return acc;
    }
    case CBOR_TYPE_MAP: {
      uint64_t acc = 0;
      const cbor_pair* pairs = cbor_map_handle(it);
      for (size_t i = 0, n = cbor_map_size(it); i < n; ++i)
        acc += walk(pairs[i].key) + walk(pairs[i].value);
      return acc;
    }
    default:
      return 1;
  }
}

}  // namespace

uint64_t cbor_load_walk(const std::string& path) {
  const std::vector<uint8_t> m = read_manifest(path);
  cbor_load_result res;
  cbor_item_t* root = cbor_load(m.data(), m.size(), &res);
  if (!root) die("cbor_load failed");
  const uint64_t acc = walk(root);
  cbor_decref(&root);
  return acc;
}

}  // namespace ztb
