#include "manifest/manifest.h"

#include <charconv>
#include <cstring>

#include "base/zt_limits.h"
#include "cbor/cbor_encode.h"
#include "cbor/cbor_item.h"
#include "formats/object_format.h"

namespace zt {

using cbor::Document;
using cbor::Kind;

const Component* Object::find(std::string_view role) const {
  for (const auto& c : components)
    if (c.role == role) return &c;
  return nullptr;
}

std::optional<size_t> Manifest::find(std::string_view name) const {
  return by_name.find(name, objects);
}

void NameIndex::rehash(size_t capacity, const std::vector<Object>& objects) {
  std::vector<uint32_t> old = std::move(table_);
  table_.assign(capacity, 0);
  used_ = 0;
  for (const uint32_t slot : old)
    if (slot) insert(slot - 1, objects);
}

void NameIndex::reserve(size_t n, const std::vector<Object>& objects) {
  size_t capacity = 16;
  while (capacity < 2 * n) capacity *= 2;
  if (capacity > table_.size()) rehash(capacity, objects);
}

bool NameIndex::insert(uint32_t i, const std::vector<Object>& objects) {
  if (2 * (used_ + 1) > table_.size()) rehash(table_.empty() ? 16 : 2 * table_.size(), objects);
  const std::string_view name = objects[i].name;
  const size_t mask = table_.size() - 1;
  for (size_t h = std::hash<std::string_view>{}(name)&mask;; h = (h + 1) & mask) {
    if (!table_[h]) {
      table_[h] = i + 1;
      ++used_;
      return true;
    }
    if (objects[table_[h] - 1].name == name) return false;
  }
}

std::optional<size_t> NameIndex::find(std::string_view name,
                                      const std::vector<Object>& objects) const {
  if (table_.empty()) return std::nullopt;
  const size_t mask = table_.size() - 1;
  for (size_t h = std::hash<std::string_view>{}(name)&mask; table_[h]; h = (h + 1) & mask)
    if (objects[table_[h] - 1].name == name) return table_[h] - 1;
  return std::nullopt;
}

std::optional<uint64_t> shape_product(std::span<const uint64_t> shape) {
  for (const uint64_t d : shape)
    if (d == 0) return 0;
  uint64_t n = 1;
  for (const uint64_t d : shape) {
    const auto m = checked_mul(n, d);
    if (!m) return std::nullopt;
    n = *m;
  }
  return n;
}

std::optional<uint64_t> decoded_size(const Component& c) {
  switch (c.encoding) {
    case Encoding::raw:
      return c.length;
    case Encoding::zstd:
      return c.uncompressed_length;
    case Encoding::unknown:
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<uint64_t> dense_bytes(const Object& o, const Component& c) {
  if (!c.element_size_known()) return std::nullopt;
  const auto n = shape_product(o.shape);
  if (!n) return std::nullopt;
  return checked_mul(*n, static_cast<uint64_t>(c.width()) * c.ratio());
}

NameFault name_fault(std::string_view name) {
  if (name.empty()) return NameFault::empty;
  if (name.size() > Limits::name_bytes) return NameFault::too_long;
  if (name.find('\0') != std::string_view::npos) return NameFault::nul_byte;
  if (!cbor::is_valid_utf8(name)) return NameFault::not_utf8;
  return NameFault::none;
}

std::string object_where(const Object& o) {
  return "object \"" + o.name + "\"";
}

std::string component_where(const Object& o, const Component& c) {
  return "object \"" + o.name + "\": component \"" + c.role + "\"";
}

std::string shape_text(std::span<const uint64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {

bool is_hex(std::string_view s) {
  if (s.empty()) return false;
  for (const char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  return true;
}

bool is_algorithm_name(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '+' && c != '-'))) return false;
  }
  return true;
}

size_t known_hex_length(std::string_view algo) {
  if (algo == "sha256") return 64;
  if (algo == "xxh3") return 16;
  if (algo == "crc32c") return 8;
  return 0;
}

// "crc32c:0x1A2B3C4D" -> "crc32c:1a2b3c4d" (0.1.0 and 1.0.x checksums).
std::string normalize_legacy_checksum(std::string_view cs) {
  const size_t colon = cs.find(':');
  if (colon == std::string_view::npos) return std::string(cs);
  const std::string_view algo = cs.substr(0, colon);
  std::string_view hex = cs.substr(colon + 1);
  if (hex.size() > 2 && hex[0] == '0' && (hex[1] == 'x' || hex[1] == 'X')) hex.remove_prefix(2);
  if (!is_algorithm_name(algo) || !is_hex(hex)) return std::string(cs);
  std::string out(algo);
  out += ':';
  if (algo == "crc32c" && hex.size() < 8) out.append(8 - hex.size(), '0');
  for (const char c : hex) out += static_cast<char>(c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c);
  return out;
}

struct Version {
  uint64_t major = 0, minor = 0, patch = 0;
};

// "1.2.0", "1.2.0-rc1"; with patch_optional also "1.0".
std::optional<Version> parse_version(std::string_view s, bool patch_optional) {
  Version v;
  uint64_t* parts[3] = {&v.major, &v.minor, &v.patch};
  const char* p = s.data();
  const char* e = s.data() + s.size();
  for (int i = 0; i < 3; ++i) {
    if (i > 0) {
      if (p == e || *p != '.') {
        if (i == 2 && patch_optional) break;
        return std::nullopt;
      }
      ++p;
    }
    const auto [q, ec] = std::from_chars(p, e, *parts[i]);
    if (ec != std::errc() || q == p) return std::nullopt;
    p = q;
  }
  if (p != e && *p != '-' && *p != '+') return std::nullopt;
  return v;
}

class Parser {
 public:
  Parser(Generation gen, Document doc) {
    m_.generation = gen;
    m_.doc = std::move(doc);
    doc_ = &m_.doc;
  }
  explicit Parser(Generation gen) { m_.generation = gen; }
  Result<Manifest> run();
  Result<Manifest> run_streaming(std::span<const uint8_t> bytes);

 private:
  const cbor::Node& node(uint32_t i) const { return doc_->node(i); }
  bool is_text(uint32_t i) const { return i && node(i).kind == Kind::text; }
  bool is_uint(uint32_t i) const { return i && node(i).kind == Kind::uint; }
  bool is_map(uint32_t i) const { return i && node(i).kind == Kind::map; }
  // A map as nodes, or a map value kept as its encoded bytes.
  bool is_any_map(uint32_t i) const { return i && kind_of(i) == Kind::map; }
  Kind kind_of(uint32_t i) const {
    if (node(i).kind != Kind::encoded) return node(i).kind;
    const auto s = cbor::scalar(encoded_bytes(i));
    return s ? s->kind : Kind::encoded;
  }
  std::span<const uint8_t> encoded_bytes(uint32_t i) const {
    const std::string_view b = node(i).str;
    return {reinterpret_cast<const uint8_t*>(b.data()), b.size()};
  }
  bool is_null_or_absent(uint32_t i) const { return !i || node(i).kind == Kind::null; }
  uint32_t get(uint32_t map, std::string_view key) const { return doc_->find(map, key); }

  template <typename F>
  Result<void> for_each_entry(uint32_t map, F&& f) const {
    const uint32_t n = node(map).count;
    uint32_t k = Document::first_child(map);
    for (uint32_t p = 0; p < n; ++p) {
      const uint32_t v = doc_->next(k);
      ZT_TRY(f(node(k).str, v));
      k = doc_->next(v);
    }
    return {};
  }

  Attributes attributes_of(uint32_t map);
  Attributes made_attributes(std::vector<uint8_t> map);
  Result<void> check_components_count(const std::string& what, uint32_t comps) const;
  Result<uint32_t> parse_v1_header();
  Result<void> parse_v1();
  bool take_streamed_object(const Document& d, uint32_t map, uint32_t key, uint32_t value);
  Result<void> parse_v100();
  Result<void> add_generator(std::string_view generator);
  Result<void> parse_v010();
  Result<std::vector<uint64_t>> parse_shape(const std::string& what, uint32_t shape) const;
  Result<void> parse_object_v1(std::string_view name, uint32_t od);
  Result<Component> parse_component_v1(const std::string& obj, std::string_view role, uint32_t cd);
  Result<void> parse_tensor_v100(std::string_view name, uint32_t td);
  Result<void> parse_entry_v010(size_t i, uint32_t e);
  Result<void> set_encoding(Component& c, const std::string& where, uint32_t enc);
  Result<void> add_object(Object o);
  Result<void> check_name(std::string_view what, std::string_view name) const;
  Result<void> check_c_text(const std::string& where, const char* field, uint32_t text) const;

  Manifest m_;
  const Document* doc_ = nullptr;  // m_.doc, or the decoder's while streaming
  bool streaming_started_ = false;
  std::optional<Error> streamed_error_;  // the first streamed object refused
};

// Kept as the manifest's bytes when decoded with manifest_policy; a map
// decoded as nodes (a document decoded without it) is encoded once.
Attributes Parser::attributes_of(uint32_t map) {
  if (node(map).kind == Kind::encoded) return Attributes{true, encoded_bytes(map)};
  CborWriter w;
  encode_value(*doc_, map, w);
  return made_attributes(w.take());
}

Attributes Parser::made_attributes(std::vector<uint8_t> map) {
  m_.made.push_back(std::move(map));
  return Attributes{true, m_.made.back()};
}

// A components map too large to decode is kept encoded by the policy.
Result<void> Parser::check_components_count(const std::string& what, uint32_t comps) const {
  uint64_t n = 0;
  if (node(comps).kind == Kind::encoded) {
    auto c = cbor::container_count(encoded_bytes(comps));
    ZT_TRY(c);
    n = *c;
  } else {
    n = node(comps).count;
  }
  ZT_FAIL_IF(n > Limits::components, limit, "%s has %llu components, more than the limit %llu",
             what.c_str(), static_cast<unsigned long long>(n),
             static_cast<unsigned long long>(Limits::components));
  return {};
}

// Text that reaches C callers as a C string may not hold a NUL byte: it
// would be cut short there ("dense\0x" read as "dense"). Nor may it be
// empty: the writer refuses empty text, so what the reader accepts can
// always be copied.
Result<void> Parser::check_c_text(const std::string& where, const char* field,
                                  uint32_t text) const {
  ZT_FAIL_IF(node(text).str.empty(), invalid, "%s: \"%s\" is empty", where.c_str(), field);
  ZT_FAIL_IF(node(text).str.find('\0') != std::string_view::npos, invalid,
             "%s: \"%s\" contains a NUL byte", where.c_str(), field);
  return {};
}

Result<void> Parser::check_name(std::string_view what, std::string_view name) const {
  const int w = static_cast<int>(what.size());
  switch (name_fault(name)) {
    case NameFault::none:
      return {};
    case NameFault::empty:
      return make_error(Status::invalid, "%.*s name is empty", w, what.data());
    case NameFault::too_long:
      return make_error(Status::limit, "%.*s name of %zu bytes exceeds the limit of %llu", w,
                        what.data(), name.size(),
                        static_cast<unsigned long long>(Limits::name_bytes));
    case NameFault::nul_byte:
      return make_error(Status::invalid, "%.*s name \"%s\" contains a NUL byte", w, what.data(),
                        std::string(name.substr(0, 100)).c_str());
    case NameFault::not_utf8:  // text the decoder accepted is UTF-8 already
      return make_error(Status::invalid, "%.*s name is not UTF-8", w, what.data());
  }
  return {};
}

Result<void> Parser::add_object(Object o) {
  ZT_FAIL_IF(m_.objects.size() >= Limits::objects, limit, "more than %llu objects",
             static_cast<unsigned long long>(Limits::objects));
  m_.objects.push_back(std::move(o));
  if (!m_.by_name.insert(static_cast<uint32_t>(m_.objects.size() - 1), m_.objects)) {
    const std::string name = std::move(m_.objects.back().name);
    m_.objects.pop_back();
    return make_error(Status::invalid, "duplicate object name \"%s\"", name.c_str());
  }
  return {};
}

Result<std::vector<uint64_t>> Parser::parse_shape(const std::string& what, uint32_t shape) const {
  ZT_FAIL_IF(!shape, invalid, "%s has no \"shape\"", what.c_str());
  ZT_FAIL_IF(kind_of(shape) != Kind::array, invalid, "%s: \"shape\" is not an array", what.c_str());
  uint64_t n = node(shape).count;
  if (node(shape).kind == Kind::encoded) {  // kept encoded: longer than the limit
    auto c = cbor::container_count(encoded_bytes(shape));
    ZT_TRY(c);
    n = *c;
  }
  ZT_FAIL_IF(n > Limits::rank, limit, "%s: shape has %llu dimensions, more than the limit %u",
             what.c_str(), static_cast<unsigned long long>(n), Limits::rank);
  std::vector<uint64_t> out;
  out.reserve(n);
  uint32_t i = Document::first_child(shape);
  for (uint32_t k = 0; k < n; ++k, i = doc_->next(i)) {
    ZT_FAIL_IF(!is_uint(i), invalid, "%s: shape element %u is not an unsigned integer",
               what.c_str(), k);
    out.push_back(node(i).u);
  }
  return out;
}

Result<void> Parser::set_encoding(Component& c, const std::string& where, uint32_t enc) {
  if (is_null_or_absent(enc)) return {};
  ZT_FAIL_IF(!is_text(enc), invalid, "%s: \"encoding\" is not a string", where.c_str());
  ZT_TRY(check_c_text(where, "encoding", enc));
  c.encoding_text = std::string(node(enc).str);
  c.encoding = *c.encoding_text == "raw"    ? Encoding::raw
               : *c.encoding_text == "zstd" ? Encoding::zstd
                                            : Encoding::unknown;
  return {};
}

std::string where_of(std::string_view obj, std::string_view role) {
  std::string w = "object \"";
  w += obj;
  w += "\": component \"";
  w += role;
  w += '"';
  return w;
}

Result<Component> Parser::parse_component_v1(const std::string& obj, std::string_view role,
                                             uint32_t cd) {
  const std::string w = where_of(obj, role);
  ZT_FAIL_IF(!is_map(cd), invalid, "%s is not a map", w.c_str());
  Component c;
  c.role = std::string(role);
  for (const char* key : {"dtype", "offset", "length"})
    ZT_FAIL_IF(!get(cd, key), invalid, "%s: required field \"%s\" is missing", w.c_str(), key);
  const uint32_t off = get(cd, "offset"), len = get(cd, "length"), dt = get(cd, "dtype");
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
  const uint32_t ty = get(cd, "type");
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
  ZT_TRY(set_encoding(c, w, get(cd, "encoding")));
  const uint32_t ucl = get(cd, "uncompressed_length");
  if (!is_null_or_absent(ucl)) {
    ZT_FAIL_IF(!is_uint(ucl), invalid, "%s: \"uncompressed_length\" is not an unsigned integer",
               w.c_str());
    c.uncompressed_length = node(ucl).u;
  }
  ZT_FAIL_IF(c.encoding == Encoding::zstd && !c.uncompressed_length && !m_.v11, invalid,
             "%s: encoding \"zstd\" requires \"uncompressed_length\"", w.c_str());
  const uint32_t dg = get(cd, "digest");
  if (!is_null_or_absent(dg)) {
    ZT_FAIL_IF(!is_text(dg), invalid, "%s: \"digest\" is not a string", w.c_str());
    c.digest = std::string(node(dg).str);
    const auto problem = digest_text_problem(*c.digest);
    ZT_FAIL_IF(problem, invalid, "%s: %s", w.c_str(), problem->c_str());
  }
  return c;
}

Result<void> Parser::parse_object_v1(std::string_view name, uint32_t od) {
  ZT_TRY(check_name("object", name));
  Object o;
  o.name = std::string(name);
  const std::string what = "object \"" + o.name + "\"";
  ZT_FAIL_IF(!is_map(od), invalid, "%s is not a map", what.c_str());
  auto shape = parse_shape(what, get(od, "shape"));
  ZT_TRY(shape);
  o.shape = std::move(*shape);
  const uint32_t fmt = get(od, "format");
  ZT_FAIL_IF(!is_text(fmt), invalid, "%s: \"format\" is missing or not a string", what.c_str());
  ZT_TRY(check_c_text(what, "format", fmt));
  o.format = std::string(node(fmt).str);
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
    auto c = parse_component_v1(o.name, role, cd);
    ZT_TRY(c);
    o.components.push_back(std::move(*c));
    return {};
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
  m_.by_name.reserve(node(*objs).count, m_.objects);
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
    m_.by_name.reserve(node(map).count, m_.objects);
  }
  auto r = parse_object_v1(node(key).str, value);
  if (!r) {
    streamed_error_ = std::move(r).error();
    return false;
  }
  return true;
}

Result<Manifest> Parser::run_streaming(std::span<const uint8_t> bytes) {
  const cbor::EntrySink sink{"objects",
                             [this](const Document& d, uint32_t map, uint32_t key, uint32_t value) {
                               return take_streamed_object(d, map, key, value);
                             }};
  auto doc = cbor::decode(bytes, &sink, manifest_policy(m_.generation));
  ZT_TRY(doc);
  m_.doc = std::move(*doc);
  doc_ = &m_.doc;
  ZT_TRY(parse_v1_header());
  if (streamed_error_) {
    if (!m_.v11) return std::move(*streamed_error_);
    auto whole = cbor::decode(bytes, nullptr, manifest_policy(m_.generation));
    ZT_TRY(whole);
    return Parser(m_.generation, std::move(*whole)).run();
  }
  return std::move(m_);
}

// 1.0.x: {version: "1.0", generator, attributes, tensors: {name: {dtype, shape,
// format, components: {role: {offset, length, encoding?, digest?}}}}}.
Result<void> Parser::parse_tensor_v100(std::string_view name, uint32_t td) {
  ZT_TRY(check_name("tensor", name));
  Object o;
  o.name = std::string(name);
  const std::string what = "tensor \"" + o.name + "\"";
  ZT_FAIL_IF(!is_map(td), invalid, "%s is not a map", what.c_str());
  auto shape = parse_shape(what, get(td, "shape"));
  ZT_TRY(shape);
  o.shape = std::move(*shape);
  const uint32_t fmt = get(td, "format");
  ZT_FAIL_IF(!is_text(fmt), invalid, "%s: \"format\" is missing or not a string", what.c_str());
  ZT_TRY(check_c_text(what, "format", fmt));
  o.format = std::string(node(fmt).str);
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
    const std::string w = where_of(o.name, role);
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

// 0.1.0 describes dense tensors only, yet 0.1.x writers marked sparse
// tensors with a "layout" or "format" other than "dense", a "sparse_format"
// key, or a dtype or encoding such as "sparsecsr". How their one blob holds
// values and indices is written down nowhere, so such an entry is listed
// but never interpreted: its marker as the object's format, every key that
// is not placement in the attributes, the blob as a u8 component "data".
// Custom keys named "layout" or "format" with other values ("NHWC") stay
// attributes of a dense tensor. Returns the marker text, or nullopt for a
// dense entry.
bool v010_names_sparse(std::string_view s) {
  std::string lower(s.substr(0, 64));
  for (char& ch : lower) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  return lower.find("sparse") != std::string::npos || lower == "csr" || lower == "coo" ||
         lower == "csc";
}

std::optional<std::string_view> v010_sparse_marker(const Document& doc, uint32_t entry) {
  auto text = [&](const char* key) -> std::optional<std::string_view> {
    const uint32_t v = doc.find(entry, key);
    if (v && doc.node(v).kind == Kind::text) return doc.node(v).str;
    return std::nullopt;
  };
  for (const char* key : {"layout", "format", "encoding", "dtype"})
    if (const auto t = text(key); t && v010_names_sparse(*t)) return t;
  if (doc.find(entry, "sparse_format")) return "sparse";
  return std::nullopt;
}

// The format shown for a 0.1.x sparse entry, in the 1.2.0 vocabulary where
// the marker names one ("sparsecsr" -> "sparse_csr"), else as written.
std::string v010_sparse_format(std::string_view marker,
                               std::optional<std::string_view> sparse_format) {
  std::string lower(sparse_format.value_or(marker).substr(0, 64));
  for (char& ch : lower) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  if (lower.find("csr") != std::string::npos) return std::string(kSparseCsrFormat.name);
  if (lower.find("coo") != std::string::npos) return std::string(kSparseCooFormat.name);
  return std::string(marker);
}

// 0.1.0: an array of {name, offset, size, dtype, shape, encoding,
// data_endianness?, checksum?, custom keys...}.
Result<void> Parser::parse_entry_v010(size_t i, uint32_t e) {
  ZT_FAIL_IF(!is_map(e), invalid, "legacy entry %zu is not a map", i);
  for (const char* key : {"name", "offset", "size", "dtype", "shape", "encoding"})
    ZT_FAIL_IF(!get(e, key), invalid, "legacy entry %zu lacks the required field \"%s\"", i, key);
  const uint32_t nm = get(e, "name");
  ZT_FAIL_IF(!is_text(nm), invalid, "legacy entry %zu: \"name\" is not a string", i);
  ZT_TRY(check_name("object", node(nm).str));
  Object o;
  o.name = std::string(node(nm).str);
  o.format = kDenseFormat.name;
  const std::string what = "object \"" + o.name + "\"";
  auto shape = parse_shape(what, get(e, "shape"));
  ZT_TRY(shape);
  o.shape = std::move(*shape);
  Component c;
  c.role = "data";
  const std::string w = where_of(o.name, "data");
  ZT_FAIL_IF(!is_uint(get(e, "offset")), invalid, "%s: \"offset\" is not an unsigned integer",
             w.c_str());
  ZT_FAIL_IF(!is_uint(get(e, "size")), invalid, "%s: \"size\" is not an unsigned integer",
             w.c_str());
  c.offset = node(get(e, "offset")).u;
  c.length = node(get(e, "size")).u;
  const uint32_t dt = get(e, "dtype");
  ZT_FAIL_IF(!is_text(dt), invalid, "%s: \"dtype\" is not a string", w.c_str());
  ZT_FAIL_IF(!is_text(get(e, "encoding")), invalid, "%s: \"encoding\" is not a string", w.c_str());
  const auto sparse = v010_sparse_marker(*doc_, e);
  if (sparse) {
    const uint32_t sf = get(e, "sparse_format");
    o.format = v010_sparse_format(
        *sparse, is_text(sf) ? std::optional<std::string_view>(node(sf).str) : std::nullopt);
    o.unsupported =
        "object \"" + o.name + "\": the 0.1.0 sparse layout \"" + std::string(*sparse) + "\"" +
        (is_text(sf) ? " (sparse_format \"" + std::string(node(sf).str) + "\")" : std::string()) +
        " is not described by the spec (0.1.0 defines dense tensors only), so its data cannot be "
        "interpreted";
    c.dtype = DType::u8;
    ZT_TRY(set_encoding(c, w, get(e, "encoding")));
  } else {
    const auto dtype = dtype_from_legacy_name(node(dt).str);
    ZT_FAIL_IF(!dtype, unsupported, "%s: unknown dtype \"%s\"", w.c_str(),
               std::string(node(dt).str).c_str());
    c.dtype = *dtype;
    ZT_TRY(set_encoding(c, w, get(e, "encoding")));
    const uint32_t de = get(e, "data_endianness");
    if (de) {
      const bool little = is_text(de) && node(de).str == "little";
      const bool big = is_text(de) && node(de).str == "big";
      ZT_FAIL_IF(!little && !big, invalid, "%s: data_endianness is not \"little\" or \"big\"",
                 w.c_str());
      c.big_endian = big && c.encoding == Encoding::raw;
    }
  }
  const uint32_t cs = get(e, "checksum");
  if (cs) {
    ZT_FAIL_IF(!is_text(cs), invalid, "%s: \"checksum\" is not a string", w.c_str());
    c.digest = normalize_legacy_checksum(node(cs).str);
  }
  // A sparse entry keeps dtype and data_endianness as attributes: they
  // describe parts of the blob that this library does not interpret.
  static constexpr std::string_view kPlacement[] = {"name",  "offset",   "size",
                                                    "shape", "encoding", "checksum"};
  static constexpr std::string_view kDense[] = {"dtype", "data_endianness"};
  auto is_attribute = [&](std::string_view k) {
    for (const auto known : kPlacement)
      if (k == known) return false;
    for (const auto known : kDense)
      if (!sparse && k == known) return false;
    return true;
  };
  size_t kept = 0;
  ZT_TRY(for_each_entry(e, [&](std::string_view k, uint32_t) -> Result<void> {
    kept += is_attribute(k);
    return {};
  }));
  if (kept) {
    CborWriter map;
    map.map(kept);
    ZT_TRY(for_each_entry(e, [&](std::string_view k, uint32_t v) -> Result<void> {
      if (!is_attribute(k)) return {};
      map.text(k);
      encode_value(*doc_, v, map);
      return {};
    }));
    o.attributes = made_attributes(map.take());
  }
  o.components.push_back(std::move(c));
  return add_object(std::move(o));
}

Result<void> Parser::parse_v010() {
  m_.version = "0.1.0";
  ZT_FAIL_IF(node(0).kind != Kind::array, invalid, "legacy index is not a CBOR array");
  const uint32_t n = node(0).count;
  ZT_FAIL_IF(n > Limits::objects, limit, "too many legacy entries");
  m_.objects.reserve(n);
  uint32_t e = Document::first_child(0);
  for (uint32_t i = 0; i < n; ++i, e = doc_->next(e)) ZT_TRY(parse_entry_v010(i, e));
  return {};
}

Result<Manifest> Parser::run() {
  switch (m_.generation) {
    case Generation::v1:
      ZT_TRY(parse_v1());
      break;
    case Generation::v1_0:
      ZT_TRY(parse_v100());
      break;
    case Generation::v0_1:
      ZT_TRY(parse_v010());
      break;
  }
  return std::move(m_);
}

// ---- What the decoder keeps (manifest_policy) ----

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

bool is_one_of(std::string_view k, std::initializer_list<std::string_view> names) {
  for (const auto n : names)
    if (k == n) return true;
  return false;
}

// 1.x: {version, attributes, objects: {name: {shape, format, attributes,
// components: {role: {dtype, type, offset, length, uncompressed_length,
// encoding, digest}}}}}; 1.0.x the same with "tensors" and "generator".
Decision policy_v1(Path path, const ValueHead& h, std::string_view objects) {
  const std::string_view k = path.back();
  if (path.size() == 1) {
    if (k == objects) return Keep::nodes;
    if (k == "attributes") return Keep::encoded;
    if (k == "version" || (objects == "tensors" && k == "generator")) return scalar_field(h);
    return Keep::nothing;
  }
  if (path[0] != objects) return Keep::nodes;
  if (path.size() == 3) {
    if (k == "attributes") return Keep::encoded;
    if (k == "shape") return shape_field(h);
    if (k == "components") return components_field(h);
    if (k == "format" || (objects == "tensors" && k == "dtype")) return scalar_field(h);
    return Keep::nothing;
  }
  if (path.size() == 5 && path[2] == "components") {
    const bool known = objects == "tensors"
                           ? is_one_of(k, {"offset", "length", "encoding", "digest"})
                           : is_one_of(k, {"dtype", "type", "offset", "length",
                                           "uncompressed_length", "encoding", "digest"});
    return known ? scalar_field(h) : Keep::nothing;
  }
  return Keep::nodes;
}

// 0.1.0: [{name, offset, size, dtype, shape, encoding, ...}]: every key
// that is not read becomes an attribute, so it is kept encoded.
Decision policy_v010(Path path, const ValueHead& h) {
  if (path.size() != 2) return Keep::nodes;
  const std::string_view k = path.back();
  if (k == "shape") return shape_field(h);
  if (is_one_of(k, {"name", "offset", "size", "dtype", "encoding", "checksum", "data_endianness",
                    "layout", "format", "sparse_format"}))
    return scalar_field(h);
  return Keep::encoded;
}

}  // namespace

cbor::ValuePolicy manifest_policy(Generation gen) {
  switch (gen) {
    case Generation::v1_0:
      return [](Path p, const ValueHead& h) { return policy_v1(p, h, "tensors"); };
    case Generation::v0_1:
      return policy_v010;
    case Generation::v1:
      break;
  }
  return [](Path p, const ValueHead& h) { return policy_v1(p, h, "objects"); };
}

std::optional<std::string> digest_text_problem(std::string_view digest) {
  const size_t colon = digest.find(':');
  const std::string shown(digest.substr(0, 120));
  if (colon == std::string_view::npos)
    return "malformed digest \"" + shown + "\" (want \"algorithm:hex\")";
  const std::string_view algo = digest.substr(0, colon);
  std::string_view hex = digest.substr(colon + 1);
  // 1.2-era writers emitted crc32c as "crc32c:0x%08X".
  if (algo == "crc32c" && hex.size() > 2 && hex[0] == '0' && (hex[1] == 'x' || hex[1] == 'X'))
    hex.remove_prefix(2);
  if (!is_algorithm_name(algo) || !is_hex(hex))
    return "malformed digest \"" + shown + "\" (want \"algorithm:hex\")";
  const size_t want = known_hex_length(algo);
  if (want && hex.size() != want)
    return std::string(algo) + " digest must have " + std::to_string(want) + " hex digits, \"" +
           shown + "\" has " + std::to_string(hex.size());
  return std::nullopt;
}

Result<Manifest> parse_manifest(Generation gen, cbor::Document doc) {
  return Parser(gen, std::move(doc)).run();
}

Result<Manifest> decode_manifest(Generation gen, std::span<const uint8_t> bytes) {
  if (gen == Generation::v1) return Parser(gen).run_streaming(bytes);
  auto doc = cbor::decode(bytes, nullptr, manifest_policy(gen));
  ZT_TRY(doc);
  return parse_manifest(gen, std::move(*doc));
}

Result<std::vector<uint8_t>> encode_attributes(const Attributes& a) {
  CborWriter w;
  ZT_TRY(cbor::transcode(a.encoded, w));
  return w.take();
}

}  // namespace zt
