// What the commands that write files share (src/cli/cmd_rewrite.cpp: zt
// convert, compress, decompress, merge, rm, append): their options, the
// copy of planned objects into zt::Writer, and the foreign writers
// (convert_safetensors.cpp, convert_gguf.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "common.h"
#include "input.h"
#include "manifest/object_format.h"
#include "progress.h"
#include "values.h"
#include "write/writer.h"

namespace zt::cli {

constexpr uint64_t kPiece = uint64_t{16} << 20;  // bytes handed to the writer at once

enum class Encode { keep, raw, zstd, auto_, planes };  // planes: v2's libztensor.byte_planes/1

struct RewriteOptions {
  Encode encode = Encode::keep;
  WriterOptions writer;
  bool densify = false;
  bool no_canonical = false;  // --no-canonical
  bool keep_shards = false;   // --keep-shards
  bool appending = false;     // zt append: a v2 target, no --densify
};

// One planned object of the output: input, item, output name.
struct Planned {
  const Input* in;
  size_t item;
  std::string name;
};

// Writer options shared by the commands: --level, --compress=LEVEL,
// --digest, --threads.
Result<void> writer_options(const Args& a, RewriteOptions& o);
// Without --digest, the input's digest algorithm where all its parts agree
// on one (sha256 or xxh3).
void keep_digest(const Args& a, const Input& in, RewriteOptions& o);
// Without --format-version, a rewrite of one .zt file keeps its container
// (and, as keep_digest, its digest algorithm).
void keep_container(const Args& a, const Input& in, RewriteOptions& o);
// Bytes the items decode to, for the progress bar.
uint64_t decoded_total(const Input& in, const std::vector<size_t>& items);
// An error message that starts with `file` and names `object` (when given).
Error qualified(Error e, const std::string& file, const std::string& object = {});

// Copies object i of `in` into the writer under `name`, component by
// component in pieces (canonical: raw, as v2's canonical form has it).
Result<void> copy_item(const Input& in, size_t i, const std::string& name, Writer& w,
                       const RewriteOptions& opt, bool canonical, Progress& progress);
// Writes the planned objects to the .zt file `out`; `attributes`: the file
// attributes as an encoded CBOR map (an empty map, or none, writes none).
Result<void> write_zt(const std::string& out, const std::vector<Planned>& plan,
                      const std::vector<uint8_t>* attributes, RewriteOptions opt,
                      const char* label);
// Every object of `in`, under its own name.
std::vector<Planned> all_of(const Input& in);
// The input's file attributes (encoded CBOR), or nullptr.
const std::vector<uint8_t>* file_attributes(const Input& in);

// Foreign writers (safetensors, GGUF): an object the format cannot hold,
// named for the refusal ("\"w\" (dtype u16)").
void add_refusal(std::string& refused, const Item& it, const Part* data);
// Foreign writers: an object's bytes to the writer's sink, its dense data
// in pieces or its values densified, errors naming the input and object.
Result<void> write_object(const Input& in, size_t i, bool densified, Progress& progress,
                          const ByteSink& sink);

// Foreign writers: one part's decoded bytes to the sink, in pieces.
Result<void> write_part(const Input& in, size_t i, size_t part, Progress& progress,
                        const ByteSink& sink);

// How a foreign writer (safetensors, GGUF) holds each object of `in`: as
// stored, where the format's own mapping gives it an entry, else its values
// densified (with --densify), else refused, every refusal named in one
// error that starts with `refusal`. Every object is checked (Input::check)
// before anything is written: corrupt input is refused, never copied.
// `as_stored` gives an entry of the format for an object, or none;
// `densified` sets the entry of a densified one from its dense form.
template <typename Entry>
struct ExportPlan {
  std::vector<Entry> entries;   // one per object of the input, in order
  std::vector<bool> densified;  // whether entries[i] holds densified values
};
template <typename Entry, typename AsStored, typename Densified>
Result<ExportPlan<Entry>> plan_export(const std::string& out, const Input& in,
                                      const RewriteOptions& opt, std::string_view refusal,
                                      AsStored&& as_stored, Densified&& densified) {
  ExportPlan<Entry> plan;
  std::string refused;
  for (size_t i = 0; i < in.items.size(); ++i) {
    const Item& it = in.items[i];
    const Part* data = it.descriptor == &kDenseFormat ? it.find("data") : nullptr;
    Result<std::optional<Entry>> e = as_stored(it, data);
    ZT_TRY(e);
    if (*e) {
      plan.entries.push_back(std::move(**e));
      plan.densified.push_back(false);
    } else if (opt.densify) {
      Entry d;
      d.name = it.name;
      d.shape = it.shape;
      plan.entries.push_back(std::move(d));
      plan.densified.push_back(true);
    } else {
      add_refusal(refused, it, data);
    }
  }
  ZT_FAIL_IF(!refused.empty(), argument,
             "%s: %.*s; cannot write %s (use --densify to store them as dense f32/f64 values)",
             out.c_str(), static_cast<int>(refusal.size()), refusal.data(), refused.c_str());
  for (size_t i = 0; i < in.items.size(); ++i) {
    if (auto c = in.check(i); !c) return qualified(std::move(c).error(), in.path, in.items[i].name);
    if (!plan.densified[i]) continue;
    auto d = dense_form(in, i);
    if (!d) return qualified(std::move(d).error(), in.path, in.items[i].name);
    ZT_TRY(densified(plan.entries[i], *d, in.items[i]));
    plan.entries[i].nbytes = d->bytes;
  }
  return plan;
}

// `in` as a .safetensors file (convert_safetensors.cpp).
Result<void> write_st(const std::string& out, const Input& in, const RewriteOptions& opt);
// `in` as a Hugging Face checkpoint folder `dir` (--hf): model.safetensors,
// each object that a quantized layer became written back as the checkpoint
// tensors it records (attribute "hf.tensors"), tensors in the order the
// safetensors library writes them, and config.json as the file kept it
// (convert_safetensors.cpp).
Result<void> write_hf(const std::string& dir, const Input& in, const RewriteOptions& opt);
// The object attribute holding those records: {role: {"name", "dtype",
// "shape"}}, one a part (foreign/hf_quantized.cpp writes it); a copy that
// renames a part renames its record.
constexpr std::string_view kHfTensors = "hf.tensors";
// Says on stderr how many objects' attributes a `format` without per-tensor
// metadata did not keep (`kept(i)`: those of object i live on in what was
// written, as a GGUF block type does).
void note_dropped_attributes(const Input& in, const char* format,
                             const std::function<bool(size_t)>& kept);
// `in` as a GGUF v3 file (convert_gguf.cpp).
Result<void> write_gguf_file(const std::string& out, const Input& in, const RewriteOptions& opt);

}  // namespace zt::cli
