#include "codec/decoded_windows.h"

namespace zt {

using ull = unsigned long long;

ZstdDecodedWindows::ZstdDecodedWindows(std::span<const uint8_t> src,
                                       std::optional<uint64_t> expected, uint64_t limit,
                                       std::string where)
    : where_(std::move(where)),
      expected_(expected),
      zstd_(src, expected.value_or(limit), expected ? ZstdLimit::size : ZstdLimit::cap, where_) {}

Result<std::span<const uint8_t>> ZstdDecodedWindows::next() {
  auto w = zstd_.next();
  // Decoding past the size the manifest implies is a broken file, not a
  // limit of this reader.
  if (!w && w.error().status == Status::limit && expected_)
    return make_error(Status::invalid, "%s: zstd data decodes to more than %llu bytes",
                      where_.c_str(), static_cast<ull>(*expected_));
  ZT_TRY(w);
  ZT_FAIL_IF(w->empty() && expected_ && zstd_.delivered() != *expected_, invalid,
             "%s: zstd data decodes to %llu bytes, expected %llu", where_.c_str(),
             static_cast<ull>(zstd_.delivered()), static_cast<ull>(*expected_));
  return *w;
}

Result<std::span<const uint8_t>> PlanesDecodedWindows::next() {
  if (next_ == index_.frames.size()) return std::span<const uint8_t>();
  frame_.resize(index_.frames[next_].decoded);
  ZT_TRY(byte_planes_decode_frame(byte_planes_frame(stored_, index_, next_), index_, next_, frame_,
                                  where_));
  ++next_;
  return std::span<const uint8_t>(frame_);
}

}  // namespace zt
