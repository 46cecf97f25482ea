// The manifest parser's state, shared by the files of each generation:
// parse_v1.cpp (1.1.x, 1.2.x and later 1.x, streamed while decoding),
// parse_v2.cpp (v2, streamed the same way),
// upgrade_v100.cpp (1.0.x) and upgrade_v010.cpp (0.1.0), over the common
// rules in parser.cpp. Internal to src/manifest.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cbor/cbor_item.h"
#include "cbor/cbor_value.h"
#include "manifest/manifest.h"

namespace zt {

using cbor::Document;
using cbor::Kind;

struct Version {
  uint64_t major = 0, minor = 0, patch = 0;
};

// "1.2.0", "1.2.0-rc1"; with patch_optional also "1.0".
std::optional<Version> parse_version(std::string_view s, bool patch_optional);

// How a message names a manifest item: object "w", tensor "w", object
// "w": component "r", or a text as it is ("manifest"). Spelled out only
// when a message uses it (c_str): building it for every object and
// component of a manifest cost two allocations an object on each open.
// The views are the parser's input, alive while it parses.
class ItemName {
 public:
  ItemName(const char* text) : text_(text) {}  // NOLINT: a literal names the item as it is
  ItemName(std::string_view kind, std::string_view name) : kind_(kind), name_(name) {}
  ItemName(std::string_view kind, std::string_view name, std::string_view role)
      : kind_(kind), name_(name), role_(role), has_role_(true) {}
  const char* c_str() const;

 private:
  std::string_view kind_, name_, role_;
  bool has_role_ = false;
  mutable std::string text_;
};

class Parser {
 public:
  Parser(Generation gen, Document doc) {
    m_.generation = gen;
    held_doc_ = std::move(doc);
    doc_ = &held_doc_;
    m_.decoded_nodes = held_doc_.size();
  }
  explicit Parser(Generation gen) { m_.generation = gen; }
  Result<Manifest> run();
  Result<Manifest> run_streaming(std::span<const uint8_t> bytes);

 private:
  const cbor::Node& node(uint32_t i) const { return doc_->node(i); }
  bool is_text(uint32_t i) const { return i && node(i).kind == Kind::text; }
  bool is_uint(uint32_t i) const { return i && node(i).kind == Kind::uint; }
  bool is_map(uint32_t i) const { return i && node(i).kind == Kind::map; }
  // A map as nodes, or a map value kept as its encoded bytes.
  bool is_any_map(uint32_t i) const { return i && kind_of(i) == Kind::map; }
  Kind kind_of(uint32_t i) const {
    if (node(i).kind != Kind::encoded) return node(i).kind;
    const auto s = cbor::scalar(encoded_bytes(i));
    return s ? s->kind : Kind::encoded;
  }
  std::span<const uint8_t> encoded_bytes(uint32_t i) const {
    const std::string_view b = node(i).str;
    return {reinterpret_cast<const uint8_t*>(b.data()), b.size()};
  }
  bool is_null_or_absent(uint32_t i) const { return !i || node(i).kind == Kind::null; }
  uint32_t get(uint32_t map, std::string_view key) const { return doc_->find(map, key); }
  // The values of `keys` in `map` (0 where absent), found in one pass over
  // its entries: a get() a key scans them all, and a component's ten
  // lookups showed in an open's profile. The decoder refused repeated
  // keys, so each is found once.
  template <size_t N>
  std::array<uint32_t, N> fields(uint32_t map, const std::array<std::string_view, N>& keys) const {
    std::array<uint32_t, N> out{};
    (void)for_each_entry(map, [&](std::string_view k, uint32_t v) -> Result<void> {
      for (size_t i = 0; i < N; ++i)
        if (k == keys[i]) {
          out[i] = v;
          break;
        }
      return {};
    });
    return out;
  }

  template <typename F>
  Result<void> for_each_entry(uint32_t map, F&& f) const {
    const uint32_t n = node(map).count;
    uint32_t k = Document::first_child(map);
    for (uint32_t p = 0; p < n; ++p) {
      const uint32_t v = doc_->next(k);
      ZT_TRY(f(node(k).str, v));
      k = doc_->next(v);
    }
    return {};
  }

  Attributes attributes_of(uint32_t map);
  Attributes made_attributes(std::vector<uint8_t> map);
  Result<void> check_components_count(const ItemName& what, uint32_t comps) const;
  Result<uint32_t> parse_v1_header();
  Result<void> parse_v1();
  bool take_streamed_object(const Document& d, uint32_t map, uint32_t key, uint32_t value);
  Result<void> parse_v100();
  Result<void> add_generator(std::string_view generator);
  Result<void> parse_v010();
  Result<std::vector<uint64_t>> parse_shape(const ItemName& what, uint32_t shape) const;
  // What every generation's object shares: a map with a name and a shape,
  // set in `o` (filled in place: an Object moved from call to call cost
  // five moves an object).
  Result<void> parse_object_shape(const ItemName& what, std::string_view name, uint32_t map,
                                  Object& o) const;
  // What a 1.x object and a 1.0.x tensor share: that, and a format text. `what` names it in
  // messages ("object \"w\"").
  Result<void> parse_object_head(const ItemName& what, std::string_view name, uint32_t map,
                                 Object& o) const;
  Result<void> parse_object_v1(std::string_view name, uint32_t od);
  // Fills `c`, a new component of the object being parsed (dropped with it on a refusal).
  Result<void> parse_component_v1(std::string_view obj, std::string_view role, uint32_t cd,
                                  Component& c);
  Result<void> parse_tensor_v100(std::string_view name, uint32_t td);
  Result<void> parse_entry_v010(size_t i, uint32_t e);
  // A part's shard name, resolved once the whole table is known.
  struct PendingShard {
    size_t object = 0, component = 0;
    std::string name;
  };
  Result<uint32_t> parse_v2_header();
  Result<void> parse_v2();
  Result<void> parse_object_v2(std::string_view name, uint32_t od);
  Result<Component> parse_part_v2(std::string_view obj, std::string_view role, uint32_t pd,
                                  PendingShard at);
  Result<void> parse_shards_v2(uint32_t table);
  Result<void> resolve_shards_v2();
  Result<void> check_attributes_v2(const ItemName& what, uint32_t map, Attributes& out);
  Result<uint32_t> parse_header();
  Result<void> parse_object(std::string_view name, uint32_t od);
  Result<void> set_encoding(Component& c, const ItemName& where, uint32_t enc);
  Result<void> add_object(Object&& o);
  Result<void> check_name(std::string_view what, std::string_view name) const;
  Result<void> check_c_text(const ItemName& where, const char* field, uint32_t text) const;

  Manifest m_;
  // The decoded manifest, while it is parsed: what the model needs is copied
  // out of it, so a reader does not hold its nodes (a v2 shard table's cost
  // ~190 bytes an entry for the reader's life).
  Document held_doc_;
  const Document* doc_ = nullptr;  // held_doc_, or the decoder's while streaming
  bool streaming_started_ = false;
  std::optional<Error> streamed_error_;  // the first streamed object refused
  std::vector<PendingShard> pending_shards_;
};

}  // namespace zt
