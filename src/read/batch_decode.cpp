#include "read/batch_decode.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>
#include <vector>

#include "container/zstd_codec.h"

namespace zt {

namespace {

// Raw bytes are copied in slices of at least this size, and of at most an
// equal share per thread: big copies keep memcpy's non-temporal path, which
// beats many cache-sized copies, and still spread over the threads.
constexpr uint64_t kMinRawSlice = uint64_t{8} << 20;
constexpr uint64_t kPage = 4096;
// Stored ranges closer than this are announced to the kernel as one.
constexpr uint64_t kAdviseGap = uint64_t{1} << 20;

struct Task {
  enum class Kind : uint8_t { raw_slice, zstd_frame, whole };
  Kind kind = Kind::whole;
  size_t request = 0;
  uint64_t src_offset = 0;  // raw_slice: in the file; zstd_frame: in the component's stored bytes
  uint64_t src_size = 0;    // zstd_frame: stored bytes of the frame
  std::span<uint8_t> dst;
};

struct Range {
  uint64_t begin, end;
};

struct Plan {
  unsigned threads = 1;
  std::vector<Task> tasks;
  std::vector<uint64_t> split_size;  // decoded size of each request split into slices or frames
  std::vector<Range> stored;         // stored bytes the tasks will read from the mapping
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

void plan_raw_slices(const Component& c, const DecodeRequest& q, size_t index, Plan& p) {
  const uint64_t share = (c.length / p.threads + kPage - 1) / kPage * kPage;
  const uint64_t slice = std::max(kMinRawSlice, share);
  for (uint64_t at = 0; at < c.length; at += slice) {
    const uint64_t n = std::min(slice, c.length - at);
    p.tasks.push_back(Task{Task::Kind::raw_slice, index, c.offset + at, n, q.dst.subspan(at, n)});
  }
  p.split_size[index] = c.length;
}

// A multi-frame zstd component whose size is known, allowed and fits splits
// into one task per frame (the frames' content sizes place them in dst).
bool plan_zstd_frames(const Reader& r, const DecodeRequest& q, size_t index, Plan& p) {
  const Component& c = component_of(r, q);
  if (!r.source().base()) return false;  // copy mode: Reader::read loads the stored bytes
  const auto n = r.known_decoded_size(q.object, q.component);
  if (!n || *n > r.max_decoded_bytes() || *n > q.dst.size()) return false;
  std::vector<uint8_t> unused;  // map mode: the stored bytes are a view
  auto src = r.stored(r.manifest().objects[q.object], c, unused);
  if (!src) return false;  // Reader::read gives the error
  const auto frames = zstd_frame_index(*src, *n);
  if (frames.size() < 2) return false;
  uint64_t out = 0;
  for (const ZstdFrame& f : frames) {
    p.tasks.push_back(Task{Task::Kind::zstd_frame, index, f.src_offset, f.src_size,
                           q.dst.subspan(out, f.content_size)});
    out += f.content_size;
  }
  p.split_size[index] = *n;
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
  if (r.source().base() && c.length > 0) p.stored.push_back(Range{c.offset, c.offset + c.length});
  if (c.encoding == Encoding::raw && !c.big_endian && c.length <= q.dst.size())
    return plan_raw_slices(c, q, index, p);
  if (c.encoding == Encoding::zstd && plan_zstd_frames(r, q, index, p)) return;
  p.tasks.push_back(Task{Task::Kind::whole, index, 0, 0, q.dst});
}

// Tells the kernel up front which stored bytes are coming (madvise
// WILLNEED), so that a cold file is read ahead while the threads work
// instead of page by page as they fault. Neighbouring ranges are merged to
// keep the system calls few.
void announce(const Reader& r, std::vector<Range>& stored) {
  if (stored.empty()) return;
  std::sort(stored.begin(), stored.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  Range run = stored.front();
  for (const Range& s : stored) {
    if (s.begin <= run.end + kAdviseGap) {
      run.end = std::max(run.end, s.end);
      continue;
    }
    r.source().advise(run.begin, run.end - run.begin, MADV_WILLNEED);
    run = s;
  }
  r.source().advise(run.begin, run.end - run.begin, MADV_WILLNEED);
}

Result<void> run_task(const Reader& r, const Task& t, DecodeRequest& q) {
  switch (t.kind) {
    case Task::Kind::raw_slice:
      return r.source().read_into(t.src_offset, t.dst);
    case Task::Kind::zstd_frame: {
      const Object& o = r.manifest().objects[q.object];
      const Component& c = o.components[q.component];
      const std::span<const uint8_t> frame(r.source().base() + c.offset + t.src_offset, t.src_size);
      return zstd_decode_exact(frame, t.dst, component_where(o, c));
    }
    case Task::Kind::whole: {
      // The only task of its request: nothing else writes q.written.
      auto n = r.read(q.object, q.component, q.dst);
      if (!n) return std::move(n).error();
      q.written = *n;
      return {};
    }
  }
  return {};
}

// Runs every task on up to p.threads threads; failures land in `errors`.
void run_all(const Reader& r, const Plan& p, std::span<DecodeRequest> requests,
             std::vector<Error>& errors) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1, std::memory_order_relaxed); i < p.tasks.size();
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      auto res = run_task(r, p.tasks[i], requests[p.tasks[i].request]);
      if (!res) errors[i] = std::move(res).error();
    }
  };
  const size_t n = std::min<size_t>(p.threads, p.tasks.size());
  std::vector<std::jthread> pool;
  pool.reserve(n);
  for (size_t t = 1; t < n; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the ones running share the work
    }
  }
  work();
}

}  // namespace

Result<void> decode_many(const Reader& reader, std::span<DecodeRequest> requests,
                         unsigned threads) {
  Plan plan;
  plan.threads = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
  plan.split_size.assign(requests.size(), 0);
  for (size_t i = 0; i < requests.size(); ++i) {
    DecodeRequest& q = requests[i];
    q.written = 0;
    q.error = index_problem(reader, q);
    if (q.error.status == Status::ok) plan_request(reader, q, i, plan);
  }
  announce(reader, plan.stored);
  // Largest tasks first, so that the small ones fill in behind them; equal
  // sizes (the frames of a component) keep their order in the file.
  std::stable_sort(plan.tasks.begin(), plan.tasks.end(),
                   [](const Task& a, const Task& b) { return a.dst.size() > b.dst.size(); });
  std::vector<Error> errors(plan.tasks.size());
  run_all(reader, plan, requests, errors);

  // Each request gets the error of its first failed task.
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    DecodeRequest& q = requests[plan.tasks[i].request];
    if (errors[i].status != Status::ok && q.error.status == Status::ok)
      q.error = std::move(errors[i]);
  }
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
