// What the commands that write files share (rewrite.h): options, the copy
// of objects from an Input into zt::Writer component by component in
// pieces, and the foreign writers' common steps.
#include "rewrite.h"

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
#include "codec/byte_planes.h"
#include "commands.h"
#include "foreign/ggml_quant.h"
#include "foreign/gguf.h"
#include "foreign/safetensors.h"
#include "input.h"
#include "manifest/object_format.h"
#include "progress.h"
#include "read/content.h"
#include "read/index_cursor.h"
#include "source/http_source.h"
#include "values.h"
#include "write/writer.h"

namespace zt::cli {

using ull = unsigned long long;

// Writer options shared by the commands: --level, --compress=LEVEL,
// --digest, --threads.
namespace {

// Sharded, with no size to split at: the input's shards are the split.
void keep_input_shards(RewriteOptions& o) {
  o.keep_shards = true;
  o.writer.shard_bytes = std::numeric_limits<uint64_t>::max() / 4;
}

}  // namespace

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
  if (a.has("--planes")) {
    ZT_FAIL_IF(a.has("--compress") || a.has("--auto"), argument,
               "give --planes or zstd (--compress, --auto), not both");
    o.encode = Encode::planes;
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
    keep_input_shards(o);
  }
  return {};
}

// Without --format-version, a rewrite of one .zt file keeps its container:
// `zt compress` of a v2 file writes v2, and of a sharded v2 model a model
// sharded as it was (--keep-shards), unless --shard-size says otherwise.
void keep_digest(const Args& a, const Input& in, RewriteOptions& o) {
  // A sha256 model compressed in place came back with xxh3 digests, a
  // weaker check, and another zt id.
  if (a.has("--digest")) return;
  std::optional<DigestAlgo> seen;
  bool mixed = false;
  for (const Item& it : in.items)
    for (const Part& p : it.parts) {
      if (!p.digest) continue;
      const DigestAlgo algo = digest_algo_from_name(p.digest->substr(0, p.digest->find(':')));
      mixed = mixed || (seen && *seen != algo);
      seen = algo;
    }
  if (seen && !mixed && (*seen == DigestAlgo::sha256 || *seen == DigestAlgo::xxh3))
    o.writer.digest = *seen;
}

void keep_container(const Args& a, const Input& in, RewriteOptions& o) {
  keep_digest(a, in, o);
  if (a.has("--format-version") || !in.reader()) return;
  if (in.reader()->manifest().generation == Generation::v2) o.writer.file_version = 2;
  if (!in.reader()->manifest().shards.empty() && o.writer.shard_bytes == 0) keep_input_shards(o);
}

// v2 output is canonical (v2 spec §6.3: the same tensors give the same
// bytes) unless it asks for what canonical form excludes: zstd, a digest
// other than xxh3, or --no-canonical.
WriterOptions writer_for(const RewriteOptions& o) {
  WriterOptions w = o.writer;
  w.canonical = w.file_version == 2 && !o.no_canonical && o.encode != Encode::zstd &&
                o.encode != Encode::auto_ && o.encode != Encode::planes &&
                w.digest == DigestAlgo::xxh3 && w.shard_bytes == 0;
  return w;
}

std::string encoding_for(const Part& p, Encode e) {
  switch (e) {
    case Encode::keep:
      if (p.encoding == kBytePlanesEncodingId) return "planes";
      return p.encoding == "zstd" ? "zstd" : "raw";
    case Encode::raw:
      return "raw";
    case Encode::zstd:
      return "zstd";
    case Encode::auto_:
      return "auto";
    case Encode::planes:
      return "planes";
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

// Sparse indices the output cannot hold as they are: 1.2.0 takes u64 only;
// v2 u32 or u64, one dtype for all of an object's index parts (CSR's
// indptr has the dtype of its indices). Older files could store any
// integer type, and mix them.
bool narrow_sparse_index(const Item& it, const Part& p, bool v2_output) {
  const ObjectFormat* f = it.descriptor;
  if (!f || !is_index_role(*f, p.role) || !dtype_is_integer(p.dtype)) return false;
  const bool all_u32 = std::all_of(it.parts.begin(), it.parts.end(), [&](const Part& q) {
    return !is_index_role(*f, q.role) || (q.dtype == DType::u32 && !q.type);
  });
  return p.dtype != DType::u64 && !(v2_output && all_u32);
}

// Widens sparse indices to u64 into the writer's open component, from
// `windows` of `count` elements, a 1 MiB piece at a time.
Result<void> write_widened(Writer& w, std::unique_ptr<Windows> windows, uint64_t count,
                           const Part& p, const std::string& object, Progress& progress) {
  IndexCursor in(std::move(windows), p.dtype, count,
                 "object \"" + object + "\": component \"" + p.role + "\"");
  constexpr size_t kElements = 131072;
  std::vector<uint8_t> out;
  out.reserve(kElements * 8);
  for (uint64_t e = 0; e < count; ++e) {
    auto v = in.next();
    ZT_TRY(v);
    ZT_FAIL_IF(*v < 0, invalid, "object \"%s\": component \"%s\": negative index %lld at %llu",
               object.c_str(), p.role.c_str(), static_cast<long long>(*v), static_cast<ull>(e));
    const auto u = static_cast<uint64_t>(*v);
    for (int byte = 0; byte < 8; ++byte) out.push_back(static_cast<uint8_t>(u >> (8 * byte)));
    if (out.size() == out.capacity() || e + 1 == count) {
      ZT_TRY(write_pieces(w, out, progress));
      out.clear();
    }
  }
  // The windows' end checks the part's decoded size (and a v2 stream's
  // frame sizes): a part that decodes to more is refused, not cut short.
  return in.expect_end();
}

// What changes in an object's attributes on the way into another file.
struct AttributeEdit {
  std::span<const std::string_view> dropped;
  // (key, one encoded CBOR value): set in place where the key is, else appended.
  std::span<const std::pair<std::string, std::vector<uint8_t>>> set;
  // Parts renamed (old role, new role): the keys of hf.tensors's records,
  // one a part, follow them.
  std::span<const std::pair<std::string_view, std::string_view>> renamed_roles;
};

// The map node `m` of doc with its keys renamed as `renamed` says.
void encode_renamed_keys(const cbor::Document& doc, uint32_t m,
                         std::span<const std::pair<std::string_view, std::string_view>> renamed,
                         CborWriter& w) {
  w.map(doc.node(m).count);
  uint32_t k = cbor::Document::first_child(m);
  for (uint32_t p = 0; p < doc.node(m).count; ++p) {
    const uint32_t v = doc.next(k);
    std::string_view key = doc.node(k).str;
    for (const auto& [from, to] : renamed)
      if (key == from) key = to;
    w.text(key);
    encode_value(doc, v, w);
    k = doc.next(v);
  }
}

// `attributes` (an encoded CBOR map, or empty for none) edited; the other
// entries keep their order and their exact values.
Result<std::vector<uint8_t>> edited_attributes(const std::vector<uint8_t>& attributes,
                                               const AttributeEdit& e) {
  cbor::Document doc;
  uint32_t pairs = 0;
  if (!attributes.empty()) {
    auto d = cbor::decode(attributes);
    ZT_TRY(d);
    doc = std::move(*d);
    pairs = doc.root().count;
  }
  std::vector<bool> placed(e.set.size());
  uint32_t written = 0;
  CborWriter w;
  uint32_t k = cbor::Document::first_child(0);
  for (uint32_t p = 0; p < pairs; ++p, k = doc.next(doc.next(k))) {
    const uint32_t v = doc.next(k);
    const std::string_view key = doc.node(k).str;
    if (std::find(e.dropped.begin(), e.dropped.end(), key) != e.dropped.end()) continue;
    ++written;
    w.text(key);
    const auto set =
        std::find_if(e.set.begin(), e.set.end(), [&](const auto& kv) { return kv.first == key; });
    if (set != e.set.end()) {
      w.raw(set->second);
      placed[set - e.set.begin()] = true;
    } else if (key == kHfTensors && !e.renamed_roles.empty() &&
               doc.node(v).kind == cbor::Kind::map) {
      encode_renamed_keys(doc, v, e.renamed_roles, w);
    } else {
      encode_value(doc, v, w);
    }
  }
  for (size_t j = 0; j < e.set.size(); ++j) {
    if (placed[j]) continue;
    ++written;
    w.text(e.set[j].first);
    w.raw(e.set[j].second);
  }
  CborWriter out;
  out.map(written);
  out.raw(w.take());
  return out.take();
}

// `attributes` with `key` set to the text `value`.
Result<std::vector<uint8_t>> with_text_attribute(const std::vector<uint8_t>& attributes,
                                                 std::string_view key, std::string_view value) {
  CborWriter text;
  text.text(value);
  const std::pair<std::string, std::vector<uint8_t>> set[] = {{std::string(key), text.take()}};
  return edited_attributes(attributes,
                           AttributeEdit{.dropped = {}, .set = set, .renamed_roles = {}});
}

// Whether the target container can say what the object is: 1.2's
// quantized_group has no v2 layout of the same meaning, and a layout only
// v2 defines (zt.mx/1, gguf.q4_0/1) has no 1.2 format unless its
// descriptor finds a 1.x form that says the same of this object (a gptq_v2
// layer as quantized_group): that form is returned. Refused (exit 5) rather
// than written as something a reader would misread or not know.
Result<std::optional<V1Form>> check_representable(const Input& in, size_t i,
                                                  const RewriteOptions& opt) {
  const Item& it = in.items[i];
  const ObjectFormat* f = it.descriptor;
  if (opt.densify || !f) return std::optional<V1Form>();
  if (opt.writer.file_version == 2) {
    // What gets past it: this command's options, or (zt append, which
    // takes neither) a conversion first.
    ZT_FAIL_IF(f->layout_ids.empty(), argument,
               "format \"%s\" has no zTensor v2 layout of the same meaning (%s)", it.format.c_str(),
               opt.appending ? "a v2 file cannot hold it; zt convert --densify writes it as dense "
                               "values, which can be appended"
                             : "use --densify, or keep --format-version 1.2");
    return std::optional<V1Form>();
  }
  if (f->v1) return std::optional<V1Form>();
  ZT_FAIL_IF(!f->v1_form, argument,
             "layout \"%s\" exists only in zTensor v2 (use --densify, or --format-version 2)",
             it.format.c_str());
  auto form = f->v1_form(*in.reader(), i);
  if (!form && form.error().status == Status::unsupported)
    return make_error(Status::argument, "%s (use --densify, or --format-version 2)",
                      form.error().message.c_str());
  ZT_TRY(form);
  return std::optional(std::move(*form));
}

// A dense f4_e2m1 object (v2's FP4, or a safetensors F4 tensor) in a 1.2
// file: the same bytes as kF4PairsType pairs, the last dimension halved.
// Where no pair shape exists (an odd last dimension: pairs would straddle
// rows, or no dimension) it is densified with --densify, else refused
// (exit 5).
struct F4Form {
  std::optional<std::vector<uint64_t>> pairs;  // the 1.2 shape of its pairs
  bool densify = false;                        // no pair shape: written as values
};

Result<F4Form> f4_form(const Item& it, const RewriteOptions& opt) {
  const Part* data = it.descriptor == &kDenseFormat ? it.find("data") : nullptr;
  if (opt.writer.file_version == 2 || !data || data->type != "f4_e2m1") return F4Form{};
  if (it.shape.empty() || it.shape.back() % 2 != 0) {
    ZT_FAIL_IF(!opt.densify, argument,
               "f4_e2m1 values of shape %s have no 1.2 form: a 1.2 file holds FP4 as %.*s "
               "pairs along the last dimension, which must be even (use --format-version 2, or "
               "--densify)",
               shape_text(it.shape).c_str(), static_cast<int>(kF4PairsType.size()),
               kF4PairsType.data());
    return F4Form{std::nullopt, true};
  }
  std::vector<uint64_t> pairs = it.shape;
  pairs.back() /= 2;
  return F4Form{std::move(pairs), false};
}

Result<void> copy_item(const Input& in, size_t i, const std::string& name, Writer& w,
                       const RewriteOptions& opt, bool canonical, Progress& progress) {
  const Item& it = in.items[i];
  auto v1 = check_representable(in, i, opt);
  ZT_TRY(v1);
  // Corrupt input is refused, never copied under a fresh digest.
  ZT_TRY(in.check(i));
  auto f4 = f4_form(it, opt);
  ZT_TRY(f4);
  if ((opt.densify && it.descriptor != &kDenseFormat) || f4->densify) {
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
  const std::string_view format = *v1 ? (*v1)->format : std::string_view(it.format);
  ZT_TRY(w.begin_object(name, format, f4->pairs ? *f4->pairs : it.shape));
  // CBOR to CBOR: every attribute value survives exactly (a 1.x form
  // restates the layout's own).
  if (*v1) {
    auto attrs =
        edited_attributes(it.attributes_cbor, AttributeEdit{.dropped = (*v1)->dropped_attributes,
                                                            .set = (*v1)->added_attributes,
                                                            .renamed_roles = (*v1)->renamed_roles});
    ZT_TRY(attrs);
    ZT_TRY(w.set_object_attributes_cbor(*attrs));
  } else if (it.has_attributes) {
    ZT_TRY(w.set_object_attributes_cbor(it.attributes_cbor));
  }
  // The part's role in the written file.
  const auto role_of = [&](const Part& p) -> std::string_view {
    if (*v1)
      for (const auto& [from, to] : (*v1)->renamed_roles)
        if (p.role == from) return to;
    return p.role;
  };
  // Canonical form takes parts in bytewise role order.
  std::vector<size_t> order(it.parts.size());
  std::iota(order.begin(), order.end(), size_t{0});
  if (canonical)
    std::sort(order.begin(), order.end(),
              [&](size_t x, size_t y) { return role_of(it.parts[x]) < role_of(it.parts[y]); });
  for (const size_t k : order) {
    const Part& p = it.parts[k];
    std::optional<std::string_view> type =
        p.type ? std::optional<std::string_view>(*p.type) : std::nullopt;
    if (f4->pairs && p.role == "data") type = kF4PairsType;
    const std::string encoding = canonical ? "raw" : encoding_for(p, opt.encode);
    // Sparse indices the output cannot hold as they are become u64.
    const bool widen = narrow_sparse_index(it, p, w.writes_v2());
    const DType dtype = widen ? DType::u64 : p.dtype;
    if (p.decoded) {
      // Its size known, a component goes across a window at a time: a copy
      // holds a bounded window whatever the component decodes to.
      const uint64_t count = *p.decoded / dtype_width(p.dtype);
      ZT_TRY(w.begin_component(role_of(p), dtype_name(dtype), type, encoding,
                               widen ? count * 8 : *p.decoded));
      auto windows = in.windows(i, k);
      ZT_TRY(windows);
      if (widen) {
        ZT_TRY(write_widened(w, std::move(*windows), count, p, it.name, progress));
      } else {
        for (;;) {
          auto piece = (*windows)->next();
          ZT_TRY(piece);
          if (piece->empty()) break;
          ZT_TRY(write_pieces(w, *piece, progress));
        }
      }
      ZT_TRY(w.end_component());
      continue;
    }
    // A 1.1 zstd component whose size only decoding tells: held whole.
    auto b = in.bytes(i, k);
    ZT_TRY(b);
    const uint64_t count = b->view.size() / dtype_width(p.dtype);
    ZT_TRY(w.begin_component(role_of(p), dtype_name(dtype), type, encoding,
                             widen ? count * 8 : b->view.size()));
    if (widen)
      ZT_TRY(write_widened(w, std::make_unique<SpanWindows>(b->view), count, p, it.name, progress));
    else
      ZT_TRY(write_pieces(w, b->view, progress));
    ZT_TRY(w.end_component());
  }
  return w.end_object();
}

// An error message that starts with `file` and names `object` (when given).
Error qualified(Error e, const std::string& file, const std::string& object) {
  if (!object.empty() && e.message.find('"' + object + '"') == std::string::npos)
    e.message = "object \"" + object + "\": " + e.message;
  if (!e.message.starts_with(file)) e.message = file + ": " + e.message;
  e.message = fit_message(std::move(e.message));  // the names added are a file's text
  return e;
}

// `attributes`: the file attributes as an encoded CBOR map (an empty map,
// or none, writes none).
Result<void> write_zt(const std::string& out, const std::vector<Planned>& plan,
                      const std::vector<uint8_t>* attributes, RewriteOptions opt,
                      const char* label) {
  // --keep-shards of a model that is one file keeps it one file: the split
  // it keeps is none (it wrote a root and one data shard).
  if (opt.keep_shards && std::all_of(plan.begin(), plan.end(),
                                     [](const Planned& p) { return p.in->model_files == 1; })) {
    opt.keep_shards = false;
    opt.writer.shard_bytes = 0;
  }
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
  return write_part(in, i, *it.index_of("data"), progress, sink);
}

Result<void> write_part(const Input& in, size_t i, size_t part, Progress& progress,
                        const ByteSink& sink) {
  const auto emit = [&](std::span<const uint8_t> bytes) -> Result<void> {
    for (uint64_t off = 0; off < bytes.size(); off += kPiece) {
      const auto piece = bytes.subspan(off, std::min<uint64_t>(kPiece, bytes.size() - off));
      ZT_TRY(sink(piece));
      progress.advance(piece.size());
    }
    return {};
  };
  const auto failed = [&](Error e) { return qualified(std::move(e), in.path, in.items[i].name); };
  if (in.items[i].parts[part].decoded) {
    // Its size known, the part goes across a window at a time (a zstd part
    // of a .zt file, a remote one), as copy_item sends it: never held whole.
    auto windows = in.windows(i, part);
    if (!windows) return failed(std::move(windows).error());
    for (;;) {
      auto w = (*windows)->next();
      if (!w) return failed(std::move(w).error());
      if (w->empty()) return {};
      ZT_TRY(emit(*w));
    }
  }
  // A 1.1 zstd part whose size only decoding tells: held whole.
  auto b = in.bytes(i, part);
  if (!b) return failed(std::move(b).error());
  return emit(b->view);
}

std::vector<Planned> all_of(const Input& in) {
  std::vector<Planned> plan;
  for (size_t i = 0; i < in.items.size(); ++i) plan.push_back({&in, i, in.items[i].name});
  return plan;
}

const std::vector<uint8_t>* file_attributes(const Input& in) {
  return in.has_attributes ? &in.attributes_cbor : nullptr;
}

void note_dropped_attributes(const Input& in, const char* format,
                             const std::function<bool(size_t)>& kept) {
  uint64_t dropped = 0;
  for (size_t i = 0; i < in.items.size(); ++i) {
    const Item& it = in.items[i];
    dropped += it.has_attributes && it.attributes_cbor.size() > 1 && !kept(i) ? 1 : 0;
  }
  if (dropped)
    std::fprintf(
        stderr, "zt: note: %s has no per-tensor metadata: attributes of %llu object%s not kept\n",
        format, static_cast<unsigned long long>(dropped), dropped == 1 ? " were" : "s were");
}

}  // namespace zt::cli
