// zTensor v2 manifests (v2 spec §3, §7.1; decisions in docs/v2.md §4):
// objects parsed as the decoder completes them, like 1.x, into the same
// model. The bytes passed cbor::check_deterministic before decoding.
#include <unordered_map>

#include "base/zt_limits.h"
#include "cbor/deterministic.h"
#include "codec/byte_planes.h"
#include "codec/digest.h"
#include "codec/zstd_seekable.h"
#include "manifest/object_format.h"
#include "manifest/parser.h"

namespace zt {

namespace {

using ull = unsigned long long;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Shard names are single path components by construction (v2 spec §7.1).
bool is_shard_name(std::string_view s) {
  if (s.empty() || s.size() > 64 || s[0] == '.') return false;
  for (const char c : s) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || is_digit(c) || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// v2 digests: "<algorithm>:<lowercase hex>"; xxh3 and sha256 have their
// lengths, other algorithms are carried unchecked (decision 11).
std::optional<std::string> digest_problem_v2(std::string_view d) {
  const size_t colon = d.find(':');
  const std::string shown(d.substr(0, 120));
  if (colon == 0 || colon == std::string_view::npos || colon + 1 == d.size())
    return "malformed digest \"" + shown + "\" (want \"algorithm:lowercase hex\")";
  for (const char c : d.substr(colon + 1))
    if (!is_digit(c) && !(c >= 'a' && c <= 'f'))
      return "digest \"" + shown + "\" is not lowercase hex";
  return digest_text_problem(d);
}

}  // namespace

Result<void> Parser::check_attributes_v2(const ItemName& what, uint32_t map, Attributes& out) {
  ZT_FAIL_IF(!is_any_map(map), invalid, "%s: \"attributes\" is not a map", what.c_str());
  out = attributes_of(map);
  return cbor::for_each_entry(
      out.encoded, [&](std::string_view key, std::span<const uint8_t> value) -> Result<void> {
        ZT_TRY(check_name(std::string(what.c_str()) + ": attribute", key));
        auto plain = cbor::check_plain_values(value);
        ZT_FAIL_IF(!plain, invalid,
                   "%s: attribute \"%s\": %s (v2 attributes hold no tags, "
                   "undefined or simple values)",
                   what.c_str(), std::string(key.substr(0, 100)).c_str(),
                   plain.error().message.c_str());
        return {};
      });
}

Result<Component> Parser::parse_part_v2(std::string_view obj, std::string_view role, uint32_t pd,
                                        PendingShard at) {
  const ItemName w("object", obj, role);
  ZT_FAIL_IF(!is_map(pd), invalid, "%s is not a map", w.c_str());
  Component c;
  c.role = std::string(role);
  static constexpr std::array<std::string_view, 7> kFields = {
      "dtype", "type", "blob", "shard", "encoding", "decoded_length", "digest"};
  const auto [dt, ty, blob, sh, enc, dl, dg] = fields(pd, kFields);
  ZT_FAIL_IF(!is_text(dt), invalid, "%s: \"dtype\" is missing or not a string", w.c_str());
  const auto d = dtype_from_name(node(dt).str);
  ZT_FAIL_IF(!d || *d == DType::boolean, invalid,
             "%s: dtype \"%s\" is not one of the 12 storage types (bool is a type over u8)",
             w.c_str(), std::string(node(dt).str.substr(0, 100)).c_str());
  c.dtype = *d;
  if (ty) {
    ZT_FAIL_IF(!is_text(ty), invalid, "%s: \"type\" is not a string", w.c_str());
    ZT_TRY(check_c_text(w, "type", ty));
    c.type = std::string(node(ty).str);
    c.known_type = find_logical_type(*c.type, true);
    ZT_FAIL_IF(c.known_type && c.known_type->storage != c.dtype, invalid,
               "%s: type \"%s\" needs dtype \"%s\", not \"%s\"", w.c_str(), c.type->c_str(),
               std::string(dtype_name(c.known_type->storage)).c_str(),
               std::string(dtype_name(c.dtype)).c_str());
  }
  ZT_FAIL_IF(!blob || kind_of(blob) != Kind::array, invalid,
             "%s: \"blob\" is missing or not an array", w.c_str());
  ZT_FAIL_IF(node(blob).kind != Kind::array, invalid,
             "%s: \"blob\" must hold exactly two elements, [offset, length]", w.c_str());
  const uint32_t off = Document::first_child(blob);
  const uint32_t len = doc_->next(off);
  ZT_FAIL_IF(!is_uint(off) || !is_uint(len), invalid,
             "%s: \"blob\" elements are not unsigned integers", w.c_str());
  c.offset = node(off).u;
  c.length = node(len).u;
  if (sh) {
    ZT_FAIL_IF(!is_text(sh), invalid, "%s: \"shard\" is not a string", w.c_str());
    at.name = std::string(node(sh).str);
    pending_shards_.push_back(std::move(at));
  }
  ZT_FAIL_IF(!enc != !dl, invalid, "%s: \"decoded_length\" must be present iff \"encoding\" is",
             w.c_str());
  if (enc) {
    ZT_FAIL_IF(!is_text(enc), invalid, "%s: \"encoding\" is not a string", w.c_str());
    const std::string_view id = node(enc).str;
    ZT_FAIL_IF(!is_v2_profile_id(id), invalid,
               "%s: encoding \"%s\" is not a profile id (\"<namespace>.<name>/<version>\")",
               w.c_str(), std::string(id.substr(0, 100)).c_str());
    c.encoding_id = std::string(id);
    c.encoding = id == kSeekableEncodingId     ? Encoding::zstd
                 : id == kBytePlanesEncodingId ? Encoding::byte_planes
                                               : Encoding::unknown;
    c.encoding_text = c.encoding == Encoding::zstd ? std::string("zstd") : *c.encoding_id;
    ZT_FAIL_IF(!is_uint(dl), invalid, "%s: \"decoded_length\" is not an unsigned integer",
               w.c_str());
    c.uncompressed_length = node(dl).u;
  }
  if (dg) {
    ZT_FAIL_IF(!is_text(dg), invalid, "%s: \"digest\" is not a string", w.c_str());
    c.digest = std::string(node(dg).str);
    const auto problem = digest_problem_v2(*c.digest);
    ZT_FAIL_IF(problem, invalid, "%s: %s", w.c_str(), problem->c_str());
  }
  return c;
}

Result<void> Parser::parse_object_v2(std::string_view name, uint32_t od) {
  ZT_TRY(check_name("object", name));
  const ItemName what("object", name);
  Object o;
  ZT_TRY(parse_object_shape(what, name, od, o));
  ZT_FAIL_IF(!shape_product(o.shape), invalid, "%s: the product of shape %s overflows 64 bits",
             what.c_str(), shape_text(o.shape).c_str());
  const uint32_t lay = get(od, "layout");
  ZT_FAIL_IF(!is_text(lay), invalid, "%s: \"layout\" is missing or not a string", what.c_str());
  o.layout = std::string(node(lay).str);
  ZT_FAIL_IF(o.layout != "dense" && !is_v2_profile_id(o.layout), invalid,
             "%s: layout \"%s\" is neither \"dense\" nor a profile id "
             "(\"<namespace>.<name>/<version>\")",
             what.c_str(), o.layout.substr(0, 100).c_str());
  o.format = presented_format(o.layout);
  if (const uint32_t at = get(od, "attributes"))
    ZT_TRY(check_attributes_v2(what, at, o.attributes));
  const uint32_t parts = get(od, "parts");
  ZT_FAIL_IF(!is_any_map(parts), invalid, "%s: \"parts\" is missing or not a map", what.c_str());
  ZT_TRY(check_components_count(what, parts));
  ZT_FAIL_IF(node(parts).count == 0, invalid, "%s: \"parts\" is empty (v2 spec §3.3)",
             what.c_str());
  o.components.reserve(node(parts).count);
  ZT_TRY(for_each_entry(parts, [&](std::string_view role, uint32_t pd) -> Result<void> {
    ZT_TRY(check_name("part", role));
    auto c =
        parse_part_v2(o.name, role, pd, PendingShard{m_.objects.size(), o.components.size(), {}});
    ZT_TRY(c);
    o.components.push_back(std::move(*c));
    return {};
  }));
  return add_object(std::move(o));
}

Result<void> Parser::parse_shards_v2(uint32_t table) {
  ZT_FAIL_IF(!is_map(table), invalid, "manifest \"shards\" is not a map");
  ZT_FAIL_IF(node(table).count > Limits::objects, limit, "%u shards, more than the limit %llu",
             node(table).count, static_cast<ull>(Limits::objects));
  m_.shards.reserve(node(table).count);
  return for_each_entry(table, [&](std::string_view name, uint32_t entry) -> Result<void> {
    const std::string shown = printable(name.substr(0, 100));  // a NUL must not cut it
    ZT_FAIL_IF(!is_shard_name(name), invalid,
               "shard \"%s\": a shard name is 1 to 64 of A-Z a-z 0-9 . _ - and does not begin "
               "with \".\"",
               shown.c_str());
    ZT_FAIL_IF(!is_map(entry), invalid, "shard \"%s\" is not a map", shown.c_str());
    Shard s;
    s.name = std::string(name);
    const uint32_t size = get(entry, "size"), dg = get(entry, "digest");
    ZT_FAIL_IF(!is_uint(size), invalid,
               "shard \"%s\": \"size\" is missing or not an unsigned integer", shown.c_str());
    s.size = node(size).u;
    ZT_FAIL_IF(s.size < 48, invalid,
               "shard \"%s\": size %llu is smaller than any zTensor v2 file (48 bytes)",
               shown.c_str(), static_cast<ull>(s.size));
    ZT_FAIL_IF(!is_text(dg), invalid, "shard \"%s\": \"digest\" is missing or not a string",
               shown.c_str());
    s.digest = std::string(node(dg).str);
    const auto problem = digest_problem_v2(s.digest);
    ZT_FAIL_IF(problem, invalid, "shard \"%s\": %s", shown.c_str(), problem->c_str());
    const DigestAlgo algo = digest_algo_from_name(s.digest.substr(0, s.digest.find(':')));
    ZT_FAIL_IF(algo != DigestAlgo::xxh3 && algo != DigestAlgo::sha256, invalid,
               "shard \"%s\": its digest must be xxh3 or sha256 (v2 spec §7.1), not \"%s\"",
               shown.c_str(), s.digest.substr(0, 100).c_str());
    m_.shards.push_back(std::move(s));
    return {};
  });
}

// Part shard names, collected while objects streamed in, become indexes
// into the table ("shards" sorts before "objects", but the table is read
// from the finished document).
Result<void> Parser::resolve_shards_v2() {
  if (pending_shards_.empty()) return {};
  std::unordered_map<std::string_view, uint32_t> index;
  for (uint32_t i = 0; i < m_.shards.size(); ++i) index.emplace(m_.shards[i].name, i);
  for (const PendingShard& p : pending_shards_) {
    const Object& o = m_.objects[p.object];
    Component& c = m_.objects[p.object].components[p.component];
    const auto it = index.find(p.name);
    ZT_FAIL_IF(it == index.end(), invalid, "%s: shard \"%s\" is not in the manifest's shard table",
               component_where(o, c).c_str(), printable(p.name.substr(0, 100)).c_str());
    c.shard = it->second;
  }
  pending_shards_.clear();
  return {};
}

Result<uint32_t> Parser::parse_v2_header() {
  const uint32_t root = 0;
  ZT_FAIL_IF(node(root).kind != Kind::map, invalid, "manifest is not a CBOR map");
  m_.version.assign(1, '2');  // the footer's version: v2 manifests carry none
  m_.digests_cover_decoded = true;
  const uint32_t objs = get(root, "objects");
  ZT_FAIL_IF(!objs, invalid, "manifest has no \"objects\"");
  ZT_FAIL_IF(!is_map(objs), invalid, "manifest \"objects\" is not a map");
  if (const uint32_t at = get(root, "attributes"))
    ZT_TRY(check_attributes_v2("file", at, m_.attributes));
  if (const uint32_t sh = get(root, "shards")) ZT_TRY(parse_shards_v2(sh));
  ZT_FAIL_IF(node(objs).count > Limits::objects, limit, "%u objects, more than the limit %llu",
             node(objs).count, static_cast<ull>(Limits::objects));
  return objs;
}

Result<void> Parser::parse_v2() {
  const auto objs = parse_v2_header();
  ZT_TRY(objs);
  m_.objects.reserve(node(*objs).count);
  m_.by_name.reserve(node(*objs).count);
  ZT_TRY(for_each_entry(
      *objs, [&](std::string_view name, uint32_t od) { return parse_object_v2(name, od); }));
  return resolve_shards_v2();
}

}  // namespace zt
