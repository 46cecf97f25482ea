#include "foreign/foreign_reader.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "base/dtype.h"
#include "base/zt_limits.h"
#include "cbor/cbor_encode.h"
#include "manifest/manifest.h"

namespace zt::foreign {

namespace {

using ull = unsigned long long;

// Every piece of memory a ForeignFile holds bytes in: its mapping, the
// buffers its reader made, and the same of each shard it holds.
struct Buffer {
  std::span<const uint8_t> bytes;
  std::optional<uint32_t> held;  // absent: the root file's mapping
};

void collect_buffers(const ForeignFile& f, bool root, std::vector<Buffer>& out,
                     uint32_t& held_count) {
  const auto held = [&] { return std::optional<uint32_t>(held_count++); };
  if (f.source.base() && f.source.size() > 0) {
    const std::span<const uint8_t> mapped(f.source.base(), f.source.size());
    // The root mapping is Reader::source_; a shard's is a held buffer.
    out.push_back(Buffer{mapped, root ? std::nullopt : held()});
  }
  for (const std::vector<uint8_t>& v : f.owned)
    if (!v.empty()) out.push_back(Buffer{v, held()});
  for (const ForeignFile& part : f.parts) collect_buffers(part, false, out, held_count);
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
      if (b.held) held.emplace_back(*b.held, Source::from_memory(b.bytes));
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

Result<Component> component_of(const ForeignObject& o, const ForeignComponent& fc,
                               const BufferMap& buffers) {
  Component c;
  c.role = fc.role;
  c.dtype = fc.dtype;
  c.type = fc.type;
  if (c.type) c.known_type = find_logical_type(*c.type);
  c.length = fc.bytes.size();
  if (c.length == 0) return c;
  const Buffer* b = buffers.find(fc.bytes);
  ZT_FAIL_IF(!b, invalid,
             "object \"%s\": component \"%s\": its %llu bytes are in no buffer "
             "the foreign file holds",
             o.name.c_str(), c.role.c_str(), static_cast<ull>(c.length));
  c.offset = static_cast<uint64_t>(fc.bytes.data() - b->bytes.data());
  c.held = b->held;
  return c;
}

Result<Manifest> manifest_of(const ForeignFile& f, const BufferMap& buffers) {
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
    o.part = fo.part;
    auto a = attributes_of(fo.attributes, Limits::cbor_depth - 3, m);
    ZT_TRY(a);
    o.attributes = *a;
    o.components.reserve(fo.components.size());
    for (const ForeignComponent& fc : fo.components) {
      auto c = component_of(fo, fc, buffers);
      ZT_TRY(c);
      o.components.push_back(std::move(*c));
    }
    m.objects.push_back(std::move(o));
  }
  m.by_name.reserve(m.objects.size(), m.objects);
  for (size_t i = 0; i < m.objects.size(); ++i)
    ZT_FAIL_IF(!m.by_name.insert(static_cast<uint32_t>(i), m.objects), invalid,
               "object \"%s\" appears twice", m.objects[i].name.c_str());
  return m;
}

}  // namespace

Result<std::unique_ptr<Reader>> reader_of(ForeignFile file, const OpenOptions& opt) {
  // Moved behind a pointer first: the buffers found below stay where they
  // are for the Reader's life.
  const auto keep = std::make_shared<const ForeignFile>(std::move(file));
  std::vector<Buffer> list;
  uint32_t held_count = 0;
  collect_buffers(*keep, true, list, held_count);
  const BufferMap buffers(std::move(list));
  auto m = manifest_of(*keep, buffers);
  ZT_TRY(m);
  Source root;
  if (keep->source.base())
    root = Source::from_memory(std::span<const uint8_t>(keep->source.base(), keep->source.size()));
  return Reader::open_held(std::move(*m), std::move(root), buffers.held_sources(), keep, opt);
}

Result<std::unique_ptr<Reader>> open_foreign(const std::string& path, const OpenOptions& opt,
                                             const ReadOptions& read_options) {
  auto f = read_foreign(path, read_options);
  ZT_TRY(f);
  return reader_of(std::move(*f), opt);
}

}  // namespace zt::foreign
