// zt convert to .gguf (v3): what read_gguf made comes back as it was (raw
// GGML blocks, metadata types); other inputs where GGUF has the type.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <set>
#include <unordered_map>

#include "base/arithmetic.h"
#include "base/zt_limits.h"
#include "cbor/cbor_encode.h"
#include "cbor/cbor_item.h"
#include "cbor/cbor_value.h"
#include "commands.h"
#include "foreign/ggml_quant.h"
#include "foreign/gguf.h"
#include "foreign/safetensors.h"
#include "input.h"
#include "manifest/object_format.h"
#include "progress.h"
#include "read/content.h"
#include "rewrite.h"
#include "source/http_source.h"
#include "values.h"
#include "write/writer.h"

namespace zt::cli {

namespace {

using ull = unsigned long long;

// GGUF: what read_gguf makes comes back as it was; other inputs where GGUF
// has the type. A file attribute's GGUF type is the one "gguf.types"
// recorded, else the natural one (text: string, bool, int: int64 or uint64
// beyond, float: float64, arrays of one such type); maps have none.
std::optional<std::string> natural_gguf_type(const cbor::Document& doc, uint32_t node) {
  const cbor::Node& n = doc.node(node);
  switch (n.kind) {
    case cbor::Kind::text:
    case cbor::Kind::bytes:
      return "string";
    case cbor::Kind::boolean:
      return "bool";
    case cbor::Kind::uint:
      return n.u > static_cast<uint64_t>(INT64_MAX) ? "uint64" : "int64";
    case cbor::Kind::negint:
      return "int64";
    case cbor::Kind::float_:
      return "float64";
    case cbor::Kind::array: {
      std::optional<std::string> inner = "int64";  // an empty array's items
      uint32_t c = cbor::Document::first_child(node);
      for (uint32_t i = 0; i < n.count; ++i, c = doc.next(c)) {
        auto t = natural_gguf_type(doc, c);
        if (!t || (i > 0 && *t != *inner)) return std::nullopt;
        inner = t;
      }
      return "array[" + *inner + "]";
    }
    default:
      return std::nullopt;
  }
}

Result<std::vector<foreign::GgufKeyValue>> gguf_metadata(const std::string& out, const Input& in,
                                                         uint32_t& version) {
  std::vector<foreign::GgufKeyValue> kvs;
  std::optional<cbor::Document> types;
  std::span<const uint8_t> types_cbor;
  ZT_TRY(for_each_attribute(in.attributes_cbor,
                            [&](std::string_view k, std::span<const uint8_t> v) -> Result<void> {
                              if (k == "gguf.types") types_cbor = v;
                              return {};
                            }));
  if (!types_cbor.empty()) {
    auto d = cbor::decode(types_cbor);
    ZT_TRY(d);
    ZT_FAIL_IF(d->root().kind != cbor::Kind::map, argument,
               "%s: the attribute gguf.types is not a map", out.c_str());
    types = std::move(*d);
  }
  ZT_TRY(for_each_attribute(
      in.attributes_cbor, [&](std::string_view k, std::span<const uint8_t> v) -> Result<void> {
        if (k == "gguf.types" || k == "gguf.skipped") return {};
        if (k == "gguf.version") {
          auto s = cbor::scalar(v);
          ZT_TRY(s);
          ZT_FAIL_IF(s->kind != cbor::Kind::uint || (s->u != 2 && s->u != 3), argument,
                     "%s: the attribute gguf.version is not 2 or 3", out.c_str());
          version = static_cast<uint32_t>(s->u);
          return {};
        }
        std::string type;
        if (const uint32_t t = types ? types->find(0, k) : 0;
            t && types->node(t).kind == cbor::Kind::text) {
          type = std::string(types->node(t).str);
        } else {
          auto d = cbor::decode(v);
          ZT_TRY(d);
          const auto natural = natural_gguf_type(*d, 0);
          ZT_FAIL_IF(!natural, argument,
                     "%s: attribute \"%s\" (a map or a mixed array) has no GGUF type", out.c_str(),
                     std::string(k).c_str());
          type = *natural;
        }
        kvs.push_back({std::string(k), std::move(type), v});
        return {};
      }));
  return kvs;
}

// The GGML type of an object read_gguf made from raw blocks: its u8 data
// with the attributes ggml_type and logical_shape, the bytes agreeing.
Result<std::optional<foreign::GgufTensorEntry>> ggml_blocks(const std::string& out, const Item& it,
                                                            const Part& data) {
  using Found = std::optional<foreign::GgufTensorEntry>;
  if (data.dtype != DType::u8 || data.type || !it.has_attributes) return Found();
  auto d = cbor::decode(it.attributes_cbor);
  ZT_TRY(d);
  const uint32_t type = d->find(0, "ggml_type"), shape = d->find(0, "logical_shape");
  if (!type || !shape || d->node(type).kind != cbor::Kind::text) return Found();
  const GgmlType* t = find_ggml_type(d->node(type).str);
  ZT_FAIL_IF(!t, argument, "%s: object \"%s\": ggml_type \"%s\" is not a GGML type", out.c_str(),
             it.name.c_str(), std::string(d->node(type).str).c_str());
  foreign::GgufTensorEntry e;
  e.name = it.name;
  e.type = t;
  const cbor::Node& s = d->node(shape);
  ZT_FAIL_IF(s.kind != cbor::Kind::array, argument,
             "%s: object \"%s\": logical_shape is not an array", out.c_str(), it.name.c_str());
  uint32_t c = cbor::Document::first_child(shape);
  for (uint32_t i = 0; i < s.count; ++i, c = d->next(c)) {
    ZT_FAIL_IF(d->node(c).kind != cbor::Kind::uint, argument,
               "%s: object \"%s\": logical_shape holds a non-integer", out.c_str(),
               it.name.c_str());
    e.shape.push_back(d->node(c).u);
  }
  const uint64_t inner = e.shape.empty() ? 1 : e.shape.back();
  const auto rows = shape_product(
      std::span<const uint64_t>(e.shape).first(e.shape.empty() ? 0 : e.shape.size() - 1));
  const auto bytes = rows ? checked_mul(*rows, inner / t->block) : std::nullopt;
  e.nbytes = data.decoded.value_or(data.stored);
  ZT_FAIL_IF(inner % t->block != 0 || !bytes || !checked_mul(*bytes, t->bytes) ||
                 *checked_mul(*bytes, t->bytes) != e.nbytes,
             argument, "%s: object \"%s\": %llu bytes are not whole %s blocks of its logical_shape",
             out.c_str(), it.name.c_str(), static_cast<ull>(e.nbytes),
             std::string(t->name).c_str());
  return std::optional<foreign::GgufTensorEntry>(std::move(e));
}

// A quantized_group that GGUF's Q8_0, Q4_0, Q5_0, Q4_1 or Q5_1 became (ggml_quant.h) goes back
// to its blocks: its ggml_type, bits, group size and packing of that form.
Result<std::optional<foreign::GgufTensorEntry>> ggml_group(const std::string& out, const Item& it) {
  using Found = std::optional<foreign::GgufTensorEntry>;
  if (it.descriptor != &kQuantizedGroupFormat || !it.has_attributes || it.shape.empty())
    return Found();
  auto d = cbor::decode(it.attributes_cbor);
  ZT_TRY(d);
  const uint32_t type = d->find(0, "ggml_type");
  if (!type || d->node(type).kind != cbor::Kind::text) return Found();
  const GgmlType* t = find_ggml_type(d->node(type).str);
  const auto group = t ? foreign::ggml_group_form(*t) : std::nullopt;
  if (!group) return Found();
  const auto uint_of = [&](const char* key) -> std::optional<uint64_t> {
    const uint32_t v = d->find(0, key);
    if (!v || d->node(v).kind != cbor::Kind::uint) return std::nullopt;
    return d->node(v).u;
  };
  const uint32_t packing = d->find(0, "packing");
  const Part* packed = it.find("packed_weight");
  const Part* scales = it.find("scales");
  const Part* zeros = it.find("zeros");
  const bool form = uint_of("bits") == group->bits && uint_of("group_size") == 32u && packing &&
                    d->node(packing).kind == cbor::Kind::text &&
                    d->node(packing).str == group->packing && packed &&
                    packed->dtype == DType::u8 && !packed->type && scales &&
                    scales->dtype == DType::f16 && !scales->type && zeros &&
                    zeros->dtype == group->zeros && !zeros->type && it.shape.back() % 32 == 0;
  ZT_FAIL_IF(!form, argument,
             "%s: object \"%s\": ggml_type %s, but not the quantized_group form zt makes of it "
             "(bits %u, group_size 32, packing %s, u8/f16/%s components)",
             out.c_str(), it.name.c_str(), std::string(t->name).c_str(), group->bits,
             std::string(group->packing).c_str(), std::string(dtype_name(group->zeros)).c_str());
  foreign::GgufTensorEntry e;
  e.name = it.name;
  e.type = t;
  e.shape = it.shape;
  const auto rows = shape_product(std::span<const uint64_t>(it.shape).first(it.shape.size() - 1));
  const auto bytes = rows ? checked_mul(*rows, it.shape.back() / 32 * t->bytes) : std::nullopt;
  ZT_FAIL_IF(!bytes, argument, "%s: object \"%s\": its size overflows", out.c_str(),
             it.name.c_str());
  e.nbytes = *bytes;
  return Found(std::move(e));
}

const GgmlType* ggml_plain_type(const Part& data) {
  if (data.type) return nullptr;
  for (const GgmlType& t : kGgmlTypes)
    if (t.dense && *t.dense == data.dtype) return &t;
  return nullptr;
}

}  // namespace

Result<void> write_gguf_file(const std::string& out, const Input& in, const RewriteOptions& opt) {
  std::vector<bool> repack;  // quantized objects going back to their GGML blocks
  std::vector<bool> as_blocks;  // objects whose attributes name their GGML block type
  auto plan = plan_export<foreign::GgufTensorEntry>(
      out, in, opt,
      "GGUF holds GGML's types (dense f32 f16 bf16 f64 i8 i16 i32 i64, and raw blocks with "
      "ggml_type)",
      [&](const Item& it, const Part* data) -> Result<std::optional<foreign::GgufTensorEntry>> {
        auto group = ggml_group(out, it);
        ZT_TRY(group);
        repack.push_back(group->has_value());
        as_blocks.push_back(false);
        if (*group) return group;
        if (!data) return std::optional<foreign::GgufTensorEntry>();
        auto blocks = ggml_blocks(out, it, *data);
        ZT_TRY(blocks);
        as_blocks.back() = blocks->has_value();
        if (*blocks) return blocks;
        foreign::GgufTensorEntry e;
        e.name = it.name;
        e.shape = it.shape;
        e.type = ggml_plain_type(*data);
        if (!e.type) return std::optional<foreign::GgufTensorEntry>();
        e.nbytes = data->decoded.value_or(data->stored);
        return std::optional(std::move(e));
      },
      [&](foreign::GgufTensorEntry& e, const DenseForm& d, const Item& it) -> Result<void> {
        ZT_FAIL_IF(d.type.has_value(), argument, "%s: object \"%s\": GGUF has no complex type",
                   out.c_str(), it.name.c_str());
        e.type = find_ggml_type(d.dtype == "f64" ? "F64" : "F32");
        return {};
      });
  ZT_TRY(plan);
  // Their attributes live on in the type a quantized or block object is
  // written as; any other object's are not kept, and that is said.
  note_dropped_attributes(in, "GGUF", [&](size_t i) {
    return (i < repack.size() && repack[i]) || (i < as_blocks.size() && as_blocks[i]);
  });
  std::vector<foreign::GgufTensorEntry>& entries = plan->entries;
  uint32_t version = 3;
  auto metadata = gguf_metadata(out, in, version);
  ZT_TRY(metadata);
  uint64_t total = 0;
  for (const auto& e : entries) total += e.nbytes;
  Progress progress("convert", total);
  auto r = foreign::write_gguf(
      out, version, *metadata, entries,
      [&](size_t i, const foreign::GgufSink& sink) -> Result<void> {
        const Item& it = in.items[i];
        if (repack[i]) {
          std::vector<Buffer> parts;
          for (const char* role : {"packed_weight", "scales", "zeros"}) {
            auto b = in.bytes(i, *it.index_of(role));
            if (!b) return qualified(std::move(b).error(), in.path, it.name);
            parts.push_back(std::move(*b));
          }
          // Rows from the shape, not nbytes / row size: a row of 0 values has 0 bytes.
          const uint64_t k = it.shape.back();
          const auto rows =
              shape_product(std::span<const uint64_t>(it.shape).first(it.shape.size() - 1));
          auto blocks = foreign::ggml_group_to_blocks(*entries[i].type, rows.value_or(0), k,
                                                      parts[0].view, parts[1].view, parts[2].view,
                                                      [&](std::span<const uint8_t> piece) {
                                                        progress.advance(piece.size());
                                                        return sink(piece);
                                                      });
          if (!blocks) return qualified(std::move(blocks).error(), in.path, it.name);
          return blocks;
        }
        return write_object(in, i, plan->densified[i], progress, sink);
      });
  if (!r) return qualified(std::move(r).error(), out);
  progress.finish();
  return {};
}

}  // namespace zt::cli
