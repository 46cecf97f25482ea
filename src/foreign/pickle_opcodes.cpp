// The pickle machine's opcodes (Lib/pickle.py's names), one function per
// family, so that each reads alone: the stream, scalars, containers, the
// memo, objects, and the opcodes refused. The machine itself (its stack,
// memo, budget and values) is pickle_machine.h's.
#include <bit>
#include <cstdio>
#include <cstring>

#include "base/zt_limits.h"
#include "cbor/cbor_value.h"
#include "foreign/pickle_machine.h"

namespace zt::foreign::pickle_machine {

Result<void> Machine::step(uint8_t op) {
  switch (op) {
    case PROTO:
    case FRAME:
    case STOP:
    case MARK:
    case POP:
    case POP_MARK:
    case DUP:
      return stack_op(op);
    case NONE:
    case NEWTRUE:
    case NEWFALSE:
    case BININT:
    case BININT1:
    case BININT2:
    case LONG1:
    case LONG4:
    case BINFLOAT:
    case SHORT_BINUNICODE:
    case SHORT_BINSTRING:
    case SHORT_BINBYTES:
    case BINUNICODE:
    case BINBYTES:
    case BINSTRING:
    case BINUNICODE8:
    case BINBYTES8:
    case BYTEARRAY8:
      return scalar_op(op);
    case EMPTY_LIST:
    case EMPTY_DICT:
    case EMPTY_TUPLE:
    case EMPTY_SET:
    case LIST:
    case TUPLE:
    case DICT:
    case FROZENSET:
    case TUPLE1:
    case TUPLE2:
    case TUPLE3:
    case APPEND:
    case SETITEM:
    case ADDITEMS:
    case APPENDS:
    case SETITEMS:
      return container_op(op);
    case BINGET:
    case LONG_BINGET:
    case BINPUT:
    case LONG_BINPUT:
    case MEMOIZE:
      return memo_op(op);
    case GLOBAL:
    case STACK_GLOBAL:
    case REDUCE:
    case NEWOBJ:
    case NEWOBJ_EX:
    case BUILD:
    case BINPERSID:
    case PERSID:
      return object_op(op);
    case INST:
    case OBJ:
    case EXT1:
    case EXT2:
    case EXT4:
    case NEXT_BUFFER:
    case READONLY_BUFFER:
    case INT:
    case LONG:
    case FLOAT:
    case STRING:
    case UNICODE:
    case GET:
    case PUT:
      return refused_op(op);
    default:
      return unknown_opcode(op);
  }
}

Error Machine::unknown_opcode(uint8_t op) const {
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", op);
  return fail(Status::format, std::string("unknown opcode ") + hex);
}

// The stack and the stream: protocol, frames, STOP, marks.
Result<void> Machine::stack_op(uint8_t op) {
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
    default:
      return unknown_opcode(op);
  }
}

// Scalars: None, booleans, integers, floats, strings, bytes.
Result<void> Machine::scalar_op(uint8_t op) {
  switch (op) {
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
    default:
      return unknown_opcode(op);
  }
}

// Containers: lists, tuples, dicts, sets and what fills them.
Result<void> Machine::container_op(uint8_t op) {
  switch (op) {
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
    default:
      return unknown_opcode(op);
  }
}

// The memo.
Result<void> Machine::memo_op(uint8_t op) {
  switch (op) {
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
    default:
      return unknown_opcode(op);
  }
}

// Objects: globals, calls, BUILD, persistent ids.
Result<void> Machine::object_op(uint8_t op) {
  switch (op) {
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
    default:
      return unknown_opcode(op);
  }
}

// Opcodes refused: protocol 0 text, extensions, out-of-band buffers.
Result<void> Machine::refused_op(uint8_t op) {
  switch (op) {
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
      return unknown_opcode(op);
  }
}

}  // namespace zt::foreign::pickle_machine
