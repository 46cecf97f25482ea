#include "foreign/foreign_reader.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "base/dtype.h"
#include "base/zt_limits.h"
#include "cbor/cbor_encode.h"
#include "foreign/hf_index.h"
#include "foreign/hf_quantized.h"
#include "foreign/safetensors.h"
#include "foreign/zip_archive.h"
#include "manifest/manifest.h"
#include "manifest/object_format.h"
#include "source/http_source.h"

namespace zt::foreign {

namespace {

using ull = unsigned long long;

// Every piece of memory a ForeignFile holds bytes in: its mapping, the
// buffers its reader made, and the same of each shard it holds.
struct Buffer {
  std::span<const uint8_t> bytes;
  std::optional<uint32_t> held;  // absent: the root file's mapping
  const Source* file = nullptr;  // the file it maps; nullptr: memory a reader made
};

void collect_buffers(const ForeignFile& f, bool root, std::vector<Buffer>& out,
                     uint32_t& held_count) {
  const auto held = [&] { return std::optional<uint32_t>(held_count++); };
  if (f.source.base() && f.source.size() > 0) {
    const std::span<const uint8_t> mapped(f.source.base(), f.source.size());
    // The root mapping is Reader::source_; a shard's is a held buffer.
    out.push_back(Buffer{mapped, root ? std::nullopt : held(), &f.source});
  }
  for (const std::vector<uint8_t>& v : f.owned)
    if (!v.empty()) out.push_back(Buffer{v, held()});
  for (const ForeignFile& part : f.input_files) collect_buffers(part, false, out, held_count);
}

// The files a foreign model reads beyond its root (a sharded checkpoint's
// shards, ONNX external data), each counted once by its mapping.
OtherFiles files_beyond_root(const ForeignFile& f) {
  OtherFiles out;
  for (const ForeignFile& part : f.input_files) {
    if (part.source.base()) {
      ++out.count;
      out.bytes += part.source.size();
    }
    const OtherFiles below = files_beyond_root(part);
    out.count += below.count;
    out.bytes += below.bytes;
  }
  return out;
}

// Finds the buffer holding each component's bytes by address: buffers
// sorted by their first byte, never overlapping (distinct allocations).
class BufferMap {
 public:
  explicit BufferMap(std::vector<Buffer> buffers) : buffers_(std::move(buffers)) {
    std::sort(buffers_.begin(), buffers_.end(), [](const Buffer& a, const Buffer& b) {
      return std::less<>()(a.bytes.data(), b.bytes.data());
    });
  }

  // The buffer that contains `bytes` whole, or nullptr.
  const Buffer* find(std::span<const uint8_t> bytes) const {
    const auto after = std::upper_bound(
        buffers_.begin(), buffers_.end(), bytes.data(),
        [](const uint8_t* p, const Buffer& b) { return std::less<>()(p, b.bytes.data()); });
    if (after == buffers_.begin()) return nullptr;
    const Buffer& b = *std::prev(after);
    const auto at = reinterpret_cast<uintptr_t>(bytes.data());
    const auto begin = reinterpret_cast<uintptr_t>(b.bytes.data());
    if (at - begin > b.bytes.size() || bytes.size() > b.bytes.size() - (at - begin)) return nullptr;
    return &b;
  }

  std::vector<Source> held_sources() const {
    std::vector<std::pair<uint32_t, Source>> held;
    for (const Buffer& b : buffers_)
      if (b.held)
        held.emplace_back(*b.held,
                          b.file ? Source::view_of(*b.file) : Source::from_memory(b.bytes));
    std::sort(held.begin(), held.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<Source> out;
    out.reserve(held.size());
    for (auto& [index, source] : held) out.push_back(std::move(source));
    return out;
  }

 private:
  std::vector<Buffer> buffers_;
};

// As the writer would store them (writer.cpp: the same depth limit), so
// that what a held model shows is what a conversion writes.
Result<Attributes> attributes_of(const Json& attributes, size_t max_depth, Manifest& m) {
  if (!attributes.is_object() || attributes.empty()) return Attributes{};
  auto cbor = json_value_to_cbor(attributes);
  ZT_TRY(cbor);
  ZT_TRY(check_attribute_map(*cbor, max_depth));
  m.made.push_back(std::move(*cbor));
  return Attributes{true, m.made.back()};
}

// The remote files components lie in, each a held source after the
// buffers' (held index = first + position).
struct RemoteSources {
  uint32_t first = 0;
  std::vector<std::shared_ptr<const RangeCache>> caches;

  uint32_t index_of(const std::shared_ptr<const RangeCache>& cache) {
    for (size_t i = 0; i < caches.size(); ++i)
      if (caches[i] == cache) return first + static_cast<uint32_t>(i);
    caches.push_back(cache);
    return first + static_cast<uint32_t>(caches.size() - 1);
  }
};

Result<Component> component_of(const ForeignObject& o, const ForeignComponent& fc,
                               const BufferMap& buffers, RemoteSources& remote) {
  Component c;
  c.role = fc.role;
  c.dtype = fc.dtype;
  c.type = fc.type;
  // Foreign files are read in v2's vocabulary of types: a safetensors F4
  // tensor is f4_e2m1 (two values a byte), which 1.2 does not register.
  if (c.type) c.known_type = find_logical_type(*c.type, true);
  if (fc.remote) {
    c.offset = fc.remote->offset;
    c.length = fc.remote->length;
    c.held = remote.index_of(fc.remote->source);
    return c;
  }
  c.length = fc.bytes.size();
  if (c.length == 0) return c;
  const Buffer* b = buffers.find(fc.bytes);
  ZT_FAIL_IF(!b, invalid,
             "object \"%s\": component \"%s\": its %llu bytes are in no buffer "
             "the foreign file holds",
             o.name.c_str(), c.role.c_str(), static_cast<ull>(c.length));
  c.offset = static_cast<uint64_t>(fc.bytes.data() - b->bytes.data());
  c.held = b->held;
  c.crc_check = fc.crc_check;
  return c;
}

Result<Manifest> manifest_of(const ForeignFile& f, const BufferMap& buffers,
                             RemoteSources& remote) {
  Manifest m;
  m.generation = Generation::v1;
  const ForeignFormat* format = foreign_format(f.kind);
  m.foreign = std::string(format ? format->id : kind_name(f.kind));
  auto file_attributes = attributes_of(f.attributes, Limits::cbor_depth - 1, m);
  ZT_TRY(file_attributes);
  m.attributes = *file_attributes;
  m.objects.reserve(f.objects.size());
  for (const ForeignObject& fo : f.objects) {
    Object o;
    o.name = fo.name;
    o.shape = fo.shape;
    o.format = fo.format;
    if (is_v2_profile_id(fo.format)) {
      // A v2 layout (a quantized checkpoint's layer as zt.mx/1): known by
      // its id as in a v2 file, shown by its 1.2 name where one exists.
      o.layout = fo.format;
      o.format = presented_format(o.layout);
    }
    o.input_file = fo.input_file;
    auto a = attributes_of(fo.attributes, Limits::cbor_depth - 3, m);
    ZT_TRY(a);
    o.attributes = *a;
    o.components.reserve(fo.components.size());
    for (const ForeignComponent& fc : fo.components) {
      auto c = component_of(fo, fc, buffers, remote);
      ZT_TRY(c);
      o.components.push_back(std::move(*c));
    }
    m.objects.push_back(std::move(o));
  }
  m.by_name.reserve(m.objects.size());
  for (size_t i = 0; i < m.objects.size(); ++i)
    ZT_FAIL_IF(!m.by_name.insert(static_cast<uint32_t>(i), m.objects), invalid,
               "object \"%s\" appears twice", m.objects[i].name.c_str());
  return m;
}

}  // namespace

Result<std::unique_ptr<Reader>> reader_of(ForeignFile file, const OpenOptions& opt) {
  // Moved behind a pointer first: the buffers found below stay where they
  // are for the Reader's life.
  const auto owned = std::make_shared<ForeignFile>(std::move(file));
  std::vector<Buffer> list;
  uint32_t held_count = 0;
  collect_buffers(*owned, true, list, held_count);
  const BufferMap buffers(std::move(list));
  RemoteSources remote{held_count, {}};
  auto m = manifest_of(*owned, buffers, remote);
  ZT_TRY(m);
  // The manifest holds the attributes encoded: the JSON they came from
  // (16 bytes a value: a tokenizer's arrays) is not kept for the reader's life.
  owned->release_attributes();
  const std::shared_ptr<const ForeignFile> keep = owned;
  Source root;
  if (keep->source.base()) root = Source::view_of(keep->source);
  std::vector<Source> held = buffers.held_sources();
  for (const auto& cache : remote.caches) held.push_back(Source::from_ranges(cache));
  // The zip members' CRC-32s, checked at the first read of their bytes
  // (their spans stay in the mappings `keep` holds).
  std::vector<std::function<Result<void>()>> checks;
  checks.reserve(keep->crc_checks.size());
  for (const PendingCrc& p : keep->crc_checks)
    checks.emplace_back([&p] { return check_member_crc(p.bytes, p.crc, p.where); });
  return Reader::open_held(std::move(*m), std::move(root), std::move(held), keep, opt,
                           files_beyond_root(*keep), std::move(checks));
}

Result<std::unique_ptr<Reader>> open_foreign(const std::string& path, const OpenOptions& opt,
                                             const ReadOptions& read_options) {
  ReadOptions ro = read_options;
  if (!ro.max_decoded_bytes) ro.max_decoded_bytes = opt.max_decoded_bytes;
  auto f = read_foreign(path, ro);
  ZT_TRY(f);
  return reader_of(std::move(*f), opt);
}

Result<std::unique_ptr<Reader>> open_foreign_url(const std::string& url, const OpenOptions& opt) {
  const std::string shown = url_for_messages(url);
  const FileKind k = kind_from_path(shown);
  ZT_FAIL_IF(k != FileKind::safetensors && k != FileKind::hf_index, unsupported,
             "%s: a %s file is read from a local copy (its reader needs the whole file); over "
             "HTTP, .zt, .safetensors and sharded safetensors checkpoints (.index.json) are read",
             shown.c_str(), std::string(kind_name(k)).c_str());
  if (k == FileKind::hf_index) {
    // The whole index comes with the open's request (one over the limit
    // is refused by its size).
    OpenWindow whole{Limits::hf_index_bytes + 1};
    whole.max_size = Limits::hf_index_bytes;  // refused at its headers, not after 100 MB
    auto opened = open_http(url, opt.http, whole);
    ZT_TRY(opened);
    auto f = read_hf_index_remote(*opened->source, opened->bytes, opt.cache_bytes);
    ZT_TRY(f);
    ZT_TRY(group_quantized_layers_remote(*opened->source, *f));
    ZT_TRY(check_writable(shown, *f));  // as a local file's names are held
    return reader_of(std::move(*f), opt);
  }
  // The header comes with the open's request (its first 64 KiB).
  auto opened = open_http(url, opt.http, {kSafetensorsOpenBytes, OpenWindow::End::head});
  ZT_TRY(opened);
  const std::shared_ptr<const RangeSource> model = opened->source;
  auto f = read_safetensors_remote(RangeCache::of(std::move(*opened), opt.cache_bytes));
  ZT_TRY(f);
  ZT_TRY(group_quantized_layers_remote(*model, *f));
  ZT_TRY(check_writable(shown, *f));
  return reader_of(std::move(*f), opt);
}

}  // namespace zt::foreign
