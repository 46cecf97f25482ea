// The rules every generation's parser shares: names and text, shapes,
// encodings, component counts, attributes, the object list.
#include "manifest/parser.h"

#include <charconv>
#include <cstring>

#include "base/zt_limits.h"
#include "cbor/cbor_encode.h"

namespace zt {

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
Result<void> Parser::check_components_count(const ItemName& what, uint32_t comps) const {
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
Result<void> Parser::check_c_text(const ItemName& where, const char* field, uint32_t text) const {
  ZT_FAIL_IF(node(text).str.empty(), invalid, "%s: \"%s\" is empty", where.c_str(), field);
  ZT_FAIL_IF(node(text).str.find('\0') != std::string_view::npos, invalid,
             "%s: \"%s\" contains a NUL byte", where.c_str(), field);
  return {};
}

Result<void> Parser::check_name(std::string_view what, std::string_view name) const {
  const int w = static_cast<int>(what.size());
  ZT_FAIL_IF(m_.generation == Generation::v2 && name.size() > kMaxNameBytesV2, invalid,
             "%.*s name of %zu bytes is longer than 1024 (v2 spec §3.5)", w, what.data(),
             name.size());
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

Result<void> Parser::add_object(Object&& o) {
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

Result<std::vector<uint64_t>> Parser::parse_shape(const ItemName& what, uint32_t shape) const {
  ZT_FAIL_IF(!shape, invalid, "%s has no \"shape\"", what.c_str());
  ZT_FAIL_IF(kind_of(shape) != Kind::array, invalid, "%s: \"shape\" is not an array", what.c_str());
  uint64_t n = node(shape).count;
  if (node(shape).kind == Kind::encoded) {  // kept encoded: longer than the limit
    auto c = cbor::container_count(encoded_bytes(shape));
    ZT_TRY(c);
    n = *c;
  }
  ZT_FAIL_IF(m_.generation == Generation::v2 && n > kMaxRankV2, invalid,
             "%s: shape has %llu dimensions, more than 64 (v2 spec §3.3)", what.c_str(),
             static_cast<unsigned long long>(n));
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

Result<void> Parser::set_encoding(Component& c, const ItemName& where, uint32_t enc) {
  if (is_null_or_absent(enc)) return {};
  ZT_FAIL_IF(!is_text(enc), invalid, "%s: \"encoding\" is not a string", where.c_str());
  ZT_TRY(check_c_text(where, "encoding", enc));
  c.encoding_text = std::string(node(enc).str);
  c.encoding = *c.encoding_text == "raw"    ? Encoding::raw
               : *c.encoding_text == "zstd" ? Encoding::zstd
                                            : Encoding::unknown;
  return {};
}

Result<void> Parser::parse_object_shape(const ItemName& what, std::string_view name, uint32_t map,
                                        Object& o) const {
  ZT_FAIL_IF(!is_map(map), invalid, "%s is not a map", what.c_str());
  o.name = std::string(name);
  auto shape = parse_shape(what, get(map, "shape"));
  ZT_TRY(shape);
  o.shape = std::move(*shape);
  return {};
}

Result<void> Parser::parse_object_head(const ItemName& what, std::string_view name, uint32_t map,
                                       Object& o) const {
  ZT_TRY(parse_object_shape(what, name, map, o));
  const uint32_t fmt = get(map, "format");
  ZT_FAIL_IF(!is_text(fmt), invalid, "%s: \"format\" is missing or not a string", what.c_str());
  ZT_TRY(check_c_text(what, "format", fmt));
  o.format = std::string(node(fmt).str);
  return {};
}

const char* ItemName::c_str() const {
  if (text_.empty()) {  // made once, at a message
    text_.append(kind_).append(" \"").append(name_).append("\"");
    if (has_role_) text_.append(": component \"").append(role_).append("\"");
  }
  return text_.c_str();
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
    case Generation::v2:
      ZT_TRY(parse_v2());
      break;
  }
  return std::move(m_);
}

}  // namespace zt
