// Reader::windows: a component's decoded bytes a window at a time
// (verify's bounded memory): mapped raw data at once, raw pieces, zstd
// windows, or byte planes a frame at a time.
#include "codec/decoded_windows.h"

#include <algorithm>
#include <memory>

#include "base/byte_order.h"
#include "codec/byte_planes.h"
#include "read/reader.h"

namespace zt {

DecodedWindows::~DecodedWindows() = default;

// One component a window at a time, so that verify holds one window
// whatever the component decodes to.
Result<std::span<const uint8_t>> DecodedWindows::next() {
  if (decoded_) return decoded_->next();
  if (!mapped_.empty() || (c_->length == 0 && c_->encoding == Encoding::raw)) {
    if (mapped_done_) return std::span<const uint8_t>();
    mapped_done_ = true;
    return mapped_;
  }
  // Raw data that is not mapped (copy mode, legacy big-endian).
  constexpr uint64_t kPiece = uint64_t{1} << 20;  // a multiple of every element width
  const uint64_t n = std::min(kPiece, c_->length - raw_at_);
  if (n == 0) return std::span<const uint8_t>();
  buffer_.resize(n);
  ZT_TRY(source_->read_into(c_->offset + raw_at_, buffer_));
  raw_at_ += n;
  if (c_->big_endian) swap_elements(buffer_, c_->width());
  return std::span<const uint8_t>(buffer_);
}

Result<std::unique_ptr<DecodedWindows>> Reader::windows(size_t object, size_t component) const {
  ZT_FAIL_IF(object >= manifest_.objects.size(), not_found, "object index %zu is out of range",
             object);
  const Object& o = manifest_.objects[object];
  ZT_FAIL_IF(component >= o.components.size(), not_found, "component index %zu is out of range",
             component);
  ZT_FAIL_IF(!o.unsupported.empty(), unsupported, "%s", o.unsupported.c_str());
  const Component& c = o.components[component];
  auto file = source_of(c);
  ZT_TRY(file);
  auto w = std::make_unique<DecodedWindows>();
  w->source_ = *file;
  w->c_ = &c;
  w->where_ = component_where(o, c);
  const auto in_place = mapped_in_place(c);  // the file is open: no failure left
  ZT_TRY(in_place);
  if (*in_place) {
    w->mapped_ = mapped_bytes(**file, c);
    return w;
  }
  ZT_FAIL_IF(c.encoding == Encoding::unknown, unsupported, "%s: unsupported encoding \"%s\"",
             w->where_.c_str(), c.encoding_text.value_or("").c_str());
  if (c.encoding == Encoding::byte_planes) {
    // The decode cap, as for zstd below and for every other way of reading
    // the component (dlpack and verify read byte planes through here).
    auto n = decoded_length_for(o, c);
    if (!n && n.error().status != Status::not_found) return std::move(n).error();
    auto src = stored(o, c, w->buffer_);
    ZT_TRY(src);
    auto index = byte_planes_index(*src, c.uncompressed_length.value_or(0), w->where_);
    ZT_TRY(index);
    w->decoded_ = std::make_unique<PlanesDecodedWindows>(*src, std::move(*index), w->where_);
    return w;
  }
  if (c.encoding != Encoding::zstd) return w;
  auto n = decoded_length_for(o, c);
  if (!n && n.error().status != Status::not_found) return std::move(n).error();
  std::vector<ZstdFrame> table;
  auto src = stored(o, c, w->buffer_, &table);
  ZT_TRY(src);
  auto zstd = std::make_unique<ZstdDecodedWindows>(
      *src, n ? std::optional<uint64_t>(*n) : std::nullopt, max_decoded_, w->where_);
  if (c.encoding_id) {
    std::vector<uint64_t> contents;
    for (const ZstdFrame& f : table) contents.push_back(f.content_size);
    zstd->expect_frames(std::move(contents));
  }
  w->decoded_ = std::move(zstd);
  return w;
}

}  // namespace zt
