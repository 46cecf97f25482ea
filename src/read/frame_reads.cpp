#include "read/frame_reads.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/for_each_index.h"
#include "base/helper_threads.h"
#include "codec/byte_planes.h"
#include "codec/zstd_codec.h"
#include "codec/zstd_seekable.h"
#include "manifest/object_format.h"

namespace zt {

using ull = unsigned long long;

namespace {

// Each frame's decoded bytes, in order.
std::vector<uint64_t> decoded_sizes(std::span<const ZstdFrame> frames) {
  std::vector<uint64_t> out;
  out.reserve(frames.size());
  for (const ZstdFrame& f : frames) out.push_back(f.content_size);
  return out;
}
std::vector<uint64_t> decoded_sizes(const PlanesIndex& index) {
  std::vector<uint64_t> out;
  out.reserve(index.frames.size());
  for (const PlanesFrame& f : index.frames) out.push_back(f.decoded);
  return out;
}

// The frames (of the decoded sizes given) that hold a byte of a run, by
// index, ascending.
std::vector<size_t> frames_holding(const ByteRuns& runs, std::span<const uint64_t> sizes) {
  std::vector<size_t> out;
  size_t fi = 0;
  uint64_t f_lo = 0;  // decoded offset of frame fi
  runs.each([&](uint64_t, uint64_t lo) {
    const uint64_t hi = lo + runs.run_bytes();
    while (fi < sizes.size() && f_lo + sizes[fi] <= lo) f_lo += sizes[fi++];
    uint64_t j_lo = f_lo;
    for (size_t j = fi; j < sizes.size() && j_lo < hi; j_lo += sizes[j++])
      if (out.empty() || out.back() < j) out.push_back(j);
    return fi < sizes.size();
  });
  return out;
}

// Copies bytes [a, b) of the runs' output (dst) from the frames (of the
// decoded sizes given) that hold them: decode(i, out) decodes frame i into
// exactly its bytes and is asked only for those. A frame that the part of
// a run holds whole is decoded straight into dst; one cut by runs once
// into a buffer of the thread's, its pieces copied from there.
template <typename DecodeFrame>
Result<void> copy_part(const ByteRuns& runs, std::span<const uint64_t> sizes, DecodeFrame& decode,
                       std::span<uint8_t> dst, uint64_t a, uint64_t b, const std::string& w) {
  const uint64_t run_bytes = runs.run_bytes();
  size_t fi = 0;
  uint64_t f_lo = 0;  // decoded offset of frame fi
  size_t held = SIZE_MAX;
  thread_local std::vector<uint8_t> partial;  // frame `held`, decoded
  Result<void> status;
  runs.each_from(a / run_bytes, [&](uint64_t i, uint64_t first) {
    // The run's bytes that [a, b) takes, as decoded offsets.
    const uint64_t out = i * run_bytes, lo = first + (std::max(a, out) - out),
                   hi = first + (std::min(b, out + run_bytes) - out);
    uint8_t* const to = dst.data() + std::max(a, out);
    for (uint64_t at = lo; at < hi;) {
      while (fi < sizes.size() && f_lo + sizes[fi] <= at) f_lo += sizes[fi++];
      if (fi == sizes.size()) {
        status = make_error(Status::invalid, "%s: the frames end at byte %llu, before the runs do",
                            w.c_str(), static_cast<ull>(f_lo));
        return false;
      }
      const uint64_t f_hi = f_lo + sizes[fi], end = std::min(hi, f_hi);
      if (at == f_lo && end == f_hi && held != fi) {
        status = decode(fi, std::span(to + (at - lo), sizes[fi]));
      } else {
        if (held != fi) {
          partial.resize(sizes[fi]);
          status = decode(fi, std::span<uint8_t>(partial));
          held = status ? fi : SIZE_MAX;
        }
        if (status) std::memcpy(to + (at - lo), partial.data() + (at - f_lo), end - at);
      }
      if (!status) return false;
      at = end;
    }
    return out + run_bytes < b;
  });
  shed_large_scratch(partial);  // helper threads live on: a large frame's is not kept
  return status;
}

// Copies the runs to dst from the frames that hold them (copy_part), in
// equal shares of dst on every core from kMinParallelDecodeBytes a share
// (a rank's columns of a zstd tensor need every frame of it; rows, every
// frame of theirs), on the caller's thread below: a frame that two shares
// take part of is decoded by both. decode must be thread-safe. The first
// failed share's error, in order.
template <typename DecodeFrame>
Result<void> copy_from(const ByteRuns& runs, std::span<const uint64_t> sizes, DecodeFrame decode,
                       std::span<uint8_t> dst, const std::string& w) {
  const uint64_t total = dst.size();
  const uint64_t shares =
      std::clamp<uint64_t>(total / kMinParallelDecodeBytes, 1, threads_for_all_cores());
  if (shares == 1) return copy_part(runs, sizes, decode, dst, 0, total, w);
  std::vector<Result<void>> results(shares);
  for_each_index(shares, 0, [&](size_t k) {
    results[k] =
        copy_part(runs, sizes, decode, dst, total * k / shares, total * (k + 1) / shares, w);
  });
  for (Result<void>& r : results) ZT_TRY(r);
  return {};
}

// zstd frames, each decoded from the stored bytes frame_bytes(i) gives.
template <typename FrameBytes>
Result<void> copy_from_zstd(const ByteRuns& runs, std::span<const ZstdFrame> frames,
                            FrameBytes frame_bytes, std::span<uint8_t> dst, const std::string& w) {
  const std::vector<uint64_t> sizes = decoded_sizes(frames);
  return copy_from(
      runs, sizes,
      [&](size_t i, std::span<uint8_t> out) { return zstd_decode_exact(frame_bytes(i), out, w); },
      dst, w);
}

// Where a frame's stored bytes lie within its component.
struct StoredAt {
  uint64_t offset = 0, size = 0;
};

// The stored bytes of the frames `at` lists, in that order: viewed in place
// where the source is mapped, else read in one read_many (one request
// remotely) into `held`.
Result<std::vector<std::span<const uint8_t>>> stored_frames(
    const Source& src, const Component& c, std::span<const StoredAt> at,
    std::vector<std::vector<uint8_t>>& held) {
  std::vector<std::span<const uint8_t>> out(at.size());
  if (src.base()) {
    for (size_t k = 0; k < at.size(); ++k)
      out[k] = {src.base() + c.offset + at[k].offset, at[k].size};
    return out;
  }
  held.assign(at.size(), {});
  std::vector<RangeRead> reads;
  reads.reserve(at.size());
  for (size_t k = 0; k < at.size(); ++k) {
    held[k].resize(at[k].size);
    reads.push_back({c.offset + at[k].offset, held[k]});
  }
  ZT_TRY(src.read_many(reads));
  for (size_t k = 0; k < at.size(); ++k) out[k] = held[k];
  return out;
}

// A v2 seekable stream: the seek table is read from its end, then only the
// frames holding a run, each checked against the profile's rules before it
// is decoded. Frames no run touches are not looked at. False for a stream
// of one frame that is mapped (decoded whole, and cached, by the caller).
Result<bool> copy_from_seekable(const ByteRuns& runs, const Source& src, const Component& c,
                                uint64_t total, std::span<uint8_t> dst, const std::string& w) {
  const auto index = read_seekable_index(
      c.length, total,
      [&](uint64_t at, std::span<uint8_t> out) { return src.read_into(c.offset + at, out); }, w);
  ZT_TRY(index);
  if (src.base() && index->size() < 2) return false;
  std::vector<ZstdFrame> frames;
  frames.reserve(index->size());
  for (const SeekableFrame& f : *index) frames.push_back(f.frame);
  const std::vector<size_t> needed = frames_holding(runs, decoded_sizes(frames));
  std::vector<StoredAt> at;
  at.reserve(needed.size());
  for (const size_t i : needed) at.push_back({frames[i].src_offset, frames[i].src_size});
  std::vector<std::vector<uint8_t>> held;
  const auto stored = stored_frames(src, c, at, held);
  ZT_TRY(stored);
  std::vector<size_t> slot(frames.size(), SIZE_MAX);
  for (size_t k = 0; k < needed.size(); ++k) {
    ZT_TRY(check_seekable_frame((*stored)[k], (*index)[needed[k]], needed[k], w));
    slot[needed[k]] = k;
  }
  ZT_TRY(copy_from_zstd(
      runs, frames, [&](size_t i) { return (*stored)[slot[i]]; }, dst, w));
  return true;
}

// Byte planes: the footer, then the index, then only the frames that hold a
// run, each checked before it is decoded. False for a mapped part of one
// frame (decoded whole, and cached, by the caller).
Result<bool> copy_from_planes(const ByteRuns& runs, const Source& src, const Component& c,
                              uint64_t total, std::span<uint8_t> dst, const std::string& w) {
  ZT_FAIL_IF(c.length < kBytePlanesFooterBytes, invalid,
             "%s: byte planes: %llu bytes cannot hold the 16-byte footer", w.c_str(),
             static_cast<ull>(c.length));
  uint8_t footer[kBytePlanesFooterBytes];
  ZT_TRY(src.read_into(c.offset + c.length - kBytePlanesFooterBytes, footer));
  const auto tail_bytes = byte_planes_tail_bytes(footer, c.length, total, w);
  ZT_TRY(tail_bytes);
  std::vector<uint8_t> tail(*tail_bytes);
  ZT_TRY(src.read_into(c.offset + c.length - *tail_bytes, tail));
  const auto index = byte_planes_index_from_tail(tail, c.length, total, w);
  ZT_TRY(index);
  if (src.base() && index->frames.size() < 2) return false;
  const std::vector<uint64_t> sizes = decoded_sizes(*index);
  const std::vector<size_t> needed = frames_holding(runs, sizes);
  std::vector<StoredAt> at;
  at.reserve(needed.size());
  for (const size_t i : needed) at.push_back({index->frames[i].offset, index->frames[i].stored});
  std::vector<std::vector<uint8_t>> held;
  const auto stored = stored_frames(src, c, at, held);
  ZT_TRY(stored);
  std::vector<size_t> slot(sizes.size(), SIZE_MAX);
  for (size_t k = 0; k < needed.size(); ++k) {
    ZT_TRY(byte_planes_check_frame((*stored)[k], *index, needed[k], w));
    slot[needed[k]] = k;
  }
  ZT_TRY(copy_from(
      runs, sizes,
      [&](size_t i, std::span<uint8_t> out) {
        return byte_planes_decode_frame((*stored)[slot[i]], *index, i, out, w);
      },
      dst, w));
  return true;
}

// zstd frames without a seek table (1.x writers record none): where a frame
// ends is known only by walking the frame headers from the start, so they
// are walked up to the frame that holds the last run's end, and only the
// frames that hold a run are decoded; headers past it are not read. Not
// mapped (copy mode, a remote source), the stored prefix that reaches that
// frame is fetched first. Its length is guessed (frames of the writers'
// 1 MiB, or of the size the first frame declares, at the compression ratio
// seen so far, with a sixteenth and 256 KiB to spare): one request
// remotely, as a rule; a short guess grows by half at least. A guess over
// 4 MiB is preceded by a 64 KiB probe, so that a stream of one frame (other
// writers' usual form: decoded whole, and cached, by the caller then) costs
// a small read, not two large ones. False for a single frame or a stream
// whose frame headers up to there do not add up.
Result<bool> copy_from_prefix(const ByteRuns& runs, const Source& src, const Component& c,
                              uint64_t total, std::span<uint8_t> dst, const std::string& w) {
  const uint64_t need = runs.end_byte();
  std::vector<ZstdFrame> frames;
  uint64_t pos = 0, decoded = 0;  // stored and decoded bytes of the frames walked
  const auto stored_guess = [&] {
    const uint64_t frame =
        frames.empty() || frames[0].content_size == 0 ? uint64_t{1} << 20 : frames[0].content_size;
    const uint64_t reach = std::min(total, (need + frame - 1) / frame * frame);
    const double ratio = decoded ? static_cast<double>(pos) / static_cast<double>(decoded)
                                 : static_cast<double>(c.length) / static_cast<double>(total);
    const auto rest = static_cast<uint64_t>(static_cast<double>(reach - decoded) * ratio);
    return pos + rest + rest / 16 + (uint64_t{256} << 10);
  };
  std::vector<uint8_t> have;
  std::span<const uint8_t> view;  // the stored bytes at hand (mapped: all of them)
  const auto fetch = [&](uint64_t upto) -> Result<void> {
    if (src.base()) {
      view = {src.base() + c.offset, c.length};
      return {};
    }
    const size_t old = have.size();
    have.resize(std::min(upto, c.length));
    ZT_TRY(src.read_into(c.offset + old, std::span<uint8_t>(have).subspan(old)));
    view = have;
    return {};
  };
  constexpr uint64_t kProbe = uint64_t{64} << 10, kLargeGuess = uint64_t{4} << 20;
  const uint64_t guess = stored_guess();
  ZT_TRY(fetch(guess > kLargeGuess ? kProbe : guess));
  const auto first = zstd_declared_content_size(view);
  if (!first || *first >= total) return false;
  while (decoded < need) {
    const auto head = pos < view.size() ? zstd_frame_head(view.subspan(pos)) : std::nullopt;
    if (!head) {  // the frame goes on past what was fetched, or is not one
      if (view.size() == c.length) return false;
      ZT_TRY(fetch(std::max(stored_guess(), view.size() + view.size() / 2)));
      continue;
    }
    if (head->content_size) {
      if (*head->content_size > total - decoded) return false;
      frames.push_back(ZstdFrame{pos, head->stored_size, *head->content_size});
      decoded += *head->content_size;
    }
    pos += head->stored_size;
  }
  ZT_TRY(copy_from_zstd(
      runs, frames,
      [&](size_t i) { return view.subspan(frames[i].src_offset, frames[i].src_size); }, dst, w));
  return true;
}

}  // namespace

Result<bool> copy_runs_from_frames(const Reader& r, size_t object, size_t k, const ByteRuns& runs,
                                   std::span<uint8_t> dst) {
  const Object& o = r.manifest().objects[object];
  const Component& c = o.components[k];
  const auto total = r.known_decoded_size(object, k);
  if (!total || *total == 0) return false;
  const std::string w = component_where(o, c);
  ZT_FAIL_IF(*total > r.max_decoded_bytes(), limit,
             "%s: decoded size %llu exceeds the decode limit %llu", w.c_str(),
             static_cast<ull>(*total), static_cast<ull>(r.max_decoded_bytes()));
  auto source = r.source_of(c);
  ZT_TRY(source);
  if (c.encoding == Encoding::byte_planes)
    return copy_from_planes(runs, **source, c, *total, dst, w);
  if (c.encoding_id) return copy_from_seekable(runs, **source, c, *total, dst, w);
  return copy_from_prefix(runs, **source, c, *total, dst, w);
}

}  // namespace zt
