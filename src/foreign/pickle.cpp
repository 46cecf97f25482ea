#include "foreign/pickle.h"

#include <bit>
#include <cstring>
#include <unordered_map>

#include "base/zt_limits.h"
#include "cbor/cbor_value.h"
#include "foreign/pickle_machine.h"

namespace zt::foreign {

namespace pickle_machine {

Result<std::span<const uint8_t>> Machine::take(uint64_t n, const char* what) {
  if (n > left())
    return fail(Status::format, std::string(what) + " of " + std::to_string(n) +
                                    " bytes goes past the end of the pickle");
  const auto s = bytes_.subspan(pos_, n);
  pos_ += n;
  return s;
}

Result<std::string> Machine::line(const char* what) {
  const uint64_t start = pos_;
  const uint64_t end = std::min<uint64_t>(bytes_.size(), pos_ + Limits::pickle_global_line);
  for (uint64_t i = start; i < end; ++i) {
    if (bytes_[i] != '\n') continue;
    pos_ = i + 1;
    return std::string(reinterpret_cast<const char*>(bytes_.data() + start), i - start);
  }
  return fail(Status::format, std::string(what) + " has no end of line within " +
                                  std::to_string(Limits::pickle_global_line) + " bytes");
}

Result<uint64_t> Machine::length(uint64_t n, uint64_t limit, const char* what) {
  if (n > limit)
    return fail(Status::limit, std::string(what) + " of " + std::to_string(n) +
                                   " bytes is longer than the limit of " + std::to_string(limit));
  return n;
}

Result<uint32_t> Machine::make(PickleValue v) {
  if (values_.size() >= Limits::pickle_values)
    return fail(Status::limit,
                "the pickle makes more than " + std::to_string(Limits::pickle_values) + " values");
  spent_ += sizeof(PickleValue) + v.text.size() + v.name.size() + v.items.size() * sizeof(uint32_t);
  if (spent_ > budget_)
    return fail(Status::limit, "the pickle's values take more than " + std::to_string(budget_) +
                                   " bytes (" + std::to_string(Limits::pickle_budget_per_byte) +
                                   " times its size and 64 MiB)");
  values_.push_back(std::move(v));
  return static_cast<uint32_t>(values_.size() - 1);
}

Result<void> Machine::push(uint32_t v) {
  if (stack_.size() >= Limits::pickle_values)
    return fail(Status::limit, "the pickle's stack holds more than " +
                                   std::to_string(Limits::pickle_values) + " values");
  stack_.push_back(v);
  return {};
}

Result<void> Machine::push_new(PickleValue v) {
  auto i = make(std::move(v));
  ZT_TRY(i);
  return push(*i);
}

Result<uint32_t> Machine::pop() {
  if (stack_.size() <= floor())
    return fail(Status::invalid,
                stack_.empty() ? "the stack is empty" : "the stack is empty above the last MARK");
  const uint32_t v = stack_.back();
  stack_.pop_back();
  return v;
}

Result<uint32_t> Machine::top() {
  if (stack_.size() <= floor())
    return fail(Status::invalid,
                stack_.empty() ? "the stack is empty" : "the stack is empty above the last MARK");
  return stack_.back();
}

Result<std::vector<uint32_t>> Machine::pop_mark() {
  if (marks_.empty()) return fail(Status::invalid, "no MARK to pop to");
  const uint64_t m = marks_.back();
  marks_.pop_back();
  std::vector<uint32_t> items(stack_.begin() + static_cast<ptrdiff_t>(m), stack_.end());
  stack_.resize(m);
  return items;
}

Result<void> Machine::add_items(uint32_t target, PickleKind kind, std::span<const uint32_t> items,
                                const char* op) {
  if (values_[target].kind != kind)
    return fail(Status::invalid,
                std::string(op) + " on a " + Pickle::describe_kind(values_[target]));
  if (kind == PickleKind::dict && items.size() % 2 != 0)
    return fail(Status::invalid, std::string(op) + " with an odd number of keys and values");
  if (items_ + items.size() > kMaxItems)
    return fail(Status::limit,
                "the pickle's containers hold more than " + std::to_string(kMaxItems) + " items");
  items_ += items.size();
  auto& dst = values_[target].items;
  dst.insert(dst.end(), items.begin(), items.end());
  return {};
}

Result<void> Machine::push_text(uint64_t n, PickleKind kind) {
  auto len = length(n, Limits::pickle_text_bytes,
                    kind == PickleKind::text ? "a string" : "a bytes object");
  ZT_TRY(len);
  auto b = take(*len, kind == PickleKind::text ? "a string" : "a bytes object");
  ZT_TRY(b);
  PickleValue v;
  v.kind = kind;
  v.text.assign(reinterpret_cast<const char*>(b->data()), b->size());
  if (kind == PickleKind::text && !cbor::is_valid_utf8(v.text))
    return fail(Status::invalid, "a string is not valid UTF-8");
  return push_new(std::move(v));
}

// LONG1/LONG4: n bytes, little-endian two's complement.
Result<void> Machine::push_long(uint64_t n) {
  auto len = length(n, Limits::pickle_text_bytes, "an integer");
  ZT_TRY(len);
  auto b = take(*len, "an integer");
  ZT_TRY(b);
  PickleValue v;
  if (b->size() <= 8) {
    uint64_t u = 0;
    for (size_t i = 0; i < b->size(); ++i) u |= uint64_t{(*b)[i]} << (8 * i);
    if (!b->empty() && b->size() < 8 && ((*b)[b->size() - 1] & 0x80))
      u |= ~uint64_t{0} << (8 * b->size());  // sign-extend
    v.kind = PickleKind::integer;
    v.integer = static_cast<int64_t>(u);
  } else {
    v.kind = PickleKind::big_integer;
    v.text.assign(reinterpret_cast<const char*>(b->data()), b->size());
  }
  return push_new(std::move(v));
}

Result<void> Machine::push_global(std::string module, std::string name) {
  for (const PickleGlobal& g : allowed_) {
    if (g.module != module || g.name != name) continue;
    PickleValue v;
    v.kind = PickleKind::global;
    v.call = g.call;
    v.text = std::move(module);
    v.name = std::move(name);
    return push_new(std::move(v));
  }
  const std::string shown = printable((module + "." + name).substr(0, 200));
  return fail(Status::unsupported,
              "global \"" + shown +
                  "\" is not allowed: only the globals that build tensors and plain data are "
                  "read, and nothing is ever imported or called");
}

// Code points of UTF-8 text, each at most 0xFF, as bytes.
bool latin1_bytes(std::string_view utf8, std::string& out) {
  for (size_t i = 0; i < utf8.size();) {
    const auto c = static_cast<uint8_t>(utf8[i]);
    if (c < 0x80) {
      out += static_cast<char>(c);
      i += 1;
    } else if ((c == 0xC2 || c == 0xC3) && i + 1 < utf8.size()) {
      out += static_cast<char>(((c & 0x03) << 6) | (static_cast<uint8_t>(utf8[i + 1]) & 0x3F));
      i += 2;
    } else {
      return false;
    }
  }
  return true;
}

Result<void> Machine::call(uint32_t callee, uint32_t args) {
  if (values_[callee].kind != PickleKind::global)
    return fail(Status::unsupported, "a call of a " + Pickle::describe_kind(values_[callee]) +
                                         ": only allowed globals are callable");
  if (values_[args].kind != PickleKind::tuple)
    return fail(Status::invalid, "the arguments of a call are a " +
                                     Pickle::describe_kind(values_[args]) + ", not a tuple");
  const std::string who = values_[callee].text + "." + values_[callee].name;
  const std::vector<uint32_t> a = values_[args].items;
  const auto sequence = [&](uint32_t i) {
    return values_[i].kind == PickleKind::list || values_[i].kind == PickleKind::tuple;
  };
  PickleValue v;
  switch (values_[callee].call) {
    case PickleCall::value:
      return fail(Status::unsupported, "global \"" + who + "\" is not callable here");
    case PickleCall::record:
      v.kind = PickleKind::call;
      v.items = {callee, args};
      return push_new(std::move(v));
    case PickleCall::dict:
      v.kind = PickleKind::dict;
      if (a.size() == 1 && sequence(a[0])) {
        for (const uint32_t pair : values_[a[0]].items) {
          if (!sequence(pair) || values_[pair].items.size() != 2)
            return fail(Status::invalid, who + "(...): an item is not a (key, value) pair");
          v.items.insert(v.items.end(), values_[pair].items.begin(), values_[pair].items.end());
        }
      } else if (!a.empty()) {
        return fail(Status::unsupported, who + "(...) with arguments other than () or (pairs,)");
      }
      break;
    case PickleCall::latin1_bytes:
      v.kind = PickleKind::bytes;
      if (a.size() != 2 || values_[a[0]].kind != PickleKind::text ||
          values_[a[1]].kind != PickleKind::text ||
          (values_[a[1]].text != "latin1" && values_[a[1]].text != "latin-1"))
        return fail(Status::unsupported, who + "(...) other than (text, \"latin1\")");
      if (!latin1_bytes(values_[a[0]].text, v.text))
        return fail(Status::invalid, who + "(text, \"latin1\"): a character above U+00FF");
      break;
    case PickleCall::tuple:
    case PickleCall::set:
      v.kind = values_[callee].call == PickleCall::set ? PickleKind::set : PickleKind::tuple;
      if (a.size() == 1 && (sequence(a[0]) || values_[a[0]].kind == PickleKind::set))
        v.items = values_[a[0]].items;
      else if (!a.empty())
        return fail(Status::unsupported, who + "(...) with arguments other than () or (items,)");
      break;
  }
  if (items_ + v.items.size() > kMaxItems)
    return fail(Status::limit,
                "the pickle's containers hold more than " + std::to_string(kMaxItems) + " items");
  items_ += v.items.size();
  return push_new(std::move(v));
}

Result<uint32_t> Machine::memo_get(uint32_t key) {
  const auto it = memo_.find(key);
  if (it == memo_.end())
    return fail(Status::invalid, "memo entry " + std::to_string(key) + " was never stored");
  return it->second;
}

Result<void> Machine::memo_put(uint32_t key) {
  auto v = top();
  ZT_TRY(v);
  if (memo_.size() >= Limits::pickle_values && !memo_.contains(key))
    return fail(Status::limit,
                "the memo holds more than " + std::to_string(Limits::pickle_values) + " entries");
  memo_[key] = *v;
  return {};
}

Result<uint32_t> Machine::run() {
  while (!stopped_) {
    op_at_ = pos_;
    auto op = take(1, "an opcode");
    if (!op) return fail(Status::format, "the pickle ends before its STOP opcode");
    auto r = step((*op)[0]);
    ZT_TRY(r);
  }
  return result_;
}

}  // namespace pickle_machine

std::string Pickle::describe_kind(const PickleValue& v) {
  switch (v.kind) {
    case PickleKind::none:
      return "None";
    case PickleKind::boolean:
      return "bool";
    case PickleKind::integer:
    case PickleKind::big_integer:
      return "int";
    case PickleKind::real:
      return "float";
    case PickleKind::text:
      return "str";
    case PickleKind::bytes:
      return "bytes";
    case PickleKind::list:
      return "list";
    case PickleKind::tuple:
      return "tuple";
    case PickleKind::dict:
      return "dict";
    case PickleKind::set:
      return "set";
    case PickleKind::global:
      return "global " + v.text + "." + v.name;
    case PickleKind::call:
      return "call";
    case PickleKind::persistent:
      return "persistent id";
  }
  return "value";
}

std::string Pickle::describe(uint32_t i) const {
  const PickleValue& v = values_[i];
  if (v.kind == PickleKind::call) {
    const PickleValue& callee = values_[v.items[0]];
    return "call of " + callee.text + "." + callee.name;
  }
  return describe_kind(v);
}

Result<uint32_t> Pickle::run(std::span<const uint8_t> bytes, uint64_t& pos,
                             const std::string& where) {
  pickle_machine::Machine m(allowed_, values_, bytes, pos, where);
  auto r = m.run();
  ZT_TRY(r);
  pos = m.pos();
  return r;
}

}  // namespace zt::foreign
