#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "base/zt_limits.h"
#include "cbor/cbor_value.h"
#include "foreign/gguf.h"
#include "foreign/gguf_values.h"
#include "write/output_file.h"

namespace zt::foreign {

namespace {

using ull = unsigned long long;

class Encoder {
 public:
  Encoder(const std::string& path, std::string& out) : path_(path), out_(out) {}

  template <typename T>
  void le(T v) {
    for (size_t i = 0; i < sizeof(T); ++i)
      out_ += static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xFF);
  }
  void string(std::string_view s) {
    le<uint64_t>(s.size());
    out_ += s;
  }

  // `type` as gguf.types spells it; `node` the value in `doc`.
  Result<void> value(const std::string& key, std::string_view type, const cbor::Document& doc,
                     uint32_t node, bool with_type_id, int depth = 0);

 private:
  Error bad(const std::string& key, std::string_view type, const char* why) const {
    return make_error(Status::argument, "%s: GGUF key \"%s\": the value %s a %s", path_.c_str(),
                      key.c_str(), why, std::string(type).c_str());
  }
  Result<void> integer(const std::string& key, std::string_view type, uint32_t id,
                       const cbor::Node& n);
  Result<void> array(const std::string& key, std::string_view inner, const cbor::Document& doc,
                     uint32_t node, int depth);

  const std::string& path_;
  std::string& out_;
};

// The element types of "array[...]": one for all, or one per element when
// they differ ("array[int32], array[string]"), split at top-level commas.
std::vector<std::string_view> element_types(std::string_view inner) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < inner.size(); ++i) {
    if (inner[i] == '[') ++depth;
    if (inner[i] == ']') --depth;
    if (inner[i] == ',' && depth == 0) {
      out.push_back(inner.substr(start, i - start));
      start = i + 1;
      while (start < inner.size() && inner[start] == ' ') ++start;
    }
  }
  out.push_back(inner.substr(start));
  return out;
}

Result<void> Encoder::integer(const std::string& key, std::string_view type, uint32_t id,
                              const cbor::Node& n) {
  if (n.kind != cbor::Kind::uint && n.kind != cbor::Kind::negint)
    return bad(key, type, "is not an integer, so cannot be");
  const bool negative = n.kind == cbor::Kind::negint;
  if (negative && n.u > static_cast<uint64_t>(INT64_MAX)) return bad(key, type, "does not fit");
  const int64_t s = negative ? -1 - static_cast<int64_t>(n.u) : 0;
  const auto fits = [&](int64_t lo, uint64_t hi) { return negative ? s >= lo : n.u <= hi; };
  switch (id) {
    case kU8:
      if (!fits(0, UINT8_MAX)) return bad(key, type, "does not fit");
      le<uint8_t>(static_cast<uint8_t>(n.u));
      return {};
    case kI8:
      if (!fits(INT8_MIN, INT8_MAX)) return bad(key, type, "does not fit");
      le<uint8_t>(static_cast<uint8_t>(negative ? s : static_cast<int64_t>(n.u)));
      return {};
    case kU16:
      if (!fits(0, UINT16_MAX)) return bad(key, type, "does not fit");
      le<uint16_t>(static_cast<uint16_t>(n.u));
      return {};
    case kI16:
      if (!fits(INT16_MIN, INT16_MAX)) return bad(key, type, "does not fit");
      le<uint16_t>(static_cast<uint16_t>(negative ? s : static_cast<int64_t>(n.u)));
      return {};
    case kU32:
      if (!fits(0, UINT32_MAX)) return bad(key, type, "does not fit");
      le<uint32_t>(static_cast<uint32_t>(n.u));
      return {};
    case kI32:
      if (!fits(INT32_MIN, INT32_MAX)) return bad(key, type, "does not fit");
      le<uint32_t>(static_cast<uint32_t>(negative ? s : static_cast<int64_t>(n.u)));
      return {};
    case kU64:
      if (negative) return bad(key, type, "does not fit");
      le<uint64_t>(n.u);
      return {};
    default:  // kI64
      if (!fits(INT64_MIN, INT64_MAX)) return bad(key, type, "does not fit");
      le<uint64_t>(negative ? static_cast<uint64_t>(s) : n.u);
      return {};
  }
}

Result<void> Encoder::array(const std::string& key, std::string_view inner,
                            const cbor::Document& doc, uint32_t node, int depth) {
  const cbor::Node& n = doc.node(node);
  // What read_gguf accepts: arrays nested at most 4 deep.
  if (depth >= Limits::gguf_array_nesting)
    return bad(key, "array", "nests arrays more than 4 deep, so cannot be");
  if (n.kind != cbor::Kind::array) return bad(key, "array", "is not an array, so cannot be");
  const std::vector<std::string_view> types = element_types(inner);
  if (types.size() != 1 && types.size() != n.count)
    return bad(key, "array", "has a different element count from its recorded types for");
  const std::string_view first = types.front();
  uint32_t item = kArray;
  if (!first.starts_with("array[")) {
    const auto scalar = gguf_scalar_type(first);
    if (!scalar) return bad(key, first, "has an unknown element type");
    item = *scalar;
  }
  le<uint32_t>(item);
  le<uint64_t>(n.count);
  uint32_t c = cbor::Document::first_child(node);
  for (uint32_t i = 0; i < n.count; ++i, c = doc.next(c))
    ZT_TRY(value(key, types.size() == 1 ? first : types[i], doc, c, false, depth + 1));
  return {};
}

Result<void> Encoder::value(const std::string& key, std::string_view type,
                            const cbor::Document& doc, uint32_t node, bool with_type_id,
                            int depth) {
  const cbor::Node& n = doc.node(node);
  if (type.starts_with("array[") && type.ends_with("]")) {
    if (with_type_id) le<uint32_t>(kArray);
    return array(key, type.substr(6, type.size() - 7), doc, node, depth);
  }
  const auto id = gguf_scalar_type(type);
  if (!id) return bad(key, type, "has an unknown GGUF type,");
  if (with_type_id) le<uint32_t>(*id);
  switch (*id) {
    case kBool:
      if (n.kind != cbor::Kind::boolean) return bad(key, type, "is not a bool, so cannot be");
      le<uint8_t>(n.flag ? 1 : 0);
      return {};
    case kString:
      if (n.kind != cbor::Kind::text && n.kind != cbor::Kind::bytes)
        return bad(key, type, "is not text, so cannot be");
      string(n.str);
      return {};
    case kF32:
    case kF64: {
      double d = 0;
      if (n.kind == cbor::Kind::float_)
        d = n.f;
      else if (n.kind == cbor::Kind::uint)
        d = static_cast<double>(n.u);
      else if (n.kind == cbor::Kind::negint)
        d = -1.0 - static_cast<double>(n.u);
      else
        return bad(key, type, "is not a number, so cannot be");
      if (*id == kF64) {
        uint64_t bits;
        std::memcpy(&bits, &d, 8);
        le<uint64_t>(bits);
        return {};
      }
      const auto f = static_cast<float>(d);
      if (std::isfinite(d) && static_cast<double>(f) != d) return bad(key, type, "is not exactly");
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      le<uint32_t>(bits);
      return {};
    }
    default:
      return integer(key, type, *id, n);
  }
}

}  // namespace

Result<void> write_gguf(const std::string& path, uint32_t version,
                        const std::vector<GgufKeyValue>& metadata,
                        const std::vector<GgufTensorEntry>& tensors,
                        const std::function<Result<void>(size_t, const GgufSink&)>& write_tensor) {
  const char* p = path.c_str();
  ZT_FAIL_IF(version != 2 && version != 3, argument, "%s: GGUF version %u (2 or 3 are written)", p,
             version);
  std::string head;
  Encoder enc(path, head);
  head += "GGUF";
  enc.le<uint32_t>(version);
  enc.le<uint64_t>(tensors.size());
  enc.le<uint64_t>(metadata.size());
  uint64_t alignment = 32;
  for (const GgufKeyValue& kv : metadata) {
    ZT_FAIL_IF(kv.key.empty() || !cbor::is_valid_utf8(kv.key), argument,
               "%s: a GGUF metadata key must be non-empty UTF-8", p);
    auto doc = cbor::decode(kv.value_cbor);
    ZT_TRY(doc);
    enc.string(kv.key);
    ZT_TRY(enc.value(kv.key, kv.type, *doc, 0, true));
    if (kv.key == "general.alignment") {
      const cbor::Node& n = doc->root();
      ZT_FAIL_IF(
          kv.type != "uint32" || n.kind != cbor::Kind::uint || n.u == 0 || (n.u & (n.u - 1)) != 0,
          argument, "%s: general.alignment must be a uint32 power of two", p);
      // Every tensor is padded to it: a tiny input must not ask for
      // gigabytes of padding (ggml uses 32; page-sized is the most any
      // reader gains from).
      ZT_FAIL_IF(n.u > Limits::gguf_alignment, argument,
                 "%s: general.alignment %llu is more than %llu (every tensor is padded to it)", p,
                 static_cast<unsigned long long>(n.u),
                 static_cast<unsigned long long>(Limits::gguf_alignment));
      alignment = n.u;
    }
  }
  std::unordered_set<std::string_view> names;
  uint64_t offset = 0;
  for (const GgufTensorEntry& t : tensors) {
    ZT_FAIL_IF(!names.insert(t.name).second, argument, "%s: tensor \"%s\" appears twice", p,
               t.name.c_str());
    enc.string(t.name);
    enc.le<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) enc.le<uint64_t>(*d);
    enc.le<uint32_t>(t.type->id);
    enc.le<uint64_t>(offset);
    offset += (t.nbytes + alignment - 1) / alignment * alignment;
  }
  head.append((alignment - head.size() % alignment) % alignment, '\0');
  auto out = OutputFile::create(path);
  ZT_TRY(out);
  ZT_TRY(out->write(std::span(reinterpret_cast<const uint8_t*>(head.data()), head.size())));
  static constexpr uint8_t kZeros[256] = {};
  for (size_t i = 0; i < tensors.size(); ++i) {
    uint64_t written = 0;
    const GgufSink sink = [&](std::span<const uint8_t> piece) -> Result<void> {
      written += piece.size();
      return out->write(piece);
    };
    ZT_TRY(write_tensor(i, sink));
    ZT_FAIL_IF(written != tensors[i].nbytes, invalid,
               "%s: tensor \"%s\": %llu bytes delivered, %llu announced", p,
               tensors[i].name.c_str(), static_cast<ull>(written),
               static_cast<ull>(tensors[i].nbytes));
    for (uint64_t pad = (alignment - written % alignment) % alignment; pad > 0;) {
      const uint64_t n = std::min<uint64_t>(pad, sizeof kZeros);
      ZT_TRY(out->write(std::span(kZeros, n)));
      pad -= n;
    }
  }
  return out->publish();
}

}  // namespace zt::foreign
