// 1.0.x manifests upgraded to the model: tensors become objects, the
// generator a file attribute, index components u64.
#include "base/zt_limits.h"
#include "cbor/cbor_encode.h"
#include "codec/digest.h"
#include "manifest/object_format.h"
#include "manifest/parser.h"

namespace zt {

// 1.0.x: {version: "1.0", generator, attributes, tensors: {name: {dtype, shape,
// format, components: {role: {offset, length, encoding?, digest?}}}}}.
Result<void> Parser::parse_tensor_v100(std::string_view name, uint32_t td) {
  ZT_TRY(check_name("tensor", name));
  const ItemName what("tensor", name);
  Object o;
  ZT_TRY(parse_object_head(what, name, td, o));
  const ObjectFormat* format = format_of(o);
  const uint32_t dt = get(td, "dtype");
  ZT_FAIL_IF(!is_text(dt), invalid, "%s: \"dtype\" is missing or not a string", what.c_str());
  const auto dtype = dtype_from_legacy_name(node(dt).str);
  ZT_FAIL_IF(!dtype, unsupported, "%s: unknown dtype \"%s\"", what.c_str(),
             std::string(node(dt).str).c_str());
  const uint32_t comps = get(td, "components");
  ZT_FAIL_IF(!is_any_map(comps), invalid, "%s: \"components\" is missing or not a map",
             what.c_str());
  ZT_TRY(check_components_count(what, comps));
  ZT_TRY(for_each_entry(comps, [&](std::string_view role, uint32_t cd) -> Result<void> {
    ZT_TRY(check_name("component", role));
    const ItemName w("object", o.name, role);
    ZT_FAIL_IF(!is_map(cd), invalid, "%s is not a map", w.c_str());
    Component c;
    c.role = std::string(role);
    for (const char* key : {"offset", "length"})
      ZT_FAIL_IF(!is_uint(get(cd, key)), invalid,
                 "%s: \"%s\" is missing or not an unsigned integer", w.c_str(), key);
    c.offset = node(get(cd, "offset")).u;
    c.length = node(get(cd, "length")).u;
    const bool index_role = format && is_index_role(*format, role);
    c.dtype = index_role ? DType::u64 : *dtype;
    ZT_TRY(set_encoding(c, w, get(cd, "encoding")));
    const uint32_t dg = get(cd, "digest");
    if (!is_null_or_absent(dg)) {
      ZT_FAIL_IF(!is_text(dg), invalid, "%s: \"digest\" is not a string", w.c_str());
      c.digest = normalize_legacy_checksum(node(dg).str);
      const auto problem = digest_text_problem(*c.digest);
      ZT_FAIL_IF(problem, invalid, "%s: %s", w.c_str(), problem->c_str());
    }
    // 1.0.x has no uncompressed_length: shown as the size the shape implies.
    if (c.encoding == Encoding::zstd && format && format->sized_by_shape) {
      const auto n = shape_product(o.shape);
      const auto bytes = n ? checked_mul(*n, c.width()) : std::nullopt;
      if (bytes) c.uncompressed_length = *bytes;
    }
    o.components.push_back(std::move(c));
    return {};
  }));
  return add_object(std::move(o));
}

// A 1.0.x "generator" is shown as a file attribute, unless one has that name.
Result<void> Parser::add_generator(std::string_view generator) {
  CborWriter w;
  if (!m_.attributes.present) {
    w.map(1);
  } else {
    auto has = cbor::find_entry(m_.attributes.encoded, "generator");
    ZT_TRY(has);
    if (*has) return {};
    auto n = cbor::container_count(m_.attributes.encoded);
    ZT_TRY(n);
    w.map(*n + 1);
    ZT_TRY(cbor::for_each_entry(
        m_.attributes.encoded, [&](std::string_view k, std::span<const uint8_t> v) -> Result<void> {
          w.text(k);
          w.raw(v);
          return {};
        }));
  }
  w.text("generator");
  w.text(generator);
  m_.attributes = made_attributes(w.take());
  return {};
}

Result<void> Parser::parse_v100() {
  const uint32_t root = 0;
  const uint32_t ver = get(root, "version");
  ZT_FAIL_IF(!ver, invalid, "1.0.x manifest has no \"version\"");
  ZT_FAIL_IF(!is_text(ver), invalid, "manifest \"version\" is not a text string");
  ZT_TRY(check_c_text("manifest", "version", ver));
  m_.version = std::string(node(ver).str);
  const auto v = parse_version(m_.version, true);
  ZT_FAIL_IF(!v, invalid, "cannot parse version \"%s\"", m_.version.c_str());
  ZT_FAIL_IF(v->major != 1, unsupported, "unsupported major version in \"%s\"", m_.version.c_str());
  const uint32_t tensors = get(root, "tensors");
  ZT_FAIL_IF(!is_map(tensors), invalid, "manifest \"tensors\" is not a map");
  const uint32_t at = get(root, "attributes");
  if (at) {
    ZT_FAIL_IF(!is_any_map(at), invalid, "file \"attributes\" is not a map");
    m_.attributes = attributes_of(at);
  }
  const uint32_t gen = get(root, "generator");
  if (gen) {
    ZT_FAIL_IF(!is_text(gen), invalid, "manifest \"generator\" is not a text string");
    ZT_TRY(add_generator(node(gen).str));
  }
  ZT_FAIL_IF(node(tensors).count > Limits::objects, limit, "too many tensors");
  m_.objects.reserve(node(tensors).count);
  return for_each_entry(
      tensors, [&](std::string_view name, uint32_t td) { return parse_tensor_v100(name, td); });
}

}  // namespace zt
