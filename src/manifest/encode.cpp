// The manifests of the objects a writer has written, 1.2.0 and v2, and the
// v2 content digest's value: deterministic CBOR (shortest heads), attributes
// as given. The generations differ in key names, key order and how a part
// says where its bytes are; one object encoder takes those differences as
// data (ObjectSchema) and one part encoder per form says the rest.
#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <numeric>

#include "cbor/cbor_encode.h"
#include "codec/digest.h"
#include "manifest/manifest.h"

namespace zt {

namespace {

// Where the keys of a map go: in the order the spec lists them (1.2), or in
// the order of their deterministic encodings (v2 spec §3.1).
enum class KeyOrder { listed, encoded };

// Text keys in the order of their deterministic encodings: the head holds
// the length, so shorter first, then bytewise.
bool encoded_before(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return a.size() < b.size();
  return std::memcmp(a.data(), b.data(), a.size()) < 0;
}

// The indexes of `items` in the given order of their keys.
template <typename T, typename Key>
std::vector<size_t> key_order(std::span<const T> items, KeyOrder order, Key key) {
  std::vector<size_t> indexes(items.size());
  std::iota(indexes.begin(), indexes.end(), size_t{0});
  if (order == KeyOrder::encoded)
    std::sort(indexes.begin(), indexes.end(),
              [&](size_t a, size_t b) { return encoded_before(key(items[a]), key(items[b])); });
  return indexes;
}

// One entry of a map still to be written: its key and how its value is
// written (std::function: a capture of one or two references stays in
// place, larger ones cost an allocation per entry, a few per object).
struct Entry {
  std::string_view key;
  std::function<void(CborWriter&)> value;
};

// A map of at most 8 entries (a root, an object, a part), each added only
// where it is present, written in the given key order.
class SmallMap {
 public:
  void add(std::string_view key, std::function<void(CborWriter&)> value) {
    entries_[size_++] = Entry{key, std::move(value)};
  }
  void write(KeyOrder order, CborWriter& w) const {
    const std::span<const Entry> entries(entries_.data(), size_);
    w.map(size_);
    for (const size_t i : key_order(entries, order, [](const Entry& e) { return e.key; })) {
      w.text(entries[i].key);
      entries[i].value(w);
    }
  }

 private:
  std::array<Entry, 8> entries_;
  size_t size_ = 0;
};

// How a generation names an object's fields and orders its keys.
struct ObjectSchema {
  std::string_view layout_key;  // "format" / "layout"
  std::string Object::*layout;  // the value written under it
  std::string_view parts_key;   // "components" / "parts"
  KeyOrder order;
};
constexpr ObjectSchema kObjects12{"format", &Object::format, "components", KeyOrder::listed};
constexpr ObjectSchema kObjectsV2{"layout", &Object::layout, "parts", KeyOrder::encoded};

// One object: 1.2 lists shape, format, attributes, components; v2 sorts
// parts, shape, layout, attributes. `part` writes one component's map.
void encode_object(const Object& o, const ObjectSchema& schema,
                   const std::function<void(const Component&, CborWriter&)>& part, CborWriter& w) {
  SmallMap m;
  m.add("shape", [&](CborWriter& v) {
    v.array(o.shape.size());
    for (const uint64_t d : o.shape) v.uint(d);
  });
  m.add(schema.layout_key, [&](CborWriter& v) { v.text(o.*schema.layout); });
  if (o.attributes.present)
    m.add("attributes", [&](CborWriter& v) { v.raw(o.attributes.encoded); });
  m.add(schema.parts_key, [&](CborWriter& v) {
    const std::span<const Component> parts(o.components);
    v.map(parts.size());
    for (const size_t k : key_order(
             parts, schema.order, [](const Component& c) -> std::string_view { return c.role; })) {
      v.text(parts[k].role);
      part(parts[k], v);
    }
  });
  m.write(schema.order, w);
}

// A 1.2 component: dtype, type, offset, length, uncompressed_length,
// encoding, digest.
void encode_component_12(const Component& c, CborWriter& w) {
  SmallMap m;
  m.add("dtype", [&](CborWriter& v) { v.text(dtype_name(c.dtype)); });
  if (c.type) m.add("type", [&](CborWriter& v) { v.text(*c.type); });
  m.add("offset", [&](CborWriter& v) { v.uint(c.offset); });
  m.add("length", [&](CborWriter& v) { v.uint(c.length); });
  if (c.uncompressed_length)
    m.add("uncompressed_length", [&](CborWriter& v) { v.uint(*c.uncompressed_length); });
  if (c.encoding != Encoding::raw)
    m.add("encoding", [&](CborWriter& v) { v.text(*c.encoding_text); });
  if (c.digest) m.add("digest", [&](CborWriter& v) { v.text(*c.digest); });
  m.write(KeyOrder::listed, w);
}

// A v2 part: where its bytes are (blob, shard), how they are encoded
// (encoding, decoded_length) and what they hold (type, dtype, digest).
void encode_part_v2(const Component& c, std::span<const Shard> shards, CborWriter& w) {
  SmallMap m;
  m.add("blob", [&](CborWriter& v) {
    v.array(2);
    v.uint(c.offset);
    v.uint(c.length);
  });
  if (c.type) m.add("type", [&](CborWriter& v) { v.text(*c.type); });
  m.add("dtype", [&](CborWriter& v) { v.text(dtype_name(c.dtype)); });
  if (c.shard) m.add("shard", [&](CborWriter& v) { v.text(shards[*c.shard].name); });
  if (c.digest) m.add("digest", [&](CborWriter& v) { v.text(*c.digest); });
  if (c.encoding_id) {
    m.add("encoding", [&](CborWriter& v) { v.text(*c.encoding_id); });
    m.add("decoded_length", [&](CborWriter& v) { v.uint(*c.uncompressed_length); });
  }
  m.write(KeyOrder::encoded, w);
}

// A part as the content digest sees it: what it holds (type, dtype,
// digest), nothing about where or how its bytes are stored. The caller has
// checked that it has a digest.
void encode_content_part(const Component& c, CborWriter& w) {
  SmallMap m;
  if (c.type) m.add("type", [&](CborWriter& v) { v.text(*c.type); });
  m.add("dtype", [&](CborWriter& v) { v.text(dtype_name(c.dtype)); });
  m.add("digest", [&](CborWriter& v) { v.text(*c.digest); });
  m.write(KeyOrder::encoded, w);
}

// The objects map of a manifest, its objects in the schema's key order.
void encode_objects(std::span<const Object> objects, const ObjectSchema& schema,
                    const std::function<void(const Component&, CborWriter&)>& part, CborWriter& w) {
  w.map(objects.size());
  for (const size_t i : key_order(objects, schema.order,
                                  [](const Object& o) -> std::string_view { return o.name; })) {
    w.text(objects[i].name);
    encode_object(objects[i], schema, part, w);
  }
}

}  // namespace

// Root: version, attributes, objects.
std::vector<uint8_t> encode_manifest(std::span<const uint8_t> file_attributes,
                                     std::span<const Object> objects) {
  CborWriter w;
  SmallMap root;
  root.add("version", [](CborWriter& v) { v.text("1.2.0"); });
  if (!file_attributes.empty())
    root.add("attributes", [&](CborWriter& v) { v.raw(file_attributes); });
  root.add("objects",
           [&](CborWriter& v) { encode_objects(objects, kObjects12, encode_component_12, v); });
  root.write(KeyOrder::listed, w);
  return w.take();
}

// Root: shards, objects, attributes (sorted).
std::vector<uint8_t> encode_manifest_v2(std::span<const uint8_t> file_attributes,
                                        std::span<const Object> objects,
                                        std::span<const Shard> shards) {
  CborWriter w;
  SmallMap root;
  if (!shards.empty())
    root.add("shards", [&](CborWriter& v) {
      v.map(shards.size());
      for (const size_t i : key_order(shards, KeyOrder::encoded,
                                      [](const Shard& s) -> std::string_view { return s.name; })) {
        v.text(shards[i].name);
        SmallMap shard;
        shard.add("size", [&](CborWriter& x) { x.uint(shards[i].size); });
        shard.add("digest", [&](CborWriter& x) { x.text(shards[i].digest); });
        shard.write(KeyOrder::encoded, v);
      }
    });
  root.add("objects", [&](CborWriter& v) {
    encode_objects(
        objects, kObjectsV2,
        [&](const Component& c, CborWriter& x) { encode_part_v2(c, shards, x); }, v);
  });
  if (!file_attributes.empty())
    root.add("attributes", [&](CborWriter& v) { v.raw(file_attributes); });
  root.write(KeyOrder::encoded, w);
  return w.take();
}

// ["zt.content/1", objects], the objects as v2 writes them with parts that
// say only what they hold (v2 spec §6.4).
Result<std::vector<uint8_t>> encode_content_v2(std::span<const Object> objects) {
  for (const Object& o : objects)
    for (const Component& c : o.components)
      ZT_FAIL_IF(!c.digest, unsupported,
                 "%s has no digest: the content digest is defined only when every part carries "
                 "one (v2 spec §6.4)",
                 component_where(o, c).c_str());
  CborWriter w;
  w.array(2);
  w.text("zt.content/1");
  encode_objects(objects, kObjectsV2, encode_content_part, w);
  return w.take();
}

Result<std::string> content_digest(const Manifest& m, DigestAlgo algo) {
  ZT_FAIL_IF(m.generation != Generation::v2, unsupported,
             "the content digest is defined for zTensor v2 models (v2 spec §6.4), not for a "
             "%s file: convert it with zt convert --format-version 2",
             m.version.c_str());
  ZT_FAIL_IF(algo != DigestAlgo::xxh3 && algo != DigestAlgo::sha256, argument,
             "the content digest is computed with xxh3 or sha256");
  auto value = encode_content_v2(m.objects);
  ZT_TRY(value);
  return std::string(digest_algo_name(algo)) + ":" + digest_hex(algo, *value);
}

}  // namespace zt
