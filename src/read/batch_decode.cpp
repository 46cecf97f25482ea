#include "read/batch_decode.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "base/arithmetic.h"
#include "base/core_count.h"
#include "base/for_each_index.h"
#include "base/helper_threads.h"
#include "base/work_queue.h"
#include "codec/zstd_codec.h"
#include "codec/zstd_seekable.h"
#include "source/range_source.h"

namespace zt {

namespace {

// Raw bytes are copied in slices of at least this size, and of at most an
// equal share per thread: few large copies (a pread each from a file, a
// memcpy with its non-temporal path from memory) beat many cache-sized
// ones, and still spread over the threads.
constexpr uint64_t kMinRawSlice = uint64_t{8} << 20;
// ... unless the call is smaller than that a thread (a 16 MiB staging buffer
// on 16 cores made 2 slices): then its equal share a thread, down to this.
constexpr uint64_t kLeastRawSlice = uint64_t{1} << 20;
constexpr uint64_t kPage = 4096;
// Stored ranges closer than this are announced to the kernel as one; runs
// shorter than kAdviseLeast are not announced at all: the kernel's own
// readahead (128 KiB and more) covers them at their first read, and the
// call would be most of the cost of decoding one small tensor.
constexpr uint64_t kAdviseGap = uint64_t{1} << 20;
constexpr uint64_t kAdviseLeast = uint64_t{256} << 10;
// Raw reads smaller than this are gathered, in file order, into tasks of
// up to kGatherPieces reads and kGatherBytes bytes, each read by one
// Source::read_many: over HTTP one request where it was one a tensor
// (from nginx on loopback, 20,000 tensors of 1 KiB: 20,002 requests and
// 1.6 s, now 22 and 0.3-0.5 s; 500 of 256 KiB beside 8 large ones: 518
// requests, now 34); from a file a preadv(2) per run of neighbouring
// reads instead of a copy out of the mapping each, which first faults
// every page into the process (the 20,000 from a fresh reader: 26-27 ms,
// now 11-15 ms, on the project's 2-core VM).
constexpr uint64_t kGatherBelow = uint64_t{1} << 20;
constexpr size_t kGatherPieces = 1024;  // IOV_MAX on Linux: one preadv
constexpr uint64_t kGatherBytes = kMinRawSlice;

struct Task {
  // zstd_walk: finds the frames of a multi-frame zstd component and queues
  // one zstd_frame task for each. raw_gather: small raw reads of several
  // requests, Plan::pieces [src_offset, src_offset + src_size), read at
  // once; frame_size holds their bytes.
  // fetch_group: whole tasks of small encoded components of a remote file,
  // Plan::fetches [src_offset, src_offset + src_size), whose stored
  // bytes are fetched into the reader's cache at once first.
  enum class Kind : uint8_t { raw_slice, zstd_frame, zstd_walk, whole, raw_gather, fetch_group };
  Kind kind = Kind::whole;
  size_t request = 0;
  uint64_t src_offset = 0;  // raw_slice: in the file; zstd_frame: in the component's stored bytes
  uint64_t src_size = 0;    // zstd_frame: stored bytes of the frame
  std::span<uint8_t> dst;
  // zstd_frame of a range request: the frame decodes to `frame_size` bytes
  // of which dst takes those from `skip` on (dst is all of them when the
  // frame lies inside the range).
  uint64_t frame_size = 0;
  uint64_t skip = 0;
};

struct Range {
  uint64_t begin, end;
};

// One small raw read of a gather: request `request`'s bytes.
struct Piece {
  size_t request;
  RangeRead read;
};

// One small encoded component of a remote file: request `request`'s
// stored bytes [offset, offset + length).
struct Fetch {
  size_t request;
  uint64_t offset, length;
};

struct Plan {
  unsigned threads = 1;
  uint64_t bytes = 0;  // the requests' destination bytes together
  std::vector<Task> tasks;
  std::vector<Piece> pieces;         // small raw reads, in file order once gathered
  std::vector<RangeRead> reads;      // pieces' reads, in the same order (read_many's ranges)
  // Small encoded components of a remote file, in file order once grouped,
  // and their stored bytes as (offset, length) in the same order.
  std::vector<Fetch> fetches;
  std::vector<std::pair<uint64_t, uint64_t>> fetch_ranges;
  std::vector<Task> walks;           // zstd_walk tasks, one a component
  std::vector<uint64_t> split_size;  // decoded size of each request split into slices or frames
  std::vector<Range> stored;         // stored bytes the tasks will read (announced through the mapping)
};

const Component& component_of(const Reader& r, const DecodeRequest& q) {
  return r.manifest().objects[q.object].components[q.component];
}

Error index_problem(const Reader& r, const DecodeRequest& q) {
  const auto& objects = r.manifest().objects;
  if (q.object >= objects.size())
    return make_error(Status::not_found,
                      "object index %zu is out of range (the file has %zu objects)", q.object,
                      objects.size());
  const Object& o = objects[q.object];
  if (q.component >= o.components.size())
    return make_error(Status::not_found,
                      "object \"%s\": component index %zu is out of range (it has %zu)",
                      o.name.c_str(), q.component, o.components.size());
  // The reader's own rule for objects it cannot hand out (0.1.0 sparse
  // layouts): the same status as zt_component_read.
  if (!o.unsupported.empty()) return make_error(Status::unsupported, "%s", o.unsupported.c_str());
  return {};
}

// The decoded bytes a request asks for: [first, end).
struct Wanted {
  uint64_t first, end;
};

Wanted wanted(const DecodeRequest& q, uint64_t whole) {
  if (!q.first) return {0, whole};
  return {*q.first, *q.first + q.dst.size()};
}

// Whether the request's range lies within `whole` decoded bytes (a request
// for all of them: whether they fit its buffer).
bool request_fits(const DecodeRequest& q, uint64_t whole) {
  if (!q.first) return whole <= q.dst.size();
  return *q.first <= whole && q.dst.size() <= whole - *q.first;
}

void plan_raw_slices(const Component& c, const DecodeRequest& q, size_t index, Plan& p) {
  const Wanted w = wanted(q, c.length);
  if (w.end - w.first < kGatherBelow) {
    // dst may be larger than the component (a whole-component request's
    // capacity): the read is the component's bytes only.
    if (w.end > w.first)
      p.pieces.push_back(Piece{index, RangeRead{c.offset + w.first, q.dst.first(w.end - w.first)}});
    p.split_size[index] = w.end - w.first;
    return;
  }
  const auto page_share = [&](uint64_t n) { return ceil_div(n / p.threads, kPage) * kPage; };
  const uint64_t share = page_share(w.end - w.first);
  const uint64_t least = std::clamp(page_share(p.bytes), kLeastRawSlice, kMinRawSlice);
  const uint64_t slice = std::max(least, share);
  for (uint64_t at = w.first; at < w.end; at += slice) {
    const uint64_t n = std::min(slice, w.end - at);
    p.tasks.push_back(
        Task{Task::Kind::raw_slice, index, c.offset + at, n, q.dst.subspan(at - w.first, n)});
  }
  p.split_size[index] = w.end - w.first;
}

// A zstd component whose size is known, allowed and fits is decoded a frame
// at a time on every thread, in map mode. Where a 1.x stream's frames are
// is known only by walking it header by header (each frame's blocks, ~8 a
// MiB): cold, that reads the whole component from the disk. So this plans
// a walk, a task of its own, run while the other threads decode the frames
// it has found (on the project's VM, a 1.2 zstd model on a disk throttled
// to 500 MB/s loaded in 2.4-3.5 s when every component was walked before
// the first frame was decoded). A v2 seekable stream's walk reads its seek
// table, then checks each frame against it as it goes: checking them all
// first read the whole component the same way.
bool plan_zstd_frames(const Reader& r, const DecodeRequest& q, size_t index, Plan& p) {
  if (!r.source().base()) return false;  // copy mode: Reader::read loads the stored bytes
  const auto n = r.known_decoded_size(q.object, q.component);
  if (!n || *n > r.max_decoded_bytes() || !request_fits(q, *n)) return false;
  // A stream whose first frame declares all of its bytes is one frame (or
  // breaks a rule): read whole, as its header alone says, with no walk.
  const Component& c = component_of(r, q);
  const auto first = zstd_declared_content_size({r.source().base() + c.offset, c.length});
  if (!first || *first >= *n) return false;
  p.walks.push_back(Task{Task::Kind::zstd_walk, index, 0, 0, q.dst, *n});
  const Wanted w = wanted(q, *n);
  p.split_size[index] = w.end - w.first;
  return true;
}

// Plain little-endian raw data becomes slices, multi-frame zstd becomes
// frames; everything else, and every request that breaks a rule, stays one
// task for Reader::read, whose checks and messages then apply unchanged.
void plan_request(const Reader& r, const DecodeRequest& q, size_t index, Plan& p) {
  const Component& c = component_of(r, q);
  // The tasks below read this file's source; a part in a shard (or a held
  // buffer) is read whole by Reader::read, which opens its file.
  if (c.shard || c.held) {
    p.tasks.push_back(Task{Task::Kind::whole, index, 0, 0, q.dst});
    return;
  }
  const bool raw_slices = c.encoding == Encoding::raw && !c.big_endian && request_fits(q, c.length);
  // Raw slices read only the wanted bytes; anything else may read all.
  const Wanted w = raw_slices ? wanted(q, c.length) : Wanted{0, c.length};
  if (r.source().base() && w.end > w.first)
    p.stored.push_back(Range{c.offset + w.first, c.offset + w.end});
  if (raw_slices) return plan_raw_slices(c, q, index, p);
  if (c.encoding == Encoding::zstd && plan_zstd_frames(r, q, index, p)) return;
  // Remotely each whole read fetches its stored bytes: small ones are
  // fetched together first (fetch_group), as small raw reads are gathered.
  if (r.source().ranges() && c.length > 0 && c.length < kGatherBelow) {
    p.fetches.push_back(Fetch{index, c.offset, c.length});
    return;
  }
  p.tasks.push_back(Task{Task::Kind::whole, index, 0, 0, q.dst});
}

// Cuts items [0, n), in file order, into `kind` tasks of at most
// kGatherPieces items and kGatherBytes bytes; an item that overlaps the one
// before (two requests for the same bytes) starts a new task, as read_many
// and prefetch take ranges that do not overlap. extent(i): item i's
// (offset, length); request(i): its request.
template <class Extent, class RequestOf>
void cut_into_tasks(Task::Kind kind, size_t n, Extent extent, RequestOf request, Plan& p) {
  size_t first = 0;
  uint64_t bytes = 0, end = 0;
  for (size_t i = 0; i <= n; ++i) {
    const auto [offset, length] = i < n ? extent(i) : std::pair<uint64_t, uint64_t>{0, 0};
    if (i > first &&
        (i == n || i - first == kGatherPieces || bytes + length > kGatherBytes || offset < end)) {
      p.tasks.push_back(Task{kind, request(first), first, i - first, {}, bytes});
      first = i;
      bytes = 0;
    }
    bytes += length;
    end = offset + length;
  }
}

// The small raw reads in file order, cut into raw_gather tasks.
void plan_gathers(Plan& p) {
  std::stable_sort(p.pieces.begin(), p.pieces.end(),
                   [](const Piece& a, const Piece& b) { return a.read.offset < b.read.offset; });
  cut_into_tasks(
      Task::Kind::raw_gather, p.pieces.size(),
      [&](size_t i) {
        return std::pair<uint64_t, uint64_t>{p.pieces[i].read.offset, p.pieces[i].read.dst.size()};
      },
      [&](size_t i) { return p.pieces[i].request; }, p);
  p.reads.reserve(p.pieces.size());
  for (const Piece& piece : p.pieces) p.reads.push_back(piece.read);
}

// The small encoded components of a remote file in file order, cut into
// fetch_group tasks.
void plan_fetch_groups(Plan& p) {
  std::stable_sort(p.fetches.begin(), p.fetches.end(),
                   [](const Fetch& a, const Fetch& b) { return a.offset < b.offset; });
  cut_into_tasks(
      Task::Kind::fetch_group, p.fetches.size(),
      [&](size_t i) {
        return std::pair<uint64_t, uint64_t>{p.fetches[i].offset, p.fetches[i].length};
      },
      [&](size_t i) { return p.fetches[i].request; }, p);
  p.fetch_ranges.reserve(p.fetches.size());
  for (const Fetch& f : p.fetches) p.fetch_ranges.emplace_back(f.offset, f.length);
}

// Whether a task runs items of several requests (Plan::pieces or
// Plan::fetches [src_offset, src_offset + src_size)).
bool is_group(const Task& t) {
  return t.kind == Task::Kind::raw_gather || t.kind == Task::Kind::fetch_group;
}

// The request of item i of a group task.
size_t group_request(const Plan& p, const Task& t, size_t i) {
  const size_t at = t.src_offset + i;
  return t.kind == Task::Kind::raw_gather ? p.pieces[at].request : p.fetches[at].request;
}

// The bytes a task writes: what orders the tasks, largest first.
uint64_t task_bytes(const Task& t) {
  return is_group(t) ? t.frame_size : t.dst.size();
}

// Tells the kernel up front which stored bytes are coming (madvise
// WILLNEED). Linux starts reading at most one readahead window per call
// (max of read_ahead_kb and the device's largest request: 8 MiB on the
// project's VM, often 128 KiB), so this starts the first window of each run
// of ranges; the rest comes by the threads' own reads (a raw slice of
// 64 KiB or more of a file is read with pread, whose readahead keeps the
// disk busy). Advising a whole
// 1 GiB file window by window, up front or from a thread, made a cold load
// slower there (1.37 s and 1.18 s against 0.85 s). Neighbouring ranges are
// merged to keep the system calls few.
void announce(const Reader& r, std::vector<Range>& stored) {
  if (stored.empty()) return;
  std::sort(stored.begin(), stored.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  const auto advise = [&](const Range& run) {
    if (run.end - run.begin >= kAdviseLeast)
      r.source().advise(run.begin, run.end - run.begin, MADV_WILLNEED);
  };
  Range run = stored.front();
  for (const Range& s : stored) {
    if (s.begin <= run.end + kAdviseGap) {
      run.end = std::max(run.end, s.end);
      continue;
    }
    advise(run);
    run = s;
  }
  advise(run);
}

// A frame of which the range takes a part: decoded whole into a scratch
// buffer (one frame, 1 MiB as our writer makes them), the part copied out.
Result<void> decode_frame_part(std::span<const uint8_t> frame, const Task& t,
                               const std::string& where) {
  thread_local std::vector<uint8_t> scratch;
  scratch.resize(t.frame_size);
  auto decoded = zstd_decode_exact(frame, scratch, where);
  if (decoded) std::memcpy(t.dst.data(), scratch.data() + t.skip, t.dst.size());
  // Helper threads live on (helper_threads.h): a large frame's is not kept.
  shed_large_scratch(scratch);
  return decoded;
}

// A range of a component that was not split into slices or frames (big-
// endian raw data, a single zstd frame, a part in a shard, copy mode):
// its decoded bytes streamed a window at a time up to the range's end,
// the range copied out; memory stays one window.
Result<void> read_range(const Reader& r, const DecodeRequest& q) {
  const Object& o = r.manifest().objects[q.object];
  const Component& c = o.components[q.component];
  const uint64_t first = *q.first;
  ZT_FAIL_IF(q.dst.size() > UINT64_MAX - first, argument,
             "%s: a range of %zu bytes from %llu runs past 2^64", component_where(o, c).c_str(),
             q.dst.size(), static_cast<unsigned long long>(first));
  const uint64_t end = first + q.dst.size();
  auto outside = [&](uint64_t decoded) {
    return make_error(
        Status::argument, "%s: bytes [%llu, %llu) are not within its %llu decoded bytes",
        component_where(o, c).c_str(), static_cast<unsigned long long>(first),
        static_cast<unsigned long long>(end), static_cast<unsigned long long>(decoded));
  };
  // Known ahead where the manifest implies it; else found at the stream's end.
  if (auto n = r.known_decoded_size(q.object, q.component); n && !request_fits(q, *n))
    return outside(*n);
  auto windows = r.windows(q.object, q.component);
  ZT_TRY(windows);
  uint64_t at = 0;  // decoded offset of the window
  while (at < end) {
    auto w = (*windows)->next();
    ZT_TRY(w);
    if (w->empty()) return outside(at);
    const uint64_t lo = std::max(at, first), hi = std::min(at + w->size(), end);
    if (lo < hi) std::memcpy(q.dst.data() + (lo - first), w->data() + (lo - at), hi - lo);
    at += w->size();
  }
  return {};
}

// Per request: tasks still to run; whether one has failed (the first
// failure's error is the request's; only its task writes q.error); and
// whether its frames turned out not to index its component, so that it is
// read whole once the frame tasks queued before then have ended.
struct Progress {
  explicit Progress(size_t requests) : left(requests), failed(requests), whole(requests) {}
  std::vector<std::atomic<size_t>> left;
  std::vector<std::atomic<bool>> failed;
  std::vector<std::atomic<bool>> whole;
};

// The tasks still to run, shared by the threads: the plan's, then the
// frames the walks find (a zstd_walk task is a "lead").
using TaskQueue = WorkQueue<Task>;

// Finds the frames of a zstd_walk task's component and hands `queue` a
// zstd_frame task for each frame the request takes bytes of, as they are
// found; the first only once a second is found (a single frame is read
// whole). A v2 seekable stream's frames come from its seek table, read from
// the stream's end, each checked against its entry as the walk reaches it
// (every frame, as Reader::stored checks them, whatever the request takes);
// a 1.x stream is walked header by header. False where the frames do not
// index the component as decoding frame by frame needs (a seekable stream
// that breaks a rule, a frame without its content size, sizes that do not
// add up, a stream that does not parse): the request is then read whole by
// Reader::read, whose checks and messages apply.
bool walk_frames(const Reader& r, const Task& walk, const DecodeRequest& q,
                 const std::function<void(const Task&)>& queue) {
  const Object& o = r.manifest().objects[q.object];
  const Component& c = o.components[q.component];
  const uint64_t total = walk.frame_size;  // the component's decoded size
  const Wanted w = wanted(q, total);
  size_t frames = 0;
  std::optional<Task> first;
  uint64_t out = 0;  // decoded offset of the frame
  auto found = [&](const ZstdFrame& f) {
    std::optional<Task> t;
    const uint64_t lo = std::max(out, w.first), hi = std::min(out + f.content_size, w.end);
    if (lo < hi)
      t = Task{Task::Kind::zstd_frame, walk.request, f.src_offset, f.src_size,
               q.dst.subspan(lo - w.first, hi - lo), f.content_size, lo - out};
    out += f.content_size;
    if (++frames == 1) {
      first = t;
      return;
    }
    if (first) queue(*std::exchange(first, std::nullopt));
    if (t) queue(*t);
  };
  const std::span<const uint8_t> stored(r.source().base() + c.offset, c.length);
  if (c.encoding_id) {
    const std::string where = component_where(o, c);
    const auto index = read_seekable_index(
        c.length, total,
        [&](uint64_t at, std::span<uint8_t> dst) {
          return r.source().read_into(c.offset + at, dst);
        },
        where);
    if (!index) return false;
    for (size_t i = 0; i < index->size(); ++i) {
      const ZstdFrame& f = (*index)[i].frame;
      if (!check_seekable_frame(stored.subspan(f.src_offset, f.src_size), (*index)[i], i, where))
        return false;
      found(f);
    }
    return frames >= 2;
  }
  return zstd_each_frame(stored, total, found) && frames >= 2;
}

Result<void> run_task(const Reader& r, const Task& t, DecodeRequest& q) {
  switch (t.kind) {
    case Task::Kind::raw_slice:
      return r.source().read_into(t.src_offset, t.dst);
    case Task::Kind::zstd_frame: {
      const Object& o = r.manifest().objects[q.object];
      const Component& c = o.components[q.component];
      const std::span<const uint8_t> frame(r.source().base() + c.offset + t.src_offset, t.src_size);
      if (t.dst.size() != t.frame_size) return decode_frame_part(frame, t, component_where(o, c));
      return zstd_decode_exact(frame, t.dst, component_where(o, c));
    }
    case Task::Kind::zstd_walk:  // run_all's own
    case Task::Kind::raw_gather:
    case Task::Kind::fetch_group:
      return {};
    case Task::Kind::whole: {
      // The only task of its request: nothing else writes q.written.
      if (q.first) {
        ZT_TRY(read_range(r, q));
        q.written = q.dst.size();
        return {};
      }
      auto n = r.read(q.object, q.component, q.dst);
      if (!n) return std::move(n).error();
      q.written = *n;
      return {};
    }
  }
  return {};
}

// A raw_gather task: its reads at once; where that fails, each on its own
// (by read_many still: from a mapped file, a pread, not a copy out of the
// mapping, which raises SIGBUS past the end of a file cut short), so that
// every request gets its own outcome: the tensors past the cut fail, the
// others are read.
void run_gather(const Reader& r, const Plan& p, const Task& t, std::span<DecodeRequest> requests,
                Progress& progress) {
  const auto reads = std::span(p.reads).subspan(t.src_offset, t.src_size);
  if (r.source().read_many(reads)) return;
  for (size_t i = 0; i < reads.size(); ++i) {
    const size_t k = group_request(p, t, i);
    auto res = r.source().read_many(reads.subspan(i, 1));
    if (!res && !progress.failed[k].exchange(true)) requests[k].error = std::move(res).error();
  }
}

// Runs every task of the plan, and the frame tasks its walks queue, on up
// to p.threads threads, telling `done` of each request as its last task
// ends.
void run_all(const Reader& r, Plan& p, std::span<DecodeRequest> requests, Progress& progress,
             const DecodeDone& done) {
  TaskQueue queue(p.tasks, p.walks);
  // The end of one of request k's tasks. The last one tells `done`; or,
  // where the request's frames did not index its component, queues it to
  // be read whole (after every frame task of it has ended: they write the
  // same bytes).
  auto ended = [&](size_t k) {
    // acq_rel: the last task to end sees every other task's writes.
    if (progress.left[k].fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    DecodeRequest& q = requests[k];
    if (progress.whole[k].exchange(false)) {
      q.error = {};
      progress.failed[k] = false;
      p.split_size[k] = 0;
      progress.left[k] = 1;
      queue.push(Task{Task::Kind::whole, k, 0, 0, q.dst});
      return;
    }
    if (done) done(k, q.error.status);
  };
  auto drain = [&] {
    while (const std::optional<Task> t = queue.next()) {
      const size_t k = t->request;
      DecodeRequest& q = requests[k];
      if (t->kind == Task::Kind::raw_gather) {
        run_gather(r, p, *t, requests, progress);
        for (size_t i = 0; i < t->src_size; ++i) ended(group_request(p, *t, i));
        continue;
      }
      if (t->kind == Task::Kind::fetch_group) {
        // Into the cache at once, then each component read whole as a task
        // of its own (any thread may take it); a failed fetch shows again,
        // with its own message, in the read of each component it held.
        (void)r.source().ranges()->prefetch(
            std::span(p.fetch_ranges).subspan(t->src_offset, t->src_size));
        for (size_t i = 0; i < t->src_size; ++i) {
          const size_t j = group_request(p, *t, i);
          queue.push(Task{Task::Kind::whole, j, 0, 0, requests[j].dst});
        }
        continue;
      }
      if (t->kind == Task::Kind::zstd_walk) {
        const bool indexed = walk_frames(r, *t, q, [&](const Task& frame) {
          progress.left[k].fetch_add(1, std::memory_order_relaxed);
          queue.push(frame);
        });
        if (!indexed) progress.whole[k] = true;
        queue.lead_ended();
      } else if (t->kind != Task::Kind::zstd_frame || !progress.whole[k]) {
        // (A frame of a request to be read whole is skipped.)
        auto res = run_task(r, *t, q);
        if (!res && !progress.failed[k].exchange(true)) q.error = std::move(res).error();
      }
      ended(k);
    }
  };
  // One drain a thread. Walks queue tasks as they go: with walks, every
  // thread may find work.
  const size_t threads = p.walks.empty() ? std::min<size_t>(p.threads, p.tasks.size()) : p.threads;
  for_each_index(threads, p.threads, [&](size_t) { drain(); });
}

}  // namespace

Result<void> decode_many(const Reader& reader, std::span<DecodeRequest> requests, unsigned threads,
                         const DecodeDone& done) {
  Plan plan;
  plan.threads = threads ? threads : core_count();
  plan.split_size.assign(requests.size(), 0);
  for (const DecodeRequest& q : requests) plan.bytes += q.dst.size();
  for (size_t i = 0; i < requests.size(); ++i) {
    DecodeRequest& q = requests[i];
    q.written = 0;
    q.error = index_problem(reader, q);
    if (q.error.status == Status::ok) plan_request(reader, q, i, plan);
  }
  plan_gathers(plan);
  plan_fetch_groups(plan);
  announce(reader, plan.stored);
  // Largest tasks first, so that the small ones fill in behind them; equal
  // sizes (the frames of a component) keep their order in the file.
  std::stable_sort(plan.tasks.begin(), plan.tasks.end(),
                   [](const Task& a, const Task& b) { return task_bytes(a) > task_bytes(b); });
  Progress progress(requests.size());
  for (const Task& t : plan.tasks) {
    if (!is_group(t)) {
      progress.left[t.request].fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    for (size_t i = 0; i < t.src_size; ++i)
      progress.left[group_request(plan, t, i)].fetch_add(1, std::memory_order_relaxed);
  }
  for (const Task& t : plan.walks) progress.left[t.request].fetch_add(1, std::memory_order_relaxed);
  // Requests with nothing to run (refused, or empty) are complete already.
  for (size_t i = 0; i < requests.size(); ++i)
    if (progress.left[i].load(std::memory_order_relaxed) == 0 && done)
      done(i, requests[i].error.status);
  run_all(reader, plan, requests, progress, done);

  const DecodeRequest* first_failed = nullptr;
  for (size_t i = 0; i < requests.size(); ++i) {
    DecodeRequest& q = requests[i];
    if (q.error.status != Status::ok) {
      q.written = 0;
      if (!first_failed) first_failed = &q;
    } else if (plan.split_size[i]) {
      q.written = plan.split_size[i];
    }
  }
  if (first_failed) return first_failed->error;
  return {};
}

}  // namespace zt
