// The model's own functions: lookups, sizes, names, how messages name
// things, and the entry points that parse a manifest of any generation.
#include "manifest/manifest.h"

#include "base/zt_limits.h"
#include "cbor/cbor_encode.h"
#include "cbor/cbor_item.h"
#include "cbor/deterministic.h"
#include "manifest/parser.h"

namespace zt {

const Component* Object::find(std::string_view role) const {
  for (const auto& c : components)
    if (c.role == role) return &c;
  return nullptr;
}

std::optional<size_t> Manifest::find(std::string_view name) const {
  return by_name.find(name, objects);
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
    case Encoding::byte_planes:
      return c.uncompressed_length;
    case Encoding::unknown:
      // v2 states decoded_length for every encoded part (v2 spec 3.4), so
      // the size rules hold whatever the encoding, known or not (a dense
      // part of an unknown encoding that could not fit its shape opened).
      return c.uncompressed_length;
  }
  return std::nullopt;
}

std::optional<uint64_t> dense_bytes(const Object& o, const Component& c) {
  if (!c.element_size_known()) return std::nullopt;
  const auto n = shape_product(o.shape);
  if (!n) return std::nullopt;
  return element_bytes(c, *n);
}

std::optional<uint64_t> element_bytes(const Component& c, uint64_t n) {
  return values_bytes(c.dtype, c.known_type, n);
}

// "<namespace>.<name>/<version>" (v2 spec §5.2: the version suffix is
// mandatory): dot-separated pieces, none empty, and a decimal version of 1
// or more without leading zeros.
bool is_v2_profile_id(std::string_view id) {
  const size_t slash = id.rfind('/');
  if (slash == std::string_view::npos) return false;
  const std::string_view name = id.substr(0, slash);
  const std::string_view version = id.substr(slash + 1);
  if (version.empty() || version[0] == '0') return false;
  for (const char c : version)
    if (c < '0' || c > '9') return false;
  if (name.find('/') != std::string_view::npos || name.find('.') == std::string_view::npos)
    return false;
  size_t piece = 0;
  for (size_t i = 0; i <= name.size(); ++i) {
    if (i == name.size() || name[i] == '.') {
      if (i == piece) return false;
      piece = i + 1;
    }
  }
  return true;
}

NameFault name_fault(std::string_view name, uint64_t max_bytes) {
  if (name.empty()) return NameFault::empty;
  if (name.size() > max_bytes) return NameFault::too_long;
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

Result<Manifest> parse_manifest(Generation gen, cbor::Document doc) {
  return Parser(gen, std::move(doc)).run();
}

Result<Manifest> decode_manifest(Generation gen, std::span<const uint8_t> bytes) {
  if (gen == Generation::v2) {
    ZT_TRY(cbor::check_deterministic(bytes, kMaxDepthV2));
    return Parser(gen).run_streaming(bytes);
  }
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
