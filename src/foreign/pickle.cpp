#include "foreign/pickle.h"

#include <bit>
#include <cstring>
#include <unordered_map>

#include "base/zt_limits.h"
#include "cbor/cbor_value.h"

namespace zt::foreign {

namespace {

using ull = unsigned long long;

// Opcodes (Lib/pickle.py's names).
enum Op : uint8_t {
  MARK = '(',
  STOP = '.',
  POP = '0',
  POP_MARK = '1',
  DUP = '2',
  FLOAT = 'F',
  INT = 'I',
  BININT = 'J',
  BININT1 = 'K',
  LONG = 'L',
  BININT2 = 'M',
  NONE = 'N',
  PERSID = 'P',
  BINPERSID = 'Q',
  REDUCE = 'R',
  STRING = 'S',
  BINSTRING = 'T',
  SHORT_BINSTRING = 'U',
  UNICODE = 'V',
  BINUNICODE = 'X',
  APPEND = 'a',
  BUILD = 'b',
  GLOBAL = 'c',
  DICT = 'd',
  EMPTY_DICT = '}',
  APPENDS = 'e',
  GET = 'g',
  BINGET = 'h',
  INST = 'i',
  LONG_BINGET = 'j',
  LIST = 'l',
  EMPTY_LIST = ']',
  OBJ = 'o',
  PUT = 'p',
  BINPUT = 'q',
  LONG_BINPUT = 'r',
  SETITEM = 's',
  TUPLE = 't',
  EMPTY_TUPLE = ')',
  SETITEMS = 'u',
  BINFLOAT = 'G',
  BINBYTES = 'B',
  SHORT_BINBYTES = 'C',
  PROTO = 0x80,
  NEWOBJ = 0x81,
  EXT1 = 0x82,
  EXT2 = 0x83,
  EXT4 = 0x84,
  TUPLE1 = 0x85,
  TUPLE2 = 0x86,
  TUPLE3 = 0x87,
  NEWTRUE = 0x88,
  NEWFALSE = 0x89,
  LONG1 = 0x8a,
  LONG4 = 0x8b,
  SHORT_BINUNICODE = 0x8c,
  BINUNICODE8 = 0x8d,
  BINBYTES8 = 0x8e,
  EMPTY_SET = 0x8f,
  ADDITEMS = 0x90,
  FROZENSET = 0x91,
  NEWOBJ_EX = 0x92,
  STACK_GLOBAL = 0x93,
  MEMOIZE = 0x94,
  FRAME = 0x95,
  BYTEARRAY8 = 0x96,
  NEXT_BUFFER = 0x97,
  READONLY_BUFFER = 0x98,
};

// Container entries in one arena (4 bytes each).
constexpr uint64_t kMaxItems = Limits::pickle_values * 4;

class Machine {
 public:
  Machine(std::span<const PickleGlobal> allowed, std::vector<PickleValue>& values,
          std::span<const uint8_t> bytes, uint64_t pos, const std::string& where)
      : allowed_(allowed),
        values_(values),
        bytes_(bytes),
        pos_(pos),
        where_(where),
        budget_(Limits::pickle_budget_per_byte *
                    (bytes.size() - std::min<uint64_t>(pos, bytes.size())) +
                Limits::pickle_budget_base) {}

  Result<uint32_t> run();
  uint64_t pos() const { return pos_; }

 private:
  Error fail(Status s, const std::string& what) const {
    return make_error(s, "%s: pickle byte %llu: %s", where_.c_str(), static_cast<ull>(op_at_),
                      what.c_str());
  }
  uint64_t left() const { return bytes_.size() - pos_; }
  Result<std::span<const uint8_t>> take(uint64_t n, const char* what);
  template <typename T>
  Result<T> le(const char* what);
  Result<std::string> line(const char* what);
  Result<uint64_t> length(uint64_t n, uint64_t limit, const char* what);

  Result<uint32_t> make(PickleValue v);
  Result<uint32_t> make_kind(PickleKind k) {
    PickleValue v;
    v.kind = k;
    return make(std::move(v));
  }
  Result<void> push(uint32_t v);
  Result<void> push_new(PickleValue v);
  Result<void> push_kind(PickleKind k) {
    PickleValue v;
    v.kind = k;
    return push_new(std::move(v));
  }
  uint64_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  Result<uint32_t> pop();
  Result<uint32_t> top();
  Result<std::vector<uint32_t>> pop_mark();
  Result<void> add_items(uint32_t target, PickleKind kind, std::span<const uint32_t> items,
                         const char* op);
  Result<void> step(uint8_t op);
  Result<void> push_text(uint64_t n, PickleKind kind);
  Result<void> push_long(uint64_t n);
  Result<void> push_global(std::string module, std::string name);
  Result<void> call(uint32_t callee, uint32_t args);
  Result<uint32_t> memo_get(uint32_t key);
  Result<void> memo_put(uint32_t key);

  std::span<const PickleGlobal> allowed_;
  std::vector<PickleValue>& values_;
  std::span<const uint8_t> bytes_;
  uint64_t pos_;
  uint64_t op_at_ = 0;
  const std::string& where_;
  std::vector<uint32_t> stack_;
  std::vector<uint64_t> marks_;
  std::unordered_map<uint32_t, uint32_t> memo_;
  uint64_t items_ = 0;
  // The values' memory in bytes (each value, its text and its items),
  // against a budget from the pickle's size: a value is made from the
  // pickle's bytes, so only copies (a memoised text encoded over and over)
  // can pass it.
  const uint64_t budget_;
  uint64_t spent_ = 0;
  bool stopped_ = false;
  uint32_t result_ = kNoValue;
};

Result<std::span<const uint8_t>> Machine::take(uint64_t n, const char* what) {
  if (n > left())
    return fail(Status::format, std::string(what) + " of " + std::to_string(n) +
                                    " bytes goes past the end of the pickle");
  const auto s = bytes_.subspan(pos_, n);
  pos_ += n;
  return s;
}

template <typename T>
Result<T> Machine::le(const char* what) {
  auto b = take(sizeof(T), what);
  ZT_TRY(b);
  std::make_unsigned_t<T> v = 0;
  for (size_t i = 0; i < sizeof(T); ++i)
    v = static_cast<std::make_unsigned_t<T>>(
        v | static_cast<std::make_unsigned_t<T>>(std::make_unsigned_t<T>((*b)[i]) << (8 * i)));
  return static_cast<T>(v);
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

Result<void> Machine::step(uint8_t op) {
  switch (op) {
    case PROTO: {
      auto v = le<uint8_t>("the protocol");
      ZT_TRY(v);
      if (*v > 5)
        return fail(Status::unsupported,
                    "pickle protocol " + std::to_string(*v) + " (2 to 5 are read)");
      return {};
    }
    case FRAME: {
      auto n = le<uint64_t>("a frame length");
      ZT_TRY(n);
      if (*n > left())
        return fail(Status::format,
                    "a frame of " + std::to_string(*n) + " bytes goes past the end of the pickle");
      return {};
    }
    case STOP: {
      auto v = pop();
      ZT_TRY(v);
      result_ = *v;
      stopped_ = true;
      return {};
    }
    case MARK:
      if (marks_.size() >= Limits::pickle_values)
        return fail(Status::limit, "more than " + std::to_string(Limits::pickle_values) + " MARKs");
      marks_.push_back(stack_.size());
      return {};
    case POP:
      if (stack_.size() > floor()) {
        stack_.pop_back();
        return {};
      }
      if (marks_.empty()) return fail(Status::invalid, "POP on an empty stack");
      marks_.pop_back();  // Python's POP of an empty stack drops the last MARK
      return {};
    case POP_MARK: {
      auto items = pop_mark();
      ZT_TRY(items);
      return {};
    }
    case DUP: {
      auto v = top();
      ZT_TRY(v);
      return push(*v);
    }
    case NONE:
      return push_new(PickleValue{});
    case NEWTRUE:
    case NEWFALSE: {
      PickleValue v;
      v.kind = PickleKind::boolean;
      v.truth = op == NEWTRUE;
      return push_new(std::move(v));
    }
    case BININT:
    case BININT1:
    case BININT2: {
      PickleValue v;
      v.kind = PickleKind::integer;
      if (op == BININT) {
        auto n = le<int32_t>("an integer");
        ZT_TRY(n);
        v.integer = *n;
      } else if (op == BININT1) {
        auto n = le<uint8_t>("an integer");
        ZT_TRY(n);
        v.integer = *n;
      } else {
        auto n = le<uint16_t>("an integer");
        ZT_TRY(n);
        v.integer = *n;
      }
      return push_new(std::move(v));
    }
    case LONG1: {
      auto n = le<uint8_t>("an integer's length");
      ZT_TRY(n);
      return push_long(*n);
    }
    case LONG4: {
      auto n = le<int32_t>("an integer's length");
      ZT_TRY(n);
      if (*n < 0) return fail(Status::invalid, "an integer of negative length");
      return push_long(static_cast<uint64_t>(*n));
    }
    case BINFLOAT: {
      auto b = take(8, "a float");
      ZT_TRY(b);
      uint64_t u = 0;
      for (const uint8_t x : *b) u = (u << 8) | x;  // big-endian
      PickleValue v;
      v.kind = PickleKind::real;
      v.real = std::bit_cast<double>(u);
      return push_new(std::move(v));
    }
    case SHORT_BINUNICODE:
    case SHORT_BINSTRING:
    case SHORT_BINBYTES: {
      auto n = le<uint8_t>("a length");
      ZT_TRY(n);
      return push_text(*n, op == SHORT_BINBYTES ? PickleKind::bytes : PickleKind::text);
    }
    case BINUNICODE:
    case BINBYTES: {
      auto n = le<uint32_t>("a length");
      ZT_TRY(n);
      return push_text(*n, op == BINBYTES ? PickleKind::bytes : PickleKind::text);
    }
    case BINSTRING: {
      auto n = le<int32_t>("a length");
      ZT_TRY(n);
      if (*n < 0) return fail(Status::invalid, "a string of negative length");
      return push_text(static_cast<uint64_t>(*n), PickleKind::text);
    }
    case BINUNICODE8:
    case BINBYTES8:
    case BYTEARRAY8: {
      auto n = le<uint64_t>("a length");
      ZT_TRY(n);
      return push_text(*n, op == BINUNICODE8 ? PickleKind::text : PickleKind::bytes);
    }
    case EMPTY_LIST:
      return push_kind(PickleKind::list);
    case EMPTY_DICT:
      return push_kind(PickleKind::dict);
    case EMPTY_TUPLE:
      return push_kind(PickleKind::tuple);
    case EMPTY_SET:
      return push_kind(PickleKind::set);
    case LIST:
    case TUPLE:
    case DICT:
    case FROZENSET: {
      auto items = pop_mark();
      ZT_TRY(items);
      const PickleKind k = op == LIST    ? PickleKind::list
                           : op == TUPLE ? PickleKind::tuple
                           : op == DICT  ? PickleKind::dict
                                         : PickleKind::set;
      auto v = make_kind(k);
      ZT_TRY(v);
      ZT_TRY(add_items(*v, k, *items, "a container opcode"));
      return push(*v);
    }
    case TUPLE1:
    case TUPLE2:
    case TUPLE3: {
      const size_t n = op - TUPLE1 + 1;
      std::vector<uint32_t> items(n);
      for (size_t i = n; i-- > 0;) {
        auto v = pop();
        ZT_TRY(v);
        items[i] = *v;
      }
      auto t = make_kind(PickleKind::tuple);
      ZT_TRY(t);
      ZT_TRY(add_items(*t, PickleKind::tuple, items, "TUPLE"));
      return push(*t);
    }
    case APPEND:
    case SETITEM:
    case ADDITEMS:
    case APPENDS:
    case SETITEMS: {
      std::vector<uint32_t> items;
      if (op == APPEND) {
        auto v = pop();
        ZT_TRY(v);
        items = {*v};
      } else if (op == SETITEM) {
        auto v = pop();
        ZT_TRY(v);
        auto k = pop();
        ZT_TRY(k);
        items = {*k, *v};
      } else {
        auto m = pop_mark();
        ZT_TRY(m);
        items = std::move(*m);
      }
      auto target = top();
      ZT_TRY(target);
      const PickleKind k = (op == APPEND || op == APPENDS)     ? PickleKind::list
                           : (op == SETITEM || op == SETITEMS) ? PickleKind::dict
                                                               : PickleKind::set;
      return add_items(*target, k, items,
                       k == PickleKind::list   ? "APPEND"
                       : k == PickleKind::dict ? "SETITEM"
                                               : "ADDITEMS");
    }
    case BINGET:
    case LONG_BINGET: {
      uint32_t key = 0;
      if (op == BINGET) {
        auto k = le<uint8_t>("a memo key");
        ZT_TRY(k);
        key = *k;
      } else {
        auto k = le<uint32_t>("a memo key");
        ZT_TRY(k);
        key = *k;
      }
      auto v = memo_get(key);
      ZT_TRY(v);
      return push(*v);
    }
    case BINPUT: {
      auto k = le<uint8_t>("a memo key");
      ZT_TRY(k);
      return memo_put(*k);
    }
    case LONG_BINPUT: {
      auto k = le<uint32_t>("a memo key");
      ZT_TRY(k);
      return memo_put(*k);
    }
    case MEMOIZE:
      return memo_put(static_cast<uint32_t>(memo_.size()));
    case GLOBAL: {
      auto module = line("a GLOBAL's module");
      ZT_TRY(module);
      auto name = line("a GLOBAL's name");
      ZT_TRY(name);
      return push_global(std::move(*module), std::move(*name));
    }
    case STACK_GLOBAL: {
      auto name = pop();
      ZT_TRY(name);
      auto module = pop();
      ZT_TRY(module);
      if (values_[*name].kind != PickleKind::text || values_[*module].kind != PickleKind::text)
        return fail(Status::invalid, "STACK_GLOBAL of values that are not strings");
      return push_global(values_[*module].text, values_[*name].text);
    }
    case REDUCE:
    case NEWOBJ: {
      auto args = pop();
      ZT_TRY(args);
      auto callee = pop();
      ZT_TRY(callee);
      return call(*callee, *args);
    }
    case NEWOBJ_EX: {
      auto kwargs = pop();
      ZT_TRY(kwargs);
      auto args = pop();
      ZT_TRY(args);
      auto callee = pop();
      ZT_TRY(callee);
      if (values_[*kwargs].kind != PickleKind::dict || !values_[*kwargs].items.empty())
        return fail(Status::unsupported, "NEWOBJ_EX with keyword arguments");
      return call(*callee, *args);
    }
    case BUILD: {
      auto state = pop();
      ZT_TRY(state);
      auto target = top();
      ZT_TRY(target);
      PickleValue& t = values_[*target];
      if (t.kind != PickleKind::call && t.kind != PickleKind::dict)
        return fail(Status::unsupported, "BUILD on a " + Pickle::describe_kind(t));
      if (t.state != kNoValue) return fail(Status::invalid, "BUILD twice on one value");
      t.state = *state;
      return {};
    }
    case BINPERSID: {
      auto id = pop();
      ZT_TRY(id);
      PickleValue v;
      v.kind = PickleKind::persistent;
      v.items = {*id};
      return push_new(std::move(v));
    }
    case PERSID: {
      auto text = line("a PERSID");
      ZT_TRY(text);
      PickleValue id;
      id.kind = PickleKind::text;
      id.text = std::move(*text);
      if (!cbor::is_valid_utf8(id.text)) return fail(Status::invalid, "a PERSID is not UTF-8");
      auto i = make(std::move(id));
      ZT_TRY(i);
      PickleValue v;
      v.kind = PickleKind::persistent;
      v.items = {*i};
      return push_new(std::move(v));
    }
    case INST:
    case OBJ:
      return fail(Status::unsupported,
                  "opcode INST/OBJ instantiates a class; such pickles are not read");
    case EXT1:
    case EXT2:
    case EXT4:
      return fail(Status::unsupported,
                  "opcode EXT names a global through the extension registry; not read");
    case NEXT_BUFFER:
    case READONLY_BUFFER:
      return fail(Status::unsupported, "out-of-band buffers (protocol 5) are not read");
    case INT:
    case LONG:
    case FLOAT:
    case STRING:
    case UNICODE:
    case GET:
    case PUT: {
      char name[2] = {static_cast<char>(op), 0};
      return fail(Status::unsupported, std::string("protocol 0 text opcode '") + name +
                                           "' (pickles of protocols 2 to 5 are read)");
    }
    default:
      break;
  }
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", op);
  return fail(Status::format, std::string("unknown opcode ") + hex);
}

}  // namespace

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
  Machine m(allowed_, values_, bytes, pos, where);
  auto r = m.run();
  ZT_TRY(r);
  pos = m.pos();
  return r;
}

}  // namespace zt::foreign
