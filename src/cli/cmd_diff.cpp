// zt diff A B: file attributes, objects added, removed and changed (format,
// shape, attributes, components, dtypes, decoded values). Encodings and
// digests are how bytes are stored, not what they are: they are not
// compared. Any two readable files can be compared (.zt, .safetensors, ...).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "commands.h"
#include "input.h"
#include "manifest/object_format.h"
#include "values.h"

namespace zt::cli {

namespace {

using ull = unsigned long long;

std::string summary(const Item& it) {
  std::string s = it.format + " " + shape_text(it.shape);
  const ObjectFormat* f = it.descriptor;
  if (const Part* p = it.find(f && !f->value_role.empty() ? f->value_role : "values")) {
    s += ' ';
    s += dtype_name(p->dtype);
    if (p->type) s.append(1, '/').append(*p->type);
  }
  return s;
}

// The encoded value of each attribute, in file order, and found by key in
// constant time (a linear search made diff quadratic in the keys: hours
// for a header of two million metadata keys). Values are compared as
// their deterministic CBOR: NaN equals NaN, 1 differs from 1.0.
class AttributeList {
 public:
  explicit AttributeList(const std::vector<uint8_t>& cbor) {
    (void)for_each_attribute(cbor,
                             [&](std::string_view k, std::span<const uint8_t> v) -> Result<void> {
                               list_.emplace_back(std::string(k), v);
                               return {};
                             });
    at_.reserve(list_.size());
    for (size_t i = 0; i < list_.size(); ++i) at_.emplace(list_[i].first, i);
  }
  const std::vector<std::pair<std::string, std::span<const uint8_t>>>& items() const {
    return list_;
  }
  const std::span<const uint8_t>* find(std::string_view key) const {
    const auto i = at_.find(key);
    return i == at_.end() ? nullptr : &list_[i->second].second;
  }

 private:
  std::vector<std::pair<std::string, std::span<const uint8_t>>> list_;
  std::unordered_map<std::string_view, size_t> at_;  // views of list_'s keys
};

bool same_bytes(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

// Equal maps whatever the order of their keys.
bool same_attributes(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  const AttributeList x(a), y(b);
  if (x.items().size() != y.items().size()) return false;
  for (const auto& [k, v] : x.items()) {
    const auto* w = y.find(k);
    if (!w || !same_bytes(v, *w)) return false;
  }
  return true;
}

std::string part_text(const Part& p) {
  return std::string(dtype_name(p.dtype)) + (p.type ? "/" + *p.type : "");
}

// Differences between the decoded bytes of one component in A and B, read
// side by side a block at a time: diff of two files of any size holds two
// blocks and their decoders' windows, never a component.
Result<std::string> compare_values(const Input& a, size_t ia, size_t ka, const Input& b, size_t ib,
                                   size_t kb) {
  const Part& p = a.items[ia].parts[ka];
  const unsigned step = dtype_width(p.dtype) * part_ratio(p);
  const size_t block = size_t{step} << 16;
  auto wa = a.windows(ia, ka);
  ZT_TRY(wa);
  auto wb = b.windows(ib, kb);
  ZT_TRY(wb);
  Blocks x(std::move(*wa)), y(std::move(*wb));
  uint64_t size_a = 0, size_b = 0, differing = 0, first = UINT64_MAX;
  std::vector<uint8_t> first_a, first_b;
  for (;;) {
    auto bx = x.take(block);
    ZT_TRY(bx);
    auto by = y.take(block);
    ZT_TRY(by);
    size_a += bx->size(), size_b += by->size();
    if (bx->empty() && by->empty()) break;
    if (bx->size() != by->size()) continue;  // sizes differ: only the totals are told
    // An empty block may have no data pointer: memcmp never sees one.
    if (std::memcmp(bx->data(), by->data(), bx->size()) == 0) continue;
    const uint64_t base = (size_a - bx->size()) / step;
    for (uint64_t e = 0; e < bx->size() / step; ++e) {
      if (std::memcmp(bx->data() + e * step, by->data() + e * step, step) == 0) continue;
      if (first == UINT64_MAX) {
        first = base + e;
        first_a.assign(bx->begin() + static_cast<std::ptrdiff_t>(e * step),
                       bx->begin() + static_cast<std::ptrdiff_t>((e + 1) * step));
        first_b.assign(by->begin() + static_cast<std::ptrdiff_t>(e * step),
                       by->begin() + static_cast<std::ptrdiff_t>((e + 1) * step));
      }
      ++differing;
    }
  }
  if (size_a != size_b)
    return "component \"" + p.role + "\": " + std::to_string(size_a) + " bytes -> " + std::to_string(size_b) +
           " bytes";
  if (differing == 0) return std::string();
  // Packed values (f4_e2m1, two a byte) are compared, counted and shown as
  // their bytes, and said to be so.
  const std::string unit = p.known_type && p.known_type->per_byte ? "byte" : "element";
  return "component \"" + p.role + "\": " + grouped(differing) + " of " + grouped(size_a / step) +
         " " + unit + "s differ (first at " + unit + " " + std::to_string(first) + ": " +
         element_text(a, ia, ka, first_a) + " -> " + element_text(b, ib, kb, first_b) + ")";
}

Result<std::vector<std::string>> compare_items(const Input& a, size_t ia, const Input& b,
                                               size_t ib) {
  const Item& x = a.items[ia];
  const Item& y = b.items[ib];
  std::vector<std::string> out;
  if (x.format != y.format) out.push_back("format " + x.format + " -> " + y.format);
  if (x.shape != y.shape)
    out.push_back("shape " + shape_text(x.shape) + " -> " + shape_text(y.shape));
  if (!same_attributes(x.attributes_cbor, y.attributes_cbor))
    out.push_back("attributes " + attribute_text(x.attributes_cbor) + " -> " + attribute_text(y.attributes_cbor));
  for (size_t k = 0; k < x.parts.size(); ++k) {
    const Part& p = x.parts[k];
    const auto kb = y.index_of(p.role);
    if (!kb) {
      out.push_back("component \"" + p.role + "\" removed");
      continue;
    }
    const Part& q = y.parts[*kb];
    if (p.dtype != q.dtype || p.type != q.type) {
      out.push_back("component \"" + p.role + "\": " + part_text(p) + " -> " + part_text(q));
      continue;
    }
    auto v = compare_values(a, ia, k, b, ib, *kb);
    ZT_TRY(v);
    if (!v->empty()) out.push_back(*v);
  }
  for (const Part& q : y.parts)
    if (!x.find(q.role)) out.push_back("component \"" + q.role + "\" added");
  return out;
}

}  // namespace

int run_diff(const Args& args) {
  if (args.pos.size() != 2) return usage_error("diff", "expects two files A and B");
  const bool quiet = args.has("--quiet");
  auto a = Input::open(args.pos[0]);
  if (!a) return report(a.error(), args.pos[0]);
  auto b = Input::open(args.pos[1]);
  if (!b) return report(b.error(), args.pos[1]);
  const Input& A = **a;
  const Input& B = **b;
  auto say = [&](const std::string& line) {
    // A file's text (names, keys, roles): control bytes as \xNN, so that
    // a name holding a newline cannot forge a line.
    if (!quiet) std::printf("%s\n", printable(line).c_str());
  };
  uint64_t attr_changes = 0, added = 0, removed = 0, changed = 0, same = 0;

  const AttributeList attrs_a(A.attributes_cbor), attrs_b(B.attributes_cbor);
  for (const auto& [k, v] : attrs_a.items()) {
    const auto* w = attrs_b.find(k);
    if (!w)
      say("- attribute " + k), ++attr_changes;
    else if (!same_bytes(v, *w))
      say("~ attribute " + k + ": " + attribute_text(v) + " -> " + attribute_text(*w)), ++attr_changes;
  }
  for (const auto& [k, v] : attrs_b.items())
    if (!attrs_a.find(k)) say("+ attribute " + k + ": " + attribute_text(v)), ++attr_changes;

  for (size_t i = 0; i < A.items.size(); ++i) {
    const auto j = B.find(A.items[i].name);
    if (!j) {
      say("- " + A.items[i].name + "  " + summary(A.items[i]));
      ++removed;
      continue;
    }
    auto changes = compare_items(A, i, B, *j);
    if (!changes) return report(changes.error());
    if (changes->empty()) {
      ++same;
      continue;
    }
    ++changed;
    say("~ " + A.items[i].name);
    for (const std::string& c : *changes) say("    " + c);
  }
  for (const Item& it : B.items)
    if (!A.find(it.name)) say("+ " + it.name + "  " + summary(it)), ++added;

  const bool differ = attr_changes + added + removed + changed > 0;
  if (!quiet) {
    if (differ)
      std::printf(
          "%llu added, %llu removed, %llu changed, %llu identical; %llu attribute difference%s\n",
          static_cast<ull>(added), static_cast<ull>(removed), static_cast<ull>(changed),
          static_cast<ull>(same), static_cast<ull>(attr_changes), attr_changes == 1 ? "" : "s");
    else
      std::printf("no differences (%llu objects, attributes equal)\n", static_cast<ull>(same));
  }
  return differ ? kFailed : kOk;
}

}  // namespace zt::cli
