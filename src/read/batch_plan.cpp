#include "read/batch_plan.h"

#include <sys/mman.h>

#include <algorithm>
#include <optional>

#include "base/arithmetic.h"
#include "base/core_count.h"
#include "base/for_each_index.h"
#include "codec/zstd_codec.h"
#include "read/task_sizes.h"

namespace zt::batch {

namespace {

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
constexpr uint64_t kGatherBytes = kMostRawTaskBytes;

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

void plan_raw_slices(const Source& src, const Component& c, const DecodeRequest& q, size_t index,
                     Plan& p) {
  const Wanted w = wanted(q, c.length);
  if (w.end - w.first < kGatherBelow) {
    // dst may be larger than the component (a whole-component request's
    // capacity): the read is the component's bytes only.
    if (w.end > w.first)
      p.pieces.push_back(
          Piece{index, &src, RangeRead{c.offset + w.first, q.dst.first(w.end - w.first)}});
    p.split_size[index] = w.end - w.first;
    return;
  }
  const auto page_share = [&](uint64_t n) { return ceil_div(n / p.threads, kPage) * kPage; };
  const uint64_t share = page_share(w.end - w.first);
  const uint64_t least = std::clamp(page_share(p.bytes), kLeastRawTaskBytes, kMostRawTaskBytes);
  // A source of streams serves pieces of one range only one after another
  // (and a later piece first reads the earlier ones): one task.
  const bool streams = src.ranges() && src.ranges()->streams();
  const uint64_t slice = streams ? w.end - w.first : std::max(least, share);
  for (uint64_t at = w.first; at < w.end; at += slice) {
    const uint64_t n = std::min(slice, w.end - at);
    p.tasks.push_back(Task{Task::Kind::raw_slice, index, c.offset + at, n,
                           q.dst.subspan(at - w.first, n), 0, 0, &src});
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
bool plan_zstd_frames(const Reader& r, const Source& src, const DecodeRequest& q, size_t index,
                      Plan& p) {
  if (!src.base()) return false;  // copy mode, remote: Reader::read loads the stored bytes
  const auto n = r.known_decoded_size(q.object, q.component);
  if (!n || *n > r.max_decoded_bytes() || !request_fits(q, *n)) return false;
  // A stream whose first frame declares all of its bytes is one frame (or
  // breaks a rule): read whole, as its header alone says, with no walk.
  const Component& c = component_of(r, q);
  const auto first = zstd_declared_content_size({src.base() + c.offset, c.length});
  if (!first || *first >= *n) return false;
  p.walks.push_back(Task{Task::Kind::zstd_walk, index, 0, 0, q.dst, *n, 0, &src});
  const Wanted w = wanted(q, *n);
  p.split_size[index] = w.end - w.first;
  return true;
}

// The shards a call's requests read, and the outcome of opening each
// (open_shards): as many as the requests name, not as the model has.
struct ShardSources {
  std::vector<uint32_t> shards;                             // sorted, distinct
  std::vector<std::optional<Result<const Source*>>> found;  // in the same order
  const Result<const Source*>& of(uint32_t shard) const {
    const auto at = std::lower_bound(shards.begin(), shards.end(), shard) - shards.begin();
    return *found[static_cast<size_t>(at)];
  }
};

// The shards the valid requests read, opened side by side: a remote
// shard's open is a request (its footer), and a hundred asked one after
// another on the caller's thread cost a hundred round trips. Each is asked
// once a call; a failed open is the answer of every request of its shard
// (the next call asks again).
ShardSources open_shards(const Reader& r, std::span<const DecodeRequest> requests,
                         unsigned threads) {
  ShardSources out;
  for (const DecodeRequest& q : requests)
    if (q.error.status == Status::ok)
      if (const std::optional<uint32_t> shard = component_of(r, q).shard)
        out.shards.push_back(*shard);
  std::sort(out.shards.begin(), out.shards.end());
  out.shards.erase(std::unique(out.shards.begin(), out.shards.end()), out.shards.end());
  out.found.resize(out.shards.size());
  for_each_index(out.shards.size(), threads,
                 [&](size_t i) { out.found[i].emplace(r.shard_source(out.shards[i])); });
  return out;
}

// Whether Reader::read (a whole read, or a range's) refuses the request
// before it opens the component's file: an unknown encoding, a decoded
// size over the decode cap, a buffer too small or a range outside.
bool refused_before_opening(const Reader& r, const DecodeRequest& q) {
  const Component& c = component_of(r, q);
  if (c.encoding == Encoding::unknown) return true;
  const auto n = r.known_decoded_size(q.object, q.component);
  if (!n) return false;  // known only by decoding it
  return (c.encoding != Encoding::raw && *n > r.max_decoded_bytes()) || !request_fits(q, *n);
}

// Plain little-endian raw data becomes slices, multi-frame zstd becomes
// frames, in whichever file holds them: this one, a v2 part's shard, or a
// buffer a foreign reader holds (a sharded checkpoint's other files,
// local or remote). Everything else, and every request that breaks a rule,
// stays one task for Reader::read, whose checks and messages then apply
// unchanged.
void plan_request(const Reader& r, DecodeRequest& q, size_t index, const ShardSources& shards,
                  Plan& p) {
  const Component& c = component_of(r, q);
  const Result<const Source*> found = c.shard ? shards.of(*c.shard) : r.source_of(c);
  if (!found) {
    // A request Reader::read refuses before it opens the file gets that
    // refusal, as from zt_component_read; the others, the file's failure
    // (not asked again).
    if (refused_before_opening(r, q))
      p.tasks.push_back(Task{Task::Kind::whole, index, 0, 0, q.dst});
    else
      q.error = found.error();
    return;
  }
  const Source& src = **found;
  const bool raw_slices = c.encoding == Encoding::raw && !c.big_endian && request_fits(q, c.length);
  // Raw slices read only the wanted bytes; anything else may read all.
  const Wanted w = raw_slices ? wanted(q, c.length) : Wanted{0, c.length};
  if (src.base() && w.end > w.first)
    p.stored.push_back(Range{&src, c.offset + w.first, c.offset + w.end});
  if (raw_slices) return plan_raw_slices(src, c, q, index, p);
  if (c.encoding == Encoding::zstd && plan_zstd_frames(r, src, q, index, p)) return;
  // Remotely each whole read fetches its stored bytes: small ones are
  // fetched together first (fetch_group), as small raw reads are gathered.
  if (src.ranges() && c.length > 0 && c.length < kGatherBelow) {
    p.fetches.push_back(Fetch{index, &src, c.offset, c.length});
    return;
  }
  p.tasks.push_back(Task{Task::Kind::whole, index, 0, 0, q.dst});
}

// Cuts items [begin, n), in file order (by file, then offset), into `kind`
// tasks of at most kGatherPieces items and `most_bytes` bytes of one file,
// appended; an item that overlaps the one before (two requests for the
// same bytes) starts a new task, as read_many and prefetch take ranges
// that do not overlap. extent(i): item i's (offset, length); request(i):
// its request; source(i): its file.
template <class Extent, class RequestOf, class SourceOf>
void cut_into_tasks(Task::Kind kind, size_t begin, size_t n, uint64_t most_bytes, Extent extent,
                    RequestOf request, SourceOf source, Plan& p) {
  size_t first = begin;
  uint64_t bytes = 0, end = 0;
  for (size_t i = begin; i <= n; ++i) {
    const auto [offset, length] = i < n ? extent(i) : std::pair<uint64_t, uint64_t>{0, 0};
    if (i > first && (i == n || i - first == kGatherPieces || bytes + length > most_bytes ||
                      offset < end || source(i) != source(first))) {
      p.tasks.push_back(Task{kind, request(first), first, i - first, {}, bytes, 0, source(first)});
      first = i;
      bytes = 0;
    }
    bytes += length;
    end = offset + length;
  }
}

// Plan::pieces [begin, end) cut into raw_gather tasks of at most
// `most_bytes`, appended.
void cut_gathers(Plan& p, size_t begin, size_t end, uint64_t most_bytes) {
  cut_into_tasks(
      Task::Kind::raw_gather, begin, end, most_bytes,
      [&](size_t i) {
        return std::pair<uint64_t, uint64_t>{p.pieces[i].read.offset, p.pieces[i].read.dst.size()};
      },
      [&](size_t i) { return p.pieces[i].request; }, [&](size_t i) { return p.pieces[i].src; }, p);
}

// Whether a lies before b: by file, then by offset in it.
bool before(const Source* a_src, uint64_t a, const Source* b_src, uint64_t b) {
  if (a_src != b_src) return std::less<const Source*>()(a_src, b_src);
  return a < b;
}

// The small raw reads in file order, cut into raw_gather tasks.
void plan_gathers(Plan& p) {
  std::stable_sort(p.pieces.begin(), p.pieces.end(), [](const Piece& a, const Piece& b) {
    return before(a.src, a.read.offset, b.src, b.read.offset);
  });
  cut_gathers(p, 0, p.pieces.size(), kGatherBytes);
  p.reads.reserve(p.pieces.size());
  for (const Piece& piece : p.pieces) p.reads.push_back(piece.read);
}

// The small encoded components of a remote file in file order, cut into
// fetch_group tasks.
void plan_fetch_groups(Plan& p) {
  std::stable_sort(p.fetches.begin(), p.fetches.end(), [](const Fetch& a, const Fetch& b) {
    return before(a.src, a.offset, b.src, b.offset);
  });
  cut_into_tasks(
      Task::Kind::fetch_group, 0, p.fetches.size(), kGatherBytes,
      [&](size_t i) {
        return std::pair<uint64_t, uint64_t>{p.fetches[i].offset, p.fetches[i].length};
      },
      [&](size_t i) { return p.fetches[i].request; }, [&](size_t i) { return p.fetches[i].src; },
      p);
  p.fetch_ranges.reserve(p.fetches.size());
  for (const Fetch& f : p.fetches) p.fetch_ranges.emplace_back(f.offset, f.length);
}

// Largest tasks first, so that the small ones fill in behind them; equal
// sizes (the frames of a component) keep their order in the file.
void sort_largest_first(std::vector<Task>& tasks) {
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const Task& a, const Task& b) { return task_bytes(a) > task_bytes(b); });
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
void announce(std::vector<Range>& stored) {
  if (stored.empty()) return;
  std::sort(stored.begin(), stored.end(),
            [](const Range& a, const Range& b) { return before(a.src, a.begin, b.src, b.begin); });
  const auto advise = [&](const Range& run) {
    if (run.end - run.begin >= kAdviseLeast)
      run.src->advise(run.begin, run.end - run.begin, MADV_WILLNEED);
  };
  Range run = stored.front();
  for (const Range& s : stored) {
    if (s.src == run.src && s.begin <= run.end + kAdviseGap) {
      run.end = std::max(run.end, s.end);
      continue;
    }
    advise(run);
    run = s;
  }
  advise(run);
}

// The end of task i cut into tasks of kLeastRawTaskBytes or less, appended:
// of a raw slice, `need` bytes rounded up to that size (the head stays one
// slice), of a gather all of it, between its reads. Returns the bytes cut.
uint64_t cut_small(Plan& p, size_t i, uint64_t need) {
  const Task t = p.tasks[i];
  const size_t from = p.tasks.size();
  uint64_t cut = t.frame_size;
  if (t.kind == Task::Kind::raw_slice) {
    cut = std::min<uint64_t>(t.dst.size(), ceil_div(need, kLeastRawTaskBytes) * kLeastRawTaskBytes);
    const uint64_t head = t.dst.size() - cut;
    if (head)
      p.tasks.push_back(
          Task{t.kind, t.request, t.src_offset, head, t.dst.first(head), 0, 0, t.src});
    for (uint64_t at = head; at < t.dst.size(); at += kLeastRawTaskBytes) {
      const uint64_t n = std::min(kLeastRawTaskBytes, t.dst.size() - at);
      p.tasks.push_back(
          Task{t.kind, t.request, t.src_offset + at, n, t.dst.subspan(at, n), 0, 0, t.src});
    }
  } else {  // raw_gather: Plan::pieces [src_offset, src_offset + src_size)
    cut_gathers(p, t.src_offset, t.src_offset + t.src_size, kLeastRawTaskBytes);
  }
  // The first part takes the task's place.
  p.tasks[i] = p.tasks[from];
  p.tasks.erase(p.tasks.begin() + static_cast<std::ptrdiff_t>(from));
  return cut;
}

// Cuts the ends of the smallest raw slices and gathers larger than
// kLeastRawTaskBytes until the call ends on small_tail_bytes of small
// tasks (task_sizes.h); the tasks stay largest first. A remote file's
// reads are not cut: each is a request.
void split_the_tail(Plan& p) {
  const uint64_t want = small_tail_bytes(p.threads);
  const size_t n = p.tasks.size();
  uint64_t small = 0;
  for (size_t i = n; i > 0 && small < want; --i) {
    const Task& t = p.tasks[i - 1];
    const uint64_t bytes = task_bytes(t);
    if (bytes <= kLeastRawTaskBytes)
      small += bytes;
    else if ((t.kind == Task::Kind::raw_slice || t.kind == Task::Kind::raw_gather) &&
             !t.src->ranges())
      small += cut_small(p, i - 1, want - small);
  }
  if (p.tasks.size() > n) sort_largest_first(p.tasks);
}

}  // namespace

Plan plan_batch(const Reader& r, std::span<DecodeRequest> requests, unsigned threads) {
  Plan plan;
  plan.threads = threads ? threads : threads_for_all_cores();
  plan.split_size.assign(requests.size(), 0);
  for (const DecodeRequest& q : requests) plan.bytes += q.dst.size();
  for (DecodeRequest& q : requests) {
    q.written = 0;
    q.error = index_problem(r, q);
  }
  const ShardSources shards = open_shards(r, requests, plan.threads);
  // Data checks a read runs first (a zip member's CRC-32), run side by
  // side now rather than one after another as each request is planned.
  if (r.has_data_checks()) {
    std::vector<const Component*> checked;
    for (const DecodeRequest& q : requests)
      if (q.error.status == Status::ok) checked.push_back(&component_of(r, q));
    r.run_checks(checked, plan.threads);
  }
  for (size_t i = 0; i < requests.size(); ++i)
    if (requests[i].error.status == Status::ok) plan_request(r, requests[i], i, shards, plan);
  plan_gathers(plan);
  plan_fetch_groups(plan);
  announce(plan.stored);
  sort_largest_first(plan.tasks);
  split_the_tail(plan);
  return plan;
}

}  // namespace zt::batch
