#include "foreign/hf_quantized.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "base/zt_limits.h"
#include "foreign/hf_quantized_packed.h"
#include "foreign/hf_quantized_scaled.h"
#include "foreign/safetensors.h"
#include "source/io.h"
#include "source/model_folder.h"
#include "source/range_source.h"

namespace zt::foreign {

namespace {

using ull = unsigned long long;

// One scheme: its quant_method and how it groups a checkpoint's tensors.
struct QuantScheme {
  std::string_view method;
  Result<void> (*group)(const std::string& config, const nlohmann::json& qc, ForeignFile& f);
};

// A plain u8 tensor's one component, or nullptr.
const ForeignComponent* plain_u8(const ForeignObject& o) {
  if (o.format != "dense" || o.components.size() != 1) return nullptr;
  const ForeignComponent& c = o.components[0];
  return c.dtype == DType::u8 && !c.type ? &c : nullptr;
}

// ---- mxfp4 (gpt-oss) ----

constexpr uint64_t kMxBlock = 32;  // values per E8M0 scale
constexpr std::string_view kBlocks = "_blocks", kScales = "_scales";

Result<ForeignObject> mx_object(const std::string& config, const std::string& name,
                                const ForeignObject& blocks, const ForeignObject& scales) {
  const char* c = config.c_str();
  const char* n = name.c_str();
  const ForeignComponent* b = plain_u8(blocks);
  const ForeignComponent* s = plain_u8(scales);
  ZT_FAIL_IF(!b || !s, invalid,
             "%s: mxfp4 layer \"%s\": %s_blocks and %s_scales must be U8 tensors", c, n, n, n);
  const auto& bs = blocks.shape;
  const auto& ss = scales.shape;
  ZT_FAIL_IF(bs.size() < 2 || bs.back() != kMxBlock / 2, invalid,
             "%s: mxfp4 layer \"%s\": %s_blocks has shape %s, not [..., blocks, 16] (16 bytes of "
             "32 E2M1 values a block)",
             c, n, n, shape_text(bs).c_str());
  ZT_FAIL_IF(ss.size() + 1 != bs.size() || !std::equal(ss.begin(), ss.end(), bs.begin()), invalid,
             "%s: mxfp4 layer \"%s\": %s_scales has shape %s, not %s_blocks' %s without its last "
             "dimension (one scale a block)",
             c, n, n, shape_text(ss).c_str(), n, shape_text(bs).c_str());
  ZT_FAIL_IF(ss.back() > UINT64_MAX / kMxBlock, invalid,
             "%s: mxfp4 layer \"%s\": %llu blocks a row overflow 64 bits", c, n,
             static_cast<ull>(ss.back()));
  ForeignObject o;
  o.name = name;
  o.format = "zt.mx/1";
  o.shape = ss;
  o.shape.back() *= kMxBlock;
  o.input_file = blocks.input_file;
  o.attributes = Json::object({{"block_size", kMxBlock},
                               {"axis", static_cast<uint64_t>(o.shape.size() - 1)},
                               {"scale_form", "e8m0_exponent"}});
  ForeignComponent data = *b, sc = *s;
  data.role = "data";
  data.type = "f4_e2m1";
  sc.role = "scales";
  sc.type = "f8_e8m0";
  o.components = {std::move(data), std::move(sc)};
  return o;
}

// Every `<p>_blocks` with its `<p>_scales` becomes `<p>`, where the blocks
// were; the two halves are gone. A half alone is refused.
Result<void> group_mxfp4(const std::string& config, const nlohmann::json&, ForeignFile& f) {
  std::unordered_map<std::string, size_t> at;
  for (size_t i = 0; i < f.objects.size(); ++i) at.emplace(f.objects[i].name, i);
  std::vector<ForeignObject> out;
  out.reserve(f.objects.size());
  for (ForeignObject& o : f.objects) {
    const bool is_blocks = has_suffix(o.name, kBlocks), is_scales = has_suffix(o.name, kScales);
    if (!is_blocks && !is_scales) {
      out.push_back(std::move(o));
      continue;
    }
    const std::string base =
        o.name.substr(0, o.name.size() - (is_blocks ? kBlocks.size() : kScales.size()));
    const std::string other = base + std::string(is_blocks ? kScales : kBlocks);
    const auto pair = at.find(other);
    ZT_FAIL_IF(pair == at.end(), invalid,
               "%s: mxfp4 layer \"%s\": \"%s\" has no \"%s\" (each layer is a _blocks and a "
               "_scales tensor)",
               config.c_str(), base.c_str(), o.name.c_str(), other.c_str());
    ZT_FAIL_IF(at.count(base), invalid,
               "%s: mxfp4 layer \"%s\": a tensor of that name is there too; the layer's object "
               "would take its name",
               config.c_str(), base.c_str());
    if (is_scales) continue;  // written where its blocks are
    auto g = mx_object(config, base, o, f.objects[pair->second]);
    ZT_TRY(g);
    out.push_back(std::move(*g));
  }
  f.objects = std::move(out);
  return {};
}

// compressed-tensors: pack-quantized layers are packed integer codes; the
// float-, int- and naive-quantized formats keep their weight with scales.
Result<void> group_compressed(const std::string& config, const nlohmann::json& qc, ForeignFile& f) {
  const auto format = qc.find("format");
  if (format != qc.end() && *format == "pack-quantized") return group_pack_quantized(config, qc, f);
  return group_compressed_tensors(config, qc, f);
}

constexpr QuantScheme kSchemes[] = {
    {"mxfp4", group_mxfp4},       {"gptq", group_gptq},
    {"awq", group_awq},           {"fp8", group_fp8_blocks},
    {"modelopt", group_modelopt}, {"compressed-tensors", group_compressed},
};

// config.json beside the model: its text, and the text parsed with bounded
// size and nesting.
struct Config {
  std::string path, text;
  nlohmann::json json;
};

// Parses config.json's text (named `path` in messages) with bounded size
// and nesting.
Result<Config> parse_config(std::string path, std::string text) {
  ZT_FAIL_IF(text.size() > Limits::hf_index_bytes, limit,
             "%s: %zu bytes, more than the limit of %llu", path.c_str(), text.size(),
             static_cast<ull>(Limits::hf_index_bytes));
  Config c;
  c.path = std::move(path);
  c.text = std::move(text);
  const size_t depth = json_nesting_depth(c.text);
  ZT_FAIL_IF(depth > 16, invalid, "%s: nests %zu levels deep", c.path.c_str(), depth);
  // A key given twice ("quantization_config" too) would keep one value
  // without a word.
  JsonTextFaults faults;
  c.json = parse_json_checking_keys<nlohmann::json>(c.text, faults);
  ZT_FAIL_IF(c.json.is_discarded() || !c.json.is_object(), format, "%s: not a JSON object",
             c.path.c_str());
  ZT_FAIL_IF(faults.repeated, invalid, "%s: key \"%s\" appears twice in one object", c.path.c_str(),
             printable(std::string_view(faults.repeated->key).substr(0, 200)).c_str());
  ZT_TRY(refuse_wide_integer(c.path.c_str(), faults));
  return c;
}

// nullopt when the model's folder has no config.json.
Result<std::optional<Config>> read_config(const std::string& model_path) {
  auto resolved = resolve_beside_model(model_path, "config.json", "config.json");
  if (!resolved) {
    if (resolved.error().status == Status::io) return std::optional<Config>();
    return std::move(resolved).error();
  }
  const LinksRefused as_checked;  // no link put in its path since is followed
  auto src = Source::open_file(*resolved, Source::Mode::copy);
  ZT_TRY(src);
  ZT_FAIL_IF(src->size() > Limits::hf_index_bytes, limit,
             "%s: %llu bytes, more than the limit of %llu", resolved->c_str(),
             static_cast<ull>(src->size()), static_cast<ull>(Limits::hf_index_bytes));
  std::vector<uint8_t> scratch;
  auto bytes = src->bytes(0, src->size(), scratch);
  ZT_TRY(bytes);
  auto c = parse_config(*resolved,
                        std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
  ZT_TRY(c);
  return std::optional(std::move(*c));
}

}  // namespace

Result<bool> folder_config_is_quantized(const std::string& dir) {
  auto c = read_config(dir + "/model.safetensors");
  ZT_TRY(c);
  return *c && (*c)->json.contains("quantization_config");
}

namespace {

// The same beside a model read over HTTP; nullopt when the server has none
// (404 or 410) or will not give it (401, 403: a pre-signed URL signs only
// the file it names), or answers with a page of its own (status 200, text
// that begins with '<': some servers answer any path so), which is not a
// config and must not stop the model from opening (its tensors then stay
// as they are). Any other text is read as a local config.json is, and
// refused as it is: a config cut short does not quietly ungroup a
// quantized checkpoint. One request: a config within the limit comes whole.
Result<std::optional<Config>> fetch_config(const RangeSource& model) {
  auto opened = model.sibling("config.json", {Limits::hf_index_bytes + 1, OpenWindow::End::head,
                                              true, Limits::hf_index_bytes});
  ZT_TRY(opened);
  if (!opened->source) return std::optional<Config>();
  const std::string& name = opened->source->name();
  ZT_FAIL_IF(opened->source->size() > Limits::hf_index_bytes, limit,
             "%s: %llu bytes, more than the limit of %llu", name.c_str(),
             static_cast<ull>(opened->source->size()), static_cast<ull>(Limits::hf_index_bytes));
  const std::string text(opened->bytes.begin(), opened->bytes.end());
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '<') return std::optional<Config>();
  auto c = parse_config(name, text);
  ZT_TRY(c);
  return std::optional(std::move(*c));
}

// Where a component's bytes are: the checkpoint tensor a grouped object's
// part came from is found by them, since every part is a tensor's bytes
// unchanged (a local view into its shard's mapping, or a remote range of
// its shard's source: a layer may span shards).
using BytesAt = std::tuple<const void*, uint64_t, uint64_t>;

BytesAt bytes_at(const ForeignComponent& c) {
  if (c.remote) return {c.remote->source.get(), c.remote->offset, c.remote->length};
  return {c.bytes.data(), 0, c.bytes.size()};
}

// The checkpoint's tensors as they were: name, safetensors dtype and shape,
// by where their bytes are (empty tensors have no place of their own and
// are left out).
std::map<BytesAt, Json> checkpoint_tensors(const ForeignFile& f) {
  std::map<BytesAt, Json> at;
  for (const ForeignObject& o : f.objects) {
    if (o.format != "dense" || o.components.size() != 1) continue;
    const ForeignComponent& c = o.components[0];
    const auto dtype = safetensors_dtype(c.dtype, c.type);
    if (!dtype || (c.remote ? c.remote->length : c.bytes.size()) == 0) continue;
    at.emplace(
        bytes_at(c),
        Json::object({{"name", o.name}, {"dtype", std::string(*dtype)}, {"shape", o.shape}}));
  }
  return at;
}

// Each grouped object records the checkpoint tensor of each of its parts,
// as attribute "hf.tensors" ({role: {"name", "dtype", "shape"}}), so that
// the way back (zt convert --hf) writes the same tensors: the parts' bytes
// alone do not say a tensor's name, its dtype before the part was typed
// (blocks of E2M1 pairs are U8 [..., B, 16]) or a one-value scale's shape
// ([] or [1]).
void record_checkpoint_tensors(const std::map<BytesAt, Json>& before, ForeignFile& f) {
  for (ForeignObject& o : f.objects) {
    if (o.format == "dense") continue;
    Json tensors = Json::object();
    bool all = true;
    for (const ForeignComponent& c : o.components) {
      const auto t = before.find(bytes_at(c));
      all = all && t != before.end();
      if (all) tensors[c.role] = t->second;
    }
    if (all) o.attributes["hf.tensors"] = std::move(tensors);  // else no way back is recorded
  }
}

}  // namespace

namespace {

// Groups `f`'s quantized layers by `config` (none: nothing to do).
Result<void> group_by_config(const std::optional<Config>& config, ForeignFile& f) {
  if (!config) return {};
  const Config& cf = *config;
  const auto qc = cf.json.find("quantization_config");
  if (qc == cf.json.end()) return {};
  ZT_FAIL_IF(!qc->is_object(), invalid, "%s: \"quantization_config\" is not a JSON object",
             cf.path.c_str());
  const auto method = qc->find("quant_method");
  if (method == qc->end() || !method->is_string()) return {};
  const std::string m = method->get<std::string>();
  for (const QuantScheme& s : kSchemes) {
    if (s.method != m) continue;
    const auto before = checkpoint_tensors(f);
    ZT_TRY(s.group(cf.path, *qc, f));
    record_checkpoint_tensors(before, f);
    // Kept for the way back: the scheme's parameters as a map, and
    // config.json's own text, which zt convert --hf writes back unchanged.
    for (const char* key : {"hf.quantization_config", "hf.config"})
      ZT_FAIL_IF(f.attributes.contains(key), invalid,
                 "%s: the checkpoint's metadata already holds \"%s\", which its config.json's "
                 "quantization_config would take: one file cannot keep both",
                 cf.path.c_str(), key);
    f.attributes["hf.quantization_config"] = *qc;
    f.attributes["hf.config"] = cf.text;
    return {};
  }
  return {};
}

}  // namespace

Result<void> group_quantized_layers(const std::string& model_path, ForeignFile& f) {
  auto config = read_config(model_path);
  ZT_TRY(config);
  return group_by_config(*config, f);
}

Result<void> group_quantized_layers_remote(const RangeSource& model, ForeignFile& f) {
  auto config = fetch_config(model);
  ZT_TRY(config);
  return group_by_config(*config, f);
}

}  // namespace zt::foreign
