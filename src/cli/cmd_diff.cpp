// zt diff A B: file attributes, objects added, removed and changed (format,
// shape, attributes, components, dtypes, decoded values). Encodings and
// digests are how bytes are stored, not what they are: they are not
// compared. Any two readable files can be compared (.zt, .safetensors, ...).
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "commands.h"
#include "input.h"
#include "values.h"

namespace zt::cli {

namespace {

using ull = unsigned long long;

std::string summary(const Item& it) {
  std::string s = it.format + " " + shape_text(it.shape);
  if (const Part* p = it.find(it.format == "dense" ? "data" : "values")) {
    s += ' ';
    s += dtype_name(p->dtype);
    if (p->type) s.append(1, '/').append(*p->type);
  }
  return s;
}

// The encoded value of each attribute, in file order. Values are compared
// as their deterministic CBOR: NaN equals NaN, 1 differs from 1.0.
std::vector<std::pair<std::string, std::span<const uint8_t>>> attribute_list(const std::vector<uint8_t>& cbor) {
  std::vector<std::pair<std::string, std::span<const uint8_t>>> out;
  (void)for_each_attribute(cbor, [&](std::string_view k, std::span<const uint8_t> v) -> Result<void> {
    out.emplace_back(std::string(k), v);
    return {};
  });
  return out;
}

const std::span<const uint8_t>* find_attribute(const std::vector<std::pair<std::string, std::span<const uint8_t>>>& list,
                                               std::string_view key) {
  for (const auto& [k, v] : list)
    if (k == key) return &v;
  return nullptr;
}

bool same_bytes(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

// Equal maps whatever the order of their keys.
bool same_attributes(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  const auto x = attribute_list(a), y = attribute_list(b);
  if (x.size() != y.size()) return false;
  for (const auto& [k, v] : x) {
    const auto* w = find_attribute(y, k);
    if (!w || !same_bytes(v, *w)) return false;
  }
  return true;
}

std::string part_text(const Part& p) {
  return std::string(dtype_name(p.dtype)) + (p.type ? "/" + *p.type : "");
}

std::string shown_value(const Input& in, size_t item, const std::string& role, uint64_t index) {
  auto v = load_values(in, item, role, UINT64_MAX);
  if (!v || index >= (*v)->shape[0]) return "?";
  return format_scalar((*v)->kind, (*v)->at(index), (*v)->precision);
}

// Differences between the decoded bytes of one component in A and B.
Result<std::string> compare_values(const Input& a, size_t ia, size_t ka, const Input& b, size_t ib,
                                   size_t kb) {
  const Part& p = a.items[ia].parts[ka];
  auto ba = a.bytes(ia, ka);
  ZT_TRY(ba);
  auto bb = b.bytes(ib, kb);
  ZT_TRY(bb);
  const auto x = ba->view, y = bb->view;
  if (x.size() != y.size())
    return "component \"" + p.role + "\": " + std::to_string(x.size()) + " bytes -> " +
           std::to_string(y.size()) + " bytes";
  // An empty component may have no data pointer at all: memcmp is never
  // called with one (UB even for length 0).
  if (x.empty() || std::memcmp(x.data(), y.data(), x.size()) == 0) return std::string();
  const unsigned step = dtype_width(p.dtype) * part_ratio(p);
  uint64_t differing = 0, first = UINT64_MAX;
  for (uint64_t e = 0; e < x.size() / step; ++e)
    if (std::memcmp(x.data() + e * step, y.data() + e * step, step) != 0) {
      if (first == UINT64_MAX) first = e;
      ++differing;
    }
  return "component \"" + p.role + "\": " + grouped(differing) + " of " + grouped(x.size() / step) +
         " elements differ (first at element " + std::to_string(first) + ": " +
         shown_value(a, ia, p.role, first) + " -> " +
         shown_value(b, ib, b.items[ib].parts[kb].role, first) + ")";
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
    if (!quiet) std::printf("%s\n", line.c_str());
  };
  uint64_t attr_changes = 0, added = 0, removed = 0, changed = 0, same = 0;

  const auto attrs_a = attribute_list(A.attributes_cbor), attrs_b = attribute_list(B.attributes_cbor);
  for (const auto& [k, v] : attrs_a) {
    const auto* w = find_attribute(attrs_b, k);
    if (!w)
      say("- attribute " + k), ++attr_changes;
    else if (!same_bytes(v, *w))
      say("~ attribute " + k + ": " + attribute_text(v) + " -> " + attribute_text(*w)), ++attr_changes;
  }
  for (const auto& [k, v] : attrs_b)
    if (!find_attribute(attrs_a, k)) say("+ attribute " + k + ": " + attribute_text(v)), ++attr_changes;

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
