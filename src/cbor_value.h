// A decoded CBOR document as a flat tree of nodes ("tape"): one allocation
// for the whole manifest, strings viewed in place in the manifest bytes.
// Decoding uses libcbor's streaming decoder; this file adds the rules of
// zTensor manifests: bounded depth and item count, no duplicate map keys,
// text-only map keys, UTF-8 text, no trailing bytes.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "error.h"

namespace zt::cbor {

enum class Kind : uint8_t { null, undefined, simple, boolean, uint, negint, float_, text, bytes, array, map };

struct Node {
  Kind kind = Kind::null;
  bool flag = false;     // boolean value
  uint32_t count = 0;    // array items, or map pairs
  uint32_t end = 0;      // index one past this node's subtree
  uint64_t u = 0;        // uint value; negint n stands for -1 - n; simple value
  double f = 0;          // float value
  std::string_view str;  // text or bytes
};

class Document {
 public:
  const Node& node(uint32_t i) const { return nodes_[i]; }
  const Node& root() const { return nodes_[0]; }
  uint32_t size() const { return static_cast<uint32_t>(nodes_.size()); }

  // First child of a container node; children follow each other via `end`.
  static uint32_t first_child(uint32_t i) { return i + 1; }
  uint32_t next(uint32_t i) const { return nodes_[i].end; }
  // Value node of `key` in a map node, or 0 when absent (0 is never a value).
  uint32_t find(uint32_t map, std::string_view key) const;

 private:
  friend class Builder;
  std::vector<Node> nodes_;
  std::deque<std::string> owned_;  // joined chunks of indefinite strings
};

// Decodes exactly one CBOR item covering all of `bytes`. Errors:
// format (not CBOR, truncated, trailing bytes, duplicate key, bad UTF-8),
// invalid (a map key that is not text), limit (depth or item count).
// The Document views `bytes`, which must outlive it.
Result<Document> decode(std::span<const uint8_t> bytes);

bool is_valid_utf8(std::string_view s);

}  // namespace zt::cbor
