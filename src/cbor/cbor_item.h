// Reading one encoded CBOR item in place, without building a tree.
//
// A manifest may keep values it does not model (attributes, unknown fields)
// as their encoded bytes instead of as nodes of a cbor::Document. The
// functions here read such an item directly: they walk its heads one at a
// time with libcbor's streaming decoder (cbor_stream_decode, one head per
// call, as the manifest decoder does) and hand each value to the caller or
// to the output as they pass it. Nothing is kept per item, so the memory a
// call needs is bounded by the item's nesting depth (one small frame per
// level, and the depth is at most Limits::cbor_depth), not by its size: an
// attribute holding a million numbers costs what one holding three does.
// The only allocations sized by the input are the joined chunks of an
// indefinite-length string, and only where the string itself is asked for
// (a map key, a scalar, JSON or CBOR output).
//
// Every function accepts exactly the items cbor::decode accepts, applying
// the same rules to the item: well-formed CBOR (RFC 8949), definite or
// indefinite lengths, tags ignored (several may stack; a tag's content is
// the value), chunks of an indefinite string all definite strings of its
// major type, map keys text strings, text valid UTF-8, containers nested at
// most Limits::cbor_depth deep (the item's outermost container counts as 1).
// Violations are Status::format, nesting too deep is Status::limit, an item
// of the wrong kind for the call (a map expected) is Status::invalid. Input
// is never trusted: truncation or garbage returns an error, never reads out
// of bounds, recurses unboundedly or loops. Two rules of cbor::decode need
// memory per item and are NOT checked here: duplicate map keys (callers pass
// items that a decoder checked already) and the item count limit.
//
// Only the first item of the span is read; bytes after it are ignored (see
// item_size to find where it ends).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/error.h"
#include "cbor/cbor_encode.h"
#include "cbor/cbor_value.h"

namespace zt::cbor {

// The libcbor 0.8 workaround shared with the manifest decoder. libcbor 0.8's
// cbor_stream_decode returns CBOR_DECODER_ERROR for heads RFC 8949 allows:
// the one-byte tags 6..20 (0xC6..0xD4), the one-byte simple values 0..19
// (0xE0..0xF3) and every two-byte simple value (0xF8 xx). They are single
// heads without content, so they are decoded here instead. If the byte at
// bytes[pos] starts such a head, says what it is; nullopt for every other
// byte (libcbor decodes those) and when pos is past the end.
struct UnassignedHead {
  bool is_tag;      // a tag (its number does not matter: tags are ignored)
  uint8_t simple;   // otherwise the simple value
  size_t consumed;  // bytes of the head (when malformed: the bytes there are, 1 or 2)
  bool malformed;   // 0xF8 with a value below 32 (not well-formed), or 0xF8 truncated
};
std::optional<UnassignedHead> unassigned_head(std::span<const uint8_t> bytes, size_t pos);

// Size in bytes of the first item of `bytes`, its tags included. Walks (and
// so checks) the whole item.
Result<size_t> item_size(std::span<const uint8_t> bytes);

// Nesting depth of the first item of `bytes`: 0 for a scalar, 1 for a
// container of scalars, 1 more for each level within. Walks (and so checks)
// the whole item in memory of its depth.
Result<size_t> item_depth(std::span<const uint8_t> bytes);

// Items in the first item of `bytes`, as a manifest's are counted against
// ZT_MAX_CBOR_ITEMS: itself and every key, value and element within, an
// indefinite-length string once, tags not. Walks the whole item.
Result<uint64_t> item_count(std::span<const uint8_t> bytes);

// One head's value: for scalars the value, for containers kind + count
// (definite) or the indefinite flag.
struct Scalar {
  Kind kind = Kind::null;
  uint64_t u = 0;           // uint value; negint n means -1-n; simple value; container count
  double f = 0;             // float value (half and single floats widened)
  bool flag = false;        // boolean
  bool indefinite = false;  // container (or string) of indefinite length
  std::string_view str;     // text/bytes: views the item's bytes (definite) or `joined`
  std::string joined;       // storage for an indefinite string

  // Copies and moves keep `str` valid: when it views `joined`, it views the
  // new object's `joined`.
  Scalar() = default;
  Scalar(const Scalar& o) { *this = o; }
  Scalar(Scalar&& o) noexcept { *this = std::move(o); }
  Scalar& operator=(const Scalar& o);
  Scalar& operator=(Scalar&& o) noexcept;
};
// The first item's value when it is a scalar (tags skipped, an indefinite
// string joined and checked). For an array or map only its kind and count
// (0 and indefinite when indefinite-length): its items are neither read nor
// checked, so this costs one head whatever the container holds; a definite
// count larger than the bytes left is refused as truncation.
Result<Scalar> scalar(std::span<const uint8_t> item);

// Calls f(key, value_bytes) for each entry of the map that is the first item
// of `map`, in order. Keys must be text (Status::format otherwise), definite
// or indefinite (joined); `value` is the entry's encoded value, tags
// included, viewing `map`. Both are valid during the call only. Stops at and
// returns f's first error; otherwise the whole map is checked, and an error
// found after some entries is returned after f saw them.
// Status::invalid when the item is not a map.
Result<void> for_each_entry(
    std::span<const uint8_t> map,
    const std::function<Result<void>(std::string_view key, std::span<const uint8_t> value)>& f);

// Calls f(item_bytes) for each item of the array that is the first item of
// `array`, in order; `item` is encoded (tags included, viewing `array`).
// Stops at and returns f's first error. Status::invalid when the item is not
// an array.
Result<void> for_each_item(std::span<const uint8_t> array,
                           const std::function<Result<void>(std::span<const uint8_t> item)>& f);

// The encoded value (tags included, viewing `map`) of the first entry whose
// key is `key` in that map; nullopt when absent. The whole map is checked,
// found or not. Status::invalid when the item is not a map.
Result<std::optional<std::span<const uint8_t>>> find_entry(std::span<const uint8_t> map,
                                                           std::string_view key);

// Number of entries of a map / items of an array. The whole item is walked
// and checked (which is how indefinite ones are counted).
// Status::invalid when the item is not a container.
Result<uint64_t> container_count(std::span<const uint8_t> item);

// Re-encodes the first item into w exactly as encode_value would encode the
// same decoded value: definite lengths, floats as f64, tags dropped,
// indefinite strings joined, integers and simple values in their shortest
// form. An indefinite container is walked twice (once to count its items
// for the definite head), so time grows with the depth of indefinite
// nesting; memory does not. On error w holds a partial item.
Result<void> transcode(std::span<const uint8_t> item, CborWriter& w);

// The first item of `item` again, in core deterministic encoding (RFC 8949
// §4.2.1, which cbor/deterministic.h checks): definite lengths, shortest
// heads, map keys sorted by their encoded bytes, floats in the narrowest
// exact width (NaN as 0xF9 0x7E 0x00). Values are kept exactly. Refused:
// tags, undefined and simple values other than false, true and null
// (Status::invalid, as check_plain_values), two keys that encode the same
// (Status::invalid), nesting deeper than max_depth (Status::limit),
// malformed input (Status::format). How writers make attributes fit for a
// v2 manifest. transcode and this are one walker with two forms.
Result<std::vector<uint8_t>> canonical_encoding(std::span<const uint8_t> item, unsigned max_depth);

// Appends the item as JSON text exactly as dump_json (base/json_text.h)
// prints nlohmann's value of it (tests/unit/cbor_item_test.cpp has that
// oracle, cbor_to_json): null for null, undefined and simple values, NaN and infinities
// as null (as nlohmann prints them), negative integers below INT64_MIN as
// doubles, byte strings as {"$bytes":"<base64>"}, map keys in file order
// (a key repeated in the item, which cbor::decode refuses, is printed
// twice). Scalars are printed by nlohmann, one at a time; no JSON tree of a
// container is built. On error `out` holds a partial text.
//
// With style.indent >= 0 the text is laid out as nlohmann's dump(indent)
// lays it out, as if the item sat `base_level` levels deep in a larger
// document (so that it can be put into one). Text longer than max_bytes
// stops the walk with Status::limit, `out` holding at least max_bytes of it:
// how a value is shown clipped without its whole text ever existing.
//
// With a drain, the text is handed on as it is made: whenever `out` holds
// 64 KiB or more, drain(out) is called and must take the text (write it
// somewhere and clear `out`), so that a value of any size is printed in
// bounded memory. max_bytes counts what `out` holds, so a drain is for
// unclipped text only.
struct JsonStyle {
  int indent = -1;  // spaces per level; -1: compact
  unsigned base_level = 0;
  size_t max_bytes = SIZE_MAX;
  std::function<void(std::string&)> drain;
  // Values JSON has no word for as CBOR's diagnostic notation writes them
  // (RFC 8949 §8: NaN, Infinity, -Infinity, undefined, simple(n)) instead
  // of null: for text that must not lose them (safetensors metadata, what
  // `zt info` shows). Python's json reads the first three back.
  bool diagnostic_specials = false;
};
Result<void> append_json(std::span<const uint8_t> item, std::string& out,
                         const JsonStyle& style = {});

}  // namespace zt::cbor
