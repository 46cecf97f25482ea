// The restricted pickle machine (pickle.cpp: the machine, pickle_opcodes.cpp:
// its opcodes by family), internal to src/foreign. Nothing is executed:
// globals are looked up in the allowed list and calls build values.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "base/zt_limits.h"
#include "foreign/pickle.h"

namespace zt::foreign::pickle_machine {

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
inline constexpr uint64_t kMaxItems = Limits::pickle_values * 4;

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
  // step's families (pickle_opcodes.cpp).
  Result<void> stack_op(uint8_t op);
  Result<void> scalar_op(uint8_t op);
  Result<void> container_op(uint8_t op);
  Result<void> memo_op(uint8_t op);
  Result<void> object_op(uint8_t op);
  Result<void> refused_op(uint8_t op);
  Error unknown_opcode(uint8_t op) const;
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

// A little-endian integer or float of the pickle's bytes.
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

}  // namespace zt::foreign::pickle_machine
