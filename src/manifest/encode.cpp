// The manifests of the objects a writer has written, 1.2.0 and v2:
// deterministic CBOR (fixed key order, shortest heads), attributes as given.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "cbor/cbor_encode.h"
#include "container/digest.h"
#include "manifest/manifest.h"

namespace zt {

std::vector<uint8_t> encode_manifest(std::span<const uint8_t> file_attributes,
                                     std::span<const Object> objects) {
  CborWriter w;
  w.map(file_attributes.empty() ? 2 : 3);
  w.text("version");
  w.text("1.2.0");
  if (!file_attributes.empty()) {
    w.text("attributes");
    w.raw(file_attributes);
  }
  w.text("objects");
  w.map(objects.size());
  for (const Object& o : objects) {
    w.text(o.name);
    w.map(o.attributes.present ? 4 : 3);
    w.text("shape");
    w.array(o.shape.size());
    for (const uint64_t d : o.shape) w.uint(d);
    w.text("format");
    w.text(o.format);
    if (o.attributes.present) {
      w.text("attributes");
      w.raw(o.attributes.encoded);
    }
    w.text("components");
    w.map(o.components.size());
    for (const Component& c : o.components) {
      w.text(c.role);
      w.map(3 + (c.type ? 1 : 0) + (c.uncompressed_length ? 1 : 0) +
            (c.encoding != Encoding::raw ? 1 : 0) + (c.digest ? 1 : 0));
      w.text("dtype");
      w.text(dtype_name(c.dtype));
      if (c.type) {
        w.text("type");
        w.text(*c.type);
      }
      w.text("offset");
      w.uint(c.offset);
      w.text("length");
      w.uint(c.length);
      if (c.uncompressed_length) {
        w.text("uncompressed_length");
        w.uint(*c.uncompressed_length);
      }
      if (c.encoding != Encoding::raw) {
        w.text("encoding");
        w.text(*c.encoding_text);
      }
      if (c.digest) {
        w.text("digest");
        w.text(*c.digest);
      }
    }
  }
  return w.take();
}

namespace {

// Text keys in the order of their deterministic encodings: the head holds
// the length, so shorter first, then bytewise.
bool encoded_before(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return a.size() < b.size();
  return std::memcmp(a.data(), b.data(), a.size()) < 0;
}

template <typename T, typename Key>
std::vector<size_t> encoded_order(std::span<const T> items, Key key) {
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return encoded_before(key(items[a]), key(items[b])); });
  return order;
}

// Keys in encoded order: blob, type, dtype, shard, digest, encoding,
// decoded_length.
void encode_part(const Component& c, std::span<const Shard> shards, CborWriter& w) {
  const bool encoded = c.encoding_id.has_value();
  w.map(2 + (c.type ? 1 : 0) + (c.shard ? 1 : 0) + (c.digest ? 1 : 0) + (encoded ? 2 : 0));
  w.text("blob");
  w.array(2);
  w.uint(c.offset);
  w.uint(c.length);
  if (c.type) {
    w.text("type");
    w.text(*c.type);
  }
  w.text("dtype");
  w.text(dtype_name(c.dtype));
  if (c.shard) {
    w.text("shard");
    w.text(shards[*c.shard].name);
  }
  if (c.digest) {
    w.text("digest");
    w.text(*c.digest);
  }
  if (encoded) {
    w.text("encoding");
    w.text(*c.encoding_id);
    w.text("decoded_length");
    w.uint(*c.uncompressed_length);
  }
}

// Keys in encoded order: parts, shape, layout, attributes.
void encode_object_v2(const Object& o, std::span<const Shard> shards, CborWriter& w) {
  w.map(o.attributes.present ? 4 : 3);
  w.text("parts");
  w.map(o.components.size());
  const std::span<const Component> parts(o.components);
  for (const size_t k :
       encoded_order(parts, [](const Component& c) -> std::string_view { return c.role; })) {
    w.text(parts[k].role);
    encode_part(parts[k], shards, w);
  }
  w.text("shape");
  w.array(o.shape.size());
  for (const uint64_t d : o.shape) w.uint(d);
  w.text("layout");
  w.text(o.layout);
  if (o.attributes.present) {
    w.text("attributes");
    w.raw(o.attributes.encoded);
  }
}

}  // namespace

// Root keys in encoded order: shards, objects, attributes.
std::vector<uint8_t> encode_manifest_v2(std::span<const uint8_t> file_attributes,
                                        std::span<const Object> objects,
                                        std::span<const Shard> shards) {
  CborWriter w;
  w.map(1 + (file_attributes.empty() ? 0 : 1) + (shards.empty() ? 0 : 1));
  if (!shards.empty()) {
    w.text("shards");
    w.map(shards.size());
    for (const size_t i :
         encoded_order(shards, [](const Shard& s) -> std::string_view { return s.name; })) {
      w.text(shards[i].name);
      w.map(2);  // keys in encoded order: size, digest
      w.text("size");
      w.uint(shards[i].size);
      w.text("digest");
      w.text(shards[i].digest);
    }
  }
  w.text("objects");
  w.map(objects.size());
  for (const size_t i :
       encoded_order(objects, [](const Object& o) -> std::string_view { return o.name; })) {
    w.text(objects[i].name);
    encode_object_v2(objects[i], shards, w);
  }
  if (!file_attributes.empty()) {
    w.text("attributes");
    w.raw(file_attributes);
  }
  return w.take();
}

namespace {

// One part as the content digest sees it: type, dtype, digest (encoded
// order), nothing about where or how its bytes are stored.
Result<void> encode_content_part(const Object& o, const Component& c, CborWriter& w) {
  ZT_FAIL_IF(!c.digest, unsupported,
             "%s has no digest: the content digest is defined only when every part carries one "
             "(v2 spec §6.4)",
             component_where(o, c).c_str());
  w.map(c.type ? 3 : 2);
  if (c.type) {
    w.text("type");
    w.text(*c.type);
  }
  w.text("dtype");
  w.text(dtype_name(c.dtype));
  w.text("digest");
  w.text(*c.digest);
  return {};
}

// Keys in encoded order: parts, shape, layout, attributes.
Result<void> encode_content_object(const Object& o, CborWriter& w) {
  w.map(o.attributes.present ? 4 : 3);
  w.text("parts");
  w.map(o.components.size());
  const std::span<const Component> parts(o.components);
  for (const size_t k :
       encoded_order(parts, [](const Component& c) -> std::string_view { return c.role; })) {
    w.text(parts[k].role);
    ZT_TRY(encode_content_part(o, parts[k], w));
  }
  w.text("shape");
  w.array(o.shape.size());
  for (const uint64_t d : o.shape) w.uint(d);
  w.text("layout");
  w.text(o.layout);
  if (o.attributes.present) {
    w.text("attributes");
    w.raw(o.attributes.encoded);
  }
  return {};
}

}  // namespace

Result<std::vector<uint8_t>> encode_content_v2(std::span<const Object> objects) {
  CborWriter w;
  w.array(2);
  w.text("zt.content/1");
  w.map(objects.size());
  for (const size_t i :
       encoded_order(objects, [](const Object& o) -> std::string_view { return o.name; })) {
    w.text(objects[i].name);
    ZT_TRY(encode_content_object(objects[i], w));
  }
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
