#include "foreign/gguf.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <unordered_set>

#include "base/zt_limits.h"
#include "cbor/cbor_value.h"
#include "foreign/ggml_quant.h"
#include "foreign/gguf_values.h"
#include "formats/ggml_types.h"
#include "manifest/manifest.h"

namespace zt::foreign {

using ull = unsigned long long;

namespace {

// Smallest encoding of one value of a type: bounds element counts up front.
uint64_t min_value_bytes(uint32_t t) {
  switch (t) {
    case kU8:
    case kI8:
    case kBool:
      return 1;
    case kU16:
    case kI16:
      return 2;
    case kU32:
    case kI32:
    case kF32:
      return 4;
    case kString:
      return 8;
    case kArray:
      return 12;
    default:
      return 8;
  }
}

struct TensorInfo {
  std::string name;
  std::vector<uint64_t> dims;  // GGUF order: innermost first
  const GgmlType* type = nullptr;  // null: an unknown type, skipped on request
  uint32_t type_id = 0;
  uint64_t offset = 0;
  uint64_t nbytes = 0;
};

class Parser {
 public:
  Parser(const std::string& path, std::span<const uint8_t> bytes, const ReadOptions& options)
      : path_(path), cur_(bytes), options_(options) {}

  Result<ForeignFile> run(ForeignFile f);

 private:
  template <typename T>
  Result<T> fixed(const char* what) {
    T v{};
    ZT_FAIL_IF(!cur_.le(v), format, "%s: GGUF truncated at byte %llu while reading %s", p(),
               static_cast<ull>(cur_.pos()), what);
    return v;
  }
  Result<std::string> string(const char* what);
  Result<Json> value(uint32_t type, const std::string& key, int depth, std::string& type_name);
  Result<void> metadata(ForeignFile& f, uint64_t count);
  Result<TensorInfo> tensor_info();
  const char* p() const { return path_.c_str(); }

  const std::string& path_;
  Cursor cur_;
  const ReadOptions& options_;
  uint32_t alignment_ = 32;
  uint64_t values_ = 0;  // metadata values read so far (each becomes a manifest item)
};

Result<std::string> Parser::string(const char* what) {
  auto len = fixed<uint64_t>(what);
  ZT_TRY(len);
  std::span<const uint8_t> b;
  ZT_FAIL_IF(!cur_.take(*len, b), format,
             "%s: GGUF %s of %llu bytes at byte %llu goes beyond the file", p(), what,
             static_cast<ull>(*len), static_cast<ull>(cur_.pos()));
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

Result<Json> Parser::value(uint32_t type, const std::string& key, int depth,
                           std::string& type_name) {
  const char* k = key.c_str();
  ZT_FAIL_IF(type >= kValueTypes, invalid, "%s: GGUF key \"%s\": unknown value type %u", p(), k,
             type);
  type_name = std::string(kValueTypeNames[type]);
  // Every value becomes a CBOR item of the manifest, whose readers cap the
  // item count: refuse what no reader would open (and bound memory).
  ZT_FAIL_IF(++values_ > Limits::cbor_items, limit, "%s: GGUF metadata holds more than %llu values",
             p(), static_cast<ull>(Limits::cbor_items));
  auto signed_of = [](uint64_t u, unsigned bits) {
    const uint64_t sign = uint64_t{1} << (bits - 1);
    return static_cast<int64_t>((u ^ sign) - sign);
  };
  switch (type) {
    case kU8: {
      auto v = fixed<uint8_t>(k);
      ZT_TRY(v);
      return Json(uint64_t{*v});
    }
    case kI8: {
      auto v = fixed<uint8_t>(k);
      ZT_TRY(v);
      return Json(signed_of(*v, 8));
    }
    case kU16: {
      auto v = fixed<uint16_t>(k);
      ZT_TRY(v);
      return Json(uint64_t{*v});
    }
    case kI16: {
      auto v = fixed<uint16_t>(k);
      ZT_TRY(v);
      return Json(signed_of(*v, 16));
    }
    case kU32: {
      auto v = fixed<uint32_t>(k);
      ZT_TRY(v);
      return Json(uint64_t{*v});
    }
    case kI32: {
      auto v = fixed<uint32_t>(k);
      ZT_TRY(v);
      return Json(signed_of(*v, 32));
    }
    case kU64: {
      auto v = fixed<uint64_t>(k);
      ZT_TRY(v);
      return Json(*v);
    }
    case kI64: {
      auto v = fixed<uint64_t>(k);
      ZT_TRY(v);
      return Json(signed_of(*v, 64));
    }
    case kF32: {
      auto v = fixed<uint32_t>(k);
      ZT_TRY(v);
      float f;
      std::memcpy(&f, &*v, 4);
      return Json(static_cast<double>(f));
    }
    case kF64: {
      auto v = fixed<uint64_t>(k);
      ZT_TRY(v);
      double d;
      std::memcpy(&d, &*v, 8);
      return Json(d);
    }
    case kBool: {
      auto v = fixed<uint8_t>(k);
      ZT_TRY(v);
      ZT_FAIL_IF(*v > 1, invalid, "%s: GGUF key \"%s\": bool byte %u is neither 0 nor 1", p(), k,
                 unsigned{*v});
      return Json(*v == 1);
    }
    case kString: {
      auto s = string(k);
      ZT_TRY(s);
      // Text that is not UTF-8 is kept as bytes rather than mangled.
      if (cbor::is_valid_utf8(*s)) return Json(std::move(*s));
      return Json::binary(std::vector<uint8_t>(s->begin(), s->end()));
    }
    case kArray: {
      ZT_FAIL_IF(depth >= Limits::gguf_array_nesting, invalid,
                 "%s: GGUF key \"%s\": arrays nested more than %d deep", p(), k,
                 Limits::gguf_array_nesting);
      auto item = fixed<uint32_t>(k);
      ZT_TRY(item);
      auto n = fixed<uint64_t>(k);
      ZT_TRY(n);
      ZT_FAIL_IF(*item >= kValueTypes, invalid, "%s: GGUF key \"%s\": unknown array item type %u",
                 p(), k, *item);
      ZT_FAIL_IF(*n > cur_.left() / min_value_bytes(*item), format,
                 "%s: GGUF key \"%s\": array of %llu %s items cannot fit in the %llu bytes left",
                 p(), k, static_cast<ull>(*n), std::string(kValueTypeNames[*item]).c_str(),
                 static_cast<ull>(cur_.left()));
      // Each item is a value of the item count's limit: an array past it is
      // refused before its items (16 bytes each) are reserved.
      ZT_FAIL_IF(*n > Limits::cbor_items - values_, limit,
                 "%s: GGUF key \"%s\": an array of %llu items takes the metadata past %llu "
                 "values",
                 p(), k, static_cast<ull>(*n), static_cast<ull>(Limits::cbor_items));
      Json a = Json::array();
      // Sized once (the items' bytes are in the file: checked above), not
      // grown by doubling, which held twice the array at its peak.
      a.get_ref<Json::array_t&>().reserve(*n);
      // Arrays of arrays may hold inner arrays of different types: then each
      // element's type is listed, "array[array[int32], array[string]]".
      std::string inner = std::string(kValueTypeNames[*item]);
      std::vector<std::string> each;
      bool mixed = false;
      for (uint64_t i = 0; i < *n; ++i) {
        std::string t;
        auto v = value(*item, key, depth + 1, t);
        ZT_TRY(v);
        if (i == 0) inner = t;
        mixed = mixed || t != inner;
        if (*item == kArray) each.push_back(std::move(t));
        a.push_back(std::move(*v));
      }
      if (mixed) {
        inner.clear();
        for (size_t i = 0; i < each.size(); ++i) inner += (i ? ", " : "") + each[i];
      }
      type_name = "array[" + inner + "]";
      return a;
    }
    default:
      break;
  }
  return make_error(Status::invalid, "%s: GGUF key \"%s\": unknown value type %u", p(), k, type);
}

Result<void> Parser::metadata(ForeignFile& f, uint64_t count) {
  std::unordered_set<std::string> seen;
  Json types = Json::object();
  // The attributes' entries are reserved once (each key-value pair takes 13
  // bytes of the file at least, so the reservation is bounded by its bytes):
  // ordered_json's keys are const, so a growing entry vector copied every
  // value it held, a tokenizer's arrays whole, and dropped the old ones.
  const uint64_t most = std::min<uint64_t>(count, cur_.left() / 13) + 3;
  f.attributes.get_ref<Json::object_t&>().reserve(f.attributes.size() + most);
  types.get_ref<Json::object_t&>().reserve(most);
  for (uint64_t i = 0; i < count; ++i) {
    auto key = string("metadata key");
    ZT_TRY(key);
    ZT_FAIL_IF(!cbor::is_valid_utf8(*key) || key->empty(), invalid,
               "%s: GGUF metadata key %llu is empty or not UTF-8", p(), static_cast<ull>(i));
    ZT_FAIL_IF(!seen.insert(*key).second, invalid, "%s: GGUF metadata key \"%s\" appears twice",
               p(), key->c_str());
    // The reader records the file's version and every key's type under these
    // two names: a key of the same name would be overwritten, so the file is
    // refused rather than converted with a value lost.
    ZT_FAIL_IF(
        *key == "gguf.types" || *key == "gguf.version" || *key == "gguf.skipped", invalid,
        "%s: GGUF metadata key \"%s\" has the name of the attribute that records the GGUF %s; "
        "refusing rather than losing either value",
        p(), key->c_str(),
        *key == "gguf.types"     ? "types"
        : *key == "gguf.version" ? "version"
                                 : "skipped tensors");
    auto type = fixed<uint32_t>(key->c_str());
    ZT_TRY(type);
    std::string type_name;
    auto v = value(*type, *key, 0, type_name);
    ZT_TRY(v);
    if (*key == "general.alignment") {
      ZT_FAIL_IF(*type != kU32, invalid,
                 "%s: GGUF key \"general.alignment\" must be uint32, not %s", p(),
                 type_name.c_str());
      const uint64_t a = v->get<uint64_t>();
      ZT_FAIL_IF(a == 0 || (a & (a - 1)) != 0, invalid,
                 "%s: GGUF key \"general.alignment\": %llu is not a power of two", p(),
                 static_cast<ull>(a));
      alignment_ = static_cast<uint32_t>(a);
    }
    // Keys are unique (checked above): append without ordered_json's linear lookup.
    f.attributes.get_ref<Json::object_t&>().emplace_back(*key, std::move(*v));
    types.get_ref<Json::object_t&>().emplace_back(*key, type_name);
  }
  f.attributes["gguf.types"] = std::move(types);
  return {};
}

Result<TensorInfo> Parser::tensor_info() {
  TensorInfo t;
  auto name = string("tensor name");
  ZT_TRY(name);
  ZT_FAIL_IF(name->empty() || !cbor::is_valid_utf8(*name), invalid,
             "%s: a GGUF tensor name is empty or not UTF-8", p());
  t.name = std::move(*name);
  const char* n = t.name.c_str();
  auto ndims = fixed<uint32_t>(n);
  ZT_TRY(ndims);
  ZT_FAIL_IF(*ndims > Limits::rank, limit,
             "%s: tensor \"%s\": %u dimensions, more than the limit %u", p(), n, *ndims,
             Limits::rank);
  for (uint32_t d = 0; d < *ndims; ++d) {
    auto dim = fixed<uint64_t>(n);
    ZT_TRY(dim);
    ZT_FAIL_IF(*dim > static_cast<uint64_t>(INT64_MAX), invalid,
               "%s: tensor \"%s\": dimension %u is negative", p(), n, d);
    t.dims.push_back(*dim);
  }
  auto type = fixed<uint32_t>(n);
  ZT_TRY(type);
  t.type = find_ggml_type(*type);
  t.type_id = *type;
  ZT_FAIL_IF(!t.type && !options_.skip_unknown_types, unsupported,
             "%s: tensor \"%s\": unknown GGML type %u (zt convert --skip-unknown converts the "
             "other tensors)",
             p(), n, *type);
  auto offset = fixed<uint64_t>(n);
  ZT_TRY(offset);
  t.offset = *offset;
  ZT_FAIL_IF(t.offset % alignment_ != 0, invalid,
             "%s: tensor \"%s\": offset %llu is not a multiple of the alignment %u", p(), n,
             static_cast<ull>(t.offset), alignment_);
  if (!t.type) return t;  // its size is unknown: left out, listed in gguf.skipped
  const uint64_t inner = t.dims.empty() ? 1 : t.dims[0];
  ZT_FAIL_IF(
      inner % t.type->block != 0, invalid,
      "%s: tensor \"%s\": %s rows of %llu elements are not a whole number of %u-element blocks",
      p(), n, std::string(t.type->name).c_str(), static_cast<ull>(inner), t.type->block);
  const auto rows =
      shape_product(std::span<const uint64_t>(t.dims).subspan(t.dims.empty() ? 0 : 1));
  const auto row_bytes = checked_mul(inner / t.type->block, t.type->bytes);
  const auto total = rows && row_bytes ? checked_mul(*rows, *row_bytes) : std::nullopt;
  ZT_FAIL_IF(!total, invalid, "%s: tensor \"%s\": the byte size overflows 64 bits", p(), n);
  t.nbytes = *total;
  return t;
}

Result<ForeignFile> Parser::run(ForeignFile f) {
  std::span<const uint8_t> magic;
  ZT_FAIL_IF(!cur_.take(4, magic) || std::memcmp(magic.data(), "GGUF", 4) != 0, format,
             "%s: not a GGUF file (no \"GGUF\" magic)", p());
  auto version = fixed<uint32_t>("the version");
  ZT_TRY(version);
  ZT_FAIL_IF(*version == 1, unsupported,
             "%s: GGUF version 1 (32-bit counts) is not supported; versions 2 and 3 are", p());
  ZT_FAIL_IF(*version == 0x02000000u || *version == 0x03000000u, unsupported,
             "%s: big-endian GGUF is not supported", p());
  ZT_FAIL_IF(*version != 2 && *version != 3, unsupported,
             "%s: GGUF version %u is not supported (2 and 3 are)", p(), *version);
  auto tensors = fixed<uint64_t>("the tensor count");
  ZT_TRY(tensors);
  auto kvs = fixed<uint64_t>("the metadata count");
  ZT_TRY(kvs);
  // Each tensor info takes at least 24 bytes, each key/value at least 13.
  ZT_FAIL_IF(*tensors > cur_.left() / 24 || *kvs > cur_.left() / 13, format,
             "%s: GGUF claims %llu tensors and %llu metadata entries, more than the %llu bytes "
             "left can hold",
             p(), static_cast<ull>(*tensors), static_cast<ull>(*kvs),
             static_cast<ull>(cur_.left()));
  ZT_FAIL_IF(*tensors > Limits::objects, limit, "%s: %llu tensors, more than the limit %llu", p(),
             static_cast<ull>(*tensors), static_cast<ull>(Limits::objects));
  f.attributes["gguf.version"] = *version;
  ZT_TRY(metadata(f, *kvs));

  std::vector<TensorInfo> infos;
  std::unordered_set<std::string> names;
  for (uint64_t i = 0; i < *tensors; ++i) {
    auto t = tensor_info();
    ZT_TRY(t);
    ZT_FAIL_IF(!names.insert(t->name).second, invalid, "%s: tensor \"%s\" appears twice", p(),
               t->name.c_str());
    infos.push_back(std::move(*t));
  }
  const uint64_t size = f.source.size();
  const uint64_t data_start = (cur_.pos() + alignment_ - 1) / alignment_ * alignment_;
  ZT_FAIL_IF(data_start > size && !infos.empty(), format,
             "%s: GGUF data section would start at %llu, past the end (%llu)", p(),
             static_cast<ull>(data_start), static_cast<ull>(size));
  const uint64_t data_size = data_start <= size ? size - data_start : 0;
  Json skipped = Json::array();
  for (const TensorInfo& t : infos) {
    if (t.type) continue;
    Json s = Json::object();
    s["name"] = t.name;
    s["ggml_type"] = t.type_id;
    s["shape"] = std::vector<uint64_t>(t.dims.rbegin(), t.dims.rend());
    skipped.push_back(std::move(s));
  }
  if (!skipped.empty()) f.attributes["gguf.skipped"] = std::move(skipped);
  std::erase_if(infos, [](const TensorInfo& t) { return t.type == nullptr; });
  for (const TensorInfo& t : infos)
    ZT_FAIL_IF(
        t.offset > data_size || t.nbytes > data_size - t.offset, invalid,
        "%s: tensor \"%s\": bytes [%llu, +%llu) of the data section go beyond its %llu bytes", p(),
        t.name.c_str(), static_cast<ull>(t.offset), static_cast<ull>(t.nbytes),
        static_cast<ull>(data_size));
  std::vector<const TensorInfo*> order;
  for (const TensorInfo& t : infos) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(),
                   [](auto* a, auto* b) { return a->offset < b->offset; });
  const TensorInfo* last = nullptr;
  for (const TensorInfo* t : order) {
    if (t->nbytes == 0) continue;
    ZT_FAIL_IF(last && t->offset < last->offset + last->nbytes, invalid,
               "%s: tensors \"%s\" [%llu, +%llu) and \"%s\" [%llu, +%llu) overlap", p(),
               last->name.c_str(), static_cast<ull>(last->offset), static_cast<ull>(last->nbytes),
               t->name.c_str(), static_cast<ull>(t->offset), static_cast<ull>(t->nbytes));
    last = t;
  }

  const uint8_t* base = f.source.base();
  for (const TensorInfo& t : infos) {
    ForeignObject o;
    o.name = t.name;
    std::vector<uint64_t> logical(t.dims.rbegin(), t.dims.rend());
    ForeignComponent c;
    c.role = "data";
    c.bytes = std::span<const uint8_t>(base + data_start + t.offset, t.nbytes);
    // Blocks regrouped into a quantized_group are copies (about the blocks'
    // size): checked against the caller's cap on a component first.
    ZT_FAIL_IF(!t.type->dense && ggml_group_form(*t.type) && t.nbytes > options_.decoded_limit(),
               limit,
               "%s: tensor \"%s\": %llu bytes of %s blocks to regroup, more than the limit %llu",
               p(), t.name.c_str(), static_cast<ull>(t.nbytes), std::string(t.type->name).c_str(),
               static_cast<ull>(options_.decoded_limit()));
    if (t.type->dense) {
      c.dtype = *t.type->dense;
      o.shape = std::move(logical);
    } else if (auto g = t.nbytes > 0 && ggml_group_form(*t.type)
                            ? ggml_blocks_to_group(*t.type, c.bytes, logical, f)
                            : std::nullopt) {
      g->name = std::move(o.name);
      f.objects.push_back(std::move(*g));
      continue;
    } else {
      c.dtype = DType::u8;
      o.shape = logical;
      if (o.shape.empty()) o.shape.push_back(1);
      o.shape.back() = o.shape.back() / t.type->block * t.type->bytes;
      o.attributes["ggml_type"] = t.type->name;
      o.attributes["logical_shape"] = std::move(logical);
    }
    o.components.push_back(std::move(c));
    f.objects.push_back(std::move(o));
  }
  return f;
}

}  // namespace

Result<ForeignFile> read_gguf(const std::string& path, const ReadOptions& options) {
  auto mapped = ForeignFile::mapped(path, FileKind::gguf);
  ZT_TRY(mapped);
  ForeignFile f = std::move(*mapped);
  ZT_FAIL_IF(f.source.size() < 24, format, "%s: %llu bytes is too short for a GGUF file",
             path.c_str(), static_cast<ull>(f.source.size()));
  const std::span<const uint8_t> bytes(f.source.base(), f.source.size());
  Parser parser(path, bytes, options);
  return parser.run(std::move(f));
}

}  // namespace zt::foreign
