#include "manifest/json.h"

#include "cbor/cbor_item.h"

namespace zt {

Json cbor_to_json(const cbor::Document& doc, uint32_t i) {
  const cbor::Node& n = doc.node(i);
  switch (n.kind) {
    case cbor::Kind::null:
    case cbor::Kind::undefined:
    case cbor::Kind::simple:
      return nullptr;
    case cbor::Kind::boolean:
      return n.flag;
    case cbor::Kind::uint:
      return n.u;
    case cbor::Kind::negint:
      if (n.u <= static_cast<uint64_t>(INT64_MAX)) return -1 - static_cast<int64_t>(n.u);
      return -1.0 - static_cast<double>(n.u);
    case cbor::Kind::float_:
      return n.f;  // nlohmann renders NaN and infinities as null
    case cbor::Kind::text:
      return std::string(n.str);
    case cbor::Kind::bytes:
      return Json{{"$bytes", base64_encode(n.str)}};
    case cbor::Kind::array: {
      Json a = Json::array();
      uint32_t c = cbor::Document::first_child(i);
      for (uint32_t k = 0; k < n.count; ++k, c = doc.next(c)) a.push_back(cbor_to_json(doc, c));
      return a;
    }
    case cbor::Kind::encoded: {
      std::string text;
      if (!cbor::append_json(
              std::span(reinterpret_cast<const uint8_t*>(n.str.data()), n.str.size()), text))
        return nullptr;
      return Json::parse(text);
    }
    case cbor::Kind::map: {
      Json m = Json::object();
      uint32_t c = cbor::Document::first_child(i);
      for (uint32_t k = 0; k < n.count; ++k) {
        const uint32_t v = doc.next(c);
        m[std::string(doc.node(c).str)] = cbor_to_json(doc, v);
        c = doc.next(v);
      }
      return m;
    }
  }
  return nullptr;
}

void append_attributes_json(const Attributes& a, std::string& out) {
  const size_t before = out.size();
  if (a.present && cbor::append_json(a.encoded, out)) return;
  out.resize(before);
  out += "{}";
}

std::string attributes_json(const Attributes& a) {
  std::string out;
  append_attributes_json(a, out);
  return out;
}

namespace {

Json component_to_json(const Manifest& m, const Component& c) {
  Json j = Json::object();
  j["dtype"] = std::string(dtype_name(c.dtype));
  if (c.type) j["type"] = *c.type;
  j["offset"] = c.offset;
  j["length"] = c.length;
  if (c.uncompressed_length) j["uncompressed_length"] = *c.uncompressed_length;
  if (c.encoding_text) j["encoding"] = *c.encoding_text;
  if (c.encoding_id) j["encoding_id"] = *c.encoding_id;
  if (c.shard) j["shard"] = m.shards[*c.shard].name;
  if (c.digest) j["digest"] = *c.digest;
  return j;
}

}  // namespace

// Written piecewise: an ordered_json map looks keys up linearly, which would
// make a manifest of 100k objects quadratic. Names are unique already.
std::string manifest_to_json(const Manifest& m) {
  std::string out = "{\"version\":" + dump_json(m.version);
  if (!m.foreign.empty()) out += ",\"foreign\":" + dump_json(m.foreign);
  if (m.attributes.present) {
    out += ",\"attributes\":";
    append_attributes_json(m.attributes, out);
  }
  if (!m.shards.empty()) {
    Json shards = Json::object();
    for (const Shard& s : m.shards) shards[s.name] = Json{{"size", s.size}, {"digest", s.digest}};
    out += ",\"shards\":" + dump_json(shards);
  }
  out += ",\"objects\":{";
  bool first = true;
  for (const Object& o : m.objects) {
    if (!first) out += ',';
    first = false;
    out += dump_json(o.name);
    out += ":{\"shape\":" + dump_json(o.shape) + ",\"format\":" + dump_json(o.format);
    if (!o.layout.empty()) out += ",\"layout\":" + dump_json(o.layout);
    if (o.attributes.present) {
      out += ",\"attributes\":";
      append_attributes_json(o.attributes, out);
    }
    out += ",\"components\":{";
    for (size_t k = 0; k < o.components.size(); ++k) {
      if (k) out += ',';
      out +=
          dump_json(o.components[k].role) + ':' + dump_json(component_to_json(m, o.components[k]));
    }
    out += "}}";
  }
  out += "}}";
  return out;
}

}  // namespace zt
