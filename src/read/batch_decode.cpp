#include "read/batch_decode.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "base/core_count.h"
#include "base/for_each_index.h"
#include "base/helper_threads.h"
#include "base/work_queue.h"
#include "codec/zstd_codec.h"
#include "codec/zstd_seekable.h"
#include "read/batch_plan.h"
#include "read/frame_reads.h"
#include "source/range_source.h"

namespace zt::batch {

namespace {

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
// endian raw data, a single zstd frame, zstd in copy mode or remotely):
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
  // Frames that record their sizes: only those holding the range, found and
  // checked as rows and slices find and check them.
  if ((c.encoding == Encoding::zstd || c.encoding == Encoding::byte_planes) && !c.big_endian) {
    auto by_frames =
        copy_runs_from_frames(r, q.object, q.component, OneRun(first, q.dst.size()), q.dst);
    ZT_TRY(by_frames);
    if (*by_frames) return {};
  }
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
  // One frame (or frames that do not say where they end): the range took
  // bytes of it, so it is decoded to its end and checked whole, as every
  // other read of part of it decodes it (rows and slices, into the cache).
  if (c.encoding != Encoding::raw)
    for (;;) {
      auto w = (*windows)->next();
      ZT_TRY(w);
      if (w->empty()) break;
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
// the stream's end; a 1.x stream is walked header by header. A whole
// request checks every frame (each seekable frame against its entry, as
// Reader::stored does; every 1.x header, the sizes adding up); a range
// checks what it reads, as rows and slices do (frame_reads.h): the frames
// it takes bytes of, and a 1.x stream's headers up to the one that holds
// its end. False where the frames do not index the component as decoding
// frame by frame needs (a seekable stream that breaks a rule, a frame
// without its content size, sizes that do not add up, a stream that does
// not parse): the request is then read whole by Reader::read, or a range
// by read_range, whose checks and messages apply.
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
      t = Task{Task::Kind::zstd_frame,
               walk.request,
               f.src_offset,
               f.src_size,
               q.dst.subspan(lo - w.first, hi - lo),
               f.content_size,
               lo - out,
               walk.src};
    out += f.content_size;
    if (++frames == 1) {
      first = t;
      return;
    }
    if (first) queue(*std::exchange(first, std::nullopt));
    if (t) queue(*t);
  };
  const Source& src = *walk.src;
  const std::span<const uint8_t> stored(src.base() + c.offset, c.length);
  if (c.encoding_id) {
    const std::string where = component_where(o, c);
    const auto index = read_seekable_index(
        c.length, total,
        [&](uint64_t at, std::span<uint8_t> dst) { return src.read_into(c.offset + at, dst); },
        where);
    if (!index) return false;
    for (size_t i = 0; i < index->size(); ++i) {
      const ZstdFrame& f = (*index)[i].frame;
      const bool taken = out < w.end && out + f.content_size > w.first;
      if ((taken || !q.first) &&
          !check_seekable_frame(stored.subspan(f.src_offset, f.src_size), (*index)[i], i, where))
        return false;
      found(f);
    }
    return frames >= 2;
  }
  if (!zstd_each_frame(stored, total, found, q.first ? w.end : UINT64_MAX)) return false;
  // A range that ends in the first frame of several (plan_zstd_frames saw
  // its header declare less than the whole): the walk stopped there.
  if (frames == 1 && out < total) {
    if (first) queue(*first);
    return true;
  }
  return frames >= 2;
}

Result<void> run_task(const Reader& r, const Task& t, DecodeRequest& q) {
  switch (t.kind) {
    case Task::Kind::raw_slice:
      return t.src->read_into(t.src_offset, t.dst);
    case Task::Kind::zstd_frame: {
      const Object& o = r.manifest().objects[q.object];
      const Component& c = o.components[q.component];
      const std::span<const uint8_t> frame(t.src->base() + c.offset + t.src_offset, t.src_size);
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
void run_gather(const Plan& p, const Task& t, std::span<DecodeRequest> requests,
                Progress& progress) {
  const auto reads = std::span(p.reads).subspan(t.src_offset, t.src_size);
  if (t.src->read_many(reads)) return;
  for (size_t i = 0; i < reads.size(); ++i) {
    const size_t k = group_request(p, t, i);
    auto res = t.src->read_many(reads.subspan(i, 1));
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
        run_gather(p, *t, requests, progress);
        for (size_t i = 0; i < t->src_size; ++i) ended(group_request(p, *t, i));
        continue;
      }
      if (t->kind == Task::Kind::fetch_group) {
        // Into the cache at once, then each component read whole as a task
        // of its own (any thread may take it); a failed fetch shows again,
        // with its own message, in the read of each component it held.
        (void)t->src->ranges()->prefetch(
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
  // Each thread's own decodes (a large component read whole) share out no
  // wider than the batch was given.
  for_each_index(threads, p.threads, [&](size_t) {
    const ThreadBudget budget(p.threads);
    drain();
  });
}

}  // namespace

}  // namespace zt::batch

namespace zt {

Result<void> decode_many(const Reader& reader, std::span<DecodeRequest> requests, unsigned threads,
                         const DecodeDone& done) {
  using namespace batch;
  Plan plan = plan_batch(reader, requests, threads);
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
