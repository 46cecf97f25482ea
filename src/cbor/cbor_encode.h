// Deterministic CBOR output for manifests (libcbor's head encoders), and
// JSON attribute text as CBOR.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace zt {

namespace cbor {
class Document;
}

class CborWriter {
 public:
  void map(size_t pairs);
  void array(size_t items);
  void text(std::string_view s);
  void bytes(std::string_view s);
  void uint(uint64_t v);
  void integer(int64_t v);
  void f64(double v);
  void f32(float v);
  void f16(float v);  // v must be exactly representable as a half (or NaN: 0xF9 0x7E00)
  void boolean(bool v);
  void null();
  void undefined();
  void negint(uint64_t n);  // the CBOR negative integer -1 - n (down to -2^64)
  void simple(uint8_t v);   // a simple value other than false, true, null, undefined
  // Appends bytes that already are one encoded CBOR item.
  void raw(std::span<const uint8_t> item) { out_.insert(out_.end(), item.begin(), item.end()); }

  const std::vector<uint8_t>& bytes() const { return out_; }
  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  template <typename F>
  void head(F&& encode);
  std::vector<uint8_t> out_;
};

// Encodes the value at `node` of `doc`, with everything under it, again:
// the same value (integers from -2^64 to 2^64 - 1 exactly, floats as doubles
// holding the same value, NaN and infinities included, byte strings, text,
// undefined and simple values as they were). Attributes are copied this way
// from file to file, never through JSON.
void encode_value(const cbor::Document& doc, uint32_t node, CborWriter& w);

// Checks that `cbor` is one well-formed CBOR map with text keys, nested at
// most max_depth deep (the map counts as 1): what a writer may store as
// attributes. Status::argument otherwise.
Result<void> check_attribute_map(std::span<const uint8_t> cbor, size_t max_depth);

// Parses JSON text that must be an object and encodes it as a CBOR map:
// integers stay integers, floats are doubles, {"$bytes": "<base64>"} is a
// byte string. Status::argument on bad JSON or a non-object; Status::limit
// when arrays and objects nest deeper than max_depth (the top object counts
// as 1), checked before parsing, so that what a writer stores stays within
// the reader's CBOR depth limit and no recursive walk runs deep.
Result<std::vector<uint8_t>> json_object_to_cbor(std::string_view json, size_t max_depth);

// The same from a JSON value in memory, without going through text: floats
// that JSON text cannot hold (NaN, infinities) stay floats, JSON binary
// values become byte strings, and objects are maps whatever their keys (no
// "$bytes" convention: foreign keys are data). How the metadata
// of foreign files (GGUF, safetensors) becomes attributes. The depth is the
// writer's to check.
Result<std::vector<uint8_t>> json_value_to_cbor(const nlohmann::ordered_json& j);

// Deepest nesting of JSON arrays and objects in text (strings skipped).
size_t json_nesting_depth(std::string_view text);

}  // namespace zt
