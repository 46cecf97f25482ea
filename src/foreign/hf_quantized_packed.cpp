// Quantized layers of integer codes packed in int32 words: GPTQ, AWQ
// (GEMM) and compressed-tensors' pack-quantized, each layer one
// libztensor.packed_group/1 object (hf_quantized_packed.h).
#include "foreign/hf_quantized_packed.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <initializer_list>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "base/arithmetic.h"
#include "foreign/hf_quantized_scaled.h"
#include "read/content.h"

namespace zt::foreign {

namespace {

using ull = unsigned long long;

// ---- layers whose tensors are `<layer><suffix>` ----

// Up to four tensors of one layer, by suffix (nullptr where absent).
using LayerTensors = std::array<const ForeignObject*, 4>;

// The layers of `f` by the suffixes of their tensors (at most four).
std::unordered_map<std::string, LayerTensors> layers_by_suffix(
    const ForeignFile& f, std::span<const std::string_view> suffixes) {
  std::unordered_map<std::string, LayerTensors> layers;
  for (const ForeignObject& o : f.objects)
    for (size_t k = 0; k < suffixes.size(); ++k)
      if (has_suffix(o.name, suffixes[k]))
        layers[o.name.substr(0, o.name.size() - suffixes[k].size())][k] = &o;
  return layers;
}

// Each made layer's object takes the place of its first suffix's tensor;
// its other tensors are gone. Other tensors stay where they are.
void place_layers(ForeignFile& f, std::span<const std::string_view> suffixes,
                  std::unordered_map<std::string, ForeignObject>& made) {
  std::vector<ForeignObject> out;
  out.reserve(f.objects.size());
  for (ForeignObject& o : f.objects) {
    bool part = false;
    for (size_t k = 0; k < suffixes.size() && !part; ++k) {
      if (!has_suffix(o.name, suffixes[k])) continue;
      const auto it = made.find(o.name.substr(0, o.name.size() - suffixes[k].size()));
      if (it == made.end()) continue;
      part = true;
      if (k == 0) out.push_back(std::move(it->second));
    }
    if (!part) out.push_back(std::move(o));
  }
  f.objects = std::move(out);
}

// ---- integer codes packed in int32 words: GPTQ and AWQ (GEMM) ----
//
// A layer `<p>` is `<p>.qweight`, `<p>.qzeros`, `<p>.scales` and, for GPTQ,
// `<p>.g_idx`; it becomes `<p>.weight` [out, in], a
// libztensor.packed_group/1 object (docs/profiles/libztensor.packed_group-1.md)
// whose parts are those tensors' bytes unchanged.

constexpr std::string_view kPackedParts[] = {".qweight", ".qzeros", ".scales", ".g_idx"};

// The config's integer `key`, or `fallback` when absent.
Result<int64_t> config_int(const std::string& config, const nlohmann::json& qc, const char* key,
                           int64_t fallback) {
  const auto v = qc.find(key);
  if (v == qc.end()) return fallback;
  ZT_FAIL_IF(!v->is_number_integer(), invalid, "%s: quantization_config.%s is not an integer",
             config.c_str(), key);
  return v->get<int64_t>();
}

// What one method's checkpoints look like.
struct PackedScheme {
  const char* method;
  bool codes_along_rows;  // AWQ packs along the output features, GPTQ along the input
  bool has_g_idx;
  int64_t zero_offset;  // added to a stored zero point (GPTQ v1 stores zero - 1)
  Json slots;           // the position of the code in each slot of a word
};

Json identity_slots(uint64_t per_word) {
  Json slots = Json::array();
  for (uint64_t i = 0; i < per_word; ++i) slots.push_back(i);
  return slots;
}

Json packing_json(const Json& slots, uint64_t per_word, uint64_t axis) {
  return Json::object({{"word", "u32"},
                       {"per_word", per_word},
                       {"axis", axis},
                       {"stored", "columns_first"},
                       {"slots", slots}});
}

// A 2-D tensor of one of `dtypes`, or an error naming the layer and rule.
Result<const ForeignComponent*> layer_tensor(const std::string& config, const char* method,
                                             const std::string& layer, const ForeignObject& o,
                                             std::initializer_list<DType> dtypes,
                                             const char* want) {
  const bool plain = o.format == "dense" && o.components.size() == 1 && !o.components[0].type;
  const bool ok =
      plain && std::find(dtypes.begin(), dtypes.end(), o.components[0].dtype) != dtypes.end();
  ZT_FAIL_IF(!ok, invalid, "%s: %s layer \"%s\": \"%s\" must be %s", config.c_str(), method,
             layer.c_str(), o.name.c_str(), want);
  return &o.components[0];
}

Result<ForeignObject> packed_object(const std::string& config, const PackedScheme& m,
                                    const nlohmann::json& qc, const std::string& layer,
                                    const LayerTensors& t) {
  const char* c = config.c_str();
  const char* l = layer.c_str();
  auto bits = config_int(config, qc, "bits", 4);
  ZT_TRY(bits);
  ZT_FAIL_IF(*bits != 2 && *bits != 4 && *bits != 8, invalid,
             "%s: %s layer \"%s\": %lld-bit codes are not packed whole into 32-bit words (2, 4 "
             "or 8 bits are)",
             c, m.method, l, static_cast<long long>(*bits));
  auto group_size = config_int(config, qc, "group_size", 128);
  ZT_TRY(group_size);
  ZT_FAIL_IF(*group_size < -1 || *group_size == 0, invalid,
             "%s: quantization_config.group_size is %lld (-1 or a positive size)", c,
             static_cast<long long>(*group_size));
  const uint64_t per_word = 32 / static_cast<uint64_t>(*bits);
  for (size_t k = 1; k < 3; ++k)  // g_idx may be absent (groups in column order)
    ZT_FAIL_IF(!t[k], invalid, "%s: %s layer \"%s\": \"%s%s\" is missing", c, m.method, l, l,
               std::string(kPackedParts[k]).c_str());
  auto qweight = layer_tensor(config, m.method, layer, *t[0], {DType::i32}, "an I32 tensor");
  ZT_TRY(qweight);
  auto qzeros = layer_tensor(config, m.method, layer, *t[1], {DType::i32}, "an I32 tensor");
  ZT_TRY(qzeros);
  auto scales = layer_tensor(config, m.method, layer, *t[2], {DType::f16, DType::bf16, DType::f32},
                             "an F16, BF16 or F32 tensor");
  ZT_TRY(scales);
  const auto& ws = t[0]->shape;
  const auto& ss = t[2]->shape;
  const auto& zs = t[1]->shape;
  ZT_FAIL_IF(ws.size() != 2 || ss.size() != 2 || zs.size() != 2, invalid,
             "%s: %s layer \"%s\": qweight, qzeros and scales must be matrices", c, m.method, l);
  // GPTQ: qweight [in / per_word, out]; AWQ: [in, out / per_word].
  const uint64_t rows = m.codes_along_rows ? ws[1] * per_word : ws[1];
  const uint64_t cols = m.codes_along_rows ? ws[0] : ws[0] * per_word;
  ZT_FAIL_IF(ws[0] > UINT64_MAX / per_word || ws[1] > UINT64_MAX / per_word, invalid,
             "%s: %s layer \"%s\": qweight's shape overflows 64 bits", c, m.method, l);
  ZT_FAIL_IF(rows == 0 || cols == 0, invalid,
             "%s: %s layer \"%s\": an empty weight [%llu, %llu] has no groups to quantize", c,
             m.method, l, static_cast<ull>(rows), static_cast<ull>(cols));
  const uint64_t groups = ss[0];
  const uint64_t want_groups =
      *group_size == -1 ? 1 : ceil_div(cols, static_cast<uint64_t>(*group_size));
  ZT_FAIL_IF(ss[1] != rows || groups != want_groups, invalid,
             "%s: %s layer \"%s\": scales has shape %s; a [%llu, %llu] weight in groups of "
             "%lld needs [%llu, %llu]",
             c, m.method, l, shape_text(ss).c_str(), static_cast<ull>(rows), static_cast<ull>(cols),
             static_cast<long long>(*group_size), static_cast<ull>(want_groups),
             static_cast<ull>(rows));
  ZT_FAIL_IF(zs[0] != groups || rows % per_word != 0 || zs[1] != rows / per_word, invalid,
             "%s: %s layer \"%s\": qzeros has shape %s, not [%llu, %llu] (one zero point a "
             "group and output, %llu a word)",
             c, m.method, l, shape_text(zs).c_str(), static_cast<ull>(groups),
             static_cast<ull>(rows / per_word), static_cast<ull>(per_word));
  ForeignObject o;
  o.name = layer + ".weight";
  o.format = "libztensor.packed_group/1";
  o.shape = {rows, cols};
  o.input_file = t[0]->input_file;
  const Json slots = m.slots.is_null() ? identity_slots(per_word) : m.slots;
  o.attributes =
      Json::object({{"bits", *bits},
                    {"groups", groups},
                    {"group_size", *group_size == -1 ? 0 : *group_size},
                    {"packing", packing_json(slots, per_word, m.codes_along_rows ? 0 : 1)},
                    {"scales_stored", "groups_first"},
                    {"zero_point", Json::object({{"form", "packed"},
                                                 {"offset", m.zero_offset},
                                                 {"packing", packing_json(slots, per_word, 0)}})}});
  auto part = [](const ForeignComponent& from, const char* role) {
    ForeignComponent p = from;
    p.role = role;
    return p;
  };
  o.components = {part(**qweight, "data"), part(**scales, "scales"), part(**qzeros, "zeros")};
  if (t[3]) {
    auto g = layer_tensor(config, m.method, layer, *t[3], {DType::i32, DType::i64},
                          "an I32 or I64 tensor");
    ZT_TRY(g);
    ZT_FAIL_IF(t[3]->shape.size() != 1 || t[3]->shape[0] != cols, invalid,
               "%s: %s layer \"%s\": g_idx has shape %s, not [%llu] (one group a column)", c,
               m.method, l, shape_text(t[3]->shape).c_str(), static_cast<ull>(cols));
    // A group map is the layer's structure: checked here where its bytes
    // are local (a remote one when decoded or written), so that no layer
    // is handed out that every decode would refuse.
    for (uint64_t k = 0; !(*g)->remote && k < cols; ++k) {
      const __int128 group = load_index((*g)->bytes, (*g)->dtype, k);
      ZT_FAIL_IF(group < 0 || group >= static_cast<__int128>(groups), invalid,
                 "%s: %s layer \"%s\": g_idx names group %lld for column %llu, not one of the "
                 "%llu groups",
                 c, m.method, l, static_cast<long long>(group), static_cast<ull>(k),
                 static_cast<ull>(groups));
    }
    o.components.push_back(part(**g, "g_idx"));
  }
  return o;
}

// Every `<p>.qweight` with its companions becomes `<p>.weight`, where the
// qweight was; a companion without its qweight is refused.
Result<void> group_packed(const std::string& config, const nlohmann::json& qc, ForeignFile& f,
                          const PackedScheme& m) {
  // AWQ has no group map: a tensor named `.g_idx` is not one of its layer's.
  const std::span<const std::string_view> suffixes(kPackedParts, m.has_g_idx ? 4 : 3);
  std::unordered_set<std::string> names;
  for (const ForeignObject& o : f.objects) names.insert(o.name);
  std::unordered_map<std::string, ForeignObject> made;
  for (const auto& [layer, t] : layers_by_suffix(f, suffixes)) {
    ZT_FAIL_IF(!t[0], invalid,
               "%s: %s layer \"%s\": has no \"%s.qweight\" (its %s has nothing to belong to)",
               config.c_str(), m.method, layer.c_str(), layer.c_str(),
               t[1]   ? "qzeros"
               : t[2] ? "scales"
                      : "g_idx");
    ZT_FAIL_IF(names.count(layer + ".weight"), invalid,
               "%s: %s layer \"%s\": a tensor \"%s.weight\" is there too; the layer's object "
               "would take its name",
               config.c_str(), m.method, layer.c_str(), layer.c_str());
    auto o = packed_object(config, m, qc, layer, t);
    ZT_TRY(o);
    made.emplace(layer, std::move(*o));
  }
  place_layers(f, suffixes, made);
  return {};
}

}  // namespace

Result<void> group_gptq(const std::string& config, const nlohmann::json& qc, ForeignFile& f) {
  // checkpoint_format "gptq" (the default) stores each zero point minus
  // one; "gptq_v2" stores it as it is.
  const auto format = qc.find("checkpoint_format");
  const std::string cf =
      format != qc.end() && format->is_string() ? format->get<std::string>() : "gptq";
  ZT_FAIL_IF(cf != "gptq" && cf != "gptq_v2", invalid,
             "%s: quantization_config.checkpoint_format \"%s\" is not \"gptq\" or "
             "\"gptq_v2\"",
             config.c_str(), cf.c_str());
  return group_packed(config, qc, f, {"gptq", false, true, cf == "gptq" ? 1 : 0, Json()});
}

Result<void> group_awq(const std::string& config, const nlohmann::json& qc, ForeignFile& f) {
  const auto version = qc.find("version");
  std::string v =
      version != qc.end() && version->is_string() ? version->get<std::string>() : "gemm";
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char ch) { return std::tolower(ch); });
  ZT_FAIL_IF(v != "gemm", invalid,
             "%s: AWQ version \"%s\": only the GEMM layout is read (GEMV, exllama and other "
             "kernels' layouts are not)",
             config.c_str(), v.c_str());
  auto bits = config_int(config, qc, "bits", 4);
  ZT_TRY(bits);
  ZT_FAIL_IF(*bits != 4, invalid, "%s: AWQ with %lld-bit codes: the GEMM layout is 4-bit",
             config.c_str(), static_cast<long long>(*bits));
  // AutoAWQ's pack order: slot i of a word holds output feature
  // 8 x word + {0, 2, 4, 6, 1, 3, 5, 7}[i].
  return group_packed(config, qc, f,
                      {"awq", true, false, 0, Json::array({0, 2, 4, 6, 1, 3, 5, 7})});
}

namespace {

// ---- compressed-tensors pack-quantized ----
//
// A layer `<p>` is `<p>.weight_packed` I32 [R, C / n] (n = 32 / bits codes
// a word along the input axis, lowest bits first, each code the value plus
// 2^(bits - 1)), `<p>.weight_scale` [R, G], `<p>.weight_shape` [2] = [R, C]
// and, when not symmetric, `<p>.weight_zero_point`: packed I32 [R / n, G]
// (down the output axis, offset as the codes are) or plain integers [R, G]
// (the zero point itself). It becomes `<p>.weight` [R, C], a
// libztensor.packed_group/1 object; weight_shape is the object's shape,
// recorded for the way back as attribute "hf.shape_tensor".

constexpr std::string_view kPackQuantizedParts[] = {".weight_packed", ".weight_scale",
                                                    ".weight_zero_point", ".weight_shape"};

// The config group's weights arguments this library reads.
struct PackArgs {
  int64_t bits = 4;
  bool symmetric = true;
  std::optional<uint64_t> group_size;  // nullopt: channel (one group a row)
};

Result<PackArgs> pack_args(const std::string& config, const nlohmann::json& qc) {
  const char* c = config.c_str();
  const auto groups = qc.find("config_groups");
  ZT_FAIL_IF(groups == qc.end() || !groups->is_object() || groups->size() != 1, invalid,
             "%s: pack-quantized: quantization_config.config_groups must hold one group (layers "
             "of several groups are not told apart)",
             c);
  const nlohmann::json& g = groups->begin().value();
  const auto w = g.is_object() ? g.find("weights") : g.end();
  ZT_FAIL_IF(!g.is_object() || w == g.end() || !w->is_object(), invalid,
             "%s: pack-quantized: the config group has no \"weights\" map", c);
  PackArgs a;
  auto bits = config_int(config, *w, "num_bits", 4);
  ZT_TRY(bits);
  a.bits = *bits;
  const auto type = w->find("type");
  ZT_FAIL_IF(type != w->end() && *type != "int", invalid,
             "%s: pack-quantized: weights of type %s are not integer codes", c,
             type->dump().c_str());
  const auto sym = w->find("symmetric");
  ZT_FAIL_IF(sym != w->end() && !sym->is_boolean(), invalid,
             "%s: pack-quantized: weights.symmetric is not true or false", c);
  a.symmetric = sym == w->end() || sym->get<bool>();
  const auto strategy = w->find("strategy");
  const std::string st =
      strategy != w->end() && strategy->is_string() ? strategy->get<std::string>() : "";
  ZT_FAIL_IF(st != "group" && st != "channel", invalid,
             "%s: pack-quantized: weights.strategy \"%s\": the group and channel strategies are "
             "read",
             c, st.c_str());
  if (st == "group") {
    auto gs = config_int(config, *w, "group_size", 0);
    ZT_TRY(gs);
    ZT_FAIL_IF(*gs <= 0, invalid, "%s: pack-quantized: weights.group_size must be positive", c);
    a.group_size = static_cast<uint64_t>(*gs);
  }
  return a;
}

Result<ForeignObject> pack_quantized_object(const std::string& config, const PackArgs& a,
                                            const std::string& layer, const LayerTensors& t) {
  const char* c = config.c_str();
  const char* l = layer.c_str();
  constexpr const char* m = "compressed-tensors pack-quantized";
  ZT_FAIL_IF(a.bits != 2 && a.bits != 4 && a.bits != 8, invalid,
             "%s: %s layer \"%s\": %lld-bit codes are not packed whole into 32-bit words (2, 4 "
             "or 8 bits are)",
             c, m, l, static_cast<long long>(a.bits));
  for (size_t k : {size_t{1}, size_t{3}})
    ZT_FAIL_IF(!t[k], invalid, "%s: %s layer \"%s\": \"%s%s\" is missing", c, m, l, l,
               std::string(kPackQuantizedParts[k]).c_str());
  ZT_FAIL_IF(a.symmetric == !!t[2], invalid,
             "%s: %s layer \"%s\": the config says %s, and the layer %s weight_zero_point", c, m, l,
             a.symmetric ? "symmetric" : "not symmetric", t[2] ? "has a" : "has no");
  auto packed = layer_tensor(config, m, layer, *t[0], {DType::i32}, "an I32 tensor");
  ZT_TRY(packed);
  auto scales = layer_tensor(config, m, layer, *t[1], {DType::f16, DType::bf16, DType::f32},
                             "an F16, BF16 or F32 tensor");
  ZT_TRY(scales);
  auto shape =
      layer_tensor(config, m, layer, *t[3], {DType::i32, DType::i64}, "an I32 or I64 tensor");
  ZT_TRY(shape);
  ZT_FAIL_IF(t[3]->shape != std::vector<uint64_t>{2}, invalid,
             "%s: %s layer \"%s\": weight_shape must be two integers [rows, columns]", c, m, l);
  // Its 8 or 16 bytes are the layer's shape: fetched now when remote.
  std::array<uint8_t, 16> fetched{};
  std::span<const uint8_t> dims = (*shape)->bytes;
  if (const auto& r = (*shape)->remote) {
    ZT_FAIL_IF(r->length > fetched.size(), invalid, "%s: %s layer \"%s\": weight_shape is too long",
               c, m, l);
    ZT_TRY(r->source->read(r->offset, std::span(fetched).first(r->length)));
    dims = std::span<const uint8_t>(fetched).first(r->length);
  }
  const __int128 r128 = load_index(dims, (*shape)->dtype, 0);
  const __int128 c128 = load_index(dims, (*shape)->dtype, 1);
  ZT_FAIL_IF(r128 <= 0 || c128 <= 0 || r128 > INT64_MAX || c128 > INT64_MAX, invalid,
             "%s: %s layer \"%s\": weight_shape [%lld, %lld] is not a weight's shape", c, m, l,
             static_cast<long long>(r128), static_cast<long long>(c128));
  const uint64_t rows = static_cast<uint64_t>(r128), cols = static_cast<uint64_t>(c128);
  const uint64_t per_word = 32 / static_cast<uint64_t>(a.bits);
  const auto& ws = t[0]->shape;
  ZT_FAIL_IF(ws.size() != 2 || ws[0] != rows || ws[1] != ceil_div(cols, per_word), invalid,
             "%s: %s layer \"%s\": weight_packed has shape %s; a [%llu, %llu] weight of %lld-bit "
             "codes needs [%llu, %llu]",
             c, m, l, shape_text(ws).c_str(), static_cast<ull>(rows), static_cast<ull>(cols),
             static_cast<long long>(a.bits), static_cast<ull>(rows),
             static_cast<ull>(ceil_div(cols, per_word)));
  ZT_FAIL_IF(cols % per_word != 0, invalid,
             "%s: %s layer \"%s\": %llu columns are not whole words of %llu codes (padded words "
             "are not a point of libztensor.packed_group/1)",
             c, m, l, static_cast<ull>(cols), static_cast<ull>(per_word));
  const uint64_t groups = a.group_size ? ceil_div(cols, *a.group_size) : 1;
  ZT_FAIL_IF(t[1]->shape != (std::vector<uint64_t>{rows, groups}), invalid,
             "%s: %s layer \"%s\": weight_scale has shape %s, not [%llu, %llu] (a scale a row "
             "and group)",
             c, m, l, shape_text(t[1]->shape).c_str(), static_cast<ull>(rows),
             static_cast<ull>(groups));
  const uint64_t mid = uint64_t{1} << (a.bits - 1);  // what a code adds to its value
  ForeignObject o;
  o.name = layer + ".weight";
  o.format = "libztensor.packed_group/1";
  o.shape = {rows, cols};
  o.input_file = t[0]->input_file;
  auto rows_first = [&](uint64_t axis) {
    Json p = packing_json(identity_slots(per_word), per_word, axis);
    p["stored"] = "rows_first";
    return p;
  };
  Json zero = Json::object({{"form", "implied"}, {"value", mid}});
  auto part = [](const ForeignComponent& from, const char* role) {
    ForeignComponent p = from;
    p.role = role;
    return p;
  };
  o.components = {part(**packed, "data"), part(**scales, "scales")};
  if (t[2]) {
    const auto& zs = t[2]->shape;
    auto z = layer_tensor(config, m, layer, *t[2], {DType::i8, DType::i16, DType::i32, DType::i64},
                          "an integer tensor");
    ZT_TRY(z);
    if ((*z)->dtype == DType::i32 && zs.size() == 2 && zs[0] == ceil_div(rows, per_word) &&
        zs[1] == groups && rows % per_word == 0) {
      // Packed down the output axis, each code the zero point plus `mid`,
      // as the weight's codes are: (code - zero code) is the value's code.
      zero = Json::object({{"form", "packed"}, {"offset", 0}, {"packing", rows_first(0)}});
    } else {
      ZT_FAIL_IF(zs != (std::vector<uint64_t>{rows, groups}), invalid,
                 "%s: %s layer \"%s\": weight_zero_point has shape %s, neither [%llu, %llu] "
                 "(plain) nor I32 [%llu, %llu] (packed, whole words of rows)",
                 c, m, l, shape_text(zs).c_str(), static_cast<ull>(rows), static_cast<ull>(groups),
                 static_cast<ull>(ceil_div(rows, per_word)), static_cast<ull>(groups));
      zero = Json::object({{"form", "plain"}, {"stored", "rows_first"}, {"offset", mid}});
    }
    o.components.push_back(part(**z, "zeros"));
  }
  o.attributes = Json::object({{"bits", a.bits},
                               {"groups", groups},
                               {"group_size", a.group_size.value_or(0)},
                               {"packing", rows_first(1)},
                               {"scales_stored", "rows_first"},
                               {"zero_point", zero}});
  o.attributes["hf.shape_tensor"] =
      Json::object({{"name", t[3]->name},
                    {"dtype", (*shape)->dtype == DType::i64 ? "I64" : "I32"},
                    {"shape", t[3]->shape}});
  return o;
}

// Every `<p>.weight_packed` with its companions becomes `<p>.weight`, where
// the packed weight was; a companion without it is refused.
}  // namespace

Result<void> group_pack_quantized(const std::string& config, const nlohmann::json& qc,
                                  ForeignFile& f) {
  auto args = pack_args(config, qc);
  ZT_TRY(args);
  std::unordered_set<std::string> names;
  for (const ForeignObject& o : f.objects) names.insert(o.name);
  std::unordered_map<std::string, ForeignObject> made;
  for (const auto& [layer, t] : layers_by_suffix(f, kPackQuantizedParts)) {
    ZT_FAIL_IF(!t[0], invalid,
               "%s: compressed-tensors pack-quantized layer \"%s\": has no \"%s.weight_packed\" "
               "(its other tensors have nothing to belong to)",
               config.c_str(), layer.c_str(), layer.c_str());
    ZT_FAIL_IF(names.count(layer + ".weight"), invalid,
               "%s: compressed-tensors pack-quantized layer \"%s\": a tensor \"%s.weight\" is "
               "there too; the layer's object would take its name",
               config.c_str(), layer.c_str(), layer.c_str());
    auto o = pack_quantized_object(config, *args, layer, t);
    ZT_TRY(o);
    made.emplace(layer, std::move(*o));
  }
  place_layers(f, kPackQuantizedParts, made);
  return {};
}

}  // namespace zt::foreign
