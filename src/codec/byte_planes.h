// Byte planes: floating-point weights smaller than zstd alone makes them
// (issue #46). Each element's bytes are split into planes (all first
// bytes, then all second bytes, ...), for float types after the sign bit
// is rotated beside the mantissa so that one plane holds exponent bits
// only; each plane of each frame is then zstd-coded with parameters that
// suit plane statistics (fast strategy, matches of 7 bytes or more: an
// exponent plane is mostly literals, which zstd's Huffman coder takes to
// about its entropy), or stored where coding does not pay (the mantissa
// planes). Frames of a bounded decoded size decode independently, so a
// component decodes on every core and a range touches only its frames.
//
// The stream (all integers little-endian), for decoded length L:
//
//   frame 0 planes, frame 1 planes, ...    each plane: a zstd frame or stored bytes
//   index: for each frame, for each plane: u32 size_and_kind
//          (bit 31 set: a zstd frame of that many bytes; clear: stored),
//          then u32 checksum (low 32 bits of XXH3-64 of the frame's
//          decoded bytes)
//   footer (16 bytes): u32 frame_count, u32 frame_bytes, u8 width,
//          u8 transform, u16 0, u32 magic "ZTBP"
//
// Frame k decodes to min(frame_bytes, L - k x frame_bytes) bytes;
// frame_bytes is a multiple of width, and frame_count = ceil(L / frame_bytes)
// (0 for L = 0). A frame of n bytes has n / width elements (n is a multiple
// of width); plane j holds byte j of each element, after the transform
// (0: none; 1: each element, read as a little-endian integer of `width`
// bytes, rotated left by one bit, which moves an IEEE float's sign bit to
// bit 0). docs/profiles/libztensor.byte_planes-1.md is the profile's text.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace zt {

// How a stream is cut and transformed.
struct PlanesLayout {
  uint8_t width = 2;                // bytes an element: 1, 2, 4 or 8
  bool rotate_sign = true;          // transform 1
  uint32_t frame_bytes = 1u << 20;  // decoded bytes a frame but the last; a multiple of width
};

// One frame of a checked stream: where its planes are and what it decodes to.
struct PlanesFrame {
  uint64_t offset = 0;   // of its first plane in the stream
  uint64_t stored = 0;   // bytes of its planes, which follow one another
  uint64_t decoded = 0;  // bytes
  uint32_t checksum = 0;
  std::vector<uint32_t> sizes;  // stored bytes of each plane
  std::vector<bool> coded;      // whether each plane is a zstd frame
};

struct PlanesIndex {
  PlanesLayout layout;
  std::vector<PlanesFrame> frames;
};

// The encoding id of v2 parts stored this way (a vendor profile: the spec
// reserves "zt." for the registry).
inline constexpr std::string_view kBytePlanesEncodingId = "libztensor.byte_planes/1";

// Whether `l` is a layout (width 1, 2, 4 or 8; whole elements a frame, at
// most 2^30 bytes; the sign rotation only for widths above 1).
bool byte_planes_layout_ok(const PlanesLayout& l);

// Writes a stream a frame at a time: frame() for each frame of exactly
// layout.frame_bytes bytes (the last may be shorter, whole elements), then
// finish() for the index and footer. The caller checks the layout first.
class PlanesEncoder {
 public:
  PlanesEncoder(const PlanesLayout& layout, int level);
  ~PlanesEncoder();
  PlanesEncoder(PlanesEncoder&&) noexcept;
  PlanesEncoder& operator=(PlanesEncoder&&) noexcept;
  // Appends the frame's planes to `out`.
  Result<void> frame(std::span<const uint8_t> bytes, std::vector<uint8_t>& out);
  // Takes a frame byte_planes_encode_frame made elsewhere (on another
  // thread) as the next one: its index entries join the index, and its
  // planes, the bytes to write, are returned (a view into `encoded`).
  Result<std::span<const uint8_t>> adopt_frame(std::span<const uint8_t> encoded);
  // Appends the index and the footer.
  void finish(std::vector<uint8_t>& out) const;
  const PlanesLayout& layout() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// Encodes one frame on its own, for encoders that run frames in parallel:
// appends its planes, then its index entries (layout.width plane sizes and
// the checksum, u32 little-endian each) for PlanesEncoder::adopt_frame. Any
// thread may call it (each keeps one zstd context).
Result<void> byte_planes_encode_frame(std::span<const uint8_t> bytes, const PlanesLayout& layout,
                                      int level, std::vector<uint8_t>& out);

// Encodes `src` (whole elements of layout.width bytes) at zstd `level`
// (its parameters are the plane coder's: see above) and appends the stream
// to `out`. Status::argument for a layout that is not one (width, frame
// size) or a length that is not whole elements.
Result<void> byte_planes_encode(std::span<const uint8_t> src, const PlanesLayout& layout, int level,
                                std::vector<uint8_t>& out);

// Checks `stored` against the profile for a decoded length of
// `decoded_length` without decoding anything: footer, layout, frame count,
// plane sizes adding up to the bytes before the index, each zstd plane's
// declared content size that of its plane. Status::invalid naming `where`
// and the rule.
Result<PlanesIndex> byte_planes_index(std::span<const uint8_t> stored, uint64_t decoded_length,
                                      const std::string& where);

// Bytes of the footer that ends every stream.
constexpr uint64_t kBytePlanesFooterBytes = 16;

// The same checks in three steps, for a stream that is not in memory (copy
// mode, a remote source), so that a range fetches only the frames that
// hold it: the bytes the index and footer take at the end of a stream of
// `stored_length` bytes, from its last 16; the index from those bytes
// (every rule but the zstd planes' headers); then each frame's planes, on
// that frame's bytes alone, before it is decoded.
Result<uint64_t> byte_planes_tail_bytes(std::span<const uint8_t> footer, uint64_t stored_length,
                                        uint64_t decoded_length, const std::string& where);
Result<PlanesIndex> byte_planes_index_from_tail(std::span<const uint8_t> tail,
                                                uint64_t stored_length, uint64_t decoded_length,
                                                const std::string& where);
Result<void> byte_planes_check_frame(std::span<const uint8_t> frame, const PlanesIndex& index,
                                     size_t k, const std::string& where);

// Frame k's planes within the whole stream.
inline std::span<const uint8_t> byte_planes_frame(std::span<const uint8_t> stored,
                                                  const PlanesIndex& index, size_t k) {
  return stored.subspan(index.frames[k].offset, index.frames[k].stored);
}

// Decodes frame `k` of a checked stream from its planes (`frame`:
// index.frames[k].stored bytes) into exactly index.frames[k].decoded
// bytes, its checksum checked.
Result<void> byte_planes_decode_frame(std::span<const uint8_t> frame, const PlanesIndex& index,
                                      size_t k, std::span<uint8_t> dst, const std::string& where);

// Checks and decodes a whole stream into dst (dst.size() is the decoded
// length), frames shared out over up to `threads` threads (0: all cores).
Result<void> byte_planes_decode(std::span<const uint8_t> stored, std::span<uint8_t> dst,
                                const std::string& where, unsigned threads = 0);

}  // namespace zt
