#include "codec/byte_planes.h"

#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <memory>

#include "base/for_each_index.h"
#include "base/helper_threads.h"
#include "codec/zstd_codec.h"

namespace zt {

namespace {

using ull = unsigned long long;

constexpr uint32_t kMagic = 0x5042545Au;  // "ZTBP"
constexpr uint32_t kCodedBit = 1u << 31;
constexpr uint32_t kMaxFrameBytes = 1u << 30;  // plane sizes stay below the coded bit

uint32_t load_u32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

uint32_t checksum_of(std::span<const uint8_t> bytes) {
  return static_cast<uint32_t>(XXH3_64bits(bytes.data(), bytes.size()));
}

bool valid_width(uint64_t w) {
  return w == 1 || w == 2 || w == 4 || w == 8;
}

// Elements as unsigned integers of their width (little-endian bytes);
// the loops are per width so that the compiler unrolls and vectorizes them.
template <typename U>
U rotate_left1(U v, bool on) {
  constexpr unsigned bits = 8 * sizeof(U);
  return on ? static_cast<U>((v << 1) | (v >> (bits - 1))) : v;
}

template <typename U>
U rotate_right1(U v, bool on) {
  constexpr unsigned bits = 8 * sizeof(U);
  return on ? static_cast<U>((v >> 1) | (v << (bits - 1))) : v;
}

template <typename U>
void split_as(std::span<const uint8_t> frame, bool rotate,
              std::vector<std::vector<uint8_t>>& planes) {
  constexpr unsigned w = sizeof(U);
  const size_t n = frame.size() / w;
  for (auto& p : planes) p.resize(n);
  uint8_t* out[w];
  for (unsigned j = 0; j < w; ++j) out[j] = planes[j].data();
  for (size_t i = 0; i < n; ++i) {
    U v = 0;
    for (unsigned j = 0; j < w; ++j) v = static_cast<U>(v | U{frame[i * w + j]} << (8 * j));
    v = rotate_left1(v, rotate);
    for (unsigned j = 0; j < w; ++j) out[j][i] = static_cast<uint8_t>(v >> (8 * j));
  }
}

template <typename U>
void join_as(const std::vector<std::span<const uint8_t>>& planes, bool rotate,
             std::span<uint8_t> dst) {
  constexpr unsigned w = sizeof(U);
  const size_t n = dst.size() / w;
  const uint8_t* in[w];
  for (unsigned j = 0; j < w; ++j) in[j] = planes[j].data();
  uint8_t* d = dst.data();
  for (size_t i = 0; i < n; ++i) {
    U v = 0;
    for (unsigned j = 0; j < w; ++j) v = static_cast<U>(v | U{in[j][i]} << (8 * j));
    v = rotate_right1(v, rotate);
    for (unsigned j = 0; j < w; ++j) d[i * w + j] = static_cast<uint8_t>(v >> (8 * j));
  }
}

// The planes of `frame` (n elements) into planes[j][0 .. n).
void split(std::span<const uint8_t> frame, const PlanesLayout& l,
           std::vector<std::vector<uint8_t>>& planes) {
  switch (l.width) {
    case 1:
      return split_as<uint8_t>(frame, false, planes);
    case 2:
      return split_as<uint16_t>(frame, l.rotate_sign, planes);
    case 4:
      return split_as<uint32_t>(frame, l.rotate_sign, planes);
    default:
      return split_as<uint64_t>(frame, l.rotate_sign, planes);
  }
}

// The inverse of split: planes (each n bytes) back into dst (n elements).
void join(const std::vector<std::span<const uint8_t>>& planes, const PlanesLayout& l,
          std::span<uint8_t> dst) {
  switch (l.width) {
    case 1:
      return join_as<uint8_t>(planes, false, dst);
    case 2:
      return join_as<uint16_t>(planes, l.rotate_sign, dst);
    case 4:
      return join_as<uint32_t>(planes, l.rotate_sign, dst);
    default:
      return join_as<uint64_t>(planes, l.rotate_sign, dst);
  }
}

struct CCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

}  // namespace

bool byte_planes_layout_ok(const PlanesLayout& l) {
  return valid_width(l.width) && l.frame_bytes >= l.width && l.frame_bytes % l.width == 0 &&
         l.frame_bytes <= kMaxFrameBytes && !(l.rotate_sign && l.width == 1);
}

namespace {

// What encoding a frame needs beside its layout: a zstd context with the
// plane coder's parameters, and room for the planes.
struct FrameCoder {
  std::unique_ptr<ZSTD_CCtx, CCtxFree> cctx{ZSTD_createCCtx()};
  std::vector<std::vector<uint8_t>> planes;
  std::vector<uint8_t> coded;

  void set_level(int level) {
    if (!cctx) return;
    ZSTD_CCtx_reset(cctx.get(), ZSTD_reset_parameters);
    ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, level);
    if (level < 10) {
      // Plane statistics: matches rarely pay, literals do (measured on bf16
      // weights: these parameters reach 1.49x where level 3's own reach 1.43x).
      ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_strategy, ZSTD_fast);
      ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_minMatch, 7);
      ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_windowLog, 17);
      ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_hashLog, 12);
    }
  }

  // Appends the frame's planes to `out` and its index entries (one a plane,
  // then the checksum) to `index`.
  Result<void> encode(std::span<const uint8_t> bytes, const PlanesLayout& layout,
                      std::vector<uint8_t>& out, std::vector<uint32_t>& index) {
    ZT_FAIL_IF(!cctx, nomem, "byte planes: cannot make a zstd context");
    ZT_FAIL_IF(bytes.empty() || bytes.size() > layout.frame_bytes || bytes.size() % layout.width,
               argument, "byte planes: a frame of %zu bytes (frames of %u, elements of %u)",
               bytes.size(), layout.frame_bytes, unsigned{layout.width});
    planes.resize(layout.width);
    split(bytes, layout, planes);
    for (const auto& p : planes) {
      coded.resize(ZSTD_compressBound(p.size()));
      const size_t n = ZSTD_compress2(cctx.get(), coded.data(), coded.size(), p.data(), p.size());
      ZT_FAIL_IF(ZSTD_isError(n), nomem, "byte planes: zstd: %s", ZSTD_getErrorName(n));
      if (n < p.size()) {
        out.insert(out.end(), coded.begin(), coded.begin() + static_cast<ptrdiff_t>(n));
        index.push_back(static_cast<uint32_t>(n) | kCodedBit);
      } else {
        out.insert(out.end(), p.begin(), p.end());
        index.push_back(static_cast<uint32_t>(p.size()));
      }
    }
    index.push_back(checksum_of(bytes));
    return {};
  }
};

}  // namespace

struct PlanesEncoder::State {
  PlanesLayout layout;
  FrameCoder coder;
  std::vector<uint32_t> index;
  uint32_t frames = 0;
};

PlanesEncoder::PlanesEncoder(const PlanesLayout& layout, int level)
    : s_(std::make_unique<State>()) {
  s_->layout = layout;
  s_->coder.set_level(level);
}

PlanesEncoder::~PlanesEncoder() = default;
const PlanesLayout& PlanesEncoder::layout() const {
  return s_->layout;
}
PlanesEncoder::PlanesEncoder(PlanesEncoder&&) noexcept = default;
PlanesEncoder& PlanesEncoder::operator=(PlanesEncoder&&) noexcept = default;

Result<void> PlanesEncoder::frame(std::span<const uint8_t> bytes, std::vector<uint8_t>& out) {
  ZT_TRY(s_->coder.encode(bytes, s_->layout, out, s_->index));
  ++s_->frames;
  return {};
}

Result<std::span<const uint8_t>> PlanesEncoder::adopt_frame(std::span<const uint8_t> encoded) {
  const size_t entries = size_t{s_->layout.width} + 1;
  ZT_FAIL_IF(encoded.size() < entries * 4, argument,
             "byte planes: %zu bytes cannot be a frame and its %zu index entries", encoded.size(),
             entries);
  const size_t planes = encoded.size() - entries * 4;
  for (size_t e = 0; e < entries; ++e)
    s_->index.push_back(load_u32(encoded.data() + planes + 4 * e));
  ++s_->frames;
  return encoded.first(planes);
}

Result<void> byte_planes_encode_frame(std::span<const uint8_t> bytes, const PlanesLayout& layout,
                                      int level, std::vector<uint8_t>& out) {
  // One coder a thread: the writer's workers each keep theirs across frames.
  thread_local FrameCoder coder;
  thread_local int coder_level = INT32_MIN;
  if (coder_level != level) {
    coder.set_level(level);
    coder_level = level;
  }
  std::vector<uint32_t> index;
  index.reserve(size_t{layout.width} + 1);
  ZT_TRY(coder.encode(bytes, layout, out, index));
  for (const uint32_t v : index) put_u32(out, v);
  return {};
}

void PlanesEncoder::finish(std::vector<uint8_t>& out) const {
  const State& s = *s_;
  for (const uint32_t v : s.index) put_u32(out, v);
  put_u32(out, s.frames);
  put_u32(out, s.layout.frame_bytes);
  out.push_back(s.layout.width);
  out.push_back(s.layout.rotate_sign ? 1 : 0);
  out.push_back(0);
  out.push_back(0);
  put_u32(out, kMagic);
}

Result<void> byte_planes_encode(std::span<const uint8_t> src, const PlanesLayout& l, int level,
                                std::vector<uint8_t>& out) {
  ZT_FAIL_IF(!byte_planes_layout_ok(l), argument,
             "byte planes: width %u, frame of %u bytes, transform %d is not a layout",
             unsigned{l.width}, l.frame_bytes, int{l.rotate_sign});
  ZT_FAIL_IF(src.size() % l.width != 0, argument,
             "byte planes: %zu bytes are not whole elements of %u bytes", src.size(),
             unsigned{l.width});
  PlanesEncoder e(l, level);
  for (size_t at = 0; at < src.size(); at += l.frame_bytes)
    ZT_TRY(e.frame(src.subspan(at, std::min<size_t>(l.frame_bytes, src.size() - at)), out));
  e.finish(out);
  return {};
}

namespace {

// The footer's layout and frame count, checked against the lengths.
struct Footer {
  PlanesLayout layout;
  uint32_t frame_count = 0;
};
Result<Footer> layout_of(const uint8_t* f, uint64_t decoded_length, const char* w) {
  ZT_FAIL_IF(load_u32(f + 12) != kMagic, invalid, "%s: byte planes: the footer's magic is not ZTBP",
             w);
  Footer x;
  const uint32_t frame_count = load_u32(f);
  x.layout.frame_bytes = load_u32(f + 4);
  x.layout.width = f[8];
  const uint8_t transform = f[9];
  const unsigned width = x.layout.width;
  ZT_FAIL_IF(
      !valid_width(width) || transform > 1 || (transform == 1 && width == 1) || f[10] || f[11],
      invalid,
      "%s: byte planes: width %u with transform %u is not a layout (width 1, 2, 4 "
      "or 8; transform 0, or 1 for widths above 1; reserved bytes 0)",
      w, width, unsigned{transform});
  x.layout.rotate_sign = transform == 1;
  const uint64_t fb = x.layout.frame_bytes;
  ZT_FAIL_IF(fb < width || fb % width != 0 || fb > kMaxFrameBytes, invalid,
             "%s: byte planes: frames of %llu bytes are not whole elements of %u bytes (at most "
             "2^30)",
             w, static_cast<ull>(fb), width);
  ZT_FAIL_IF(decoded_length % width != 0, invalid,
             "%s: byte planes: %llu decoded bytes are not whole elements of %u bytes", w,
             static_cast<ull>(decoded_length), width);
  const uint64_t want_frames = decoded_length / fb + (decoded_length % fb != 0);
  ZT_FAIL_IF(frame_count != want_frames, invalid,
             "%s: byte planes: %u frames, where %llu bytes in frames of %llu need %llu", w,
             frame_count, static_cast<ull>(decoded_length), static_cast<ull>(fb),
             static_cast<ull>(want_frames));
  x.frame_count = frame_count;
  return x;
}

uint64_t index_entry_bytes(unsigned width) {
  return 4 * (uint64_t{width} + 1);
}

}  // namespace

Result<uint64_t> byte_planes_tail_bytes(std::span<const uint8_t> footer, uint64_t stored_length,
                                        uint64_t decoded_length, const std::string& where) {
  const char* w = where.c_str();
  ZT_FAIL_IF(stored_length < kBytePlanesFooterBytes || footer.size() != kBytePlanesFooterBytes,
             invalid, "%s: byte planes: %llu bytes cannot hold the 16-byte footer", w,
             static_cast<ull>(stored_length));
  auto x = layout_of(footer.data(), decoded_length, w);
  ZT_TRY(x);
  const uint64_t index_bytes = x->frame_count * index_entry_bytes(x->layout.width);
  ZT_FAIL_IF(index_bytes > stored_length - kBytePlanesFooterBytes, invalid,
             "%s: byte planes: the index of %u frames (%llu bytes) does not fit the %llu bytes", w,
             x->frame_count, static_cast<ull>(index_bytes), static_cast<ull>(stored_length));
  return index_bytes + kBytePlanesFooterBytes;
}

namespace {

// One coded plane's zstd header: one frame of exactly its stored bytes that
// declares the plane's decoded bytes.
Result<void> check_coded_plane(std::span<const uint8_t> bytes, uint64_t plane, size_t k, size_t j,
                               const char* w) {
  const auto head = zstd_frame_head(bytes);
  ZT_FAIL_IF(!head || head->stored_size != bytes.size() || head->content_size != plane, invalid,
             "%s: byte planes: frame %zu plane %zu is not one zstd frame of %zu bytes that "
             "declares its %llu bytes",
             w, k, j, bytes.size(), static_cast<ull>(plane));
  return {};
}

// The index from the stream's tail; with `planes` (the bytes before the
// index) each coded plane's header is checked as its entry is read, so the
// first rule broken is the one named.
Result<PlanesIndex> parse_index(std::span<const uint8_t> tail, uint64_t stored_length,
                                uint64_t decoded_length, const std::string& where,
                                std::span<const uint8_t> planes) {
  const char* w = where.c_str();
  ZT_FAIL_IF(tail.size() < kBytePlanesFooterBytes || tail.size() > stored_length, invalid,
             "%s: byte planes: %llu bytes cannot hold the 16-byte footer", w,
             static_cast<ull>(stored_length));
  const auto want = byte_planes_tail_bytes(tail.last(kBytePlanesFooterBytes), stored_length,
                                           decoded_length, where);
  ZT_TRY(want);
  ZT_FAIL_IF(tail.size() != *want, invalid, "%s: byte planes: the index and footer are %llu bytes",
             w, static_cast<ull>(*want));
  const auto footer =
      layout_of(tail.data() + tail.size() - kBytePlanesFooterBytes, decoded_length, w);
  ZT_TRY(footer);
  // The index fits the stream (byte_planes_tail_bytes): the frame count is
  // bounded by bytes that exist.
  PlanesIndex x;
  x.layout = footer->layout;
  x.frames.resize(footer->frame_count);
  const unsigned width = x.layout.width;
  const uint64_t fb = x.layout.frame_bytes;
  const uint64_t data_bytes = stored_length - tail.size();
  const uint8_t* at = tail.data();
  uint64_t offset = 0;
  for (size_t k = 0; k < x.frames.size(); ++k, at += index_entry_bytes(width)) {
    PlanesFrame& fr = x.frames[k];
    fr.offset = offset;
    fr.decoded = std::min<uint64_t>(fb, decoded_length - uint64_t{k} * fb);
    const uint64_t plane = fr.decoded / width;
    for (unsigned j = 0; j < width; ++j) {
      const uint32_t v = load_u32(at + 4 * j);
      const uint32_t size = v & ~kCodedBit;
      const bool coded = (v & kCodedBit) != 0;
      ZT_FAIL_IF(size > data_bytes - offset, invalid,
                 "%s: byte planes: frame %zu plane %u (%u bytes) goes beyond the planes' %llu "
                 "bytes",
                 w, k, j, size, static_cast<ull>(data_bytes));
      ZT_FAIL_IF(!coded && size != plane, invalid,
                 "%s: byte planes: frame %zu plane %u is stored as %u bytes, not its %llu", w, k, j,
                 size, static_cast<ull>(plane));
      if (coded && !planes.empty())
        ZT_TRY(check_coded_plane(planes.subspan(offset, size), plane, k, j, w));
      fr.sizes.push_back(size);
      fr.coded.push_back(coded);
      offset += size;
    }
    fr.stored = offset - fr.offset;
    fr.checksum = load_u32(at + 4 * width);
  }
  ZT_FAIL_IF(offset != data_bytes, invalid,
             "%s: byte planes: the planes hold %llu bytes, but %llu lie before the index", w,
             static_cast<ull>(offset), static_cast<ull>(data_bytes));
  return x;
}

}  // namespace

Result<PlanesIndex> byte_planes_index_from_tail(std::span<const uint8_t> tail,
                                                uint64_t stored_length, uint64_t decoded_length,
                                                const std::string& where) {
  return parse_index(tail, stored_length, decoded_length, where, {});
}

Result<void> byte_planes_check_frame(std::span<const uint8_t> frame, const PlanesIndex& x, size_t k,
                                     const std::string& where) {
  const PlanesFrame& fr = x.frames.at(k);
  ZT_FAIL_IF(frame.size() != fr.stored, invalid,
             "%s: byte planes: frame %zu is %llu stored bytes, not %zu", where.c_str(), k,
             static_cast<ull>(fr.stored), frame.size());
  const uint64_t plane = fr.decoded / x.layout.width;
  uint64_t at = 0;
  for (size_t j = 0; j < fr.sizes.size(); at += fr.sizes[j++])
    if (fr.coded[j])
      ZT_TRY(check_coded_plane(frame.subspan(at, fr.sizes[j]), plane, k, j, where.c_str()));
  return {};
}

Result<PlanesIndex> byte_planes_index(std::span<const uint8_t> stored, uint64_t decoded_length,
                                      const std::string& where) {
  ZT_FAIL_IF(stored.size() < kBytePlanesFooterBytes, invalid,
             "%s: byte planes: %zu bytes cannot hold the 16-byte footer", where.c_str(),
             stored.size());
  const auto tail = byte_planes_tail_bytes(stored.last(kBytePlanesFooterBytes), stored.size(),
                                           decoded_length, where);
  ZT_TRY(tail);
  return parse_index(stored.last(*tail), stored.size(), decoded_length, where,
                     stored.first(stored.size() - *tail));
}

Result<void> byte_planes_decode_frame(std::span<const uint8_t> frame, const PlanesIndex& x,
                                      size_t k, std::span<uint8_t> dst, const std::string& where) {
  const PlanesFrame& fr = x.frames.at(k);
  ZT_FAIL_IF(frame.size() != fr.stored, invalid,
             "%s: byte planes: frame %zu is %llu stored bytes, not %zu", where.c_str(), k,
             static_cast<ull>(fr.stored), frame.size());
  ZT_FAIL_IF(dst.size() != fr.decoded, invalid, "%s: byte planes: frame %zu is %llu bytes, not %zu",
             where.c_str(), k, static_cast<ull>(fr.decoded), dst.size());
  const unsigned width = x.layout.width;
  const size_t plane = fr.decoded / width;
  if (width == 1) {  // one plane, no transform: the plane is the frame
    const auto bytes = frame.first(fr.sizes[0]);
    if (fr.coded[0])
      ZT_TRY(zstd_decode_exact(bytes, dst, where));
    else
      std::copy(bytes.begin(), bytes.end(), dst.begin());
    ZT_FAIL_IF(checksum_of(dst) != fr.checksum, invalid,
               "%s: byte planes: frame %zu does not match its checksum", where.c_str(), k);
    return {};
  }
  thread_local std::vector<std::vector<uint8_t>> scratch;
  if (scratch.size() < width) scratch.resize(width);
  // Decoding threads live as long as the process (helper_threads.h): the
  // planes of frames larger than our writer's are not kept after the call.
  struct Release {
    std::vector<std::vector<uint8_t>>& planes;
    ~Release() {
      for (auto& p : planes) shed_large_scratch(p);
    }
  } release{scratch};
  std::vector<std::span<const uint8_t>> planes(width);
  uint64_t at = 0;
  for (unsigned j = 0; j < width; ++j) {
    const auto bytes = frame.subspan(at, fr.sizes[j]);
    at += fr.sizes[j];
    if (!fr.coded[j]) {
      planes[j] = bytes;
      continue;
    }
    scratch[j].resize(plane);
    ZT_TRY(zstd_decode_exact(bytes, scratch[j], where));
    planes[j] = scratch[j];
  }
  join(planes, x.layout, dst);
  ZT_FAIL_IF(checksum_of(dst) != fr.checksum, invalid,
             "%s: byte planes: frame %zu does not match its checksum", where.c_str(), k);
  return {};
}

Result<void> byte_planes_decode(std::span<const uint8_t> stored, std::span<uint8_t> dst,
                                const std::string& where, unsigned threads) {
  auto x = byte_planes_index(stored, dst.size(), where);
  ZT_TRY(x);
  if (dst.size() < kMinParallelDecodeBytes) threads = 1;
  const uint64_t fb = x->layout.frame_bytes;
  std::vector<Error> errors(x->frames.size());
  for_each_index(x->frames.size(), threads, [&](size_t k) {
    auto r = byte_planes_decode_frame(byte_planes_frame(stored, *x, k), *x, k,
                                      dst.subspan(k * fb, x->frames[k].decoded), where);
    if (!r) errors[k] = std::move(r).error();
  });
  for (auto& e : errors)
    if (e.status != Status::ok) return std::move(e);
  return {};
}

}  // namespace zt
