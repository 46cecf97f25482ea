#include "codec/zstd_codec.h"

#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

#include "base/core_count.h"
#include "base/for_each_index.h"

namespace zt {

namespace {

struct DCtxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};
struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
using DCtx = std::unique_ptr<ZSTD_DCtx, DCtxDeleter>;
using CCtx = std::unique_ptr<ZSTD_CCtx, CCtxDeleter>;

// One context per thread: creating a DCtx costs more than a small decode.
ZSTD_DCtx* thread_dctx() {
  thread_local DCtx dctx(ZSTD_createDCtx());
  return dctx.get();
}

using ull = unsigned long long;

// Streaming decoders refuse a frame whose window is over 2^27 bytes unless
// told otherwise ("Frame requires too much memory"), where the one-shot
// decoder takes any: the same bytes read whole and read as a stream gave
// different answers (zstd --long=28 and above, for a tensor over 128 MiB).
// A stream allocates the window its frame asks for, so a larger window is
// allowed only up to a size the decode is known to reach (the size the
// manifest states, checked against what the stored bytes can decode to,
// zstd_most_decoded): memory stays bounded by what the data shows. A
// decode that only has a cap (a component of no stated size) keeps 2^27,
// since a frame may ask for 2 GiB to decode a few MiB (a 2 GiB window was
// allocated for each such frame of a 1 MiB blob); larger windows are
// decoded whole (decode_frame_held).
void allow_window_for(ZSTD_DCtx* d, uint64_t limit, ZstdLimit kind, size_t stored_bytes) {
  const uint64_t known =
      kind == ZstdLimit::size ? std::min(limit, zstd_most_decoded(stored_bytes)) : 0;
  constexpr int kDefaultLog = 27;  // ZSTD_WINDOWLOG_LIMIT_DEFAULT (not in the stable API)
  const int most_log = ZSTD_dParam_getBounds(ZSTD_d_windowLogMax).upperBound;
  int log = kDefaultLog;
  while (log < most_log && (uint64_t{1} << log) < known) ++log;
  ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, log);
}

// A decoder's failure: memory it could not allocate (a window) is
// Status::nomem, anything else corrupt data.
Error decode_error(size_t ret, const std::string& where) {
  if (ZSTD_getErrorCode(ret) == ZSTD_error_memory_allocation)
    return make_error(Status::nomem, "%s: zstd decoder: %s", where.c_str(), ZSTD_getErrorName(ret));
  return make_error(Status::invalid, "%s: corrupt zstd data: %s", where.c_str(),
                    ZSTD_getErrorName(ret));
}

// A frame allow_window_for refused to stream: its window is larger than
// 128 MiB and than the size its decode is known to reach (zstd --long=31
// reading a pipe: a 2 GiB window, no content size, a few MiB of content).
// It is decoded whole by the one-shot decoder, which needs no window: held,
// it costs what it decodes to.
bool window_too_large(size_t ret) {
  return ZSTD_isError(ret) && ZSTD_getErrorCode(ret) == ZSTD_error_frameParameter_windowTooLarge;
}

struct WholeFrame {
  size_t stored = 0;   // the frame's stored bytes
  size_t decoded = 0;  // what it decoded to
  bool fits = true;    // false: it decodes to more than the room it was given
};

// One frame (its stored bytes exactly, as ZSTD_findFrameCompressedSize
// found them) decoded by the one-shot decoder into `room`; the decoder is
// left ready for a new frame.
Result<WholeFrame> decode_frame_whole(ZSTD_DCtx* d, std::span<const uint8_t> frame,
                                      std::span<uint8_t> room, const std::string& where) {
  ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
  const size_t got = ZSTD_decompressDCtx(d, room.data(), room.size(), frame.data(), frame.size());
  ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
  if (ZSTD_isError(got) && ZSTD_getErrorCode(got) == ZSTD_error_dstSize_tooSmall)
    return WholeFrame{frame.size(), 0, false};
  if (ZSTD_isError(got)) return decode_error(got, where);
  return WholeFrame{frame.size(), got, true};
}

// The frame at the start of `rest` decoded whole into `out` from byte `at`
// on, with room for at most `left` bytes (what the caller allows). Its
// decoded size is not known (such frames have no content size), and the
// most its stored bytes could decode to is thousands of times their size
// (15 GiB for a 350 KiB frame, which the kernel refuses to reserve on a
// smaller machine): the room starts at four times the stored bytes and
// doubles while the frame does not fit, grown in place (GrowingBytes), so
// it stays within twice what the frame decodes to and no second buffer is
// held; the decodes that did not fit cost as much again. Status::nomem
// where room cannot be had (this may run on a helper thread, which an
// exception must not leave). `fits` is false where it decodes to more than
// `left`; `out` may end larger than what was decoded into it.
Result<WholeFrame> decode_frame_grown(ZSTD_DCtx* d, std::span<const uint8_t> rest, uint64_t left,
                                      GrowingBytes& out, size_t at, const std::string& where) {
  const size_t stored = ZSTD_findFrameCompressedSize(rest.data(), rest.size());
  ZT_FAIL_IF(ZSTD_isError(stored), invalid, "%s: corrupt or truncated zstd frame: %s",
             where.c_str(), ZSTD_getErrorName(stored));
  const uint64_t most = std::min(left, zstd_most_decoded(stored));
  uint64_t room = std::min<uint64_t>(most, std::max<uint64_t>(uint64_t{4} * stored, 1u << 20));
  for (;;) {
    ZT_FAIL_IF(out.size() < at + room && !out.resize(at + room), nomem,
               "%s: cannot allocate %llu bytes to decode a zstd frame", where.c_str(),
               static_cast<ull>(room));
    auto w = decode_frame_whole(d, rest.first(stored), std::span(out.data() + at, room), where);
    ZT_TRY(w);
    if (w->fits || room == most) return w;
    room = std::min(most, room * 2);
  }
}

// The next piece of a buffer of `held` < `limit` bytes grown to hold a
// decode of at most `limit`: doubling (from one stream block), never past
// the limit.
size_t growth_step(size_t held, uint64_t limit) {
  const size_t step = std::max<size_t>(ZSTD_DStreamOutSize(), held);
  return static_cast<size_t>(std::min<uint64_t>(step, limit - held));
}

// Streams one frame whose header gives no content size into dst; the frame
// must end exactly where the input does and fit in dst.
Result<uint64_t> stream_frame(ZSTD_DCtx* d, std::span<const uint8_t> frame, std::span<uint8_t> dst,
                              const std::string& where) {
  ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
  allow_window_for(d, dst.size(), ZstdLimit::size, frame.size());
  ZSTD_inBuffer in{frame.data(), frame.size(), 0};
  ZSTD_outBuffer out{dst.data(), dst.size(), 0};
  size_t ret = 1;
  while (ret != 0) {
    ret = ZSTD_decompressStream(d, &out, &in);
    if (window_too_large(ret) && out.pos == 0) {
      auto whole = decode_frame_whole(d, frame, dst, where);
      ZT_TRY(whole);
      ZT_FAIL_IF(!whole->fits, invalid, "%s: zstd data decodes to more than %llu bytes",
                 where.c_str(), static_cast<ull>(dst.size()));
      return static_cast<uint64_t>(whole->decoded);
    }
    if (ZSTD_isError(ret)) return decode_error(ret, where);
    if (ret == 0) break;
    if (out.pos == out.size) {
      // Output is full: any further byte means the data is longer than declared.
      uint8_t probe = 0;
      ZSTD_outBuffer extra{&probe, 1, 0};
      const size_t r2 = ZSTD_decompressStream(d, &extra, &in);
      if (ZSTD_isError(r2)) return decode_error(r2, where);
      ZT_FAIL_IF(extra.pos > 0, invalid, "%s: zstd data decodes to more than %llu bytes",
                 where.c_str(), static_cast<ull>(dst.size()));
      ret = r2;
      if (ret == 0) break;
      ZT_FAIL_IF(in.pos == in.size, invalid, "%s: zstd frame is truncated", where.c_str());
      continue;
    }
    ZT_FAIL_IF(in.pos == in.size, invalid, "%s: zstd frame is truncated", where.c_str());
  }
  return static_cast<uint64_t>(out.pos);
}

}  // namespace

Result<void> zstd_decode_exact(std::span<const uint8_t> src, std::span<uint8_t> dst,
                               const std::string& where) {
  ZT_FAIL_IF(src.empty(), invalid, "%s: empty zstd stream", where.c_str());
  ZSTD_DCtx* d = thread_dctx();
  ZT_FAIL_IF(!d, nomem, "%s: cannot create a zstd decoder", where.c_str());
  uint64_t pos = 0, out = 0;
  while (pos < src.size()) {
    const auto rest = src.subspan(pos);
    const size_t fsize = ZSTD_findFrameCompressedSize(rest.data(), rest.size());
    ZT_FAIL_IF(ZSTD_isError(fsize), invalid, "%s: corrupt or truncated zstd frame at byte %llu: %s",
               where.c_str(), static_cast<ull>(pos), ZSTD_getErrorName(fsize));
    const auto frame = rest.first(fsize);
    const unsigned long long csize = ZSTD_getFrameContentSize(frame.data(), frame.size());
    ZT_FAIL_IF(csize == ZSTD_CONTENTSIZE_ERROR, invalid, "%s: bad zstd frame header at byte %llu",
               where.c_str(), static_cast<ull>(pos));
    const auto room = dst.subspan(out);
    if (csize != ZSTD_CONTENTSIZE_UNKNOWN) {
      ZT_FAIL_IF(csize > room.size(), invalid, "%s: zstd data decodes to more than %llu bytes",
                 where.c_str(), static_cast<ull>(dst.size()));
      const size_t got = ZSTD_decompressDCtx(d, room.data(), csize, frame.data(), frame.size());
      if (ZSTD_isError(got)) return decode_error(got, where);
      ZT_FAIL_IF(got != csize, invalid, "%s: zstd frame decodes to %zu bytes, its header says %llu",
                 where.c_str(), got, csize);
      out += got;
    } else {
      auto got = stream_frame(d, frame, room, where);
      ZT_TRY(got);
      out += *got;
    }
    pos += fsize;
  }
  ZT_FAIL_IF(out != dst.size(), invalid, "%s: zstd data decodes to %llu bytes, expected %llu",
             where.c_str(), static_cast<ull>(out), static_cast<ull>(dst.size()));
  return {};
}

namespace {

bool is_skippable(std::span<const uint8_t> frame) {
  if (frame.size() < 4) return false;
  const uint32_t magic = static_cast<uint32_t>(frame[0]) | static_cast<uint32_t>(frame[1]) << 8 |
                         static_cast<uint32_t>(frame[2]) << 16 |
                         static_cast<uint32_t>(frame[3]) << 24;
  return (magic & ZSTD_MAGIC_SKIPPABLE_MASK) == ZSTD_MAGIC_SKIPPABLE_START;
}

}  // namespace

uint64_t zstd_most_decoded(uint64_t stored_bytes) {
  // Every block of a frame starts with a 3-byte header and regenerates at most
  // ZSTD_BLOCKSIZE_MAX (128 KiB) bytes, so n stored bytes hold at most n / 3
  // blocks: a declared content size above that is a claim the data cannot
  // back.
  const uint64_t blocks = stored_bytes / 3 + 1;
  return blocks > UINT64_MAX / ZSTD_BLOCKSIZE_MAX ? UINT64_MAX : blocks * ZSTD_BLOCKSIZE_MAX;
}

std::optional<ZstdFrameHead> zstd_frame_head(std::span<const uint8_t> rest) {
  const size_t fsize = ZSTD_findFrameCompressedSize(rest.data(), rest.size());
  if (ZSTD_isError(fsize)) return std::nullopt;
  if (is_skippable(rest)) return ZstdFrameHead{fsize, std::nullopt};  // a seek table, say
  const unsigned long long csize = ZSTD_getFrameContentSize(rest.data(), fsize);
  if (csize == ZSTD_CONTENTSIZE_UNKNOWN || csize == ZSTD_CONTENTSIZE_ERROR) return std::nullopt;
  if (csize > zstd_most_decoded(fsize)) return std::nullopt;  // not believed
  return ZstdFrameHead{fsize, csize};
}

std::optional<uint64_t> zstd_declared_content_size(std::span<const uint8_t> rest) {
  const unsigned long long csize = ZSTD_getFrameContentSize(rest.data(), rest.size());
  if (csize == ZSTD_CONTENTSIZE_UNKNOWN || csize == ZSTD_CONTENTSIZE_ERROR) return std::nullopt;
  return csize;
}

bool zstd_each_frame(std::span<const uint8_t> src, uint64_t total,
                     const std::function<void(const ZstdFrame&)>& each, uint64_t until) {
  uint64_t pos = 0, sum = 0;
  while (pos < src.size()) {
    if (sum >= until) return true;
    const auto head = zstd_frame_head(src.subspan(pos));
    if (!head) return false;
    if (head->content_size) {
      if (__builtin_add_overflow(sum, *head->content_size, &sum) || sum > total) return false;
      each(ZstdFrame{pos, head->stored_size, *head->content_size});
    }
    pos += head->stored_size;
  }
  return sum == total;
}

std::vector<ZstdFrame> zstd_frame_index(std::span<const uint8_t> src, uint64_t total) {
  std::vector<ZstdFrame> frames;
  if (!zstd_each_frame(src, total, [&](const ZstdFrame& f) { frames.push_back(f); })) return {};
  return frames;
}

std::optional<uint64_t> zstd_declared_size(std::span<const uint8_t> src) {
  uint64_t pos = 0, sum = 0;
  while (pos < src.size()) {
    const auto head = zstd_frame_head(src.subspan(pos));
    if (!head) return std::nullopt;  // not believed: decoded as it grows
    if (head->content_size && __builtin_add_overflow(sum, *head->content_size, &sum))
      return std::nullopt;
    pos += head->stored_size;
  }
  return sum;
}

Result<void> zstd_compress_frame(std::span<const uint8_t> src, int level, std::vector<uint8_t>& out,
                                 bool checksum) {
  thread_local CCtx cctx(ZSTD_createCCtx());
  ZT_FAIL_IF(!cctx, nomem, "cannot create a zstd encoder");
  const size_t bound = ZSTD_compressBound(src.size());
  const size_t at = out.size();
  out.resize(at + bound);
  ZSTD_CCtx_reset(cctx.get(), ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_contentSizeFlag, 1);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, checksum ? 1 : 0);
  const size_t n = ZSTD_compress2(cctx.get(), out.data() + at, bound, src.data(), src.size());
  if (ZSTD_isError(n)) {
    out.resize(at);
    // zstd's own allocation failing is a lack of memory, not a refusal of
    // the caller's bytes (ZT_ERR_INVALID drops the component and goes on).
    return make_error(
        ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation ? Status::nomem : Status::invalid,
        "zstd compression failed: %s", ZSTD_getErrorName(n));
  }
  out.resize(at + n);
  return {};
}

struct ZstdWindows::Decoder {
  struct Free {
    void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
  };
  std::unique_ptr<ZSTD_DCtx, Free> ctx{ZSTD_createDCtx()};
};

ZstdWindows::ZstdWindows(std::span<const uint8_t> src, uint64_t limit, ZstdLimit kind,
                         std::string where)
    : d_(std::make_unique<Decoder>()), src_(src), limit_(limit), where_(std::move(where)) {
  if (d_->ctx) allow_window_for(d_->ctx.get(), limit_, kind, src_.size());
}

ZstdWindows::~ZstdWindows() = default;

Result<std::span<const uint8_t>> ZstdWindows::next() {
  ZT_FAIL_IF(src_.empty(), invalid, "%s: empty zstd stream", where_.c_str());
  ZT_FAIL_IF(!d_->ctx, nomem, "%s: cannot create a zstd decoder", where_.c_str());
  if (window_.empty()) window_.resize(ZSTD_DStreamOutSize());
  whole_ = {};
  ZSTD_inBuffer in{src_.data(), src_.size(), in_pos_};
  // Until every input byte is consumed and the decoder holds nothing more.
  while (in.pos < in.size || ret_ != 0) {
    ZSTD_outBuffer o{window_.data(), window_.size(), 0};
    const size_t before = in.pos;
    const bool frame_start = ret_ == 0 || before == 0;
    ret_ = ZSTD_decompressStream(d_->ctx.get(), &o, &in);
    if (window_too_large(ret_) && frame_start && o.pos == 0) {
      auto decoded = whole_frame(before);
      ZT_TRY(decoded);
      in.pos = in_pos_;
      if (*decoded) return std::span<const uint8_t>(whole_.data(), *decoded);
      continue;
    }
    in_pos_ = in.pos;
    if (ZSTD_isError(ret_)) return decode_error(ret_, where_);
    total_ += o.pos;
    ZT_FAIL_IF(total_ > limit_, limit, "%s: zstd data decodes to more than %llu bytes",
               where_.c_str(), static_cast<ull>(limit_));
    if (!expected_.empty()) ZT_TRY(count_frame(o.pos, ret_ == 0));
    ZT_FAIL_IF(o.pos == 0 && in.pos == before && ret_ != 0, invalid, "%s: zstd frame is truncated",
               where_.c_str());
    if (o.pos) return std::span<const uint8_t>(window_.data(), o.pos);
  }
  return std::span<const uint8_t>();
}

Result<uint64_t> ZstdWindows::whole_frame(size_t at) {
  const auto rest = src_.subspan(at);
  auto w = decode_frame_grown(d_->ctx.get(), rest, limit_ - total_, whole_, 0, where_);
  ZT_TRY(w);
  ZT_FAIL_IF(!w->fits, limit, "%s: zstd data decodes to more than %llu bytes", where_.c_str(),
             static_cast<ull>(limit_));
  in_pos_ = at + w->stored;
  ret_ = 0;
  total_ += w->decoded;
  if (!expected_.empty()) ZT_TRY(count_frame(w->decoded, true));
  return static_cast<uint64_t>(w->decoded);
}

Result<void> ZstdWindows::count_frame(uint64_t bytes, bool ended) {
  in_frame_ += bytes;
  const uint64_t want = frame_ < expected_.size() ? expected_[frame_] : 0;
  ZT_FAIL_IF(in_frame_ > want, invalid,
             "%s: frame %zu decodes to more than the %llu bytes its seek-table entry says",
             where_.c_str(), frame_, static_cast<ull>(want));
  ZT_FAIL_IF(ended && in_frame_ != want, invalid,
             "%s: frame %zu decodes to %llu bytes, its seek-table entry says %llu", where_.c_str(),
             frame_, static_cast<ull>(in_frame_), static_cast<ull>(want));
  if (ended) {
    ++frame_;
    in_frame_ = 0;
  }
  return {};
}

Result<GrowingBytes> zstd_decode_bounded(std::span<const uint8_t> src, uint64_t limit,
                                         ZstdLimit kind, const std::string& where) {
  ZT_FAIL_IF(src.empty(), invalid, "%s: empty zstd stream", where.c_str());
  ZSTD_DCtx* d = thread_dctx();
  ZT_FAIL_IF(!d, nomem, "%s: cannot create a zstd decoder", where.c_str());
  ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
  allow_window_for(d, limit, kind, src.size());
  // Grown as it decodes, to the limit at most, in place (GrowingBytes): a
  // std::vector's growth peaked at 3x what was decoded and kept twice it.
  // `out` holds `used` decoded bytes and the room after them: the decoder
  // returns at each frame's end, and a stream of a million tiny frames
  // must not grow the buffer at each return. Once the limit is held, one
  // more byte of output, decoded into `probe`, refuses it.
  GrowingBytes out;
  size_t used = 0;
  const auto grow_to = [&](size_t size) -> Result<void> {
    ZT_FAIL_IF(!out.resize(size), nomem, "%s: cannot allocate %zu bytes to decode into",
               where.c_str(), size);
    return {};
  };
  ZSTD_inBuffer in{src.data(), src.size(), 0};
  bool frame_start = true;
  for (;;) {
    const size_t in_before = in.pos;
    if (used == out.size() && used < limit) ZT_TRY(grow_to(used + growth_step(used, limit)));
    uint8_t probe = 0;
    ZSTD_outBuffer o{&probe, 1, 0};
    if (used < limit) o = ZSTD_outBuffer{out.data() + used, out.size() - used, 0};
    const size_t ret = ZSTD_decompressStream(d, &o, &in);
    if (window_too_large(ret) && frame_start && o.pos == 0) {
      // Decoded whole straight into `out` after what it holds.
      auto w = decode_frame_grown(d, src.subspan(in_before), limit - used, out, used, where);
      ZT_TRY(w);
      ZT_FAIL_IF(!w->fits, limit, "%s: zstd data decodes to more than the limit of %llu bytes",
                 where.c_str(), static_cast<ull>(limit));
      used += w->decoded;
      in.pos = in_before + w->stored;
      if (in.pos == in.size) break;
      continue;
    }
    if (used < limit) used += o.pos;
    frame_start = ret == 0;
    if (ZSTD_isError(ret)) return decode_error(ret, where);
    ZT_FAIL_IF(o.dst == &probe && o.pos > 0, limit,
               "%s: zstd data decodes to more than the limit of %llu bytes", where.c_str(),
               static_cast<ull>(limit));
    if (ret == 0 && in.pos == in.size) break;  // every frame ended with the input
    // Room to write, yet nothing came out and nothing went in: the input
    // ends inside a frame.
    ZT_FAIL_IF(o.pos == 0 && in.pos == in_before, invalid, "%s: zstd frame is truncated",
               where.c_str());
  }
  ZT_TRY(grow_to(used));  // gives back the room not used
  return out;
}

Result<void> zstd_decode_parallel(std::span<const uint8_t> src, std::span<uint8_t> dst,
                                  const std::string& where, unsigned threads) {
  if (threads == 0) threads = threads_for_all_cores();
  if (threads < 2 || dst.size() < kMinParallelDecodeBytes)
    return zstd_decode_exact(src, dst, where);
  const std::vector<ZstdFrame> frames = zstd_frame_index(src, dst.size());
  if (frames.size() < 2) return zstd_decode_exact(src, dst, where);
  return zstd_decode_frames(src, frames, dst, where, threads);
}

Result<void> zstd_decode_frames(std::span<const uint8_t> src, std::span<const ZstdFrame> frames,
                                std::span<uint8_t> dst, const std::string& where,
                                unsigned threads) {
  if (dst.size() < kMinParallelDecodeBytes) threads = 1;
  uint64_t sum = 0;
  for (const ZstdFrame& f : frames) sum += f.content_size;
  ZT_FAIL_IF(sum != dst.size(), invalid, "%s: the frames hold %llu bytes, not %zu", where.c_str(),
             static_cast<ull>(sum), dst.size());
  std::vector<uint64_t> out_at(frames.size());
  for (size_t i = 1; i < frames.size(); ++i) out_at[i] = out_at[i - 1] + frames[i - 1].content_size;
  std::vector<Error> errors(frames.size());
  for_each_index(frames.size(), threads, [&](size_t i) {
    const ZstdFrame& f = frames[i];
    auto r = zstd_decode_exact(src.subspan(f.src_offset, f.src_size),
                               dst.subspan(out_at[i], f.content_size), where);
    if (!r)
      errors[i] = make_error(r.error().status, "%s (frame %zu, listed as %llu bytes)",
                             r.error().message.c_str(), i, static_cast<ull>(f.content_size));
  });
  for (auto& e : errors)
    if (e.status != Status::ok) return std::move(e);
  return {};
}

}  // namespace zt
