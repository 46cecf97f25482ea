// A restricted reader of Python pickles (protocols 2 to 5): a stack machine
// over the opcodes that build data, which never imports nor calls anything.
//
// A pickle is a program: GLOBAL names a Python object (any function, e.g.
// os.system) and REDUCE calls it. Here, GLOBAL/STACK_GLOBAL of a name that
// is not in the caller's allow-list stops the run at once (UNSUPPORTED,
// naming the global and its byte offset); an allowed global is a value, and
// REDUCE/NEWOBJ on it either builds plain data the way Python would
// (OrderedDict -> dict, _codecs.encode -> bytes, torch.Size -> tuple, set)
// or is recorded as a Call node (callee + arguments) for the caller to
// interpret, as the PyTorch reader does with _rebuild_tensor_v2. The
// opcodes that reach other code (INST, OBJ, EXT1/2/4, out-of-band buffers)
// are refused; protocol 0/1 text opcodes are refused as such.
//
// Every value lives in one arena (Pickle::values) and refers to others by
// index, so the memo's shared references cost nothing and a pickle that
// makes a list contain itself makes no reference cycle in memory (walkers
// bound their depth). Limits: the values one arena holds, the length of one
// string, the pickle's size; each costs at least one byte of input.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace zt::foreign {

// Values one Pickle may hold (Limits::pickle_values, each ~100 bytes: at
// most ~220 MB, reached only by a pickle of 2 MiB or more; a state dict
// costs ~20 values per tensor) and bytes in one string
// (Limits::pickle_text_bytes): base/zt_limits.h.

enum class PickleKind : uint8_t {
  none,
  boolean,
  integer,      // fits int64_t
  big_integer,  // wider: its two's complement little-endian bytes in `text`
  real,
  text,  // UTF-8
  bytes,
  list,
  tuple,
  dict,  // items: key, value, key, value, ... in insertion order
  set,
  global,      // an allowed global: `text` module, `name` name; `call` what calling it does
  call,        // a recorded call: items = {callee, arguments tuple}; `state` from BUILD
  persistent,  // BINPERSID/PERSID: items = {the persistent id}
};

// What REDUCE/NEWOBJ on an allowed global does.
enum class PickleCall : uint8_t {
  record,        // a Call node, interpreted by the caller
  dict,          // collections.OrderedDict(), OrderedDict([(k, v), ...])
  latin1_bytes,  // _codecs.encode(text, "latin1"): how protocol 2 spells bytes
  tuple,         // torch.Size((...)), builtins.tuple
  set,           // builtins.set / frozenset
  value,         // not callable: a global used as a value (torch.float32)
};

struct PickleGlobal {
  std::string_view module;
  std::string_view name;
  PickleCall call;
};

inline constexpr uint32_t kNoValue = UINT32_MAX;

struct PickleValue {
  PickleKind kind = PickleKind::none;
  PickleCall call = PickleCall::value;  // globals
  bool truth = false;
  int64_t integer = 0;
  double real = 0;
  std::string text;
  std::string name;
  std::vector<uint32_t> items;
  uint32_t state = kNoValue;  // BUILD's argument (call and dict values)
};

class Pickle {
 public:
  explicit Pickle(std::span<const PickleGlobal> allowed) : allowed_(allowed) {}

  // Runs the pickle that starts at bytes[pos] up to its STOP and returns
  // the index of the value it made; `pos` moves past the STOP. Each run has
  // its own memo (as pickle.load has); values made by earlier runs stay.
  // `where` names the pickle in messages ("model.pt: archive/data.pkl").
  Result<uint32_t> run(std::span<const uint8_t> bytes, uint64_t& pos, const std::string& where);

  const PickleValue& at(uint32_t i) const { return values_[i]; }
  size_t size() const { return values_.size(); }

  // "module.name" of a global value; a short description of any value's
  // kind ("dict", "call of torch._utils._rebuild_tensor_v2", ...).
  std::string describe(uint32_t i) const;
  static std::string describe_kind(const PickleValue& v);

 private:
  std::span<const PickleGlobal> allowed_;
  std::vector<PickleValue> values_;
};

}  // namespace zt::foreign
