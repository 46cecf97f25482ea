// zt convert to .safetensors: dense tensors of its own dtypes, others
// densified with --densify or refused by name.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "base/arithmetic.h"
#include "base/zt_limits.h"
#include "cbor/cbor_encode.h"
#include "cbor/cbor_item.h"
#include "cbor/cbor_value.h"
#include "commands.h"
#include "foreign/ggml_quant.h"
#include "foreign/gguf.h"
#include "foreign/hf_index.h"
#include "foreign/hf_quantized.h"
#include "foreign/safetensors.h"
#include "input.h"
#include "manifest/object_format.h"
#include "progress.h"
#include "read/content.h"
#include "rewrite.h"
#include "source/http_source.h"
#include "values.h"
#include "write/output_file.h"
#include "write/writer.h"

namespace zt::cli {

using ull = unsigned long long;

namespace {

// The safetensors entry of an object as stored, where safetensors holds it.
Result<std::optional<foreign::SafetensorsEntry>> as_stored(const Item& it, const Part* data) {
  if (!data) return std::optional<foreign::SafetensorsEntry>();
  return foreign::safetensors_entry(it.name, data->dtype, data->type, it.shape,
                                    data->decoded.value_or(data->stored));
}

// The safetensors dtype of an object's densified values.
Result<void> set_densified(const std::string& out, foreign::SafetensorsEntry& e, const DenseForm& d,
                           const Item& it) {
  e.dtype = d.type ? (d.type == "complex64" ? "C64" : "") : (d.dtype == "f64" ? "F64" : "F32");
  ZT_FAIL_IF(e.dtype.empty(), argument, "%s: object \"%s\": complex128 has no safetensors dtype",
             out.c_str(), it.name.c_str());
  return {};
}

// The file attributes as safetensors __metadata__ (text as it is, other
// values as their JSON text, NaN, infinities and CBOR's special values in
// diagnostic notation rather than JSON's null), leaving out the keys in
// `skip`.
Result<std::vector<std::pair<std::string, std::string>>> metadata_of(
    const Input& in, std::span<const std::string_view> skip = {}) {
  std::vector<std::pair<std::string, std::string>> metadata;
  ZT_TRY(for_each_attribute(in.attributes_cbor,
                            [&](std::string_view k, std::span<const uint8_t> v) -> Result<void> {
                              if (std::find(skip.begin(), skip.end(), k) != skip.end()) return {};
                              auto s = cbor::scalar(v);
                              ZT_TRY(s);
                              if (s->kind == cbor::Kind::text) {
                                metadata.emplace_back(std::string(k), std::string(s->str));
                                return {};
                              }
                              std::string text;
                              cbor::JsonStyle style;
                              style.diagnostic_specials = true;
                              ZT_TRY(cbor::append_json(v, text, style));
                              metadata.emplace_back(std::string(k), std::move(text));
                              return {};
                            }));
  return metadata;
}

}  // namespace

// safetensors holds dense tensors of its own dtypes only. Objects it cannot
// hold are densified to f32/f64 with --densify, else refused by name.
Result<void> write_st(const std::string& out, const Input& in, const RewriteOptions& opt) {
  auto plan = plan_export<foreign::SafetensorsEntry>(
      out, in, opt, "safetensors holds dense tensors of its own dtypes only", as_stored,
      [&](foreign::SafetensorsEntry& e, const DenseForm& d, const Item& it) {
        return set_densified(out, e, d, it);
      });
  ZT_TRY(plan);
  const std::vector<foreign::SafetensorsEntry>& entries = plan->entries;
  auto metadata = metadata_of(in, {});
  ZT_TRY(metadata);
  uint64_t total = 0;
  for (const auto& e : entries) total += e.nbytes;
  Progress progress("convert", total);
  auto r = foreign::write_safetensors(
      out, *metadata, entries, [&](size_t i, const foreign::ByteSink& sink) {
        return write_object(in, i, plan->densified[i], progress, sink);
      });
  if (!r) return qualified(std::move(r).error(), out);
  progress.finish();
  note_dropped_attributes(in, "safetensors", [](size_t) { return false; });
  return {};
}

// ---- the way back to a Hugging Face checkpoint folder (--hf) ----

namespace {

constexpr std::string_view kHfShapeTensor = "hf.shape_tensor";

// One tensor of the checkpoint written back, and where its bytes come from:
// an object (as stored, or densified), or one part of an object that a
// quantized layer became.
struct HfTensor {
  foreign::SafetensorsEntry entry;
  size_t item = 0;
  std::optional<size_t> part;
  bool densified = false;
  std::vector<uint8_t> literal;  // bytes made here (a shape tensor), when not from the input
};

// A text or unsigned-integer-array field of one hf.tensors record.
Result<std::string> record_text(std::span<const uint8_t> record, const char* key) {
  auto v = cbor::find_entry(record, key);
  ZT_TRY(v);
  ZT_FAIL_IF(!*v, invalid, "has no \"%s\"", key);
  auto s = cbor::scalar(**v);
  ZT_TRY(s);
  ZT_FAIL_IF(s->kind != cbor::Kind::text, invalid, "\"%s\" is not text", key);
  return std::string(s->str);
}

Result<std::vector<uint64_t>> record_shape(std::span<const uint8_t> record) {
  auto v = cbor::find_entry(record, "shape");
  ZT_TRY(v);
  ZT_FAIL_IF(!*v, invalid, "has no \"shape\"");
  std::vector<uint64_t> shape;
  ZT_TRY(cbor::for_each_item(**v, [&](std::span<const uint8_t> d) -> Result<void> {
    auto s = cbor::scalar(d);
    ZT_TRY(s);
    ZT_FAIL_IF(s->kind != cbor::Kind::uint, invalid, "\"shape\" holds a value that is not a size");
    ZT_FAIL_IF(shape.size() >= Limits::rank, limit, "\"shape\" has more than %u dimensions",
               Limits::rank);
    shape.push_back(s->u);
    return {};
  }));
  return shape;
}

// One record ({"name", "dtype", "shape"}) as the safetensors tensor it
// names, its size computed; errors say what is wrong with it.
Result<foreign::SafetensorsEntry> record_entry(std::span<const uint8_t> record) {
  auto name = record_text(record, "name");
  ZT_TRY(name);
  auto dtype = record_text(record, "dtype");
  ZT_TRY(dtype);
  auto shape = record_shape(record);
  ZT_TRY(shape);
  auto entry = foreign::safetensors_tensor(*name, *dtype, *shape);
  ZT_FAIL_IF(!entry, invalid,
             "%s %s is not a safetensors tensor (unknown dtype, or its size overflows or does "
             "not fill whole bytes)",
             dtype->c_str(), shape_text(*shape).c_str());
  return std::move(*entry);
}

// The tensor recorded in the object attribute hf.shape_tensor, which holds
// the object's shape (compressed-tensors' weight_shape): I64 or I32, one
// value a dimension; nullopt when the object records none.
Result<std::optional<HfTensor>> shape_tensor(const Item& it, size_t i) {
  auto record = cbor::find_entry(it.attributes_cbor, kHfShapeTensor);
  ZT_TRY(record);
  if (!*record) return std::optional<HfTensor>();
  auto entry = record_entry(**record);
  if (!entry)
    return make_error(Status::invalid, "attribute %s: %s", kHfShapeTensor.data(),
                      entry.error().message.c_str());
  const bool wide = entry->dtype == "I64";
  ZT_FAIL_IF((!wide && entry->dtype != "I32") || entry->shape.size() != 1 ||
                 entry->shape[0] != it.shape.size(),
             invalid, "attribute %s: %s %s cannot hold the object's shape (I64 or I32 [%zu])",
             kHfShapeTensor.data(), std::string(entry->dtype).c_str(),
             shape_text(entry->shape).c_str(), it.shape.size());
  HfTensor t;
  t.item = i;
  t.entry = std::move(*entry);
  for (const uint64_t d : it.shape) {
    ZT_FAIL_IF(!wide && d > INT32_MAX, invalid, "attribute %s: dimension %llu does not fit I32",
               kHfShapeTensor.data(), static_cast<ull>(d));
    for (int b = 0; b < (wide ? 8 : 4); ++b)
      t.literal.push_back(static_cast<uint8_t>(d >> (8 * b)));
  }
  return std::optional(std::move(t));
}

// The checkpoint tensors an object records in hf.tensors, one per part and
// in the parts' order, then the one of hf.shape_tensor; nullopt when it
// records none. Every part must have one, and each record a safetensors
// dtype and shape whose size is the part's (when the part's decoded size is
// known without decoding).
Result<std::optional<std::vector<HfTensor>>> recorded_tensors(const Input& in, size_t i) {
  const Item& it = in.items[i];
  if (!it.has_attributes) return std::optional<std::vector<HfTensor>>();
  auto tensors = cbor::find_entry(it.attributes_cbor, kHfTensors);
  ZT_TRY(tensors);
  if (!*tensors) return std::optional<std::vector<HfTensor>>();
  auto count = cbor::container_count(**tensors);
  ZT_TRY(count);
  ZT_FAIL_IF(*count != it.parts.size(), invalid,
             "attribute %s: %llu records for the %zu parts (one a part)", kHfTensors.data(),
             static_cast<ull>(*count), it.parts.size());
  std::vector<HfTensor> out;
  for (size_t k = 0; k < it.parts.size(); ++k) {
    const Part& p = it.parts[k];
    auto record = cbor::find_entry(**tensors, p.role);
    ZT_TRY(record);
    ZT_FAIL_IF(!*record, invalid, "attribute %s: part \"%s\" has no record", kHfTensors.data(),
               p.role.c_str());
    auto entry = record_entry(**record);
    if (!entry)
      return make_error(Status::invalid, "attribute %s: part \"%s\": %s", kHfTensors.data(),
                        p.role.c_str(), entry.error().message.c_str());
    ZT_FAIL_IF(p.decoded && *p.decoded != entry->nbytes, invalid,
               "attribute %s: part \"%s\" holds %llu bytes; its record, %s %s, needs %llu",
               kHfTensors.data(), p.role.c_str(), static_cast<ull>(*p.decoded),
               std::string(entry->dtype).c_str(), shape_text(entry->shape).c_str(),
               static_cast<ull>(entry->nbytes));
    HfTensor t;
    t.item = i;
    t.part = k;
    t.entry = std::move(*entry);
    out.push_back(std::move(t));
  }
  auto shape = shape_tensor(it, i);
  ZT_TRY(shape);
  if (*shape) out.push_back(std::move(**shape));
  return std::optional(std::move(out));
}

// config.json as the file kept it: the text in "hf.config", else a config
// holding only "hf.quantization_config" (files converted before the text
// was kept); nullopt when the file has neither.
Result<std::optional<std::string>> hf_config_text(const Input& in) {
  if (!in.has_attributes) return std::optional<std::string>();
  auto text = cbor::find_entry(in.attributes_cbor, "hf.config");
  ZT_TRY(text);
  if (*text) {
    auto s = cbor::scalar(**text);
    ZT_TRY(s);
    ZT_FAIL_IF(s->kind != cbor::Kind::text, invalid, "file attribute hf.config is not text");
    return std::optional(std::string(s->str));
  }
  auto qc = cbor::find_entry(in.attributes_cbor, "hf.quantization_config");
  ZT_TRY(qc);
  if (!*qc) return std::optional<std::string>();
  std::string out = "{\"quantization_config\": ";
  ZT_TRY(cbor::append_json(**qc, out));
  out += "}\n";
  return std::optional(std::move(out));
}

// A text file written, not yet in place (published with the model's others).
Result<OutputFile> write_text_file(const std::string& path, std::string_view text) {
  auto f = OutputFile::create(path);
  ZT_TRY(f);
  ZT_TRY(f->write(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size())));
  return std::move(*f);
}

// A checkpoint read through a sharded index keeps the index's text
// (hf.index): the way back writes the same shards and the index as it was.
struct HfShards {
  std::string index_text;
  std::map<std::string, std::vector<size_t>> tensors;  // shard -> tensors, in writing order
};

// nullopt: no index kept (one model.safetensors). The index must name the
// shard of every tensor written and no other tensor: a model changed since
// (objects removed, added or renamed) is refused rather than written under
// an index that no longer describes it.
Result<std::optional<HfShards>> hf_shards(const Input& in, const std::vector<HfTensor>& tensors) {
  if (!in.has_attributes) return std::optional<HfShards>();
  auto kept = cbor::find_entry(in.attributes_cbor, foreign::kHfIndexAttribute);
  ZT_TRY(kept);
  if (!*kept) return std::optional<HfShards>();
  auto text = cbor::scalar(**kept);
  ZT_TRY(text);
  const std::string where = "file attribute " + std::string(foreign::kHfIndexAttribute);
  ZT_FAIL_IF(text->kind != cbor::Kind::text, invalid, "%s is not text", where.c_str());
  auto shard_of = foreign::safetensors_shards_of_index(where.c_str(), text->str);
  ZT_TRY(shard_of);
  HfShards out;
  out.index_text = std::string(text->str);
  std::unordered_set<std::string_view> names;
  for (size_t k = 0; k < tensors.size(); ++k) {
    const std::string& name = tensors[k].entry.name;
    const auto shard = shard_of->find(name);
    ZT_FAIL_IF(shard == shard_of->end(), argument,
               "tensor \"%s\" is in no shard of the checkpoint's index (%s): the model changed "
               "since it was read; convert it to one .safetensors file instead",
               name.c_str(), where.c_str());
    out.tensors[shard->second].push_back(k);
    names.insert(name);
  }
  for (const auto& [name, shard] : *shard_of)
    ZT_FAIL_IF(!names.contains(name), argument,
               "the checkpoint's index (%s) names tensor \"%s\" (shard %s), which is not here: "
               "the model changed since it was read; convert it to one .safetensors file instead",
               where.c_str(), name.c_str(), shard.c_str());
  return std::optional(std::move(out));
}

// The weights of the checkpoint already in `dir`, by file name: its
// model.safetensors, its index and the shards the index names (plain names
// beside it, as any index is read). An index that cannot be read names
// none: those files stay.
std::set<std::string> earlier_weights(const std::string& dir) {
  std::set<std::string> names;
  struct stat st {};
  if (::lstat((dir + "/model.safetensors").c_str(), &st) == 0) names.insert("model.safetensors");
  auto shards = foreign::safetensors_shards_of_index_file(dir + "/model.safetensors.index.json");
  if (!shards) return names;
  names.insert("model.safetensors.index.json");
  for (const auto& [tensor, shard] : *shards) names.insert(shard);
  return names;
}

// A folder made for a checkpoint whose writing then failed is removed
// again (rmdir: only while it is empty, as a failed write leaves it).
struct FolderMade {
  std::string dir;
  bool made = false;
  ~FolderMade() {
    if (made) ::rmdir(dir.c_str());
  }
};

Result<void> make_folder(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0777) == 0) return {};
  const int err = errno;
  struct stat st {};
  if (err == EEXIST && ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return {};
  return make_error(Status::io, "%s: cannot make the folder (%s)", dir.c_str(),
                    err == EEXIST ? "a file of that name is there" : std::strerror(err));
}

}  // namespace

Result<void> write_hf(const std::string& dir, const Input& in, const RewriteOptions& opt) {
  const std::string st = dir + "/model.safetensors";
  std::vector<std::optional<std::vector<HfTensor>>> recorded(in.items.size());
  for (size_t i = 0; i < in.items.size(); ++i) {
    auto r = recorded_tensors(in, i);
    if (!r) return qualified(std::move(r).error(), in.path, in.items[i].name);
    recorded[i] = std::move(*r);
  }
  // Objects that record their tensors are written as those; the others as
  // write_st writes them (a placeholder entry stands for the former here).
  auto plan = plan_export<foreign::SafetensorsEntry>(
      st, in, opt, "safetensors holds dense tensors of its own dtypes only",
      [&](const Item& it, const Part* data) -> Result<std::optional<foreign::SafetensorsEntry>> {
        if (recorded[static_cast<size_t>(&it - in.items.data())])
          return std::optional(foreign::SafetensorsEntry{});
        return as_stored(it, data);
      },
      [&](foreign::SafetensorsEntry& e, const DenseForm& d, const Item& it) {
        return set_densified(st, e, d, it);
      });
  ZT_TRY(plan);
  std::vector<HfTensor> tensors;
  for (size_t i = 0; i < in.items.size(); ++i) {
    if (recorded[i]) {
      for (HfTensor& t : *recorded[i]) tensors.push_back(std::move(t));
    } else {
      tensors.push_back({std::move(plan->entries[i]), i, std::nullopt, plan->densified[i], {}});
    }
  }
  std::stable_sort(tensors.begin(), tensors.end(), [](const HfTensor& a, const HfTensor& b) {
    return foreign::safetensors_writes_before(a.entry, b.entry);
  });
  uint64_t total = 0;
  for (const HfTensor& t : tensors) total += t.entry.nbytes;
  // The keys the reader of a checkpoint folder made go back into config.json
  // and the index; a checkpoint's own "hf.*" metadata stays metadata.
  static constexpr std::string_view kFolderKeys[] = {
      "hf.config", "hf.quantization_config", foreign::kHfIndexAttribute, "hf.index.metadata"};
  auto metadata = metadata_of(in, kFolderKeys);
  ZT_TRY(metadata);
  auto config = hf_config_text(in);
  if (!config) return qualified(std::move(config).error(), in.path);
  auto shards = hf_shards(in, tensors);
  if (!shards) return qualified(std::move(shards).error(), in.path);
  if (!*config) {
    // The folder's config.json stays (the model's own), unless it says the
    // weights are quantized: these are not, and would be loaded as if.
    auto quantized = foreign::folder_config_is_quantized(dir);
    ZT_TRY(quantized);
    ZT_FAIL_IF(*quantized, argument,
               "%s/config.json names a quantization_config, which the weights written here do "
               "not have (they would be loaded as quantized): move it away or write to another "
               "folder",
               dir.c_str());
  }
  struct stat there {};
  FolderMade folder{dir, ::stat(dir.c_str(), &there) != 0};
  ZT_TRY(make_folder(dir));
  const std::set<std::string> earlier = earlier_weights(dir);
  Progress progress("convert", total);
  // Every file is written first and put in place last, together
  // (publish_together): a failure leaves the folder's earlier checkpoint as
  // it was.
  std::vector<OutputFile> files;
  const auto write_file = [&](const std::string& path, std::span<const size_t> ks) -> Result<void> {
    std::vector<foreign::SafetensorsEntry> entries;
    for (const size_t k : ks) entries.push_back(tensors[k].entry);
    auto f = foreign::write_safetensors_unpublished(
        path, *metadata, entries, [&](size_t j, const foreign::ByteSink& sink) {
          const HfTensor& t = tensors[ks[j]];
          if (!t.literal.empty()) return sink(t.literal);
          return t.part ? write_part(in, t.item, *t.part, progress, sink)
                        : write_object(in, t.item, t.densified, progress, sink);
        });
    if (!f) return qualified(std::move(f).error(), path);
    files.push_back(std::move(*f));
    return {};
  };
  const auto add_text_file = [&](const std::string& path, std::string_view text) -> Result<void> {
    auto f = write_text_file(path, text);
    if (!f) return qualified(std::move(f).error(), path);
    files.push_back(std::move(*f));
    return {};
  };
  if (*shards) {
    for (const auto& [shard, ks] : (*shards)->tensors) ZT_TRY(write_file(dir + "/" + shard, ks));
    ZT_TRY(add_text_file(dir + "/model.safetensors.index.json", (*shards)->index_text));
  } else {
    std::vector<size_t> all(tensors.size());
    std::iota(all.begin(), all.end(), size_t{0});
    ZT_TRY(write_file(st, all));
  }
  if (*config) ZT_TRY(add_text_file(dir + "/config.json", **config));
  std::set<std::string> written;
  for (const OutputFile& f : files) written.insert(f.path().substr(f.path().rfind('/') + 1));
  ZT_TRY(publish_together(files));
  folder.made = false;
  // The earlier checkpoint's weights that the new one does not hold go: a
  // model.safetensors left beside new shards (or shards beside a new
  // model.safetensors) would be loaded in their place.
  std::string removed;
  for (const std::string& name : earlier) {
    if (written.contains(name) || ::unlink((dir + "/" + name).c_str()) != 0) continue;
    removed += (removed.empty() ? "" : ", ") + name;
  }
  progress.finish();
  if (!removed.empty())
    std::fprintf(stderr, "%s: removed the earlier checkpoint's %s\n", dir.c_str(), removed.c_str());
  // A grouped object's attributes are its scheme's, which config.json and
  // its tensors hold again.
  note_dropped_attributes(in, "safetensors", [&](size_t i) { return recorded[i].has_value(); });
  return {};
}

}  // namespace zt::cli
