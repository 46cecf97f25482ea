// A decoded CBOR document as a flat tree of nodes ("tape"): one allocation
// for the whole manifest, strings viewed in place in the manifest bytes.
// Decoding uses libcbor's streaming decoder; this file adds the rules of
// zTensor manifests: bounded depth and item count, no duplicate map keys,
// text-only map keys, UTF-8 text, no trailing bytes. A caller's policy may
// keep chosen map values as their encoded bytes (one node) or drop them:
// they are checked by the same rules but never become nodes, so what a
// manifest holds beyond the model (attributes, unknown fields) costs no
// memory per item.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/error.h"
#include "base/zt_limits.h"

namespace zt::cbor {

enum class Kind : uint8_t {
  null,
  undefined,
  simple,
  boolean,
  uint,
  negint,
  float_,
  text,
  bytes,
  array,
  map,
  encoded  // a value kept as its encoded CBOR bytes (`str`), checked but not built
};

// 32 bytes: `end` and `kind` share a word (the item limit keeps indexes
// below 2^27; base/zt_limits.h checks it), which a manifest of a million
// objects feels.
struct Node {
  std::string_view str;  // text or bytes
  union {
    uint64_t u = 0;  // uint value; negint n stands for -1 - n; simple value
    double f;        // float value
  };
  uint32_t count = 0;     // array items, or map pairs (those a policy dropped left out)
  uint32_t end : 27 = 0;  // index one past this node's subtree
  Kind kind : 4 = Kind::null;
  bool flag : 1 = false;  // boolean value

  void set_end(uint32_t e) { end = e & ((1u << 27) - 1); }
};
static_assert(sizeof(Node) == 32);

// Nodes in fixed-size blocks: growing never copies the tape, so the peak
// memory of a large manifest is its tape plus one block, not twice the tape.
// Blocks are allocated uninitialised and each node is constructed when it is
// pushed, so the unused tail of the last block never becomes resident.
class NodeArena {
 public:
  static constexpr uint32_t kShift = 14;
  static constexpr uint32_t kBlock = uint32_t{1} << kShift;

  const Node& operator[](uint32_t i) const { return *at(i); }
  Node& operator[](uint32_t i) { return *at(i); }
  uint32_t size() const { return size_; }
  Node& push() {
    if ((size_ >> kShift) == blocks_.size())
      blocks_.push_back(std::make_unique_for_overwrite<std::byte[]>(size_t{kBlock} * sizeof(Node)));
    Node* n = std::construct_at(slot(size_));
    ++size_;
    return *n;
  }
  // Forgets the nodes from index `n` on (their blocks stay for reuse).
  void truncate(uint32_t n) { size_ = n < size_ ? n : size_; }

 private:
  static_assert(std::is_trivially_destructible_v<Node>);
  Node* slot(uint32_t i) const {
    return reinterpret_cast<Node*>(blocks_[i >> kShift].get() +
                                   size_t{i & (kBlock - 1)} * sizeof(Node));
  }
  Node* at(uint32_t i) const { return std::launder(slot(i)); }

  std::vector<std::unique_ptr<std::byte[]>> blocks_;
  uint32_t size_ = 0;
};

class Document {
 public:
  const Node& node(uint32_t i) const { return nodes_[i]; }
  const Node& root() const { return nodes_[0]; }
  uint32_t size() const { return nodes_.size(); }

  // First child of a container node; children follow each other via `end`.
  static uint32_t first_child(uint32_t i) { return i + 1; }
  uint32_t next(uint32_t i) const { return nodes_[i].end; }
  // Value node of `key` in a map node, or 0 when absent (0 is never a value).
  uint32_t find(uint32_t map, std::string_view key) const;

 private:
  friend class Builder;
  NodeArena nodes_;
  std::deque<std::string> owned_;  // joined chunks of indefinite strings
};

// What the decoder keeps of one map value.
enum class Keep : uint8_t {
  nodes,    // the value as nodes
  encoded,  // one Kind::encoded node viewing the value's bytes
  nothing   // neither the value nor its key (the map's count leaves the pair out)
};
// The first head of a map value: its kind, and for a definite array or map
// its count.
struct ValueHead {
  Kind kind;
  uint64_t count;
  bool indefinite;
};
// What is kept of a value, and for an indefinite-length array or map kept
// as nodes the most items it may hold: one more is Status::limit as it
// arrives, so that a value whose definite count would have been refused by
// its head (and kept encoded for the caller to refuse) cannot instead grow
// a node per item by leaving its count out.
struct Decision {
  Keep keep;
  uint64_t max_items = UINT64_MAX;
  Decision(Keep k, uint64_t max = UINT64_MAX)
      : keep(k), max_items(max) {}  // NOLINT: a Keep is a Decision
};
// Decides, for each map value outside values kept encoded or dropped, what
// is kept. `path` holds the key of each enclosing map (an empty view for an
// array), outermost first; its last element is the value's own key.
using ValuePolicy = Decision (*)(std::span<const std::string_view> path, const ValueHead& head);

// Hands the entries of one map to the caller as each completes, so that
// the caller can turn them into its own model and let their nodes go: a
// manifest of a million objects never has its whole tape in memory. The
// map is the value of `root_key` in the root map (the manifest's
// "objects"). Its keys are still checked for duplicates.
struct EntrySink {
  std::string_view root_key;
  // Called with the document so far, the map node and the key and value
  // nodes of a completed entry. Returns whether the entry's nodes may be
  // dropped (true only if nothing keeps their indexes).
  std::function<bool(const Document&, uint32_t map, uint32_t key, uint32_t value)> on_entry;
};

// Decodes exactly one CBOR item covering all of `bytes`. Errors:
// format (not CBOR, truncated, trailing bytes, duplicate key, bad UTF-8),
// invalid (a map key that is not text), limit (depth or item count).
// The Document views `bytes`, which must outlive it. With a sink, the
// entries it drops are absent from the Document (its map keeps its count
// but no children); a decoding error is returned even if the sink has
// consumed entries before it.
// With a policy, map values are kept as it decides; every rule above still
// applies inside values kept encoded or dropped (their items count too).
Result<Document> decode(std::span<const uint8_t> bytes, const EntrySink* sink = nullptr,
                        ValuePolicy policy = nullptr);

bool is_valid_utf8(std::string_view s);

}  // namespace zt::cbor
