// Reader::windows: a component's decoded bytes a window at a time
// (verify's bounded memory): mapped raw data at once, raw pieces, zstd
// windows, or byte planes a frame at a time.
#include <algorithm>
#include <memory>

#include "base/byte_order.h"
#include "codec/byte_planes.h"
#include "codec/zstd_codec.h"
#include "read/reader.h"

namespace zt {

using ull = unsigned long long;

// One component of an object whose content rules need no whole component:
// decodes it (when it must be decoded) a window at a time, checking its size
// and bool bytes, so verify holds one window whatever the component decodes
// to.
struct DecodedWindows::Planes {
  std::span<const uint8_t> stored;  // views the mapping or buffer_
  PlanesIndex index;
  size_t next = 0;
  std::vector<uint8_t> frame;
};

DecodedWindows::~DecodedWindows() = default;

Result<std::span<const uint8_t>> DecodedWindows::next() {
  if (planes_) {
    Planes& p = *planes_;
    if (p.next == p.index.frames.size()) return std::span<const uint8_t>();
    p.frame.resize(p.index.frames[p.next].decoded);
    ZT_TRY(byte_planes_decode_frame(byte_planes_frame(p.stored, p.index, p.next), p.index, p.next,
                                    p.frame, where_));
    ++p.next;
    return std::span<const uint8_t>(p.frame);
  }
  if (!mapped_.empty() || (c_->length == 0 && c_->encoding == Encoding::raw)) {
    if (mapped_done_) return std::span<const uint8_t>();
    mapped_done_ = true;
    return mapped_;
  }
  if (!zstd_) {
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
  auto w = zstd_->next();
  // Decoding past the size the manifest implies is a broken file, not a
  // limit of this reader.
  if (!w && w.error().status == Status::limit && expected_)
    return make_error(Status::invalid, "%s: zstd data decodes to more than %llu bytes",
                      where_.c_str(), static_cast<ull>(*expected_));
  ZT_TRY(w);
  ZT_FAIL_IF(w->empty() && expected_ && zstd_->delivered() != *expected_, invalid,
             "%s: zstd data decodes to %llu bytes, expected %llu", where_.c_str(),
             static_cast<ull>(zstd_->delivered()), static_cast<ull>(*expected_));
  return *w;
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
    auto planes = std::make_unique<DecodedWindows::Planes>();
    auto src = stored(o, c, w->buffer_);
    ZT_TRY(src);
    planes->stored = *src;
    auto index = byte_planes_index(*src, c.uncompressed_length.value_or(0), w->where_);
    ZT_TRY(index);
    planes->index = std::move(*index);
    w->planes_ = std::move(planes);
    return w;
  }
  if (c.encoding != Encoding::zstd) return w;
  auto n = decoded_length_for(o, c);
  if (!n && n.error().status != Status::not_found) return std::move(n).error();
  if (n) w->expected_ = *n;
  std::vector<ZstdFrame> table;
  auto src = stored(o, c, w->buffer_, &table);
  ZT_TRY(src);
  w->zstd_ = std::make_unique<ZstdWindows>(*src, n ? *n : max_decoded_, w->where_);
  if (c.encoding_id) {
    std::vector<uint64_t> contents;
    for (const ZstdFrame& f : table) contents.push_back(f.content_size);
    w->zstd_->expect_frames(std::move(contents));
  }
  return w;
}

}  // namespace zt
