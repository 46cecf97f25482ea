#include "foreign/hf_quantized.h"

#include <sys/stat.h>

#include <algorithm>
#include <unordered_map>

#include "base/arithmetic.h"
#include "base/zt_limits.h"
#include "source/io.h"
#include "source/model_folder.h"

namespace zt::foreign {

namespace {

using ull = unsigned long long;

// One scheme: its quant_method and how it groups a checkpoint's tensors.
struct QuantScheme {
  std::string_view method;
  Result<void> (*group)(const std::string& config, const nlohmann::json& qc, ForeignFile& f);
};

// Whether `name` is `suffix` after a non-empty stem.
bool has_suffix(std::string_view name, std::string_view suffix) {
  return name.size() > suffix.size() && name.ends_with(suffix);
}

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

constexpr QuantScheme kSchemes[] = {
    {"mxfp4", group_mxfp4},
};

// config.json beside the model, parsed with bounded size and nesting;
// nullopt when there is none.
Result<std::optional<nlohmann::json>> read_config(const std::string& model_path,
                                                  std::string& config_path) {
  auto resolved = resolve_beside_model(model_path, "config.json", "config.json");
  if (!resolved) {
    if (resolved.error().status == Status::io) return std::optional<nlohmann::json>();
    return std::move(resolved).error();
  }
  config_path = *resolved;
  auto src = Source::open_file(config_path, Source::Mode::copy);
  ZT_TRY(src);
  ZT_FAIL_IF(src->size() > Limits::hf_index_bytes, limit,
             "%s: %llu bytes, more than the limit of %llu", config_path.c_str(),
             static_cast<ull>(src->size()), static_cast<ull>(Limits::hf_index_bytes));
  std::vector<uint8_t> scratch;
  auto bytes = src->bytes(0, src->size(), scratch);
  ZT_TRY(bytes);
  const std::string_view text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  const size_t depth = json_nesting_depth(text);
  ZT_FAIL_IF(depth > 16, invalid, "%s: nests %zu levels deep", config_path.c_str(), depth);
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  ZT_FAIL_IF(j.is_discarded() || !j.is_object(), format, "%s: not a JSON object",
             config_path.c_str());
  return std::optional(std::move(j));
}

}  // namespace

Result<void> group_quantized_layers(const std::string& model_path, ForeignFile& f) {
  std::string config_path;
  auto config = read_config(model_path, config_path);
  ZT_TRY(config);
  if (!*config) return {};
  const auto qc = (*config)->find("quantization_config");
  if (qc == (*config)->end()) return {};
  ZT_FAIL_IF(!qc->is_object(), invalid, "%s: \"quantization_config\" is not a JSON object",
             config_path.c_str());
  const auto method = qc->find("quant_method");
  if (method == qc->end() || !method->is_string()) return {};
  const std::string m = method->get<std::string>();
  for (const QuantScheme& s : kSchemes) {
    if (s.method != m) continue;
    ZT_TRY(s.group(config_path, *qc, f));
    f.attributes["hf.quantization_config"] = *qc;  // kept whole, for the way back
    return {};
  }
  return {};
}

}  // namespace zt::foreign
