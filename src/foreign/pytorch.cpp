#include "foreign/pytorch.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_set>

#include "base/arithmetic.h"
#include "base/byte_order.h"
#include "base/zt_limits.h"
#include "foreign/pickle.h"
#include "foreign/pytorch_reader.h"

namespace zt::foreign::torch_reader {

using ull = unsigned long long;

namespace {

constexpr StorageType kStorageTypes[] = {
    {"DoubleStorage", DType::f64, nullptr, 8},
    {"FloatStorage", DType::f32, nullptr, 4},
    {"HalfStorage", DType::f16, nullptr, 2},
    {"BFloat16Storage", DType::bf16, nullptr, 2},
    {"LongStorage", DType::i64, nullptr, 8},
    {"IntStorage", DType::i32, nullptr, 4},
    {"ShortStorage", DType::i16, nullptr, 2},
    {"CharStorage", DType::i8, nullptr, 1},
    {"ByteStorage", DType::u8, nullptr, 1},
    {"BoolStorage", DType::boolean, nullptr, 1},
    {"ComplexFloatStorage", DType::f32, "complex64", 8},
    {"ComplexDoubleStorage", DType::f64, "complex128", 16},
    // torch >= 2.1 (_rebuild_tensor_v3): bytes, the dtype given apart.
    {"UntypedStorage", DType::u8, nullptr, 1},
};

// torch dtypes as _rebuild_tensor_v3 names them: what an element of each
// is stored as (float8s as the types safetensors' reader gives them).
constexpr StorageType kTorchDtypes[] = {
    {"float64", DType::f64, nullptr, 8},
    {"float32", DType::f32, nullptr, 4},
    {"float16", DType::f16, nullptr, 2},
    {"bfloat16", DType::bf16, nullptr, 2},
    {"int64", DType::i64, nullptr, 8},
    {"int32", DType::i32, nullptr, 4},
    {"int16", DType::i16, nullptr, 2},
    {"int8", DType::i8, nullptr, 1},
    {"uint8", DType::u8, nullptr, 1},
    {"bool", DType::boolean, nullptr, 1},
    {"complex64", DType::f32, "complex64", 8},
    {"complex128", DType::f64, "complex128", 16},
    {"uint16", DType::u16, nullptr, 2},
    {"uint32", DType::u32, nullptr, 4},
    {"uint64", DType::u64, nullptr, 8},
    {"float8_e4m3fn", DType::u8, "f8_e4m3fn", 1},
    {"float8_e5m2", DType::u8, "f8_e5m2", 1},
    {"float8_e4m3fnuz", DType::u8, "f8_e4m3fnuz", 1},
    {"float8_e5m2fnuz", DType::u8, "f8_e5m2fnuz", 1},
    {"float8_e8m0fnu", DType::u8, "f8_e8m0fnu", 1},
    // Two E2M1 values a byte, low nibble first, the shape counting bytes
    // as torch does: kept as those bytes under torch's own name.
    {"float4_e2m1fn_x2", DType::u8, "f4_e2m1fn_x2", 1},
};

}  // namespace

// What torch's own weights_only loader allows, less what stores no data we
// can keep (sparse and quantized rebuilds are refused by name).
std::vector<PickleGlobal> allowed_globals() {
  std::vector<PickleGlobal> g = {
      {"collections", "OrderedDict", PickleCall::dict},
      {"torch._utils", kRebuildTensorV2, PickleCall::record},
      {"torch._utils", kRebuildTensorV3, PickleCall::record},
      {"torch._utils", kRebuildTensor, PickleCall::record},
      {"torch._utils", kRebuildParameter, PickleCall::record},
      {"torch._utils", kRebuildParameterWithState, PickleCall::record},
      {"torch._tensor", kRebuildFromType, PickleCall::record},
      {"torch", "Tensor", PickleCall::value},
      {"torch.nn.parameter", "Parameter", PickleCall::value},
      {"torch", "Size", PickleCall::tuple},
      {"_codecs", "encode", PickleCall::latin1_bytes},
      {"builtins", "set", PickleCall::set},
      {"builtins", "frozenset", PickleCall::set},
  };
  for (const StorageType& s : kStorageTypes) g.push_back({"torch", s.name, PickleCall::value});
  g.push_back({"torch.storage", "UntypedStorage", PickleCall::value});  // torch 2.x spells it so
  // torch dtypes, which pickles name as globals (torch.float32) where a
  // dtype is an argument or a value: those read, and complex32 as a value.
  for (const StorageType& d : kTorchDtypes) g.push_back({"torch", d.name, PickleCall::value});
  g.push_back({"torch", "complex32", PickleCall::value});
  return g;
}

const StorageType* storage_type(const PickleValue& g) {
  if (g.kind != PickleKind::global) return nullptr;
  if (g.text != "torch" && !(g.text == "torch.storage" && g.name == "UntypedStorage"))
    return nullptr;
  for (const StorageType& s : kStorageTypes)
    if (s.name == g.name) return &s;
  return nullptr;
}

bool is_global(const PickleValue& v, std::string_view module, std::string_view name) {
  return v.kind == PickleKind::global && v.text == module && v.name == name;
}

Result<StorageRef> TorchReader::storage_ref(uint32_t pid, const std::string& where) const {
  const char* w = where.c_str();
  const PickleValue& id = pickle_.at(pickle_.at(pid).items[0]);
  const auto& a = id.items;
  ZT_FAIL_IF(id.kind != PickleKind::tuple || a.empty() ||
                 pickle_.at(a[0]).kind != PickleKind::text || pickle_.at(a[0]).text != "storage",
             unsupported, "%s: a persistent id other than (\"storage\", ...): %s", w,
             pickle_.describe(pickle_.at(pid).items[0]).c_str());
  ZT_FAIL_IF(a.size() != 5 && a.size() != 6, invalid,
             "%s: a storage id of %zu fields (5 or 6 expected)", w, a.size());
  StorageRef r;
  r.type = storage_type(pickle_.at(a[1]));
  ZT_FAIL_IF(!r.type, unsupported, "%s: storage type %s holds no dtype that is read", w,
             pickle_.describe(a[1]).c_str());
  const PickleValue& key = pickle_.at(a[2]);
  const PickleValue& numel = pickle_.at(a[4]);
  ZT_FAIL_IF(key.kind != PickleKind::text, invalid, "%s: a storage key is a %s, not a str", w,
             pickle_.describe(a[2]).c_str());
  ZT_FAIL_IF(numel.kind != PickleKind::integer || numel.integer < 0, invalid,
             "%s: storage \"%s\": its element count is not an int >= 0", w, key.text.c_str());
  r.key = key.text;
  r.numel = static_cast<uint64_t>(numel.integer);
  // Storage views (key, offset, size) were written by torch before 1.0.
  ZT_FAIL_IF(a.size() == 6 && pickle_.at(a[5]).kind != PickleKind::none, unsupported,
             "%s: storage \"%s\" is a view of another storage (torch < 1.0), which is not read", w,
             key.text.c_str());
  return r;
}

// Every storage the pickle names, with one type and size per key.
Result<void> TorchReader::collect_storages(const std::string& where) {
  for (uint32_t i = 0; i < pickle_.size(); ++i) {
    if (pickle_.at(i).kind != PickleKind::persistent) continue;
    auto r = storage_ref(i, where);
    ZT_TRY(r);
    const auto [it, added] = storages_.try_emplace(r->key, Storage{r->type, r->numel, {}, std::nullopt});
    ZT_FAIL_IF(!added && (it->second.type != r->type || it->second.numel != r->numel), invalid,
               "%s: storage \"%s\" is named with two types or sizes", where.c_str(),
               r->key.c_str());
  }
  return {};
}

Result<std::vector<int64_t>> TorchReader::int_tuple(uint32_t v, const std::string& what,
                                                    const std::string& where) const {
  const PickleValue& t = pickle_.at(v);
  ZT_FAIL_IF(t.kind != PickleKind::tuple && t.kind != PickleKind::list, invalid,
             "%s: the tensor's %s is a %s, not a tuple", where.c_str(), what.c_str(),
             pickle_.describe(v).c_str());
  ZT_FAIL_IF(t.items.size() > Limits::rank, limit,
             "%s: the tensor's %s has %zu dimensions (limit %u)", where.c_str(), what.c_str(),
             t.items.size(), Limits::rank);
  std::vector<int64_t> out;
  for (const uint32_t i : t.items) {
    ZT_FAIL_IF(pickle_.at(i).kind != PickleKind::integer, invalid, "%s: the tensor's %s holds a %s",
               where.c_str(), what.c_str(), pickle_.describe(i).c_str());
    out.push_back(pickle_.at(i).integer);
  }
  return out;
}

// The tensor a value rebuilds, or nothing when it is not a call.
Result<std::optional<TensorRef>> TorchReader::tensor_of(uint32_t v, const std::string& where,
                                                        unsigned depth) const {
  const PickleValue& c = pickle_.at(v);
  if (c.kind != PickleKind::call) return std::optional<TensorRef>();
  const char* w = where.c_str();
  ZT_FAIL_IF(depth > 4, invalid, "%s: tensors rebuilt from tensors more than 4 deep", w);
  const PickleValue& callee = pickle_.at(c.items[0]);
  const std::vector<uint32_t>& a = pickle_.at(c.items[1]).items;
  const auto arg_count = [&](size_t n) -> Result<void> {
    ZT_FAIL_IF(a.size() < n, invalid, "%s: %s.%s with %zu arguments (%zu expected)", w,
               callee.text.c_str(), callee.name.c_str(), a.size(), n);
    return {};
  };
  if (callee.name == kRebuildParameter || callee.name == kRebuildParameterWithState) {
    ZT_TRY(arg_count(1));
    auto t = tensor_of(a[0], where, depth + 1);
    ZT_TRY(t);
    ZT_FAIL_IF(!*t, invalid, "%s: a Parameter of a %s", w, pickle_.describe(a[0]).c_str());
    return t;
  }
  if (callee.name == kRebuildFromType) {
    // (function, type, args, state): a plain Tensor or Parameter rebuilt by
    // `function(*args)`; Python attributes in `state` would be lost.
    ZT_TRY(arg_count(4));
    const PickleValue& fn = pickle_.at(a[0]);
    const PickleValue& type = pickle_.at(a[1]);
    const PickleValue& args = pickle_.at(a[2]);
    const PickleValue& state = pickle_.at(a[3]);
    ZT_FAIL_IF(
        !is_global(type, "torch", "Tensor") && !is_global(type, "torch.nn.parameter", "Parameter"),
        unsupported, "%s: a tensor of subclass %s", w, pickle_.describe(a[1]).c_str());
    ZT_FAIL_IF(!is_global(fn, "torch._utils", kRebuildTensorV2) || args.kind != PickleKind::tuple,
               unsupported, "%s: a tensor rebuilt by %s", w, pickle_.describe(a[0]).c_str());
    ZT_FAIL_IF(state.kind == PickleKind::dict && !state.items.empty(), unsupported,
               "%s: a tensor with Python attributes (they would be lost)", w);
  }
  const bool v3 = callee.text == "torch._utils" && callee.name == kRebuildTensorV3;
  const bool rebuild = callee.text == "torch._utils" &&
                       (callee.name == kRebuildTensorV2 || callee.name == kRebuildTensor || v3);
  const bool from_type = callee.name == kRebuildFromType;
  ZT_FAIL_IF(!rebuild && !from_type, unsupported, "%s: a value made by %s.%s is not read", w,
             callee.text.c_str(), callee.name.c_str());
  const std::vector<uint32_t>& b = from_type ? pickle_.at(a[2]).items : a;
  ZT_FAIL_IF(b.size() < 4, invalid, "%s: %s with %zu arguments (4 expected)", w,
             kRebuildTensorV2.data(), b.size());
  ZT_FAIL_IF(pickle_.at(b[0]).kind != PickleKind::persistent, invalid,
             "%s: a tensor whose storage is a %s", w, pickle_.describe(b[0]).c_str());
  TensorRef t;
  auto s = storage_ref(b[0], where);
  ZT_TRY(s);
  t.storage = std::move(*s);
  if (v3) {
    // (storage, offset, size, stride, requires_grad, hooks, dtype[, metadata]):
    // a byte storage, its elements of the dtype given.
    ZT_TRY(arg_count(7));
    const PickleValue& dtype = pickle_.at(b[6]);
    ZT_FAIL_IF(dtype.kind != PickleKind::global || dtype.text != "torch", invalid,
               "%s: _rebuild_tensor_v3's dtype is a %s", w, pickle_.describe(b[6]).c_str());
    for (const StorageType& d : kTorchDtypes)
      if (d.name == dtype.name) t.element = &d;
    ZT_FAIL_IF(!t.element, unsupported, "%s: a tensor of torch.%s is not read", w,
               dtype.name.c_str());
    ZT_FAIL_IF(t.storage.type->width != 1, invalid,
               "%s: _rebuild_tensor_v3 over a torch.%s (a byte storage expected)", w,
               std::string(t.storage.type->name).c_str());
  }
  ZT_FAIL_IF(pickle_.at(b[1]).kind != PickleKind::integer || pickle_.at(b[1]).integer < 0, invalid,
             "%s: the tensor's storage offset is not an int >= 0", w);
  t.offset = pickle_.at(b[1]).integer;
  auto size = int_tuple(b[2], "size", where);
  ZT_TRY(size);
  auto stride = int_tuple(b[3], "stride", where);
  ZT_TRY(stride);
  t.size = std::move(*size);
  t.stride = std::move(*stride);
  return std::optional<TensorRef>(std::move(t));
}

Result<ForeignObject> TorchReader::make_object(const TensorRef& t, const std::string& name) {
  const std::string where = path_ + ": tensor \"" + name + "\"";
  const char* w = where.c_str();
  const StorageType& type = t.element ? *t.element : *t.storage.type;
  const Storage& storage = storages_.at(t.storage.key);
  // A byte storage is not swapped when read: its elements' width is only
  // known here.
  ZT_FAIL_IF(t.element && big_endian_ && swap_width(type) > 1, unsupported,
             "%s: a big-endian tensor of torch.%s over a byte storage is not read", w,
             std::string(type.name).c_str());
  // In elements of the tensor's type (a byte storage holds bytes).
  const uint64_t storage_numel = storage.numel / (type.width / storage.type->width);
  ZT_FAIL_IF(t.size.size() != t.stride.size(), invalid, "%s: %zu sizes but %zu strides", w,
             t.size.size(), t.stride.size());
  ForeignObject o;
  o.name = name;
  uint64_t numel = 1, reach = 0;
  bool contiguous = true;
  uint64_t expected = 1;  // the row-major stride of the current dimension
  for (size_t k = t.size.size(); k-- > 0;) {
    ZT_FAIL_IF(t.size[k] < 0, invalid, "%s: dimension %zu has size %lld", w, k,
               static_cast<long long>(t.size[k]));
    ZT_FAIL_IF(t.stride[k] < 0, unsupported, "%s: dimension %zu has negative stride %lld", w, k,
               static_cast<long long>(t.stride[k]));
    const auto n = static_cast<uint64_t>(t.size[k]);
    const auto s = static_cast<uint64_t>(t.stride[k]);
    const auto product = checked_mul(numel, n);
    ZT_FAIL_IF(!product, invalid, "%s: the element count overflows 64 bits", w);
    numel = *product;
    if (n > 1) {
      const auto far = checked_mul(n - 1, s);
      ZT_FAIL_IF(!far || __builtin_add_overflow(reach, *far, &reach), invalid,
                 "%s: its strides reach past 2^64 elements", w);
      if (s != expected) contiguous = false;
    }
    expected = n > 0 ? expected * std::max<uint64_t>(n, 1) : expected;
  }
  o.shape.reserve(t.size.size());
  for (const int64_t n : t.size) o.shape.push_back(static_cast<uint64_t>(n));
  ForeignComponent c;
  c.role = "data";
  c.dtype = type.dtype;
  if (type.type) c.type = type.type;
  const auto nbytes = checked_mul(numel, type.width);
  ZT_FAIL_IF(!nbytes || *nbytes > limit_, limit,
             "%s: %llu elements of %u bytes, more than the limit of %llu bytes", w,
             static_cast<ull>(numel), type.width, static_cast<ull>(limit_));
  if (numel > 0) {
    // The farthest element the view reaches must lie in its storage.
    uint64_t last = 0;
    ZT_FAIL_IF(__builtin_add_overflow(static_cast<uint64_t>(t.offset), reach, &last) ||
                   last >= storage_numel,
               invalid,
               "%s: the view (offset %lld, strides) reaches element %llu of storage \"%s\" of %llu "
               "elements",
               w, static_cast<long long>(t.offset), static_cast<ull>(last), t.storage.key.c_str(),
               static_cast<ull>(storage_numel));
  }
  // Past the check above, offset < numel of the storage (when numel > 0).
  const auto base = [&] {
    return storage.bytes.subspan(static_cast<uint64_t>(t.offset) * type.width);
  };
  if (numel == 0) {
    c.bytes = {};
  } else if (contiguous) {
    c.bytes = base().first(*nbytes);
    if (storage.crc_check && !f_.crc_checks[*storage.crc_check].checked)
      c.crc_check = storage.crc_check;
  } else {
    ZT_TRY(check_now(storage));
    // Strided (a transpose, an expand): copied out in row-major order. The
    // copies together stay within twice the storages' bytes plus 64 MiB: a
    // transpose copies what its storage holds, while an expand (stride 0)
    // of one element to a billion would make gigabytes from a few bytes.
    if (copy_budget_ == 0) {
      copy_budget_ = uint64_t{64} << 20;
      for (const auto& [key, st] : storages_) copy_budget_ += 2 * uint64_t{st.bytes.size()};
    }
    ZT_FAIL_IF(*nbytes > copy_budget_ - copied_, limit,
               "%s: a strided view of %llu bytes: the views copied out of this checkpoint would "
               "pass %llu bytes, twice its storages plus 64 MiB (an expand of a few elements?)",
               w, static_cast<ull>(*nbytes), static_cast<ull>(copy_budget_));
    copied_ += *nbytes;
    std::vector<uint8_t> out(*nbytes);
    const std::span<const uint8_t> from_bytes = base();
    const size_t rank = t.size.size();
    std::vector<uint64_t> index(rank, 0);
    uint64_t from = 0;
    for (uint64_t e = 0; e < numel; ++e) {
      std::memcpy(out.data() + e * type.width, from_bytes.data() + from * type.width, type.width);
      for (size_t k = rank; k-- > 0;) {
        if (++index[k] < static_cast<uint64_t>(t.size[k])) {
          from += static_cast<uint64_t>(t.stride[k]);
          break;
        }
        from -= static_cast<uint64_t>(t.stride[k]) * (index[k] - 1);
        index[k] = 0;
      }
    }
    f_.owned.push_back(std::move(out));
    c.bytes = f_.owned.back();
  }
  o.components.push_back(std::move(c));
  return o;
}

// The walk and the attribute conversion visit each (value, path) once; a
// pickle of shared containers (each list holding the previous one twice)
// would make exponentially many paths from a few bytes. A saved object has
// about as many paths as values (tied weights add one each), so the walk
// is bounded by the pickle's own size. So are the bytes each path copies:
// a string memoised once and referenced thousands of times (as an
// attribute, or as the key above thousands of tensors' names) would
// otherwise cost gigabytes from a megabyte: twice the pickle's text, plus
// 64 bytes a value for the prefixes names repeat, plus 1 MiB.
Result<void> TorchReader::spend(const std::string& where, uint64_t bytes) {
  const uint64_t budget = 2 * uint64_t{pickle_.size()} + 1024;
  ZT_FAIL_IF(++budget_ > budget, limit,
             "%s: the saved object has more than %llu paths to walk (containers shared over and "
             "over)",
             where.c_str(), static_cast<ull>(budget));
  return spend_bytes(where, bytes);
}

Result<void> TorchReader::spend_bytes(const std::string& where, uint64_t bytes) {
  if (byte_budget_ == 0) {
    uint64_t text = 0;
    for (size_t i = 0; i < pickle_.size(); ++i)
      text += pickle_.at(static_cast<uint32_t>(i)).text.size() +
              pickle_.at(static_cast<uint32_t>(i)).name.size();
    byte_budget_ = 2 * text + 64 * uint64_t{pickle_.size()} + (uint64_t{1} << 20);
  }
  bytes_spent_ += bytes;
  ZT_FAIL_IF(bytes_spent_ > byte_budget_, limit,
             "%s: the saved object's names and strings would copy more than %llu bytes (a string "
             "shared over and over)",
             where.c_str(), static_cast<ull>(byte_budget_));
  return {};
}

Result<bool> TorchReader::holds_tensor(uint32_t v, unsigned depth) {
  if (holds_.size() < pickle_.size()) holds_.resize(pickle_.size(), -1);
  if (holds_[v] >= 0) return holds_[v] == 1;
  ZT_FAIL_IF(depth > Limits::cbor_depth, limit,
             "%s: the saved object nests more than %u containers deep (or contains itself)",
             path_.c_str(), Limits::cbor_depth);
  const PickleValue& x = pickle_.at(v);
  bool holds = x.kind == PickleKind::call || x.kind == PickleKind::persistent;
  if (x.kind == PickleKind::list || x.kind == PickleKind::tuple || x.kind == PickleKind::dict ||
      x.kind == PickleKind::set) {
    for (size_t i = 0; i < x.items.size() && !holds; ++i) {
      auto h = holds_tensor(x.items[i], depth + 1);
      ZT_TRY(h);
      holds = *h;
    }
  }
  holds_[v] = holds ? 1 : 0;
  return holds;
}

Result<std::string> TorchReader::key_text(uint32_t k, const std::string& where) const {
  const PickleValue& key = pickle_.at(k);
  if (key.kind == PickleKind::text) return key.text;
  if (key.kind == PickleKind::integer) return std::to_string(key.integer);
  return make_error(Status::unsupported, "%s: a dict key that is a %s (str and int keys are read)",
                    where.c_str(), pickle_.describe(k).c_str());
}

Result<Json> TorchReader::to_json(uint32_t v, const std::string& where, unsigned depth) {
  const PickleValue& x = pickle_.at(v);
  ZT_TRY(spend(where, x.text.size() + x.name.size()));
  ZT_FAIL_IF(depth > Limits::cbor_depth, limit,
             "%s: the value nests more than %u containers deep (or contains itself)", where.c_str(),
             Limits::cbor_depth);
  switch (x.kind) {
    case PickleKind::none:
      return Json(nullptr);
    case PickleKind::boolean:
      return Json(x.truth);
    case PickleKind::integer:
      return Json(x.integer);
    case PickleKind::real:
      return Json(x.real);
    case PickleKind::text:
      return Json(x.text);
    case PickleKind::bytes:
      return Json::binary(std::vector<uint8_t>(x.text.begin(), x.text.end()));
    case PickleKind::global:
      return Json(x.text + "." + x.name);  // a dtype: "torch.float32"
    case PickleKind::list:
    case PickleKind::tuple:
    case PickleKind::set: {
      Json a = Json::array();
      for (const uint32_t i : x.items) {
        auto e = to_json(i, where, depth + 1);
        ZT_TRY(e);
        a.push_back(std::move(*e));
      }
      return a;
    }
    case PickleKind::dict: {
      ZT_FAIL_IF(x.state != kNoValue, unsupported,
                 "%s: a dict with Python attributes inside a value cannot be kept", where.c_str());
      Json o = Json::object();
      // (Json keeps keys in order, so its own lookup walks them all: a set
      // keeps a dict of many keys linear.)
      std::unordered_set<std::string> keys;
      auto& entries = o.get_ref<Json::object_t&>();
      for (size_t i = 0; i + 1 < x.items.size(); i += 2) {
        auto k = key_text(x.items[i], where);
        ZT_TRY(k);
        ZT_TRY(spend_bytes(where, k->size()));
        auto e = to_json(x.items[i + 1], where, depth + 1);
        ZT_TRY(e);
        ZT_FAIL_IF(!keys.insert(*k).second, invalid, "%s: key \"%s\" appears twice", where.c_str(),
                   printable(std::string_view(*k).substr(0, 200)).c_str());
        entries.emplace_back(std::move(*k), std::move(*e));
      }
      return o;
    }
    case PickleKind::big_integer:
    case PickleKind::call:
    case PickleKind::persistent:
      break;
  }
  return make_error(Status::unsupported, "%s: a %s cannot be kept as an attribute", where.c_str(),
                    pickle_.describe(v).c_str());
}

namespace {

// A name as messages show it: at most 200 bytes of it, escaped.
std::string shown(std::string_view name) {
  constexpr size_t kShown = 200;
  if (name.size() <= kShown) return printable(name);
  return printable(name.substr(0, kShown)) + "... (" + std::to_string(name.size()) + " bytes)";
}

// A child's dotted name, refused once it would pass the name limit: names
// are checked as they grow, so that a deep tree under a long shared key
// (memoised once in the pickle) never builds names longer than allowed.
Result<std::string> child_name(const std::string& prefix, std::string_view key,
                               const std::string& where) {
  ZT_FAIL_IF(prefix.size() + key.size() > Limits::name_bytes, limit,
             "%s: a name longer than %llu bytes (a key of %zu bytes under it)", where.c_str(),
             static_cast<ull>(Limits::name_bytes), key.size());
  return prefix + std::string(key);
}

}  // namespace

Result<void> TorchReader::walk(uint32_t v, const std::string& path, unsigned depth) {
  const std::string name = path.empty() ? stem_of(path_) : path;
  const std::string where = path_ + ": \"" + shown(name) + "\"";
  ZT_TRY(spend(where, name.size()));
  auto holds = holds_tensor(v, depth);
  ZT_TRY(holds);
  const PickleValue& x = pickle_.at(v);
  // A dict's BUILD state is its Python attributes: a state_dict's
  // _metadata (module versions), kept beside its entries.
  const bool has_state = x.kind == PickleKind::dict && x.state != kNoValue;
  if (!*holds && !has_state) {  // a leaf, or a container of leaves: one attribute
    auto j = to_json(v, where, 0);
    ZT_TRY(j);
    ZT_FAIL_IF(!attribute_names_.insert(name).second, invalid, "%s: the name appears twice",
               where.c_str());
    if (!f_.attributes.is_object()) f_.attributes = Json::object();
    f_.attributes.get_ref<Json::object_t&>().emplace_back(name, std::move(*j));
    return {};
  }
  if (x.kind == PickleKind::call) {
    auto t = tensor_of(v, where, 0);
    ZT_TRY(t);
    auto o = make_object(**t, name);
    ZT_TRY(o);
    ZT_FAIL_IF(!names_.insert(name).second, invalid, "%s: two tensors have this name",
               where.c_str());
    ZT_FAIL_IF(f_.objects.size() >= Limits::objects, limit, "%s: more than %llu tensors",
               path_.c_str(), static_cast<ull>(Limits::objects));
    f_.objects.push_back(std::move(*o));
    return {};
  }
  ZT_FAIL_IF(x.kind == PickleKind::persistent, unsupported,
             "%s: a bare storage (not inside a tensor) is not read", where.c_str());
  ZT_FAIL_IF(depth >= Limits::cbor_depth, limit, "%s: nests more than %u containers deep",
             where.c_str(), Limits::cbor_depth);
  const std::string prefix = path.empty() ? path : path + ".";
  if (x.kind == PickleKind::dict) {
    std::vector<uint32_t> items = x.items;
    if (has_state) {
      const PickleValue& state = pickle_.at(x.state);
      ZT_FAIL_IF(state.kind != PickleKind::dict, unsupported,
                 "%s: a dict whose attributes are a %s", where.c_str(),
                 pickle_.describe(x.state).c_str());
      items.insert(items.end(), state.items.begin(), state.items.end());
    }
    for (size_t i = 0; i + 1 < items.size(); i += 2) {
      auto k = key_text(items[i], where);
      ZT_TRY(k);
      auto child = child_name(prefix, *k, where);
      ZT_TRY(child);
      ZT_TRY(walk(items[i + 1], *child, depth + 1));
    }
    return {};
  }
  const std::vector<uint32_t> items = x.items;  // list, tuple, set
  for (size_t i = 0; i < items.size(); ++i) {
    auto child = child_name(prefix, std::to_string(i), where);
    ZT_TRY(child);
    ZT_TRY(walk(items[i], *child, depth + 1));
  }
  return {};
}

}  // namespace zt::foreign::torch_reader
