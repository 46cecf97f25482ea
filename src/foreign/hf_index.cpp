#include "foreign/hf_index.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>

#include "base/json_text.h"
#include "base/zt_limits.h"
#include "cbor/cbor_encode.h"
#include "foreign/safetensors.h"
#include "source/io.h"
#include "source/model_folder.h"

namespace zt::foreign {

bool plain_file_name(std::string_view s) {
  return !s.empty() && s.size() <= 255 &&
         s.find_first_of(std::string_view("/\\\0", 3)) == std::string_view::npos &&
         s.front() != '.';
}

namespace {

using ull = unsigned long long;

Result<void> check_index_size(const char* p, uint64_t size) {
  ZT_FAIL_IF(size > Limits::hf_index_bytes, limit, "%s: %llu bytes, more than the limit of %llu", p,
             static_cast<ull>(size), static_cast<ull>(Limits::hf_index_bytes));
  return {};
}

// The index's JSON, parsed with bounded nesting; duplicate tensor names in
// the weight map would shadow each other and are refused.
Result<nlohmann::json> parse_index_text(const char* p, std::string_view text) {
  ZT_TRY(check_index_size(p, text.size()));
  const size_t depth = json_nesting_depth(text);
  ZT_FAIL_IF(depth > 16, invalid, "%s: the index nests %zu levels deep", p, depth);
  // A key given twice in one object (a tensor of the weight_map, a second
  // "weight_map") would silently replace the other.
  JsonTextFaults faults;
  nlohmann::json j = parse_json_checking_keys<nlohmann::json>(text, faults);
  ZT_FAIL_IF(j.is_discarded(), format, "%s: not valid JSON", p);
  ZT_FAIL_IF(faults.repeated, invalid, "%s: \"%s\" appears twice", p,
             printable(std::string_view(faults.repeated->key).substr(0, 200)).c_str());
  ZT_TRY(refuse_wide_integer(p, faults));
  ZT_FAIL_IF(!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object(), format,
             "%s: not a sharded checkpoint index (no \"weight_map\" object)", p);
  return j;
}

// The index file's text and its parsed JSON.
struct IndexFile {
  std::string text;
  nlohmann::json json;
};

// The index file's text, its size checked before it is read.
Result<std::string> index_text(const std::string& path) {
  auto src = Source::open_file(path, Source::Mode::map);
  ZT_TRY(src);
  ZT_TRY(check_index_size(path.c_str(), src->size()));
  std::vector<uint8_t> scratch;
  auto bytes = src->bytes(0, src->size(), scratch);
  ZT_TRY(bytes);
  return std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

Result<IndexFile> parse_index(const std::string& path) {
  auto text = index_text(path);
  ZT_TRY(text);
  IndexFile f;
  f.text = std::move(*text);
  auto j = parse_index_text(path.c_str(), f.text);
  ZT_TRY(j);
  f.json = std::move(*j);
  return f;
}

// Shard metadata agreed by every shard; a key two shards set differently
// cannot be one file attribute.
// (Json keeps its keys in order, so a lookup by key walks them all: the
// keys already there are indexed once, so that many keys stay linear.)
Result<void> merge_attributes(const std::string& shard, const Json& from, Json& into) {
  if (!into.is_object()) into = Json::object();
  auto& entries = into.get_ref<Json::object_t&>();
  std::unordered_map<std::string, size_t> at;
  at.reserve(entries.size());
  for (auto it = entries.begin(); it != entries.end(); ++it)
    at.emplace(it->first, static_cast<size_t>(it - entries.begin()));
  for (const auto& [k, v] : from.items()) {
    if (const auto it = at.find(k); it != at.end()) {
      ZT_FAIL_IF((entries.begin() + static_cast<std::ptrdiff_t>(it->second))->second != v, invalid,
                 "%s: metadata \"%s\" differs from an earlier shard's: one file cannot keep both",
                 shard.c_str(), printable(std::string_view(k).substr(0, 200)).c_str());
      continue;
    }
    at.emplace(k, entries.size());
    entries.emplace_back(k, v);
  }
  return {};
}

}  // namespace

bool is_hf_index(std::string_view path) {
  constexpr std::string_view kSuffix = ".index.json";
  return path.size() > kSuffix.size() && path.substr(path.size() - kSuffix.size()) == kSuffix;
}

namespace {

// The model of a parsed index, each shard read by `read_shard` (by its
// name beside the index); a remote index takes safetensors shards only.
Result<ForeignFile> model_of_index(
    const char* p, std::string_view text, const nlohmann::json& index, bool remote,
    const std::function<Result<ForeignFile>(const std::string&)>& read_shard) {
  // tensor -> shard, and the shards in name order.
  std::unordered_map<std::string, std::string> shard_of;
  std::set<std::string> shards;
  for (const auto& [tensor, file] : index["weight_map"].items()) {
    ZT_FAIL_IF(!file.is_string(), format, "%s: weight_map[\"%s\"] is not a file name", p,
               tensor.c_str());
    const std::string shard = file.get<std::string>();
    ZT_FAIL_IF(!plain_file_name(shard), invalid,
               "%s: shard \"%s\" (of \"%s\") is not a plain file name beside the index", p,
               shard.substr(0, 300).c_str(), tensor.c_str());
    const FileKind k = kind_from_path(shard);
    ZT_FAIL_IF(k != FileKind::safetensors && k != FileKind::pytorch, unsupported,
               "%s: shard \"%s\" is neither .safetensors nor a PyTorch file", p, shard.c_str());
    ZT_FAIL_IF(remote && k != FileKind::safetensors, unsupported,
               "%s: shard \"%s\" is a PyTorch file, read from a local copy (over HTTP, "
               "safetensors shards are read)",
               p, shard.c_str());
    shard_of.emplace(tensor, shard);
    shards.insert(shard);
  }
  ForeignFile f;
  f.kind = FileKind::hf_index;
  std::unordered_map<std::string, std::string> found;  // tensor -> shard it is in
  for (const std::string& shard : shards) {
    auto part = read_shard(shard);
    ZT_TRY(part);
    // A shard's pending CRC checks join the model's (their bytes stay in
    // the shard's mapping, which moves with it).
    const auto checks_base = static_cast<uint32_t>(f.crc_checks.size());
    for (PendingCrc& check : part->crc_checks) f.crc_checks.push_back(std::move(check));
    part->crc_checks.clear();
    for (ForeignObject& o : part->objects) {
      for (ForeignComponent& c : o.components)
        if (c.crc_check) *c.crc_check += checks_base;
      const auto it = shard_of.find(o.name);
      ZT_FAIL_IF(it == shard_of.end(), invalid,
                 "%s: tensor \"%s\" is in shard %s but not in the index's weight_map", p,
                 o.name.c_str(), shard.c_str());
      ZT_FAIL_IF(it->second != shard, invalid,
                 "%s: tensor \"%s\" is in shard %s, the index says %s", p, o.name.c_str(),
                 shard.c_str(), it->second.c_str());
      ZT_FAIL_IF(!found.emplace(o.name, shard).second, invalid,
                 "%s: tensor \"%s\" appears twice in shard %s", p, o.name.c_str(), shard.c_str());
      o.input_file = static_cast<uint32_t>(f.input_files.size());
      f.objects.push_back(std::move(o));
    }
    ZT_TRY(merge_attributes(shard, part->attributes, f.attributes));
    part->objects.clear();
    f.input_files.push_back(std::move(*part));
  }
  for (const auto& [tensor, shard] : shard_of)
    ZT_FAIL_IF(!found.contains(tensor), invalid,
               "%s: tensor \"%s\" of the weight_map is not in shard %s", p, tensor.c_str(),
               shard.c_str());
  if (index.contains("metadata")) {
    ZT_FAIL_IF(f.attributes.contains("hf.index.metadata"), invalid,
               "%s: a shard's metadata already holds \"hf.index.metadata\"", p);
    f.attributes["hf.index.metadata"] = Json::parse(index["metadata"].dump());
  }
  // The index's own text, for the way back (zt convert --hf): which shard
  // each tensor goes into, and the file itself byte for byte.
  ZT_FAIL_IF(f.attributes.contains(kHfIndexAttribute), invalid,
             "%s: a shard's metadata already holds \"%s\"", p, kHfIndexAttribute.data());
  f.attributes[std::string(kHfIndexAttribute)] = std::string(text);
  return f;
}

}  // namespace

Result<ForeignFile> read_hf_index(const std::string& path, const ReadOptions& options) {
  auto index = parse_index(path);
  ZT_TRY(index);
  return model_of_index(path.c_str(), index->text, index->json, false,
                        [&](const std::string& shard) -> Result<ForeignFile> {
                          auto real = resolve_beside_model(path, shard, "shard");
                          ZT_TRY(real);
                          ReadOptions shard_options = options;
                          shard_options.group_quantized = false;  // the index groups the model
                          // Read as the kind its name says (checked: safetensors or
                          // PyTorch), whatever its link leads to; every open of its
                          // reader follows no link put in its real path since.
                          const LinksRefused as_checked;
                          auto part = read_foreign_as(*real, kind_from_path(shard), shard_options);
                          if (!part && real->find(shard) == std::string::npos) {
                            // Named as the index names it: a link's target alone
                            // would not say which shard failed.
                            Error e = std::move(part).error();
                            e.message = "shard \"" + shard + "\": " + e.message;
                            return e;
                          }
                          return part;
                        });
}

Result<ForeignFile> read_hf_index_remote(const RangeSource& index_source,
                                         std::span<const uint8_t> index_bytes,
                                         uint64_t cache_bytes) {
  const std::string& name = index_source.name();
  // The open asked for more than the limit: a file within it came whole.
  ZT_TRY(check_index_size(name.c_str(), index_source.size()));
  const std::string_view text(reinterpret_cast<const char*>(index_bytes.data()),
                              index_bytes.size());
  auto index = parse_index_text(name.c_str(), text);
  ZT_TRY(index);
  // One budget for the shards' caches: cache_bytes bounds the model.
  const auto budget = std::make_shared<const CacheBudget>(cache_bytes);
  return model_of_index(
      name.c_str(), text, *index, true, [&](const std::string& shard) -> Result<ForeignFile> {
        auto opened = index_source.sibling(shard, {kSafetensorsOpenBytes, OpenWindow::End::head});
        ZT_TRY(opened);
        return read_safetensors_remote(RangeCache::of(std::move(*opened), budget));
      });
}

Result<std::unordered_map<std::string, std::string>> safetensors_shards_of_index(
    const char* where, std::string_view text) {
  auto index = parse_index_text(where, text);
  ZT_TRY(index);
  std::unordered_map<std::string, std::string> shard_of;
  for (const auto& [tensor, file] : (*index)["weight_map"].items()) {
    ZT_FAIL_IF(!file.is_string(), format, "%s: weight_map[\"%s\"] is not a file name", where,
               tensor.c_str());
    std::string shard = file.get<std::string>();
    ZT_FAIL_IF(!plain_file_name(shard) || kind_from_path(shard) != FileKind::safetensors, invalid,
               "%s: shard \"%s\" (of \"%s\") is not a plain .safetensors file name", where,
               shard.substr(0, 300).c_str(), tensor.c_str());
    shard_of.emplace(tensor, std::move(shard));
  }
  return shard_of;
}

Result<std::unordered_map<std::string, std::string>> safetensors_shards_of_index_file(
    const std::string& path) {
  auto text = index_text(path);
  ZT_TRY(text);
  return safetensors_shards_of_index(path.c_str(), *text);
}

}  // namespace zt::foreign
