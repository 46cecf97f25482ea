// zt convert, zt compress, zt decompress, zt merge, zt rm, zt append: every
// command that writes a file. What they share is rewrite.h's; the foreign
// targets are convert_safetensors.cpp and convert_gguf.cpp.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <numeric>
#include <optional>
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
  if (a.has("--planes")) opt.encode = Encode::planes;
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
    // A valid file this command does not take: refused (5), not bad input.
    return report(make_error(Status::argument,
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

struct Kept {
  std::string key;
  std::vector<uint8_t> value;  // encoded CBOR
  size_t from;                 // the input it was taken from
};

// The entries of a keyed attribute (a map over the other keys, as GGUF's
// gguf.types) of one input, found by key in constant time; nothing where
// the input has no such attribute, or it is not a map of text keys.
using KeyedIndex = std::unordered_map<std::string_view, uint32_t>;
std::optional<KeyedIndex> keyed_index(const cbor::Document& doc, std::string_view name) {
  const uint32_t map = doc.find(0, name);
  if (!map || doc.node(map).kind != cbor::Kind::map) return std::nullopt;
  KeyedIndex index;
  uint32_t k = cbor::Document::first_child(map);
  for (uint32_t p = 0; p < doc.node(map).count; ++p) {
    if (doc.node(k).kind != cbor::Kind::text) return std::nullopt;
    index.emplace(doc.node(k).str, doc.next(k));
    k = doc.next(doc.next(k));
  }
  return index;
}

// The inputs' file attributes as one map: the first input that sets a
// key wins; conflicts are told on stderr. Values are compared and copied as
// CBOR, exactly. A keyed attribute (GGUF's "gguf.types": a map over the
// other keys) is made again from the inputs: each key's entry from the
// input its value was taken from, so that a value keeps its own type.
Result<std::vector<uint8_t>> merged_file_attributes(const std::vector<const Input*>& inputs) {
  std::deque<cbor::Document> docs;  // a deque: Documents stay where they are
  std::vector<Kept> kept;
  std::unordered_map<std::string, size_t> kept_at;
  for (const auto& in : inputs) {
    if (!in->has_attributes || in->attributes_cbor.empty()) continue;
    auto doc = cbor::decode(in->attributes_cbor);
    if (!doc) {
      Error e = std::move(doc).error();
      e.message = in->path + ": " + e.message;
      return e;
    }
    docs.push_back(std::move(*doc));
    const cbor::Document& d = docs.back();
    uint32_t k = cbor::Document::first_child(0);
    for (uint32_t p = 0; p < d.root().count; ++p) {
      const uint32_t v = d.next(k);
      std::string key(d.node(k).str);
      CborWriter value;
      encode_value(d, v, value);
      if (const auto at = kept_at.find(key); at == kept_at.end()) {
        kept_at.emplace(key, kept.size());
        kept.push_back({std::move(key), value.take(), docs.size() - 1});
      } else if (kept[at->second].value != value.bytes() && !foreign::is_keyed_attribute(key)) {
        std::fprintf(stderr,
                     "zt: note: file attribute \"%s\" differs in %s; keeping the first value\n",
                     printable(key).c_str(), in->path.c_str());
      }
      k = d.next(v);
    }
  }
  for (Kept& a : kept) {
    if (!foreign::is_keyed_attribute(a.key)) continue;
    std::vector<std::optional<KeyedIndex>> index;
    for (const cbor::Document& d : docs) index.push_back(keyed_index(d, a.key));
    if (!index[a.from]) continue;  // the value kept is no such map: kept as it is
    std::vector<std::pair<const Kept*, uint32_t>> entries;
    for (const Kept& b : kept) {
      if (&b == &a || !index[b.from]) continue;
      if (const auto e = index[b.from]->find(b.key); e != index[b.from]->end())
        entries.emplace_back(&b, e->second);
    }
    CborWriter map;
    map.map(entries.size());
    for (const auto& [b, node] : entries) {
      map.text(b->key);
      encode_value(docs[b->from], node, map);
    }
    a.value = map.take();
  }
  CborWriter merged;
  merged.map(kept.size());
  for (const Kept& a : kept) {
    merged.text(a.key);
    merged.raw(a.value);
  }
  return merged.take();
}

// The options of convert that only a .zt output has a use for.
constexpr const char* kZtWriterOnly[] = {"--compress",   "--planes",         "--digest",
                                         "--threads",    "--format-version", "--no-canonical",
                                         "--shard-size", "--keep-shards"};

}  // namespace

int run_convert(const Args& a) {
  if (a.pos.size() != 2) return usage_error("convert", "expects IN and OUT");
  RewriteOptions opt;
  auto o = writer_options(a, opt);
  if (!o) return usage_error("convert", o.error().message);
  const std::string& out = a.pos[1];
  const bool hf = a.has("--hf");
  const foreign::FileKind out_kind = foreign::kind_from_path(out);
  if (!hf && out_kind != foreign::FileKind::zt && out_kind != foreign::FileKind::safetensors &&
      out_kind != foreign::FileKind::gguf)
    return usage_error(
        "convert", "OUT must end in .zt, .safetensors or .gguf (use zt export for a single .npy)");
  if (hf || out_kind != foreign::FileKind::zt)
    // What only the .zt writer does is refused for other outputs, not
    // silently dropped: a user who asked for zstd or sha256 would get a
    // file without them and no word of it.
    for (const char* zt_only : kZtWriterOnly)
      if (a.has(zt_only)) {
        std::string why = zt_only;
        why += " applies to .zt output; ";
        why += hf ? "--hf writes a safetensors checkpoint folder" : printable(out) + " is not one";
        return usage_error("convert", why);
      }
  foreign::ReadOptions read;
  read.skip_unknown_types = a.has("--skip-unknown");
  auto in = Input::open(a.pos[0], read);
  if (!in) return report(in.error(), a.pos[0]);
  Result<void> r;
  if (hf)
    r = write_hf(out, **in, opt);
  else if (out_kind == foreign::FileKind::safetensors)
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
                     printable(name).c_str(), printable(candidate).c_str());
        name = candidate;
      }
      owner[name] = in.path;
      plan.push_back({&in, i, name});
    }
  }
  std::vector<const Input*> sources;
  for (const auto& in : inputs) sources.push_back(in.get());
  auto attrs = merged_file_attributes(sources);
  if (!attrs) return report(attrs.error());
  auto w = write_zt(*out, plan, &*attrs, opt, "merge");
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
  opt.appending = true;
  const std::string& target = a.pos[0];
  std::vector<std::unique_ptr<Input>> inputs;
  for (size_t k = 1; k < a.pos.size(); ++k) {
    auto in = Input::open(a.pos[k]);
    if (!in) return report(in.error(), a.pos[k]);
    inputs.push_back(std::move(*in));
  }
  // The inputs' file attributes join the file's, as zt merge joins them
  // (they were dropped without a word); without any, the file's stay as
  // they are stored, and the file is read by the writer alone.
  // The new objects' digests are the file's algorithm unless --digest
  // says otherwise (a sha256 file got xxh3 digests for them).
  auto t = Input::open(target);
  if (!t) return report(t.error(), target);
  keep_digest(a, **t, opt);
  std::optional<std::vector<uint8_t>> joined;
  if (std::any_of(inputs.begin(), inputs.end(), [](const auto& in) {
        return in->has_attributes && in->attributes_cbor.size() > 1;  // more than an empty map
      })) {
    std::vector<const Input*> sources{t->get()};  // the file's own values win
    for (const auto& in : inputs) sources.push_back(in.get());
    auto attrs = merged_file_attributes(sources);
    if (!attrs) return report(attrs.error());
    joined = std::move(*attrs);
  }
  auto w = Writer::open_append(target, opt.writer);
  if (!w) return report(w.error(), target);
  if (joined) {
    auto set = (*w)->set_file_attributes_cbor(*joined);
    if (!set) return report(set.error(), target);
  }
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
