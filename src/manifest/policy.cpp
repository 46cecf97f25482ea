// What the decoder keeps of a manifest (manifest_policy): the fields the
// model reads as nodes, attributes as their encoded bytes, the rest not at
// all, so that memory follows the model, not what the manifest holds.
#include <cstring>

#include "base/zt_limits.h"
#include "manifest/manifest.h"

namespace zt {

using cbor::Kind;

namespace {

using cbor::Decision;
using cbor::Keep;
using cbor::ValueHead;
using Path = std::span<const std::string_view>;

bool is_container(const ValueHead& h) {
  return h.kind == Kind::array || h.kind == Kind::map;
}

// A field the model reads as a scalar: a container there is refused by the
// parser, which needs only its kind.
Decision scalar_field(const ValueHead& h) {
  return is_container(h) ? Keep::encoded : Keep::nodes;
}

// A shape or a components map larger than the limits is kept encoded: the
// parser refuses it by its count without its items ever becoming nodes. An
// indefinite-length one is decoded with the limit as its cap.
Decision shape_field(const ValueHead& h) {
  if (h.kind != Kind::array) return Keep::encoded;
  if (h.indefinite) return Decision(Keep::nodes, Limits::rank);
  return h.count <= Limits::rank ? Keep::nodes : Keep::encoded;
}
Decision components_field(const ValueHead& h) {
  if (h.kind != Kind::map) return Keep::encoded;
  if (h.indefinite) return Decision(Keep::nodes, Limits::components);
  return h.count <= Limits::components ? Keep::nodes : Keep::encoded;
}

// Whether k is the string literal `name`: a size check and an equality
// test of known size, which the compiler does inline (string_view's ==
// calls memcmp: its compare() orders).
template <size_t N>
bool is(std::string_view k, const char (&name)[N]) {
  return k.size() == N - 1 && std::memcmp(k.data(), name, N - 1) == 0;
}

template <size_t... N>
bool is_one_of(std::string_view k, const char (&... names)[N]) {
  return (is(k, names) || ...);
}

// 1.x: {version, attributes, objects: {name: {shape, format, attributes,
// components: {role: {dtype, type, offset, length, uncompressed_length,
// encoding, digest}}}}}; 1.0.x the same with "tensors" and "generator".
// Asked for every map value of a manifest (some ten an object): the names
// are constants, so each comparison is a size check and an inline compare,
// not a call to memcmp (the policy was 10% of opening 20,000 objects).
template <bool kV100>
Decision policy_v1(Path path, const ValueHead& h) {
  const auto is_objects = [](std::string_view k) {
    return kV100 ? is(k, "tensors") : is(k, "objects");
  };
  const std::string_view k = path.back();
  if (path.size() == 1) {
    if (is_objects(k)) return Keep::nodes;
    if (is(k, "attributes")) return Keep::encoded;
    if (is(k, "version") || (kV100 && is(k, "generator"))) return scalar_field(h);
    return Keep::nothing;
  }
  if (!is_objects(path[0])) return Keep::nodes;
  if (path.size() == 3) {
    if (is(k, "attributes")) return Keep::encoded;
    if (is(k, "shape")) return shape_field(h);
    if (is(k, "components")) return components_field(h);
    if (is(k, "format") || (kV100 && is(k, "dtype"))) return scalar_field(h);
    return Keep::nothing;
  }
  if (path.size() == 5 && is(path[2], "components")) {
    const bool known = is_one_of(k, "offset", "length", "encoding", "digest") ||
                       (!kV100 && is_one_of(k, "dtype", "type", "uncompressed_length"));
    return known ? scalar_field(h) : Keep::nothing;
  }
  return Keep::nodes;
}

// 0.1.0: [{name, offset, size, dtype, shape, encoding, ...}]: every key
// that is not read becomes an attribute, so it is kept encoded.
Decision policy_v010(Path path, const ValueHead& h) {
  if (path.size() != 2) return Keep::nodes;
  const std::string_view k = path.back();
  if (is(k, "shape")) return shape_field(h);
  if (is_one_of(k, "name", "offset", "size", "dtype", "encoding", "checksum", "data_endianness",
                "layout", "format", "sparse_format"))
    return scalar_field(h);
  return Keep::encoded;
}

// A blob reference: an array of exactly two items is decoded, anything
// else kept encoded for the parser to refuse by its kind or count.
Decision blob_field(const ValueHead& h) {
  return h.kind == Kind::array && !h.indefinite && h.count == 2 ? Keep::nodes : Keep::encoded;
}

// v2: {shards: {name: {size, digest}}, attributes, objects: {name: {shape,
// layout, attributes, parts: {role: {dtype, type, blob, shard, encoding,
// decoded_length, digest}}}}}. Unknown keys are dropped at every level.
Decision policy_v2(Path path, const ValueHead& h) {
  const std::string_view k = path.back();
  switch (path.size()) {
    case 1:
      if (is(k, "objects") || is(k, "shards")) return Keep::nodes;
      return is(k, "attributes") ? Keep::encoded : Keep::nothing;
    case 2:
      return Keep::nodes;  // an object or a shard entry
    case 3:
      if (is(path[0], "shards"))
        return is_one_of(k, "size", "digest") ? scalar_field(h) : Keep::nothing;
      if (is(k, "attributes")) return Keep::encoded;
      if (is(k, "shape")) return shape_field(h);
      if (is(k, "parts")) return components_field(h);
      return is(k, "layout") ? scalar_field(h) : Keep::nothing;
    case 4:
      return is(path[2], "parts") ? Keep::nodes : Keep::nothing;
    case 5:
      if (is(k, "blob")) return blob_field(h);
      return is_one_of(k, "dtype", "type", "shard", "encoding", "decoded_length", "digest")
                 ? scalar_field(h)
                 : Keep::nothing;
    default:
      return Keep::nothing;
  }
}

}  // namespace

cbor::ValuePolicy manifest_policy(Generation gen) {
  switch (gen) {
    case Generation::v1_0:
      return policy_v1<true>;
    case Generation::v0_1:
      return policy_v010;
    case Generation::v2:
      return policy_v2;
    case Generation::v1:
      break;
  }
  return policy_v1<false>;
}

}  // namespace zt
