#include "foreign/hf_quantized_scaled.h"

#include <array>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "base/arithmetic.h"

namespace zt::foreign {

namespace {

using ull = unsigned long long;
using Block = std::array<uint64_t, 2>;

// One scheme: which tensors sit beside `<p>.weight`, what the weight holds,
// and which block a scale of a given shape covers.
struct ScaledScheme {
  const char* method;
  std::string_view scale;   // ".weight_scale_inv", ".weight_scale"
  std::string_view global;  // ".weight_scale_2", or empty
  bool fp4_pairs = false;   // the weight is U8 [R, C / 2] of E2M1 pairs
  std::function<Result<Block>(uint64_t rows, uint64_t cols, const std::vector<uint64_t>& scale)>
      block;
};

constexpr std::string_view kWeight = ".weight", kInputScale = ".input_scale";

// The one component of a plain tensor (dense, one component), or nullptr.
const ForeignComponent* plain(const ForeignObject& o) {
  return o.format == "dense" && o.components.size() == 1 ? &o.components[0] : nullptr;
}

bool is_float(const ForeignComponent& c, bool fp8_too) {
  if (c.type) return fp8_too && c.dtype == DType::u8 && *c.type == "f8_e4m3fn";
  return c.dtype == DType::f32 || c.dtype == DType::bf16 || c.dtype == DType::f16;
}

bool one_value(const std::vector<uint64_t>& shape) {
  return shape.empty() || (shape.size() == 1 && shape[0] == 1);
}

// [b0, b1] from a JSON array of two positive integers.
std::optional<Block> block_of(const nlohmann::json& j) {
  if (!j.is_array() || j.size() != 2) return std::nullopt;
  Block b{};
  for (size_t k = 0; k < 2; ++k) {
    if (!j[k].is_number_unsigned() || j[k].get<uint64_t>() == 0) return std::nullopt;
    b[k] = j[k].get<uint64_t>();
  }
  return b;
}

Result<ForeignObject> scaled_object(const std::string& config, const ScaledScheme& m,
                                    const std::string& layer, const ForeignObject& weight,
                                    const ForeignObject& scale, const ForeignObject* global,
                                    const ForeignObject* input) {
  const char* c = config.c_str();
  const char* l = layer.c_str();
  const ForeignComponent* w = plain(weight);
  const bool weight_ok = w && weight.shape.size() == 2 &&
                         (m.fp4_pairs ? w->dtype == DType::u8 && !w->type
                                      : (w->dtype == DType::u8 && w->type == "f8_e4m3fn") ||
                                            (w->dtype == DType::i8 && !w->type));
  ZT_FAIL_IF(!weight_ok, invalid, "%s: %s layer \"%s\": \"%s\" must be %s", c, m.method, l,
             weight.name.c_str(),
             m.fp4_pairs ? "a U8 matrix of E2M1 pairs" : "an F8_E4M3 or I8 matrix");
  const uint64_t rows = weight.shape[0];
  ZT_FAIL_IF(m.fp4_pairs && weight.shape[1] > UINT64_MAX / 2, invalid,
             "%s: %s layer \"%s\": the weight's shape overflows 64 bits", c, m.method, l);
  const uint64_t cols = m.fp4_pairs ? weight.shape[1] * 2 : weight.shape[1];
  ZT_FAIL_IF(rows == 0 || cols == 0, invalid,
             "%s: %s layer \"%s\": an empty weight [%llu, %llu] has nothing to scale", c, m.method,
             l, static_cast<ull>(rows), static_cast<ull>(cols));
  const ForeignComponent* s = plain(scale);
  ZT_FAIL_IF(!s || !is_float(*s, m.fp4_pairs), invalid, "%s: %s layer \"%s\": \"%s\" must be %s", c,
             m.method, l, scale.name.c_str(),
             m.fp4_pairs ? "an F8_E4M3 tensor" : "an F32, BF16 or F16 tensor");
  auto block = m.block(rows, cols, scale.shape);
  if (!block)
    return make_error(Status::invalid, "%s: %s layer \"%s\": \"%s\" has shape %s: %s", c, m.method,
                      l, scale.name.c_str(), shape_text(scale.shape).c_str(),
                      block.error().message.c_str());
  ForeignObject o;
  o.name = weight.name;
  o.format = "libztensor.block_scaled/1";
  o.shape = {rows, cols};
  o.input_file = weight.input_file;
  o.attributes = Json::object({{"block", Json::array({(*block)[0], (*block)[1]})}});
  ForeignComponent data = *w, sc = *s;
  data.role = "data";
  if (m.fp4_pairs) data.type = "f4_e2m1";
  sc.role = "scales";
  o.components = {std::move(data), std::move(sc)};
  for (const auto& [t, role] :
       {std::pair{global, "global_scale"}, std::pair{input, "input_scale"}}) {
    if (!t) continue;
    const ForeignComponent* g = plain(*t);
    ZT_FAIL_IF(!g || !is_float(*g, false) || !one_value(t->shape), invalid,
               "%s: %s layer \"%s\": \"%s\" must be one F32, BF16 or F16 value", c, m.method, l,
               t->name.c_str());
    ForeignComponent part = *g;
    part.role = role;
    o.components.push_back(std::move(part));
  }
  return o;
}

// Every `<p>` with a `<p><scale>` beside it: `<p>.weight` becomes the
// layer's object where it was, and its scales (global scale, input scale)
// are gone.
Result<void> group_scaled(const std::string& config, ForeignFile& f, const ScaledScheme& m) {
  std::unordered_map<std::string, size_t> at;
  for (size_t i = 0; i < f.objects.size(); ++i) at.emplace(f.objects[i].name, i);
  const auto find = [&](const std::string& name) -> const ForeignObject* {
    const auto it = at.find(name);
    return it == at.end() ? nullptr : &f.objects[it->second];
  };
  std::unordered_map<std::string, ForeignObject> made;  // weight name -> object
  std::unordered_map<std::string, bool> absorbed;
  for (const ForeignObject& o : f.objects) {
    if (!has_suffix(o.name, m.scale)) continue;
    const std::string layer = o.name.substr(0, o.name.size() - m.scale.size());
    const ForeignObject* weight = find(layer + std::string(kWeight));
    ZT_FAIL_IF(!weight, invalid, "%s: %s layer \"%s\": \"%s\" has no \"%s.weight\"", config.c_str(),
               m.method, layer.c_str(), o.name.c_str(), layer.c_str());
    const ForeignObject* global = m.global.empty() ? nullptr : find(layer + std::string(m.global));
    ZT_FAIL_IF(!m.global.empty() && !global, invalid,
               "%s: %s layer \"%s\": \"%s%s\" is missing (the second-level scale)", config.c_str(),
               m.method, layer.c_str(), layer.c_str(), std::string(m.global).c_str());
    ZT_FAIL_IF(find(layer + ".weight_zero_point"), invalid,
               "%s: %s layer \"%s\": zero points (weight_zero_point) are not read: the layer's "
               "values would change without them",
               config.c_str(), m.method, layer.c_str());
    const ForeignObject* input = find(layer + std::string(kInputScale));
    auto object = scaled_object(config, m, layer, *weight, o, global, input);
    ZT_TRY(object);
    for (const ForeignObject* part : {&o, global, input})
      if (part) absorbed[part->name] = true;
    made.emplace(weight->name, std::move(*object));
  }
  std::vector<ForeignObject> out;
  out.reserve(f.objects.size());
  for (ForeignObject& o : f.objects) {
    if (absorbed.count(o.name)) continue;
    const auto it = made.find(o.name);
    out.push_back(it == made.end() ? std::move(o) : std::move(it->second));
  }
  f.objects = std::move(out);
  return {};
}

// The block a scale of shape `scale` covers over [rows, cols] when it holds
// ceil(rows / b0) x ceil(cols / b1) values.
Result<Block> check_blocks(uint64_t rows, uint64_t cols, const std::vector<uint64_t>& scale,
                           const Block& b) {
  const std::vector<uint64_t> want{ceil_div(rows, b[0]), ceil_div(cols, b[1])};
  ZT_FAIL_IF(scale != want, invalid, "blocks of [%llu, %llu] over [%llu, %llu] need %s",
             static_cast<ull>(b[0]), static_cast<ull>(b[1]), static_cast<ull>(rows),
             static_cast<ull>(cols), shape_text(want).c_str());
  return b;
}

}  // namespace

Result<void> group_fp8_blocks(const std::string& config, const nlohmann::json& qc, ForeignFile& f) {
  const auto size = qc.find("weight_block_size");
  const auto block = size == qc.end() ? std::nullopt : block_of(*size);
  ZT_FAIL_IF(!block, invalid,
             "%s: quantization_config.weight_block_size must be [rows, columns] of a block "
             "(positive integers)",
             config.c_str());
  return group_scaled(config, f,
                      {"fp8", ".weight_scale_inv", "", false,
                       [b = *block](uint64_t r, uint64_t c, const std::vector<uint64_t>& s) {
                         return check_blocks(r, c, s, b);
                       }});
}

Result<void> group_modelopt(const std::string& config, const nlohmann::json& qc, ForeignFile& f) {
  const auto algo = qc.find("quant_algo");
  const std::string a = algo != qc.end() && algo->is_string() ? algo->get<std::string>() : "";
  if (a != "NVFP4") return {};  // ModelOpt's other algorithms: tensors as they are
  const auto size = qc.find("group_size");
  uint64_t group = 16;
  if (size != qc.end()) {
    ZT_FAIL_IF(!size->is_number_unsigned() || size->get<uint64_t>() == 0, invalid,
               "%s: quantization_config.group_size is not a positive integer", config.c_str());
    group = size->get<uint64_t>();
  }
  return group_scaled(config, f,
                      {"modelopt NVFP4", ".weight_scale", ".weight_scale_2", true,
                       [group](uint64_t r, uint64_t c, const std::vector<uint64_t>& s) {
                         return check_blocks(r, c, s, Block{1, group});
                       }});
}

Result<void> group_compressed_tensors(const std::string& config, const nlohmann::json& qc,
                                      ForeignFile& f) {
  const auto format = qc.find("format");
  const std::string fm =
      format != qc.end() && format->is_string() ? format->get<std::string>() : "";
  // pack-quantized (and formats to come) keep their tensors as they are.
  if (fm != "float-quantized" && fm != "int-quantized" && fm != "naive-quantized") return {};
  // A config group's blocks or group size, for scales of more than one
  // value a row.
  std::optional<Block> blocks;
  std::optional<uint64_t> group;
  if (const auto groups = qc.find("config_groups"); groups != qc.end() && groups->is_object()) {
    for (const auto& [name, g] : groups->items()) {
      const auto w = g.find("weights");
      if (!g.is_object() || w == g.end() || !w->is_object()) continue;
      if (const auto b = w->find("block_structure"); b != w->end() && block_of(*b))
        blocks = block_of(*b);
      if (const auto s = w->find("group_size");
          s != w->end() && s->is_number_unsigned() && s->get<uint64_t>() > 0)
        group = s->get<uint64_t>();
    }
  }
  return group_scaled(
      config, f,
      {"compressed-tensors", ".weight_scale", "", false,
       [blocks, group](uint64_t r, uint64_t c, const std::vector<uint64_t>& s) -> Result<Block> {
         if (one_value(s)) return Block{std::max<uint64_t>(r, 1), std::max<uint64_t>(c, 1)};
         if (s == std::vector<uint64_t>{r, 1}) return Block{1, std::max<uint64_t>(c, 1)};
         if (blocks) return check_blocks(r, c, s, *blocks);
         if (group) return check_blocks(r, c, s, Block{1, *group});
         return make_error(Status::invalid,
                           "one value (tensor), [rows, 1] (channel), or the blocks of a config "
                           "group's block_structure or group_size are needed");
       }});
}

}  // namespace zt::foreign
