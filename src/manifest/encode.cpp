// The 1.2.0 manifest of the objects a writer has written: deterministic
// CBOR (fixed key order, shortest heads), the attributes as given.
#include "cbor/cbor_encode.h"
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

}  // namespace zt
