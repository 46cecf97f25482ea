// 1.1.x, 1.2.x and later 1.x manifests: objects parsed as the decoder
// completes them, so the CBOR of the whole manifest never exists at once.
// The streaming frame (run_streaming) serves v2 too (parse_v2.cpp).
#include "base/zt_limits.h"
#include "codec/digest.h"
#include "manifest/object_format.h"
#include "manifest/parser.h"

namespace zt {

Result<void> Parser::parse_component_v1(std::string_view obj, std::string_view role, uint32_t cd,
                                        Component& c) {
  const ItemName w("object", obj, role);
  ZT_FAIL_IF(!is_map(cd), invalid, "%s is not a map", w.c_str());
  c.role = std::string(role);
  static constexpr std::array<std::string_view, 7> kFields = {
      "dtype", "offset", "length", "digest", "type", "encoding", "uncompressed_length"};
  const auto [dt, off, len, dg, ty, enc, ucl] = fields(cd, kFields);
  for (const auto& [key, at] : {std::pair{"dtype", dt}, {"offset", off}, {"length", len}})
    ZT_FAIL_IF(!at, invalid, "%s: required field \"%s\" is missing", w.c_str(), key);
  ZT_FAIL_IF(!is_uint(off), invalid, "%s: \"offset\" is not an unsigned integer", w.c_str());
  ZT_FAIL_IF(!is_uint(len), invalid, "%s: \"length\" is not an unsigned integer", w.c_str());
  ZT_FAIL_IF(!is_text(dt), invalid, "%s: \"dtype\" is not a string", w.c_str());
  c.offset = node(off).u;
  c.length = node(len).u;
  const std::string_view dts = node(dt).str;
  const auto upgraded = m_.v11 ? v11_dtype_upgrade(dts) : std::nullopt;
  if (upgraded) {
    c.dtype = upgraded->storage;
    c.type = std::string(upgraded->type);
  } else {
    const auto d = dtype_from_name(dts);
    ZT_FAIL_IF(!d, unsupported, "%s: unknown dtype \"%s\"", w.c_str(), std::string(dts).c_str());
    c.dtype = *d;
  }
  if (!c.type && !is_null_or_absent(ty)) {
    ZT_FAIL_IF(!is_text(ty), invalid, "%s: \"type\" is not a string", w.c_str());
    ZT_TRY(check_c_text(w, "type", ty));
    c.type = std::string(node(ty).str);
  }
  if (c.type) {
    c.known_type = find_logical_type(*c.type);
    ZT_FAIL_IF(c.known_type && c.known_type->storage != c.dtype, invalid,
               "%s: type \"%s\" needs dtype \"%s\", not \"%s\"", w.c_str(), c.type->c_str(),
               std::string(dtype_name(c.known_type->storage)).c_str(),
               std::string(dtype_name(c.dtype)).c_str());
  }
  ZT_TRY(set_encoding(c, w, enc));
  if (!is_null_or_absent(ucl)) {
    ZT_FAIL_IF(!is_uint(ucl), invalid, "%s: \"uncompressed_length\" is not an unsigned integer",
               w.c_str());
    c.uncompressed_length = node(ucl).u;
  }
  ZT_FAIL_IF(c.encoding == Encoding::zstd && !c.uncompressed_length && !m_.v11, invalid,
             "%s: encoding \"zstd\" requires \"uncompressed_length\"", w.c_str());
  if (!is_null_or_absent(dg)) {
    ZT_FAIL_IF(!is_text(dg), invalid, "%s: \"digest\" is not a string", w.c_str());
    c.digest = std::string(node(dg).str);
    const auto problem = digest_text_problem(*c.digest);
    ZT_FAIL_IF(problem, invalid, "%s: %s", w.c_str(), problem->c_str());
  }
  return {};
}

Result<void> Parser::parse_object_v1(std::string_view name, uint32_t od) {
  ZT_TRY(check_name("object", name));
  const ItemName what("object", name);
  Object o;
  ZT_TRY(parse_object_head(what, name, od, o));
  const uint32_t at = get(od, "attributes");
  if (at) {
    ZT_FAIL_IF(!is_any_map(at), invalid, "%s: \"attributes\" is not a map", what.c_str());
    o.attributes = attributes_of(at);
  }
  const uint32_t comps = get(od, "components");
  ZT_FAIL_IF(!is_any_map(comps), invalid, "%s: \"components\" is missing or not a map",
             what.c_str());
  ZT_TRY(check_components_count(what, comps));
  o.components.reserve(node(comps).count);
  ZT_TRY(for_each_entry(comps, [&](std::string_view role, uint32_t cd) -> Result<void> {
    ZT_TRY(check_name("component", role));
    return parse_component_v1(o.name, role, cd, o.components.emplace_back());
  }));
  return add_object(std::move(o));
}

// Everything of a 1.x manifest but its objects; returns the objects map.
Result<uint32_t> Parser::parse_v1_header() {
  const uint32_t root = 0;
  ZT_FAIL_IF(node(root).kind != Kind::map, invalid, "manifest is not a CBOR map");
  const uint32_t ver = get(root, "version");
  ZT_FAIL_IF(!ver, invalid, "manifest has no \"version\"");
  ZT_FAIL_IF(!is_text(ver), invalid, "manifest \"version\" is not a text string");
  ZT_TRY(check_c_text("manifest", "version", ver));
  m_.version = std::string(node(ver).str);
  const auto v = parse_version(m_.version, false);
  ZT_FAIL_IF(!v, invalid, "cannot parse version \"%s\"", m_.version.c_str());
  ZT_FAIL_IF(v->major != 1, unsupported,
             "unsupported major version in \"%s\" (this reader reads 1.x)", m_.version.c_str());
  m_.v11 = v->minor < 2;
  const uint32_t objs = get(root, "objects");
  ZT_FAIL_IF(!objs, invalid, "manifest has no \"objects\"");
  ZT_FAIL_IF(!is_map(objs), invalid, "manifest \"objects\" is not a map");
  const uint32_t at = get(root, "attributes");
  if (at) {
    ZT_FAIL_IF(!is_any_map(at), invalid, "file \"attributes\" is not a map");
    m_.attributes = attributes_of(at);
  }
  ZT_FAIL_IF(node(objs).count > Limits::objects, limit, "%u objects, more than the limit %llu",
             node(objs).count, static_cast<unsigned long long>(Limits::objects));
  return objs;
}

Result<void> Parser::parse_v1() {
  const auto objs = parse_v1_header();
  ZT_TRY(objs);
  m_.objects.reserve(node(*objs).count);
  m_.by_name.reserve(node(*objs).count);
  return for_each_entry(
      *objs, [&](std::string_view name, uint32_t od) { return parse_object_v1(name, od); });
}

// Called by the decoder with each completed entry of "objects". Parsed as
// 1.2 (the version may come later in the map: "objects" sorts before
// "version"); what 1.1 reads differently fails here (an old dtype name, a
// zstd length left out), so a 1.1 file is parsed again whole if anything
// failed. Objects keep no node indexes (attributes are their bytes): their
// nodes go.
bool Parser::take_streamed_object(const Document& d, uint32_t map, uint32_t key, uint32_t value) {
  if (streamed_error_) return false;
  doc_ = &d;
  if (!streaming_started_) {
    streaming_started_ = true;
    // The header check refuses the count later, with the same message.
    if (node(map).count > Limits::objects) {
      streamed_error_ =
          make_error(Status::limit, "%u objects, more than the limit %llu", node(map).count,
                     static_cast<unsigned long long>(Limits::objects));
      return false;
    }
    m_.objects.reserve(node(map).count);
    m_.by_name.reserve(node(map).count);
  }
  auto r = parse_object(node(key).str, value);
  if (!r) {
    streamed_error_ = std::move(r).error();
    return false;
  }
  return true;
}

Result<uint32_t> Parser::parse_header() {
  return m_.generation == Generation::v2 ? parse_v2_header() : parse_v1_header();
}

Result<void> Parser::parse_object(std::string_view name, uint32_t od) {
  return m_.generation == Generation::v2 ? parse_object_v2(name, od) : parse_object_v1(name, od);
}

Result<Manifest> Parser::run_streaming(std::span<const uint8_t> bytes) {
  const cbor::EntrySink sink{"objects",
                             [this](const Document& d, uint32_t map, uint32_t key, uint32_t value) {
                               return take_streamed_object(d, map, key, value);
                             }};
  auto doc = cbor::decode(bytes, &sink, manifest_policy(m_.generation));
  ZT_TRY(doc);
  held_doc_ = std::move(*doc);
  doc_ = &held_doc_;
  m_.decoded_nodes = held_doc_.size();
  ZT_TRY(parse_header());
  if (m_.generation == Generation::v2) ZT_TRY(resolve_shards_v2());
  if (streamed_error_) {
    if (!m_.v11) return std::move(*streamed_error_);
    auto whole = cbor::decode(bytes, nullptr, manifest_policy(m_.generation));
    ZT_TRY(whole);
    return Parser(m_.generation, std::move(*whole)).run();
  }
  return std::move(m_);
}

}  // namespace zt
