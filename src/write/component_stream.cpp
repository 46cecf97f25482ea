// A component's bytes on their way to the file: the bool rule, hashing
// while writing, zstd frames compressed on the pool and written in order,
// and the "auto" policy that keeps zstd only where it pays.
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/core_count.h"
#include "base/for_each_index.h"
#include "codec/zstd_codec.h"
#include "container/container.h"
#include "write/writer_impl.h"

namespace zt {

using ull = unsigned long long;

unsigned Writer::Impl::threads() const {
  return opt.threads ? opt.threads : core_count();
}

Result<void> Writer::Impl::write_all(std::span<const uint8_t> bytes) {
  if (auto r = file->write(bytes); !r) {
    state = State::failed;
    return r;
  }
  pos += bytes.size();
  return {};
}

Result<void> Writer::Impl::pad_to_alignment() {
  static constexpr uint8_t kZeros[4096] = {};
  uint64_t pad = (alignment() - pos % alignment()) % alignment();
  while (pad > 0) {
    const uint64_t n = std::min<uint64_t>(pad, sizeof kZeros);
    ZT_TRY(write_all(std::span<const uint8_t>(kZeros, n)));
    pad -= n;
  }
  return {};
}

Result<void> Writer::Impl::truncate_to(uint64_t size) {
  if (frames) frames->cancel();
  auto fd = file->fd();
  if (!fd) {
    state = State::failed;
    return std::move(fd).error();
  }
  if (::ftruncate(*fd, static_cast<off_t>(size)) != 0 ||
      ::lseek(*fd, static_cast<off_t>(size), SEEK_SET) < 0) {
    state = State::failed;
    return make_error(Status::io, "%s: truncate failed: %s", path.c_str(), std::strerror(errno));
  }
  pos = size;
  return {};
}

// Writes stored bytes, hashing them on the way (1.2 digests cover stored
// bytes; v2 ones the input, hashed in accept()). From kHashBesideFrom
// bytes on, with another core, the hash runs on a helper thread while this
// one writes (write_hashing_beside; v2's raw input too, from accept()).
// Below that, or on one core, a slice is hashed and then written while it
// is still in cache (one pass over memory instead of two); slices are
// 4 MiB because every write(2) costs kernel time of its own: on a 512 MiB
// write with xxh3, 256 KiB slices ran at 0.68 of a single write(2), 4 MiB
// ones at 0.83; 16 MiB and one call were as fast at best but far more
// spread (BENCHMARKS.md). Without a digest there is nothing to keep in
// cache: the bytes go out in one call.
Result<void> Writer::Impl::emit_stored(std::span<const uint8_t> stored) {
  const bool hash = pending.hasher && !gen().digests_cover_content;
  if (hash && hashes_beside(stored.size())) return write_hashing_beside(stored);
  const size_t kSlice = hash ? size_t{4} << 20 : std::max<size_t>(stored.size(), 1);
  for (size_t at = 0; at < stored.size(); at += kSlice) {
    const auto slice = stored.subspan(at, std::min(kSlice, stored.size() - at));
    if (hash) pending.hasher->update(slice);
    ZT_TRY(write_all(slice));
  }
  pending.out.length += stored.size();
  return {};
}

bool Writer::Impl::hashes_beside(size_t bytes) const {
  return bytes >= kHashBesideFrom && threads() > 1;
}

// The stored bytes written in one call while another thread hashes them
// (the two are the work items of one for_each_index: where no helper
// joins, the caller does both, the write first). On the 2-core VM a
// 512 MiB raw write path with xxh3 went from 0.69 to 0.97 of a plain
// write(2) loop, with sha256 385 -> 283 ms (2026-12-06).
Result<void> Writer::Impl::write_hashing_beside(std::span<const uint8_t> stored) {
  Result<void> written;
  for_each_index(2, 2, [&](size_t item) {
    if (item == 0)
      written = write_all(stored);
    else
      pending.hasher->update(stored);
  });
  ZT_TRY(written);
  pending.out.length += stored.size();
  return {};
}

uint64_t Writer::Impl::frame_size() const {
  return std::max<uint64_t>(opt.frame_size, 1024);
}

FramePipeline& Writer::Impl::pipeline() {
  if (!frames)
    frames = std::make_unique<FramePipeline>(threads() > 1 ? threads() : 0, opt.zstd_level,
                                             gen().seekable_zstd);
  return *frames;
}

// Writes the oldest frame in flight once it is compressed. On failure
// nothing stays in flight, so no worker reads the caller's memory after
// the call that gave it returns.
Result<void> Writer::Impl::write_oldest_frame() {
  auto out = frames->wait_oldest();
  // A byte-planes frame brings its index entries: kept for the footer.
  if (out && pending.mode == Mode::planes) out = pending.planes->adopt_frame(*out);
  Result<void> r = out ? emit_stored(*out) : Result<void>(std::move(out).error());
  if (!r) {
    frames->cancel();
    return r;
  }
  if (gen().seekable_zstd && pending.mode == Mode::zstd) {
    const unsigned long long content = ZSTD_getFrameContentSize(out->data(), out->size());
    pending.seek.push_back(seek_entry(*out, content));
  }
  frames->pop_oldest();
  return {};
}

// Queues one frame, first writing frames to make room, then writing any
// that are already done: the file grows while the workers compress.
Result<void> Writer::Impl::submit_frame(std::span<const uint8_t> input,
                                        std::vector<uint8_t> owned) {
  FramePipeline& p = pipeline();
  while (p.full()) ZT_TRY(write_oldest_frame());
  p.submit(input, std::move(owned),
           pending.mode == Mode::planes ? std::optional(pending.planes->layout()) : std::nullopt);
  while (p.oldest_done()) ZT_TRY(write_oldest_frame());
  return {};
}

Result<void> Writer::Impl::drain_frames() {
  while (frames && frames->in_flight() > 0) ZT_TRY(write_oldest_frame());
  return {};
}

// Compresses `input` (the caller's memory) as frames of frame_size()
// bytes and writes them all before returning.
Result<void> Writer::Impl::emit_frames(std::span<const uint8_t> input) {
  const uint64_t fs = frame_size();
  for (uint64_t at = 0; at < input.size(); at += fs)
    ZT_TRY(submit_frame(input.subspan(at, std::min<uint64_t>(fs, input.size() - at))));
  return drain_frames();
}

// Queues pending.frame as an owned frame; the frames stay in flight
// across write() calls until end_component().
Result<void> Writer::Impl::submit_pending_frame() {
  std::vector<uint8_t> owned = std::exchange(pending.frame, pipeline().spare_buffer());
  const std::span<const uint8_t> input(owned);
  return submit_frame(input, std::move(owned));
}

// Byte planes: the input gathered into frames of kPlanesFrameBytes, each
// encoded by the frame pipeline's workers as it fills (the last at
// end_component) and written in order, as zstd frames are.
Result<void> Writer::Impl::accept_planes(std::span<const uint8_t> data) {
  while (!data.empty()) {
    const uint64_t take = std::min<uint64_t>(data.size(), kPlanesFrameBytes - pending.frame.size());
    pending.frame.insert(pending.frame.end(), data.begin(),
                         data.begin() + static_cast<ptrdiff_t>(take));
    data = data.subspan(take);
    if (pending.frame.size() < kPlanesFrameBytes) break;
    ZT_TRY(submit_pending_frame());
  }
  return {};
}

PlanesChoice planes_choice(DType dt, const LogicalType* lt) {
  const auto width = static_cast<uint8_t>(dtype_width(dt));
  const bool ieee =
      !lt && (dt == DType::f16 || dt == DType::bf16 || dt == DType::f32 || dt == DType::f64);
  return {PlanesLayout{width, ieee && width > 1, kPlanesFrameBytes}, ieee && width > 1};
}

// "auto": compress the first batch; keep zstd only if it shrinks enough. In
// a v2 file a float component also tries byte planes, taken where they beat
// zstd by kAutoPlanesMargin.
Result<void> Writer::Impl::decide_auto(std::span<const uint8_t> input) {
  std::vector<uint8_t> probe;
  const auto sample = input.first(std::min<uint64_t>(input.size(), frame_size()));
  ZT_TRY(zstd_compress_frame(sample, opt.zstd_level, probe));
  const double most = opt.auto_min_ratio * static_cast<double>(sample.size());
  pending.mode = static_cast<double>(probe.size()) <= most ? Mode::zstd : Mode::raw;
  const PlanesChoice planes = planes_choice(pending.out.dtype, pending.out.known_type);
  const size_t whole = sample.size() / planes.layout.width * planes.layout.width;
  if (gen().v2_vocabulary && planes.float_planes && whole > 0) {
    std::vector<uint8_t> tried;
    ZT_TRY(byte_planes_encode(sample.first(whole), planes.layout, opt.zstd_level, tried));
    // (the planes saw up to width - 1 bytes fewer: nothing at these sizes)
    const auto size = static_cast<double>(tried.size());
    if (size <= most && size <= kAutoPlanesMargin * static_cast<double>(probe.size())) {
      pending.mode = Mode::planes;
      pending.planes.emplace(planes.layout, opt.zstd_level);
    }
  }
  pending.out.encoding = pending.mode == Mode::zstd     ? Encoding::zstd
                         : pending.mode == Mode::planes ? Encoding::byte_planes
                                                        : Encoding::raw;
  return {};
}

Result<void> Writer::Impl::accept(std::span<const uint8_t> data) {
  if (pending.check_bool) {
    const auto bad = std::find_if(data.begin(), data.end(), [](uint8_t b) { return b > 1; });
    ZT_FAIL_IF(
        bad != data.end(), argument,
        "object \"%s\": component \"%s\": bool byte 0x%02x at element %llu is neither 0 nor 1",
        current.name.c_str(), pending.out.role.c_str(), *bad,
        static_cast<ull>(pending.received + static_cast<uint64_t>(bad - data.begin())));
  }
  ZT_FAIL_IF(data.size() > pending.declared - pending.received, argument,
             "object \"%s\": component \"%s\": more bytes than the %llu announced",
             current.name.c_str(), pending.out.role.c_str(), static_cast<ull>(pending.declared));
  pending.received += data.size();
  if (!data.empty()) pending.last = data.back();
  if (gen().digests_cover_content && pending.hasher) {
    // Raw, the input is what is stored: hashed beside its write as 1.2's
    // stored bytes are (emit_stored).
    if (pending.mode == Mode::raw && hashes_beside(data.size())) return write_hashing_beside(data);
    pending.hasher->update(data);
  }
  if (pending.mode == Mode::undecided) {
    // The decision sees the component's first frame (all of it, when it is
    // smaller) however the pieces cut it: the same bytes give the same file.
    const uint64_t want = std::min<uint64_t>(frame_size(), pending.declared);
    std::vector<uint8_t>& sample = pending.auto_sample;
    if (sample.empty() && data.size() >= want) {
      ZT_TRY(decide_auto(data));  // the first piece holds it: no copy
      return emit_piece(data);
    }
    const auto take = static_cast<size_t>(std::min<uint64_t>(data.size(), want - sample.size()));
    sample.insert(sample.end(), data.begin(), data.begin() + static_cast<ptrdiff_t>(take));
    if (sample.size() < want) return {};
    ZT_TRY(decide_auto(sample));
    const std::vector<uint8_t> held = std::move(sample);
    sample = {};
    ZT_TRY(emit_piece(held));
    return emit_piece(data.subspan(take));
  }
  return emit_piece(data);
}

Result<void> Writer::Impl::emit_piece(std::span<const uint8_t> data) {
  if (pending.mode == Mode::raw) return emit_stored(data);
  if (pending.mode == Mode::planes) return accept_planes(data);
  // zstd. Frames start every frame_size() bytes of the component, whatever
  // the pieces and threads. A piece that fills the whole pipeline goes out
  // without a copy (and is written before this call returns); smaller
  // pieces are gathered into owned frames, which stay in flight across
  // calls so that the workers are kept busy by pieces of any size.
  const uint64_t fs = frame_size();
  const uint64_t zero_copy_min = fs * pipeline().capacity();
  while (!data.empty()) {
    if (pending.frame.empty() && data.size() >= zero_copy_min) {
      const uint64_t whole = data.size() / fs * fs;
      ZT_TRY(emit_frames(data.first(whole)));
      data = data.subspan(whole);
      continue;
    }
    // Room for this frame, but never more than the component still brings:
    // a 16 KiB component does not reserve a 256 MiB frame.
    const uint64_t coming = data.size() + (pending.declared - pending.received);
    const uint64_t want = std::min<uint64_t>(fs, pending.frame.size() + coming);
    if (pending.frame.capacity() < want) pending.frame.reserve(want);
    const uint64_t take = std::min<uint64_t>(data.size(), fs - pending.frame.size());
    pending.frame.insert(pending.frame.end(), data.begin(),
                         data.begin() + static_cast<ptrdiff_t>(take));
    data = data.subspan(take);
    if (pending.frame.size() == fs) ZT_TRY(submit_pending_frame());
  }
  return {};
}

}  // namespace zt
