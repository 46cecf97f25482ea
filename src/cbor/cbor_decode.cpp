#include <cbor.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "base/zt_limits.h"
#include "cbor/cbor_item.h"
#include "cbor/cbor_value.h"

namespace zt::cbor {

uint32_t Document::find(uint32_t map, std::string_view key) const {
  const Node& m = nodes_[map];
  if (m.kind != Kind::map) return 0;
  uint32_t k = first_child(map);
  for (uint32_t p = 0; p < m.count; ++p) {
    const uint32_t v = next(k);
    if (nodes_[k].str == key) return v;
    k = next(v);
  }
  return 0;
}

bool is_valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* e = p + s.size();
  if (s.size() < 8) {  // most keys and short values: ASCII told by one OR of their bytes
    unsigned any = 0;
    for (const auto* q = p; q < e; ++q) any |= *q;
    if (any < 0x80) return true;
  }
  while (p < e) {
    // ASCII eight bytes at a time: names and keys mostly are (a byte at a
    // time this was 6% of opening a manifest of many objects).
    uint64_t eight = 0;
    while (e - p >= 8 && (std::memcpy(&eight, p, 8), (eight & 0x8080808080808080ULL) == 0)) p += 8;
    if (p == e) break;
    const unsigned c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    unsigned need = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      need = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      need = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      need = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (static_cast<size_t>(e - p) <= need) return false;
    for (unsigned i = 1; i <= need; ++i) {
      if ((p[i] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i] & 0x3F);
    }
    static constexpr uint32_t kMin[4] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[need] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    p += need + 1;
  }
  return true;
}

// Bytes of a head, from its initial byte (RFC 8949 3: the additional
// information 24..27 is followed by 1, 2, 4 or 8 bytes). libcbor decodes the
// head; this only says where it ends, which its callbacks do not.
size_t head_size(uint8_t initial) {
  const unsigned info = initial & 0x1Fu;
  return info < 24 ? 1 : info <= 27 ? 1 + (size_t{1} << (info - 24)) : 1;
}

// Builds a Document from libcbor's streaming callbacks, one head at a time.
class Builder {
 public:
  Builder(std::span<const uint8_t> bytes, const EntrySink* sink, ValuePolicy policy)
      : bytes_(bytes), sink_(sink), policy_(policy) {}

  Result<Document> run();

 private:
  static constexpr uint32_t kNoNode = UINT32_MAX;  // a container inside a muted value
  static constexpr size_t kFewKeys = 8;            // maps checked pairwise, not sorted

  struct Frame {
    uint32_t node;       // kNoNode while muted
    uint64_t remaining;  // items still expected (definite containers)
    bool indefinite;
    bool is_map;
    uint32_t keys_start;             // this map's first key in keys_
    uint32_t dropped = 0;            // pairs the policy dropped
    std::string_view key;            // the key of the value being decoded (maps with nodes)
    uint64_t max_seen = UINT64_MAX;  // indefinite: items (keys and values) it may hold
  };

  static Builder& self(void* ctx) { return *static_cast<Builder*>(ctx); }
  static const cbor_callbacks& callbacks();

  void fail(Status s, const char* what) {
    if (error_.status == Status::ok) error_ = make_error(s, "manifest: %s at byte %zu", what, pos_);
  }
  bool failed() const { return error_.status != Status::ok; }

  // Adds a leaf or container head as the next item of the current container.
  // Returns the node to fill in: a scratch node while muted.
  Node* add(Kind kind, std::string_view str = {}, uint64_t count = 0, bool indefinite = false);
  void close_items();  // pops every finished definite container
  void leaf(Kind kind, uint64_t u) {
    if (Node* n = add(kind)) n->u = u;
    close_items();
  }
  void open(Kind kind, uint64_t count, bool indefinite);
  void end_container(const Frame& f);
  void text_or_bytes(Kind kind, cbor_data data, size_t len);
  void string_start(Kind kind);
  void on_break();
  bool unassigned_head(size_t* consumed);
  bool opens_streamed_map(bool is_map) const;
  bool is_streamed(uint32_t node) const { return streamed_map_ != 0 && node == streamed_map_; }
  void streamed_item_done(uint32_t map, bool key);
  void record_key(std::string_view key);
  Result<void> check_duplicate_keys(size_t first);
  Decision decide(const ValueHead& head);
  void fail_over_cap(const Frame& f);
  void start_muting(Keep keep);
  void finish_muting();

  std::span<const uint8_t> bytes_;
  const EntrySink* sink_;
  ValuePolicy policy_;
  size_t pos_ = 0;
  size_t item_start_ = 0;  // first byte of the item being added
  size_t head_end_ = 0;    // one past the head being decoded (and a definite string's bytes)
  uint64_t items_ = 0;     // every item decoded, also those a sink dropped or a policy muted
  Document doc_;
  // The map whose entries go to the sink (0: none yet), and the key node of
  // its entry being decoded.
  uint32_t streamed_map_ = 0;
  uint32_t streamed_key_ = 0;
  // Keys of the open maps, innermost last: the top 32 bits of the key's
  // XXH3-64, then its offset. 8 bytes a key, whatever the key's size.
  std::vector<uint64_t> keys_;
  std::vector<Frame> stack_;
  std::vector<std::string_view> path_;  // per frame: its current key (maps), empty (arrays)
  // A value the policy keeps encoded or drops: no nodes are made while it is
  // decoded; it ends when the stack is back to mute_depth_.
  bool value_pending_ = false;  // the next item is a map value to decide on
  bool muting_ = false;
  Keep mute_keep_ = Keep::nodes;
  uint64_t pending_max_items_ = UINT64_MAX;  // the policy's cap for the container being opened
  size_t mute_depth_ = 0;
  size_t mute_start_ = 0;
  uint32_t mute_node_ = 0;
  Node scratch_;
  bool root_done_ = false;
  bool tag_pending_ = false;
  // Indefinite string being joined: kind, first byte and the chunks so far.
  bool in_string_ = false;
  Kind string_kind_ = Kind::text;
  size_t string_start_ = 0;
  std::string joined_;
  Error error_;
};

Node* Builder::add(Kind kind, std::string_view str, uint64_t count, bool indefinite) {
  if (failed()) return nullptr;
  if (in_string_) {
    fail(Status::format, "a chunk of an indefinite-length string is not a definite string");
    return nullptr;
  }
  if (root_done_) {
    fail(Status::format, "data after the manifest item");
    return nullptr;
  }
  if (items_ >= Limits::cbor_items) {
    fail(Status::limit, "more CBOR items than the limit");
    return nullptr;
  }
  // Keys sit at even item positions of a map (remaining counts down from
  // 2 * pairs in definite maps and up from 0 in indefinite ones).
  const bool is_key = !stack_.empty() && stack_.back().is_map && stack_.back().remaining % 2 == 0;
  if (is_key && kind != Kind::text) {
    error_ =
        make_error(Status::invalid, "manifest: a map key at byte %zu is not a text string", pos_);
    return nullptr;
  }
  tag_pending_ = false;
  ++items_;
  if (is_key) record_key(str);
  pending_max_items_ = UINT64_MAX;
  if (muting_) return &scratch_;
  if (value_pending_) {
    value_pending_ = false;
    const Decision d = decide(ValueHead{kind, count, indefinite});
    if (d.keep != Keep::nodes) {
      start_muting(d.keep);
      return &scratch_;
    }
    pending_max_items_ = d.max_items;
  }
  Node& n = doc_.nodes_.push();
  n.kind = kind;
  n.str = str;
  n.set_end(doc_.nodes_.size());
  return &n;
}

void Builder::record_key(std::string_view key) {
  const uint64_t hash = XXH3_64bits(key.data(), key.size()) >> 32;
  keys_.push_back(hash << 32 | item_start_);
}

// An indefinite-length container kept as nodes got one item more than its
// policy allows; it is named by the key it is the value of.
void Builder::fail_over_cap(const Frame& f) {
  std::string what = "an indefinite-length value of \"";
  if (path_.size() > 1) what += path_[path_.size() - 2];
  what += "\" holds more items than the limit of ";
  what += std::to_string(f.is_map ? f.max_seen / 2 : f.max_seen);
  fail(Status::limit, what.c_str());
}

Decision Builder::decide(const ValueHead& head) {
  // The sink's entries are the sink's to keep or drop.
  if (is_streamed(stack_.back().node)) return Keep::nodes;
  return policy_(path_, head);
}

void Builder::start_muting(Keep keep) {
  muting_ = true;
  mute_keep_ = keep;
  mute_depth_ = stack_.size();
  if (keep == Keep::encoded) {
    Node& n = doc_.nodes_.push();
    n.kind = Kind::encoded;
    n.set_end(doc_.nodes_.size());
    mute_node_ = doc_.nodes_.size() - 1;
    mute_start_ = item_start_;
  } else {
    // The key is the last node: the pair goes.
    doc_.nodes_.truncate(doc_.nodes_.size() - 1);
    ++stack_.back().dropped;
  }
}

void Builder::finish_muting() {
  muting_ = false;
  if (mute_keep_ == Keep::encoded) {
    doc_.nodes_[mute_node_].str = std::string_view(
        reinterpret_cast<const char*>(bytes_.data() + mute_start_), head_end_ - mute_start_);
  }
}

void Builder::close_items() {
  if (failed()) return;
  // One more item finished in the top container.
  for (;;) {
    if (muting_ && stack_.size() == mute_depth_) finish_muting();
    if (stack_.empty()) {
      root_done_ = true;
      return;
    }
    Frame& f = stack_.back();
    if (f.indefinite) {
      ++f.remaining;  // counts items seen, so keys sit at even positions
      if (f.remaining > f.max_seen) {
        fail_over_cap(f);
        return;
      }
    } else {
      --f.remaining;
    }
    const bool key_done = f.is_map && f.remaining % 2 == 1;
    if (key_done && f.node != kNoNode) {
      f.key = doc_.nodes_[doc_.nodes_.size() - 1].str;
      path_.back() = f.key;
      value_pending_ = policy_ != nullptr && !muting_;
    }
    if (is_streamed(f.node)) streamed_item_done(f.node, key_done);
    if (failed() || f.indefinite || f.remaining > 0) return;
    const Frame done = f;
    stack_.pop_back();
    path_.pop_back();
    end_container(done);
    if (failed()) return;
  }
}

// A container's last item is done (or its break read): its node learns its
// count and subtree end, and a map's keys are checked and forgotten.
void Builder::end_container(const Frame& f) {
  if (f.node != kNoNode) {
    Node& n = doc_.nodes_[f.node];
    if (f.indefinite) n.count = static_cast<uint32_t>(f.is_map ? f.remaining / 2 : f.remaining);
    n.count -= f.dropped;
    n.set_end(doc_.nodes_.size());
  }
  if (f.is_map) {
    auto r = check_duplicate_keys(f.keys_start);
    if (!r) error_ = std::move(r).error();
  }
}

void Builder::open(Kind kind, uint64_t count, bool indefinite) {
  const bool is_map = kind == Kind::map;
  if (!indefinite) {
    // Every item takes at least one byte: refuse counts the input cannot hold
    // before anything is sized by them.
    const uint64_t left = bytes_.size() - pos_;
    const uint64_t items = is_map ? count * 2 : count;
    if (count > left || items > left || count > UINT32_MAX) {
      fail(Status::format, "container claims more items than the manifest holds");
      return;
    }
  }
  if (stack_.size() + 1 > Limits::cbor_depth) {
    fail(Status::limit, "CBOR nesting deeper than the limit");
    return;
  }
  const bool streamed = opens_streamed_map(is_map);
  Node* n = add(kind, {}, count, indefinite);
  if (!n) return;
  // Keys and values both count in an indefinite map's frame.
  const uint64_t max_items = pending_max_items_;
  uint64_t max_seen = UINT64_MAX;
  if (indefinite && max_items != UINT64_MAX)
    max_seen = is_map ? 2 * std::min(max_items, UINT64_MAX / 4) : max_items;
  uint32_t idx = kNoNode;
  if (n != &scratch_) {
    n->count = static_cast<uint32_t>(count);
    idx = static_cast<uint32_t>(doc_.nodes_.size() - 1);
    if (streamed) streamed_map_ = idx;
  }
  if (!indefinite && count == 0) {
    close_items();
    return;
  }
  stack_.push_back(Frame{idx,
                         indefinite ? 0 : (is_map ? count * 2 : count),
                         indefinite,
                         is_map,
                         static_cast<uint32_t>(keys_.size()),
                         0,
                         {},
                         max_seen});
  path_.emplace_back();
}

void Builder::text_or_bytes(Kind kind, cbor_data data, size_t len) {
  if (failed()) return;
  std::string_view sv(reinterpret_cast<const char*>(data), len);
  if (in_string_) {
    if (kind != string_kind_) {
      fail(Status::format, "a chunk of an indefinite-length string has another major type");
      return;
    }
    // RFC 8949: each chunk of a text string is valid UTF-8 on its own.
    if (kind == Kind::text && !is_valid_utf8(sv)) {
      fail(Status::format, "a chunk of an indefinite-length text string is not valid UTF-8");
      return;
    }
    joined_.append(sv);
    return;
  }
  head_end_ = static_cast<size_t>(data - bytes_.data()) + len;
  if (kind == Kind::text && !is_valid_utf8(sv)) {
    fail(Status::format, "a text string is not valid UTF-8");
    return;
  }
  add(kind, sv);
  close_items();
}

void Builder::string_start(Kind kind) {
  if (failed()) return;
  if (in_string_) {
    fail(Status::format, "an indefinite-length string nested in another");
    return;
  }
  in_string_ = true;
  string_kind_ = kind;
  string_start_ = pos_;
  joined_.clear();
}

void Builder::on_break() {
  if (failed()) return;
  // A tag before an indefinite string tags the string: its break ends it.
  if (tag_pending_ && !in_string_) {
    fail(Status::format, "a tag without an item");
    return;
  }
  if (in_string_) {
    in_string_ = false;
    if (string_kind_ == Kind::text && !is_valid_utf8(joined_)) {
      fail(Status::format, "a text string is not valid UTF-8");
      return;
    }
    item_start_ = string_start_;
    Node* n = add(string_kind_, joined_);
    // Only a string that stays a node keeps its joined text.
    if (n && n != &scratch_) {
      doc_.owned_.push_back(std::move(joined_));
      n->str = doc_.owned_.back();
    }
    joined_ = std::string();
    close_items();
    return;
  }
  if (stack_.empty() || !stack_.back().indefinite) {
    fail(Status::format, "unexpected break byte");
    return;
  }
  const Frame f = stack_.back();
  if (f.is_map && f.remaining % 2 != 0) {
    fail(Status::format, "a map key without a value");
    return;
  }
  stack_.pop_back();
  path_.pop_back();
  end_container(f);
  close_items();
}

// The first map opened as the value of the sink's key in the root map.
bool Builder::opens_streamed_map(bool is_map) const {
  if (!sink_ || streamed_map_ || muting_ || !is_map || stack_.size() != 1 || !stack_[0].is_map)
    return false;
  // A value position of the root map: the item before is its (text) key.
  if (stack_[0].remaining % 2 != 1) return false;
  return stack_[0].key == sink_->root_key;
}

// Keys and values are whole items here: a key is one text node, and the
// value's subtree ends with the tape.
void Builder::streamed_item_done(uint32_t map, bool key) {
  if (failed()) return;
  if (key) {
    streamed_key_ = doc_.nodes_.size() - 1;
    return;
  }
  if (sink_->on_entry(doc_, map, streamed_key_, streamed_key_ + 1))
    doc_.nodes_.truncate(streamed_key_);
}

// Sorted by hash, then offset: keys with equal hashes are compared by their
// text, read again from the input (a hash says nothing about equality).
Result<void> Builder::check_duplicate_keys(size_t first) {
  const size_t n = keys_.size() - first;
  // A map of a few keys (a manifest's every object and component) whose
  // hashes all differ has no repeated key: told by comparing the hashes
  // pairwise, without the sort (which was 4% of opening 20,000 objects).
  bool distinct = n <= kFewKeys;  // and, so far, no two hashes equal
  for (size_t i = first; distinct && i < keys_.size(); ++i)
    for (size_t j = i + 1; distinct && j < keys_.size(); ++j)
      distinct = (keys_[i] >> 32) != (keys_[j] >> 32);
  if (n < 2 || distinct) {
    keys_.resize(first);
    return {};
  }
  const auto begin = keys_.begin() + static_cast<std::ptrdiff_t>(first);
  std::sort(begin, keys_.end());
  auto text_at = [&](uint64_t key) -> std::string {
    auto s = scalar(bytes_.subspan(static_cast<uint32_t>(key)));
    return s ? std::string(s->str) : std::string();
  };
  for (auto g = begin; g != keys_.end();) {
    auto e = g + 1;
    while (e != keys_.end() && (*e >> 32) == (*g >> 32)) ++e;
    if (e - g > 1) {
      std::vector<std::string> texts;
      for (auto k = g; k != e; ++k) texts.push_back(text_at(*k));
      std::sort(texts.begin(), texts.end());
      const auto dup = std::adjacent_find(texts.begin(), texts.end());
      if (dup != texts.end()) {
        const std::string shown(dup->substr(0, 200));
        keys_.resize(first);
        return make_error(Status::format, "manifest: duplicate map key \"%s\"", shown.c_str());
      }
    }
    g = e;
  }
  keys_.resize(first);
  return {};
}

// libcbor 0.8 refuses some well-formed heads (tags 6..20 and simple values
// other than false/true/null/undefined); RFC 8949 allows them. They are
// single heads without content, decoded here and passed on as a tag (ignored)
// or a simple value.
bool Builder::unassigned_head(size_t* consumed) {
  // A truncated two-byte simple value is libcbor's to report.
  if (bytes_[pos_] == 0xF8 && pos_ + 1 >= bytes_.size()) return false;
  const auto h = cbor::unassigned_head(bytes_, pos_);
  if (!h) return false;
  *consumed = h->consumed;
  head_end_ = pos_ + h->consumed;
  if (h->malformed) {
    fail(Status::format, "a simple value below 32 in two bytes");
  } else if (h->is_tag) {
    if (in_string_) fail(Status::format, "a tag inside an indefinite-length string");
    if (!root_done_) tag_pending_ = true;
  } else {
    leaf(Kind::simple, h->simple);
  }
  return true;
}

const cbor_callbacks& Builder::callbacks() {
  static const cbor_callbacks cb = [] {
    cbor_callbacks c{};
    c.uint8 = [](void* x, uint8_t v) { self(x).leaf(Kind::uint, v); };
    c.uint16 = [](void* x, uint16_t v) { self(x).leaf(Kind::uint, v); };
    c.uint32 = [](void* x, uint32_t v) { self(x).leaf(Kind::uint, v); };
    c.uint64 = [](void* x, uint64_t v) { self(x).leaf(Kind::uint, v); };
    c.negint8 = [](void* x, uint8_t v) { self(x).leaf(Kind::negint, v); };
    c.negint16 = [](void* x, uint16_t v) { self(x).leaf(Kind::negint, v); };
    c.negint32 = [](void* x, uint32_t v) { self(x).leaf(Kind::negint, v); };
    c.negint64 = [](void* x, uint64_t v) { self(x).leaf(Kind::negint, v); };
    c.byte_string = [](void* x, cbor_data d, size_t n) {
      self(x).text_or_bytes(Kind::bytes, d, n);
    };
    c.byte_string_start = [](void* x) { self(x).string_start(Kind::bytes); };
    c.string = [](void* x, cbor_data d, size_t n) { self(x).text_or_bytes(Kind::text, d, n); };
    c.string_start = [](void* x) { self(x).string_start(Kind::text); };
    c.array_start = [](void* x, size_t n) { self(x).open(Kind::array, n, false); };
    c.indef_array_start = [](void* x) { self(x).open(Kind::array, 0, true); };
    c.map_start = [](void* x, size_t n) { self(x).open(Kind::map, n, false); };
    c.indef_map_start = [](void* x) { self(x).open(Kind::map, 0, true); };
    c.tag = [](void* x, uint64_t) {
      Builder& b = self(x);
      if (b.in_string_) b.fail(Status::format, "a tag inside an indefinite-length string");
      if (b.root_done_) b.fail(Status::format, "data after the manifest item");
      b.tag_pending_ = true;
    };
    c.float2 = [](void* x, float v) {
      if (Node* n = self(x).add(Kind::float_)) n->f = v;
      self(x).close_items();
    };
    c.float4 = c.float2;
    c.float8 = [](void* x, double v) {
      if (Node* n = self(x).add(Kind::float_)) n->f = v;
      self(x).close_items();
    };
    c.undefined = [](void* x) { self(x).leaf(Kind::undefined, 0); };
    c.null = [](void* x) { self(x).leaf(Kind::null, 0); };
    c.boolean = [](void* x, bool v) {
      if (Node* n = self(x).add(Kind::boolean)) n->flag = v;
      self(x).close_items();
    };
    c.indef_break = [](void* x) { self(x).on_break(); };
    return c;
  }();
  return cb;
}

Result<Document> Builder::run() {
  ZT_FAIL_IF(bytes_.empty(), format, "manifest: empty CBOR input");
  // Key offsets are kept in 32 bits (manifests are at most 1 GiB).
  ZT_FAIL_IF(bytes_.size() > UINT32_MAX, limit, "manifest: CBOR input of %zu bytes is over 4 GiB",
             bytes_.size());
  while (pos_ < bytes_.size() && !failed()) {
    if (root_done_) {
      return make_error(Status::format, "manifest: %zu trailing bytes after the CBOR item",
                        bytes_.size() - pos_);
    }
    item_start_ = pos_;
    size_t consumed = 0;
    if (unassigned_head(&consumed)) {
      pos_ += consumed;
      continue;
    }
    // A value kept encoded ends with some head: where that head ends is
    // needed inside the callbacks (a definite string's callback moves it
    // past its bytes).
    head_end_ = pos_ + head_size(bytes_[pos_]);
    const cbor_decoder_result r =
        cbor_stream_decode(bytes_.data() + pos_, bytes_.size() - pos_, &callbacks(), this);
    if (r.status == CBOR_DECODER_NEDATA)
      return make_error(Status::format, "manifest: truncated CBOR at byte %zu", pos_);
    if (r.status != CBOR_DECODER_FINISHED || r.read == 0)
      return make_error(Status::format, "manifest: malformed CBOR at byte %zu (head 0x%02x)", pos_,
                        bytes_[pos_]);
    pos_ += r.read;
  }
  if (failed()) return std::move(error_);
  ZT_FAIL_IF(!root_done_, format, "manifest: truncated CBOR (unterminated item)");
  return std::move(doc_);
}

Result<Document> decode(std::span<const uint8_t> bytes, const EntrySink* sink, ValuePolicy policy) {
  return Builder(bytes, sink, policy).run();
}

}  // namespace zt::cbor
