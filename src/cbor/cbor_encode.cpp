#include "cbor/cbor_encode.h"

#include <cbor.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_set>

#include "base/json_text.h"
#include "cbor/cbor_item.h"
#include "cbor/cbor_value.h"

namespace zt {

template <typename F>
void CborWriter::head(F&& encode) {
  unsigned char buf[16];
  const size_t n = encode(buf, sizeof buf);
  out_.insert(out_.end(), buf, buf + n);
}

void CborWriter::map(size_t pairs) {
  head([&](unsigned char* b, size_t n) { return cbor_encode_map_start(pairs, b, n); });
}
void CborWriter::array(size_t items) {
  head([&](unsigned char* b, size_t n) { return cbor_encode_array_start(items, b, n); });
}
void CborWriter::text(std::string_view s) {
  head([&](unsigned char* b, size_t n) { return cbor_encode_string_start(s.size(), b, n); });
  out_.insert(out_.end(), s.begin(), s.end());
}
void CborWriter::bytes(std::string_view s) {
  head([&](unsigned char* b, size_t n) { return cbor_encode_bytestring_start(s.size(), b, n); });
  out_.insert(out_.end(), s.begin(), s.end());
}
void CborWriter::uint(uint64_t v) {
  head([&](unsigned char* b, size_t n) { return cbor_encode_uint(v, b, n); });
}
void CborWriter::integer(int64_t v) {
  if (v >= 0) return uint(static_cast<uint64_t>(v));
  // CBOR stores -1 - n.
  const uint64_t n = static_cast<uint64_t>(-(v + 1));
  head([&](unsigned char* b, size_t len) { return cbor_encode_negint(n, b, len); });
}
void CborWriter::f64(double v) {
  head([&](unsigned char* b, size_t n) { return cbor_encode_double(v, b, n); });
}
void CborWriter::f32(float v) {
  head([&](unsigned char* b, size_t n) { return cbor_encode_single(v, b, n); });
}
void CborWriter::f16(float v) {
  head([&](unsigned char* b, size_t n) { return cbor_encode_half(v, b, n); });
}
void CborWriter::boolean(bool v) {
  head([&](unsigned char* b, size_t n) { return cbor_encode_bool(v, b, n); });
}
void CborWriter::null() {
  head([&](unsigned char* b, size_t n) { return cbor_encode_null(b, n); });
}
void CborWriter::undefined() {
  head([&](unsigned char* b, size_t n) { return cbor_encode_undef(b, n); });
}
void CborWriter::negint(uint64_t v) {
  head([&](unsigned char* b, size_t n) { return cbor_encode_negint(v, b, n); });
}
void CborWriter::simple(uint8_t v) {
  head([&](unsigned char* b, size_t n) { return cbor_encode_ctrl(v, b, n); });
}

void encode_value(const cbor::Document& doc, uint32_t i, CborWriter& w) {
  const cbor::Node& n = doc.node(i);
  switch (n.kind) {
    case cbor::Kind::null:
      return w.null();
    case cbor::Kind::undefined:
      return w.undefined();
    case cbor::Kind::simple:
      return w.simple(static_cast<uint8_t>(n.u));
    case cbor::Kind::boolean:
      return w.boolean(n.flag);
    case cbor::Kind::uint:
      return w.uint(n.u);
    case cbor::Kind::negint:
      return w.negint(n.u);
    case cbor::Kind::float_:
      return w.f64(n.f);
    case cbor::Kind::text:
      return w.text(n.str);
    case cbor::Kind::bytes:
      return w.bytes(n.str);
    case cbor::Kind::array: {
      w.array(n.count);
      uint32_t k = cbor::Document::first_child(i);
      for (uint32_t c = 0; c < n.count; ++c, k = doc.next(k)) encode_value(doc, k, w);
      return;
    }
    case cbor::Kind::map: {
      w.map(n.count);
      uint32_t k = cbor::Document::first_child(i);
      for (uint32_t c = 0; c < 2 * n.count; ++c, k = doc.next(k)) encode_value(doc, k, w);
      return;
    }
    case cbor::Kind::encoded: {
      // Checked by the decoder that kept it, so re-encoding cannot fail; if
      // it did, the bytes as they were are still the same value.
      const auto bytes = std::span(reinterpret_cast<const uint8_t*>(n.str.data()), n.str.size());
      CborWriter item;
      if (cbor::transcode(bytes, item)) return w.raw(item.bytes());
      return w.raw(bytes);
    }
  }
}

Result<void> check_attribute_map(std::span<const uint8_t> bytes, size_t max_depth) {
  // Every rule of the decoder, with the map's values kept as their encoded
  // bytes (a node each), not as a node per item: a GGUF tokenizer array of
  // 32 million numbers made a 1 GB tape here, for a check.
  auto doc =
      cbor::decode(bytes, nullptr, [](std::span<const std::string_view>, const cbor::ValueHead&) {
        return cbor::Decision(cbor::Keep::encoded);
      });
  // Too deep (or too many items) for the decoder is a limit, as one level
  // past max_depth is; malformed CBOR is the caller's argument.
  if (!doc)
    return make_error(doc.error().status == Status::limit ? Status::limit : Status::argument,
                      "attributes: %s", doc.error().message.c_str());
  ZT_FAIL_IF(doc->node(0).kind != cbor::Kind::map, argument, "attributes must be a CBOR map");
  const auto depth = cbor::item_depth(bytes);
  ZT_TRY(depth);
  ZT_FAIL_IF(*depth > max_depth, limit,
             "attributes nest %zu levels deep, more than the %zu allowed here", *depth, max_depth);
  return {};
}

namespace {

using OJson = nlohmann::ordered_json;

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

// Standard or URL-safe alphabet, padding optional.
std::optional<std::string> base64_decode(std::string_view s) {
  while (!s.empty() && s.back() == '=') s.remove_suffix(1);
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (const char c : s) {
    const int v = base64_value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

bool is_bytes_object(const OJson& j) {
  return j.is_object() && j.size() == 1 && j.begin().key() == "$bytes" &&
         j.begin().value().is_string();
}

// How a JSON object spells a byte string. Text from users uses the
// {"$bytes": "<base64>"} convention; values built in memory (foreign
// metadata) carry bytes as JSON binary, and their objects are taken
// literally: a safetensors key "$bytes" is a key, not a spelling.
enum class BytesSpelling { dollar_bytes, binary_only };

Result<void> encode(const OJson& j, CborWriter& w, BytesSpelling spelling) {
  switch (j.type()) {
    case OJson::value_t::null:
      w.null();
      return {};
    case OJson::value_t::boolean:
      w.boolean(j.get<bool>());
      return {};
    case OJson::value_t::number_unsigned:
      w.uint(j.get<uint64_t>());
      return {};
    case OJson::value_t::number_integer:
      w.integer(j.get<int64_t>());
      return {};
    case OJson::value_t::number_float:
      w.f64(j.get<double>());
      return {};
    case OJson::value_t::string:
      w.text(j.get_ref<const std::string&>());
      return {};
    case OJson::value_t::array:
      w.array(j.size());
      for (const auto& x : j) ZT_TRY(encode(x, w, spelling));
      return {};
    case OJson::value_t::object: {
      if (spelling == BytesSpelling::dollar_bytes && is_bytes_object(j)) {
        const auto b = base64_decode(j.begin().value().get_ref<const std::string&>());
        ZT_FAIL_IF(!b, argument, "attributes: \"$bytes\" is not base64");
        w.bytes(*b);
        return {};
      }
      w.map(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) {
        w.text(it.key());
        ZT_TRY(encode(it.value(), w, spelling));
      }
      return {};
    }
    case OJson::value_t::binary: {
      const auto& b = j.get_binary();
      w.bytes(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
      return {};
    }
    default:
      return make_error(Status::argument, "attributes: a JSON value of an unsupported kind");
  }
}

}  // namespace

size_t json_nesting_depth(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char ch : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (ch == '\\')
        escaped = true;
      else if (ch == '"')
        in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((ch == ']' || ch == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

Result<std::vector<uint8_t>> json_value_to_cbor(const nlohmann::ordered_json& j) {
  ZT_FAIL_IF(!j.is_object(), argument, "attributes: the JSON value is not an object");
  CborWriter w;
  ZT_TRY(encode(j, w, BytesSpelling::binary_only));
  return w.take();
}

Result<std::vector<uint8_t>> json_object_to_cbor(std::string_view json, size_t max_depth) {
  const size_t depth = json_nesting_depth(json);
  ZT_FAIL_IF(depth > max_depth, limit,
             "attributes: JSON nests %zu levels deep, more than the %zu a manifest allows here",
             depth, max_depth);
  // A key given twice in one object would keep one value and lose the
  // other: refused, as the CBOR form refuses a duplicate key.
  JsonTextFaults faults;
  OJson j = parse_json_checking_keys<OJson>(json, faults);
  ZT_FAIL_IF(j.is_discarded(), argument, "attributes: not valid JSON text");
  ZT_FAIL_IF(faults.repeated, argument, "attributes: key \"%s\" appears twice in one JSON object",
             printable(std::string_view(faults.repeated->key).substr(0, 200)).c_str());
  // An integer wider than 64 bits would be stored as a rounded double.
  ZT_FAIL_IF(faults.wide_integer, argument, "attributes: %s; give it as text",
             describe_wide_integer(*faults.wide_integer).c_str());
  ZT_FAIL_IF(!j.is_object() || is_bytes_object(j), argument,
             "attributes: the JSON text is not an object");
  CborWriter w;
  ZT_TRY(encode(j, w, BytesSpelling::dollar_bytes));
  return w.take();
}

}  // namespace zt
