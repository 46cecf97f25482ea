// zstd through libzstd: exact-size decoding that trusts no frame header,
// a frame index for parallel and partial decoding, and frame encoding.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/growing_bytes.h"

namespace zt {

// Decodes every frame of `src` into exactly dst.size() bytes. Output that
// would be longer or shorter, corrupt or truncated frames: Status::invalid,
// with `where` (object and component) in the message.
Result<void> zstd_decode_exact(std::span<const uint8_t> src, std::span<uint8_t> dst,
                               const std::string& where);

// One zstd frame of a component: where it is and how much it decodes to.
struct ZstdFrame {
  uint64_t src_offset = 0;
  uint64_t src_size = 0;
  uint64_t content_size = 0;  // from the frame header
};

// What a decode's limit is: the size its bytes are stated to decode to (a
// frame's window may be as large: a stream allocates it), or only a cap on
// a size nothing states (windows up to 128 MiB stream; a frame asking for
// more is decoded whole, held as what it decodes to).
enum class ZstdLimit { size, cap };

// Decoded bytes of `src` (one or more frames) pulled a window at a time:
// next() returns the next window (valid until the following call), empty
// at the end. At most `limit` bytes in all (Status::limit beyond). Owns its
// decoder, so several can be read side by side (diff reads two). Memory:
// one window (ZSTD_DStreamOutSize(), 128 KiB) and the decoder, whatever the
// data decodes to; a frame whose window the stream refuses (see ZstdLimit)
// is held whole, as what it decodes to.
class ZstdWindows {
 public:
  ZstdWindows(std::span<const uint8_t> src, uint64_t limit, ZstdLimit kind, std::string where);
  ~ZstdWindows();
  ZstdWindows(const ZstdWindows&) = delete;
  ZstdWindows& operator=(const ZstdWindows&) = delete;

  Result<std::span<const uint8_t>> next();
  uint64_t delivered() const { return total_; }
  // Each frame must decode to the matching size (a seek table's entries),
  // checked as each frame ends; frames after the last listed one (the seek
  // table, a skippable frame) must decode to nothing.
  void expect_frames(std::vector<uint64_t> contents) { expected_ = std::move(contents); }

 private:
  struct Decoder;
  std::unique_ptr<Decoder> d_;
  std::span<const uint8_t> src_;
  size_t in_pos_ = 0;
  uint64_t limit_;
  std::string where_;
  std::vector<uint8_t> window_;
  // A frame whose window the stream refuses (larger than all it may
  // decode, over 128 MiB), decoded whole: next() hands it out as one window.
  GrowingBytes whole_;
  uint64_t total_ = 0;
  size_t ret_ = 1;                  // what the decoder still expects (0: between frames)
  std::vector<uint64_t> expected_;  // expect_frames
  size_t frame_ = 0;                // the frame being decoded
  uint64_t in_frame_ = 0;           // its bytes so far
  Result<void> count_frame(uint64_t bytes, bool ended);
  // Decodes the frame at src_[at] whole into whole_; its decoded size.
  Result<uint64_t> whole_frame(size_t at);
};

// The most bytes `stored_bytes` of zstd frames can regenerate (each block
// has a 3-byte header and regenerates at most 128 KiB): a declared size
// above it is not believed.
uint64_t zstd_most_decoded(uint64_t stored_bytes);

// The frame at the start of `rest`: its stored size and the content size it
// declares (none for a skippable frame, which decoders pass over). nullopt
// when `rest` does not hold the whole frame, the frame declares no content
// size, or declares more than its bytes can regenerate.
struct ZstdFrameHead {
  uint64_t stored_size = 0;
  std::optional<uint64_t> content_size;
};
std::optional<ZstdFrameHead> zstd_frame_head(std::span<const uint8_t> rest);
// The content size the frame at the start of `rest` declares in its header
// (which is all it needs of the frame); nullopt when the header is not
// whole, is not a zstd frame's, or declares none.
std::optional<uint64_t> zstd_declared_content_size(std::span<const uint8_t> rest);

// The frames of `src` (skippable frames, such as a seek table, left out)
// when every frame records a content size its own bytes
// can back and the sizes add up to `total`; empty otherwise (decode it as one
// stream then, into a buffer that grows with the delivered bytes).
std::vector<ZstdFrame> zstd_frame_index(std::span<const uint8_t> src, uint64_t total);
// The same walk, handing each frame to `each` as it is found (before the
// rest of `src` is read: cold, a walk reads the whole stream); true when
// the frames index `src` as zstd_frame_index's rule asks, false as soon as
// they do not (frames handed out before then are not an index). With
// `until`, the walk stops once the frames handed out hold that many decoded
// bytes: true if those frames keep the rule (a read of the bytes before
// `until` reads no header past them).
bool zstd_each_frame(std::span<const uint8_t> src, uint64_t total,
                     const std::function<void(const ZstdFrame&)>& each,
                     uint64_t until = UINT64_MAX);

// Sum of the content sizes the frames of `src` declare; nullopt if a frame
// declares none, declares more than its bytes can regenerate, or the data is
// not zstd. Lets a reader compare a claimed
// decoded size with the data before allocating it.
std::optional<uint64_t> zstd_declared_size(std::span<const uint8_t> src);

// Compresses `src` as one frame (content size recorded, and its content
// checksum when `checksum`) appended to `out`.
Result<void> zstd_compress_frame(std::span<const uint8_t> src, int level, std::vector<uint8_t>& out,
                                 bool checksum = false);

}  // namespace zt

namespace zt {

// Decodes a stream, refusing more than `limit` bytes (Status::limit), into
// a buffer grown in place as it decodes (it ends holding exactly what was
// decoded).
Result<GrowingBytes> zstd_decode_bounded(std::span<const uint8_t> src, uint64_t limit,
                                         ZstdLimit kind, const std::string& where);

// Below this many decoded bytes, a component decodes on one thread: starting
// threads costs more than they save (zstd frames and byte planes alike).
constexpr uint64_t kMinParallelDecodeBytes = 4u << 20;

// zstd_decode_exact, but a component stored as several frames that record
// their sizes is decoded on up to `threads` threads (0: all cores).
Result<void> zstd_decode_parallel(std::span<const uint8_t> src, std::span<uint8_t> dst,
                                  const std::string& where, unsigned threads = 0);

// Decodes the listed frames of `src` one after the other into `dst`, each
// into exactly its content_size bytes (a seek table's entries: a frame that
// decodes to more or fewer is Status::invalid naming it), on up to
// `threads` threads once dst is large (0: all cores). The sizes must add up
// to dst.size().
Result<void> zstd_decode_frames(std::span<const uint8_t> src, std::span<const ZstdFrame> frames,
                                std::span<uint8_t> dst, const std::string& where,
                                unsigned threads = 0);

}  // namespace zt
