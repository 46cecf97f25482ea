#include "manifest/json.h"

#include "cbor/cbor_item.h"

namespace zt {

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
