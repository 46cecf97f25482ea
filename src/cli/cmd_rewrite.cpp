// zt convert, zt compress, zt decompress, zt merge, zt rm: every command that
// writes a file. Objects are copied from an Input into zt::Writer (or into
// a safetensors file), component by component, in pieces.
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
#include "container/http_source.h"
#include "foreign/ggml_quant.h"
#include "foreign/gguf.h"
#include "foreign/safetensors.h"
#include "input.h"
#include "manifest/object_format.h"
#include "progress.h"
#include "read/content.h"
#include "values.h"
#include "write/writer.h"

namespace zt::cli {

namespace {

using ull = unsigned long long;

constexpr uint64_t kPiece = uint64_t{16} << 20;  // bytes handed to the writer at once

enum class Encode { keep, raw, zstd, auto_ };

struct RewriteOptions {
  Encode encode = Encode::keep;
  WriterOptions writer;
  bool densify = false;
  bool no_canonical = false;  // --no-canonical
  bool keep_shards = false;   // --keep-shards
};

// Writer options shared by the commands: --level, --compress=LEVEL,
// --digest, --threads.
Result<void> writer_options(const Args& a, RewriteOptions& o) {
  if (const auto lv = a.get("--level")) {
    auto v = parse_int("--level", *lv);
    ZT_TRY(v);
    o.writer.zstd_level = *v;
  }
  if (const auto c = a.get("--compress")) {
    o.encode = Encode::zstd;
    if (!c->empty()) {
      auto v = parse_int("--compress", *c);
      ZT_TRY(v);
      o.writer.zstd_level = *v;
    }
  }
  ZT_FAIL_IF(o.writer.zstd_level < 1 || o.writer.zstd_level > 22, argument,
             "zstd level %d is not in 1..22", o.writer.zstd_level);
  if (const auto d = a.get("--digest")) {
    const DigestAlgo algo = digest_algo_from_name(*d);
    ZT_FAIL_IF(algo != DigestAlgo::xxh3 && algo != DigestAlgo::sha256 && algo != DigestAlgo::none,
               argument, "option '--digest': '%s' is not xxh3, sha256 or none", d->c_str());
    o.writer.digest = algo;
  }
  if (const auto t = a.get("--threads")) {
    auto v = parse_uint("--threads", *t);
    ZT_TRY(v);
    ZT_FAIL_IF(*v > Limits::threads, argument, "option '--threads': %llu is more than the limit %u",
               static_cast<ull>(*v), Limits::threads);
    o.writer.threads = static_cast<unsigned>(*v);
  }
  o.densify = a.has("--densify");
  if (const auto v = a.get("--format-version")) {
    ZT_FAIL_IF(*v != "2" && *v != "1.2" && *v != "1.2.0", argument,
               "option '--format-version': '%s' is not 1.2 or 2", v->c_str());
    o.writer.file_version = *v == "2" ? 2 : 0;
  }
  o.no_canonical = a.has("--no-canonical");
  if (const auto n = a.get("--shard-size")) {
    auto v = parse_uint("--shard-size", *n);
    ZT_TRY(v);
    ZT_FAIL_IF(o.writer.file_version != 2, argument,
               "option '--shard-size': shards are a zTensor v2 feature (--format-version 2)");
    o.writer.shard_bytes = *v;
  }
  if (a.has("--keep-shards")) {
    ZT_FAIL_IF(o.writer.file_version != 2, argument,
               "option '--keep-shards': shards are a zTensor v2 feature (--format-version 2)");
    ZT_FAIL_IF(o.writer.shard_bytes != 0, argument,
               "give either --keep-shards or --shard-size, not both");
    o.keep_shards = true;
    // Sharded, with no size to split at: the input's shards are the split.
    o.writer.shard_bytes = std::numeric_limits<uint64_t>::max() / 4;
  }
  return {};
}

// Without --format-version, a rewrite of one .zt file keeps its container:
// `zt compress` of a v2 file writes v2.
void keep_container(const Args& a, const Input& in, RewriteOptions& o) {
  if (a.has("--format-version") || !in.reader()) return;
  if (in.reader()->manifest().generation == Generation::v2) o.writer.file_version = 2;
}

// v2 output is canonical (v2 spec §6.3: the same tensors give the same
// bytes) unless it asks for what canonical form excludes: zstd, a digest
// other than xxh3, or --no-canonical.
WriterOptions writer_for(const RewriteOptions& o) {
  WriterOptions w = o.writer;
  w.canonical = w.file_version == 2 && !o.no_canonical && o.encode != Encode::zstd &&
                o.encode != Encode::auto_ && w.digest == DigestAlgo::xxh3 && w.shard_bytes == 0;
  return w;
}

std::string encoding_for(const Part& p, Encode e) {
  switch (e) {
    case Encode::keep:
      return p.encoding == "zstd" ? "zstd" : "raw";
    case Encode::raw:
      return "raw";
    case Encode::zstd:
      return "zstd";
    case Encode::auto_:
      return "auto";
  }
  return "raw";
}

uint64_t decoded_total(const Input& in, const std::vector<size_t>& items) {
  uint64_t t = 0;
  for (const size_t i : items)
    for (const Part& p : in.items[i].parts) t += p.decoded.value_or(p.stored);
  return t;
}

// Streams `bytes` into the writer's open component in pieces.
Result<void> write_pieces(Writer& w, std::span<const uint8_t> bytes, Progress& progress) {
  for (uint64_t off = 0; off < bytes.size(); off += kPiece) {
    const auto piece = bytes.subspan(off, std::min<uint64_t>(kPiece, bytes.size() - off));
    ZT_TRY(w.write(piece));
    progress.advance(piece.size());
  }
  return {};
}

bool narrow_sparse_index(const Item& it, const Part& p) {
  const ObjectFormat* f = it.descriptor;
  return f && is_index_role(*f, p.role) && p.dtype != DType::u64 && dtype_is_integer(p.dtype);
}

Result<Buffer> widen_to_u64(const Buffer& b, const Part& p, const std::string& object) {
  const unsigned width = dtype_width(p.dtype);
  const uint64_t n = b.view.size() / width;
  Buffer out;
  out.owned.resize(n * 8);
  for (uint64_t e = 0; e < n; ++e) {
    const __int128 v = load_index(b.view, p.dtype, e);
    ZT_FAIL_IF(v < 0, invalid, "object \"%s\": component \"%s\": negative index %lld at %llu",
               object.c_str(), p.role.c_str(), static_cast<long long>(v), static_cast<ull>(e));
    const uint64_t u = static_cast<uint64_t>(v);
    for (int byte = 0; byte < 8; ++byte)
      out.owned[e * 8 + byte] = static_cast<uint8_t>(u >> (8 * byte));
  }
  out.view = out.owned;
  return out;
}

// `attributes` (an encoded CBOR map, or empty for none) with `key` set to the
// text `value`: in place if the key is there, else appended.
Result<std::vector<uint8_t>> with_text_attribute(const std::vector<uint8_t>& attributes, std::string_view key,
                                                 std::string_view value) {
  cbor::Document doc;
  uint32_t pairs = 0;
  if (!attributes.empty()) {
    auto d = cbor::decode(attributes);
    ZT_TRY(d);
    doc = std::move(*d);
    pairs = doc.root().count;
  }
  bool replaced = false;
  CborWriter out;
  std::vector<uint8_t> body;
  {
    CborWriter w;
    uint32_t k = cbor::Document::first_child(0);
    for (uint32_t p = 0; p < pairs; ++p) {
      const uint32_t v = doc.next(k);
      w.text(doc.node(k).str);
      if (doc.node(k).str == key) {
        w.text(value);
        replaced = true;
      } else {
        encode_value(doc, v, w);
      }
      k = doc.next(v);
    }
    if (!replaced) {
      w.text(key);
      w.text(value);
    }
    body = w.take();
  }
  out.map(pairs + (replaced ? 0 : 1));
  out.raw(body);
  return out.take();
}

// Whether the target container can say what the object is: 1.2's
// quantized_group has no v2 layout of the same meaning, and a layout only
// v2 defines (zt.mx/1, gguf.q4_0/1) has no 1.2 format. Refused (exit 5)
// rather than written as something a reader would misread or not know.
Result<void> check_representable(const Item& it, const RewriteOptions& opt) {
  if (opt.densify) return {};
  const bool to_v2 = opt.writer.file_version == 2;
  if (to_v2) {
    const ObjectFormat* f = it.descriptor;
    ZT_FAIL_IF(f && f->layout_ids.empty(), argument,
               "format \"%s\" has no zTensor v2 layout of the same meaning (use --densify, or "
               "keep --format-version 1.2)",
               it.format.c_str());
    return {};
  }
  const ObjectFormat* f = it.descriptor;
  ZT_FAIL_IF(f && !f->v1, argument,
             "layout \"%s\" exists only in zTensor v2 (use --densify, or --format-version 2)",
             it.format.c_str());
  return {};
}

Result<void> copy_item(const Input& in, size_t i, const std::string& name, Writer& w,
                       const RewriteOptions& opt, bool canonical, Progress& progress) {
  const Item& it = in.items[i];
  ZT_TRY(check_representable(it, opt));
  // Corrupt input is refused, never copied under a fresh digest.
  ZT_TRY(in.check(i));
  if (opt.densify && it.descriptor != &kDenseFormat) {
    auto d = dense_form(in, i);
    ZT_TRY(d);
    ZT_TRY(w.begin_object(name, kDenseFormat.name, it.shape));
    auto attrs = with_text_attribute(it.has_attributes ? it.attributes_cbor : std::vector<uint8_t>(),
                                     "densified_from", it.format);
    ZT_TRY(attrs);
    ZT_TRY(w.set_object_attributes_cbor(*attrs));
    const std::string enc = opt.encode == Encode::keep ? "raw" : encoding_for(Part{}, opt.encode);
    ZT_TRY(w.begin_component("data", d->dtype, d->type, enc, d->bytes));
    // Streamed: the dense array is never held whole.
    ZT_TRY(write_densified(in, i, [&](std::span<const uint8_t> piece) { return write_pieces(w, piece, progress); }));
    ZT_TRY(w.end_component());
    return w.end_object();
  }
  ZT_TRY(w.begin_object(name, it.format, it.shape));
  // CBOR to CBOR: every attribute value survives exactly.
  if (it.has_attributes) ZT_TRY(w.set_object_attributes_cbor(it.attributes_cbor));
  // Canonical form takes parts in bytewise role order.
  std::vector<size_t> order(it.parts.size());
  std::iota(order.begin(), order.end(), size_t{0});
  if (canonical)
    std::sort(order.begin(), order.end(),
              [&](size_t x, size_t y) { return it.parts[x].role < it.parts[y].role; });
  for (const size_t k : order) {
    const Part& p = it.parts[k];
    const std::optional<std::string_view> type =
        p.type ? std::optional<std::string_view>(*p.type) : std::nullopt;
    if (p.decoded && !narrow_sparse_index(it, p)) {
      // Its size known, a component goes across a window at a time: a copy
      // holds a bounded window whatever the component decodes to.
      ZT_TRY(w.begin_component(p.role, dtype_name(p.dtype), type,
                               (canonical ? "raw" : encoding_for(p, opt.encode)), *p.decoded));
      auto windows = in.windows(i, k);
      ZT_TRY(windows);
      for (;;) {
        auto piece = (*windows)->next();
        ZT_TRY(piece);
        if (piece->empty()) break;
        ZT_TRY(write_pieces(w, *piece, progress));
      }
      ZT_TRY(w.end_component());
      continue;
    }
    // Sparse indices to widen, or a 1.1 zstd component whose size only
    // decoding tells: held whole.
    auto b = in.bytes(i, k);
    ZT_TRY(b);
    DType dtype = p.dtype;
    if (narrow_sparse_index(it, p)) {
      // Files before 1.2.0 could store sparse indices in any integer type;
      // 1.2.0 requires u64, so they are widened on the way.
      auto wide = widen_to_u64(*b, p, it.name);
      ZT_TRY(wide);
      *b = std::move(*wide);
      dtype = DType::u64;
    }
    ZT_TRY(w.begin_component(p.role, dtype_name(dtype), type,
                             (canonical ? "raw" : encoding_for(p, opt.encode)), b->view.size()));
    ZT_TRY(write_pieces(w, b->view, progress));
    ZT_TRY(w.end_component());
  }
  return w.end_object();
}

// An error message that starts with `file` and names `object` (when given).
Error qualified(Error e, const std::string& file, const std::string& object = {}) {
  if (!object.empty() && e.message.find('"' + object + '"') == std::string::npos)
    e.message = "object \"" + object + "\": " + e.message;
  if (!e.message.starts_with(file)) e.message = file + ": " + e.message;
  return e;
}

// One planned object of the output: input, item, output name.
struct Planned {
  const Input* in;
  size_t item;
  std::string name;
};

// `attributes`: the file attributes as an encoded CBOR map (an empty map,
// or none, writes none).
Result<void> write_zt(const std::string& out, const std::vector<Planned>& plan,
                      const std::vector<uint8_t>* attributes, const RewriteOptions& opt, const char* label) {
  const WriterOptions options = writer_for(opt);
  auto w = Writer::open(out, options);
  if (!w) return qualified(std::move(w).error(), out);
  constexpr uint8_t kEmptyMap = 0xA0;
  if (attributes && !attributes->empty() && !(attributes->size() == 1 && (*attributes)[0] == kEmptyMap)) {
    auto a = (*w)->set_file_attributes_cbor(*attributes);
    if (!a) return qualified(std::move(a).error(), out);
  }
  uint64_t total = 0;
  for (const Planned& p : plan) total += decoded_total(*p.in, {p.item});
  Progress progress(label, total);
  // Canonical form takes objects in bytewise name order.
  std::vector<const Planned*> order;
  for (const Planned& p : plan) order.push_back(&p);
  if (options.canonical)
    std::sort(order.begin(), order.end(),
              [](const Planned* x, const Planned* y) { return x->name < y->name; });
  const Item* previous = nullptr;
  for (const Planned* pp : order) {
    const Planned& p = *pp;
    const Item& item = p.in->items[p.item];
    if (opt.keep_shards && previous && previous->input_shard != item.input_shard) {
      auto s = (*w)->end_shard();
      if (!s) return qualified(std::move(s).error(), out);
    }
    previous = &item;
    auto r = copy_item(*p.in, p.item, p.name, **w, opt, options.canonical, progress);
    if (!r) return qualified(std::move(r).error(), p.in->path, p.in->items[p.item].name);
  }
  auto f = (*w)->finish();
  if (!f) return qualified(std::move(f).error(), out);
  progress.finish();
  return {};
}

// Foreign writers (safetensors, GGUF): an object the format cannot hold,
// named for the refusal ("\"w\" (dtype u16)").
void add_refusal(std::string& refused, const Item& it, const Part* data) {
  const std::string why =
      data ? "dtype " + std::string(dtype_name(data->dtype)) + (data->type ? "/" + *data->type : "")
           : it.format;
  refused += (refused.empty() ? "" : ", ") + ("\"" + it.name + "\" (" + why + ")");
}

// Foreign writers: an object's bytes to the writer's sink, its dense data
// in pieces or its values densified, errors naming the input and object.
Result<void> write_object(const Input& in, size_t i, bool densified, Progress& progress,
                          const ByteSink& sink) {
  const Item& it = in.items[i];
  const ByteSink counted = [&](std::span<const uint8_t> piece) -> Result<void> {
    ZT_TRY(sink(piece));
    progress.advance(piece.size());
    return {};
  };
  if (densified) {
    auto d = write_densified(in, i, counted);
    if (!d) return qualified(std::move(d).error(), in.path, it.name);
    return d;
  }
  auto b = in.bytes(i, *it.index_of("data"));
  if (!b) return qualified(std::move(b).error(), in.path, it.name);
  for (uint64_t off = 0; off < b->view.size(); off += kPiece)
    ZT_TRY(counted(b->view.subspan(off, std::min<uint64_t>(kPiece, b->view.size() - off))));
  return {};
}

// safetensors holds dense tensors of its own dtypes only. Objects it cannot
// hold are densified to f32/f64 with --densify, else refused by name.
Result<void> write_st(const std::string& out, const Input& in, const RewriteOptions& opt) {
  std::vector<foreign::SafetensorsEntry> entries;
  std::vector<bool> dense_path;
  std::string refused;
  for (size_t i = 0; i < in.items.size(); ++i) {
    const Item& it = in.items[i];
    const Part* data = it.descriptor == &kDenseFormat ? it.find("data") : nullptr;
    const auto st = data ? foreign::safetensors_dtype(data->dtype, data->type) : std::nullopt;
    foreign::SafetensorsEntry e;
    e.name = it.name;
    e.shape = it.shape;
    if (st) {
      e.dtype = *st;
      e.nbytes = data->decoded.value_or(data->stored);
      dense_path.push_back(true);
    } else if (opt.densify) {
      dense_path.push_back(false);
    } else {
      add_refusal(refused, it, data);
      continue;
    }
    entries.push_back(std::move(e));
  }
  ZT_FAIL_IF(!refused.empty(), argument,
             "%s: safetensors holds dense tensors of its own dtypes only; cannot write %s (use "
             "--densify to store "
             "them as dense f32/f64 values)",
             out.c_str(), refused.c_str());
  // Densified objects: their sizes are known without decoding; their values
  // are decoded as they are written.
  for (size_t i = 0; i < in.items.size(); ++i) {
    // Every object is checked before the output is begun: corrupt input is
    // refused, never copied.
    if (auto c = in.check(i); !c) return qualified(std::move(c).error(), in.path, in.items[i].name);
    if (dense_path[i]) continue;
    auto d = dense_form(in, i);
    if (!d) return qualified(std::move(d).error(), in.path, in.items[i].name);
    entries[i].dtype =
        d->type ? (d->type == "complex64" ? "C64" : "") : (d->dtype == "f64" ? "F64" : "F32");
    ZT_FAIL_IF(entries[i].dtype.empty(), argument,
               "%s: object \"%s\": complex128 has no safetensors dtype", out.c_str(),
               in.items[i].name.c_str());
    entries[i].nbytes = d->bytes;
  }
  std::vector<std::pair<std::string, std::string>> metadata;
  ZT_TRY(for_each_attribute(in.attributes_cbor, [&](std::string_view k, std::span<const uint8_t> v) -> Result<void> {
    auto s = cbor::scalar(v);
    ZT_TRY(s);
    metadata.emplace_back(std::string(k), s->kind == cbor::Kind::text ? std::string(s->str) : attribute_text(v));
    return {};
  }));
  uint64_t total = 0;
  for (const auto& e : entries) total += e.nbytes;
  Progress progress("convert", total);
  auto r = foreign::write_safetensors(out, metadata, entries,
                                      [&](size_t i, const foreign::ByteSink& sink) {
                                        return write_object(in, i, !dense_path[i], progress, sink);
                                      });
  if (!r) return qualified(std::move(r).error(), out);
  progress.finish();
  uint64_t dropped = 0;
  for (const Item& it : in.items) dropped += it.has_attributes && it.attributes_cbor.size() > 1 ? 1 : 0;
  if (dropped)
    std::fprintf(
        stderr,
        "zt: note: safetensors has no per-tensor metadata: attributes of %llu object%s not kept\n",
        static_cast<ull>(dropped), dropped == 1 ? " were" : "s were");
  return {};
}

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

Result<void> write_gguf_file(const std::string& out, const Input& in, const RewriteOptions& opt) {
  std::vector<foreign::GgufTensorEntry> entries;
  std::vector<bool> dense_path, repack;
  std::string refused;
  for (size_t i = 0; i < in.items.size(); ++i) {
    const Item& it = in.items[i];
    const Part* data = it.descriptor == &kDenseFormat ? it.find("data") : nullptr;
    foreign::GgufTensorEntry e;
    e.name = it.name;
    e.shape = it.shape;
    auto group = ggml_group(out, it);
    ZT_TRY(group);
    repack.push_back(group->has_value());
    if (*group) {
      entries.push_back(std::move(**group));
      dense_path.push_back(true);
      continue;
    }
    if (data) {
      auto blocks = ggml_blocks(out, it, *data);
      ZT_TRY(blocks);
      if (*blocks) {
        entries.push_back(std::move(**blocks));
        dense_path.push_back(true);
        continue;
      }
      e.type = ggml_plain_type(*data);
    }
    if (e.type) {
      e.nbytes = data->decoded.value_or(data->stored);
      dense_path.push_back(true);
    } else if (opt.densify) {
      dense_path.push_back(false);
    } else {
      add_refusal(refused, it, data);
      continue;
    }
    entries.push_back(std::move(e));
  }
  ZT_FAIL_IF(!refused.empty(), argument,
             "%s: GGUF holds GGML's types (dense f32 f16 bf16 f64 i8 i16 i32 i64, and raw blocks "
             "with ggml_type); cannot write %s (use --densify to store them as f32/f64 values)",
             out.c_str(), refused.c_str());
  for (size_t i = 0; i < in.items.size(); ++i) {
    if (auto c = in.check(i); !c) return qualified(std::move(c).error(), in.path, in.items[i].name);
    if (dense_path[i]) continue;
    auto d = dense_form(in, i);
    if (!d) return qualified(std::move(d).error(), in.path, in.items[i].name);
    ZT_FAIL_IF(d->type.has_value(), argument, "%s: object \"%s\": GGUF has no complex type",
               out.c_str(), in.items[i].name.c_str());
    entries[i].type = find_ggml_type(d->dtype == "f64" ? "F64" : "F32");
    entries[i].nbytes = d->bytes;
  }
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
          const uint64_t k = it.shape.back();
          auto blocks = foreign::ggml_group_to_blocks(
              *entries[i].type, entries[i].nbytes / (k / 32 * entries[i].type->bytes), k,
              parts[0].view, parts[1].view, parts[2].view, [&](std::span<const uint8_t> piece) {
                progress.advance(piece.size());
                return sink(piece);
              });
          if (!blocks) return qualified(std::move(blocks).error(), in.path, it.name);
          return blocks;
        }
        return write_object(in, i, !dense_path[i], progress, sink);
      });
  if (!r) return qualified(std::move(r).error(), out);
  progress.finish();
  return {};
}

std::vector<Planned> all_of(const Input& in) {
  std::vector<Planned> plan;
  for (size_t i = 0; i < in.items.size(); ++i) plan.push_back({&in, i, in.items[i].name});
  return plan;
}

const std::vector<uint8_t>* file_attributes(const Input& in) {
  return in.has_attributes ? &in.attributes_cbor : nullptr;
}

// Errors of write_zt and write_st name their file already.
int fail(const Result<void>& r) {
  return report(r.error());
}

// compress / decompress: -o OUT, or --in-place (atomic replacement).
Result<std::string> target_of(const Args& a) {
  const auto out = a.get("--output");
  ZT_FAIL_IF(out && a.has("--in-place"), argument, "give either -o OUT or --in-place, not both");
  ZT_FAIL_IF(!out && !a.has("--in-place"), argument,
             "needs -o OUT (or --in-place to replace FILE)");
  ZT_FAIL_IF(!out && is_http_url(a.pos[0]), argument,
             "--in-place replaces a local file; %s is a URL (give -o OUT)",
             url_for_messages(a.pos[0]).c_str());
  return out ? *out : a.pos[0];
}

int recode(const Args& a, const char* cmd, Encode encode) {
  if (a.pos.size() != 1) return usage_error(cmd, "expects one FILE");
  RewriteOptions opt;
  auto o = writer_options(a, opt);
  if (!o) return usage_error(cmd, o.error().message);
  opt.encode = encode == Encode::zstd && a.has("--auto") ? Encode::auto_ : encode;
  if (const auto r = a.get("--min-ratio")) {
    char* end = nullptr;
    opt.writer.auto_min_ratio = std::strtod(r->c_str(), &end);
    if (*end || opt.writer.auto_min_ratio <= 0)
      return usage_error(cmd, "option '--min-ratio' needs a positive number");
  }
  auto target = target_of(a);
  if (!target) return usage_error(cmd, target.error().message);
  auto in = Input::open(a.pos[0]);
  if (!in) return report(in.error(), a.pos[0]);
  if ((*in)->kind != foreign::FileKind::zt)
    return report(make_error(Status::unsupported,
                             "%s works on .zt files; use zt convert for other formats", cmd),
                  a.pos[0]);
  keep_container(a, **in, opt);
  auto w = write_zt(*target, all_of(**in), file_attributes(**in), opt, cmd);
  if (!w) return fail(w);
  const uint64_t before = (*in)->file_size;
  auto after = Input::open(*target);
  if (after)
    std::fprintf(stderr, "%s: %s -> %s\n", target->c_str(), human_bytes(before).c_str(),
                 human_bytes((*after)->file_size).c_str());
  return kOk;
}

}  // namespace

int run_convert(const Args& a) {
  if (a.pos.size() != 2) return usage_error("convert", "expects IN and OUT");
  RewriteOptions opt;
  auto o = writer_options(a, opt);
  if (!o) return usage_error("convert", o.error().message);
  const std::string& out = a.pos[1];
  const foreign::FileKind out_kind = foreign::kind_from_path(out);
  if (out_kind != foreign::FileKind::zt && out_kind != foreign::FileKind::safetensors &&
      out_kind != foreign::FileKind::gguf)
    return usage_error(
        "convert", "OUT must end in .zt, .safetensors or .gguf (use zt export for a single .npy)");
  foreign::ReadOptions read;
  read.skip_unknown_types = a.has("--skip-unknown");
  auto in = Input::open(a.pos[0], read);
  if (!in) return report(in.error(), a.pos[0]);
  Result<void> r;
  if (out_kind == foreign::FileKind::safetensors)
    r = write_st(out, **in, opt);
  else if (out_kind == foreign::FileKind::gguf)
    r = write_gguf_file(out, **in, opt);
  else
    r = write_zt(out, all_of(**in), file_attributes(**in), opt, "convert");
  if (!r) return fail(r);
  const bool zt_in = (*in)->kind == foreign::FileKind::zt;
  std::fprintf(stderr, "wrote %s: %zu object%s from %s (%s%s)\n", out.c_str(), (*in)->items.size(),
               (*in)->items.size() == 1 ? "" : "s", (*in)->path.c_str(), zt_in ? "zTensor " : "",
               (*in)->version.c_str());
  return kOk;
}

int run_compress(const Args& a) {
  return recode(a, "compress", Encode::zstd);
}
int run_decompress(const Args& a) {
  return recode(a, "decompress", Encode::raw);
}

int run_merge(const Args& a) {
  if (a.pos.empty()) return usage_error("merge", "expects at least one input file");
  const auto out = a.get("--output");
  if (!out) return usage_error("merge", "needs -o OUT.zt");
  RewriteOptions opt;
  auto o = writer_options(a, opt);
  if (!o) return usage_error("merge", o.error().message);
  const bool rename = a.has("--rename");
  std::vector<std::unique_ptr<Input>> inputs;
  for (const std::string& p : a.pos) {
    auto in = Input::open(p);
    if (!in) return report(in.error(), p);
    inputs.push_back(std::move(*in));
  }
  std::vector<Planned> plan;
  std::unordered_map<std::string, std::string> owner;  // output name -> input path
  for (size_t f = 0; f < inputs.size(); ++f) {
    const Input& in = *inputs[f];
    for (size_t i = 0; i < in.items.size(); ++i) {
      std::string name = in.items[i].name;
      if (owner.count(name)) {
        if (!rename)
          return report(make_error(
              Status::argument,
              "object \"%s\" is in both %s and %s; refusing to merge (--rename keeps both)",
              name.c_str(), owner[name].c_str(), in.path.c_str()));
        std::string candidate = name + "." + std::to_string(f + 1);
        for (int n = 2; owner.count(candidate); ++n)
          candidate = name + "." + std::to_string(f + 1) + "." + std::to_string(n);
        std::fprintf(stderr, "zt: %s: object \"%s\" renamed to \"%s\"\n", in.path.c_str(),
                     name.c_str(), candidate.c_str());
        name = candidate;
      }
      owner[name] = in.path;
      plan.push_back({&in, i, name});
    }
  }
  // File attributes: the first input that sets a key wins; conflicts are
  // told. Values are compared and copied as CBOR, exactly.
  std::vector<std::pair<std::string, std::vector<uint8_t>>> kept;
  std::unordered_map<std::string, size_t> kept_at;
  for (const auto& in : inputs) {
    if (!in->has_attributes || in->attributes_cbor.empty()) continue;
    auto doc = cbor::decode(in->attributes_cbor);
    if (!doc) return report(doc.error(), in->path);
    uint32_t k = cbor::Document::first_child(0);
    for (uint32_t p = 0; p < doc->root().count; ++p) {
      const uint32_t v = doc->next(k);
      const std::string key(doc->node(k).str);
      CborWriter value;
      encode_value(*doc, v, value);
      if (const auto at = kept_at.find(key); at == kept_at.end()) {
        kept_at.emplace(key, kept.size());
        kept.emplace_back(key, value.take());
      } else if (kept[at->second].second != value.bytes()) {
        std::fprintf(stderr, "zt: note: file attribute \"%s\" differs in %s; keeping the first value\n",
                     key.c_str(), in->path.c_str());
      }
      k = doc->next(v);
    }
  }
  CborWriter merged;
  merged.map(kept.size());
  for (const auto& [key, value] : kept) {
    merged.text(key);
    merged.raw(value);
  }
  const std::vector<uint8_t> attrs = merged.take();
  auto w = write_zt(*out, plan, &attrs, opt, "merge");
  if (!w) return fail(w);
  std::fprintf(stderr, "wrote %s: %zu objects from %zu files\n", out->c_str(), plan.size(),
               inputs.size());
  return kOk;
}

int run_append(const Args& a) {
  if (a.pos.size() < 2) return usage_error("append", "expects FILE and at least one input");
  RewriteOptions opt;
  auto o = writer_options(a, opt);
  if (!o) return usage_error("append", o.error().message);
  if (a.has("--format-version") && opt.writer.file_version != 2)
    return usage_error("append", "appending is a zTensor v2 operation (--format-version 2)");
  opt.writer.file_version = 2;
  const std::string& target = a.pos[0];
  std::vector<std::unique_ptr<Input>> inputs;
  for (size_t k = 1; k < a.pos.size(); ++k) {
    auto in = Input::open(a.pos[k]);
    if (!in) return report(in.error(), a.pos[k]);
    inputs.push_back(std::move(*in));
  }
  auto w = Writer::open_append(target, opt.writer);
  if (!w) return report(w.error(), target);
  uint64_t total = 0;
  for (const auto& in : inputs)
    for (size_t i = 0; i < in->items.size(); ++i) total += decoded_total(*in, {i});
  Progress progress("append", total);
  size_t added = 0;
  for (const auto& in : inputs)
    for (size_t i = 0; i < in->items.size(); ++i) {
      auto r = copy_item(*in, i, in->items[i].name, **w, opt, false, progress);
      if (!r) return report(qualified(std::move(r).error(), in->path, in->items[i].name));
      ++added;
    }
  auto f = (*w)->finish();
  if (!f) return report(f.error(), target);
  progress.finish();
  std::fprintf(stderr, "%s: appended %zu object%s (a new generation; earlier bytes unchanged)\n",
               target.c_str(), added, added == 1 ? "" : "s");
  return kOk;
}

int run_rm(const Args& a) {
  if (a.pos.size() < 2) return usage_error("rm", "expects FILE and at least one NAME");
  const auto out = a.get("--output");
  if (!out) return usage_error("rm", "needs -o OUT.zt");
  RewriteOptions opt;
  auto o = writer_options(a, opt);
  if (!o) return usage_error("rm", o.error().message);
  auto in = Input::open(a.pos[0]);
  if (!in) return report(in.error(), a.pos[0]);
  keep_container(a, **in, opt);
  std::set<std::string> drop(a.pos.begin() + 1, a.pos.end());
  for (const std::string& n : drop)
    if (!(*in)->find(n))
      return report(make_error(Status::not_found, "no object named \"%s\"", n.c_str()), a.pos[0]);
  std::vector<Planned> plan;
  for (const Planned& p : all_of(**in))
    if (!drop.count(p.name)) plan.push_back(p);
  auto w = write_zt(*out, plan, file_attributes(**in), opt, "rm");
  if (!w) return fail(w);
  std::fprintf(stderr, "wrote %s: %zu objects kept, %zu removed\n", out->c_str(), plan.size(),
               drop.size());
  return kOk;
}

}  // namespace zt::cli
