#pragma once
// The plan of one decode_many call: its requests cut into tasks that the
// threads share out (raw slices, zstd frames, gathers of small reads,
// walks of zstd streams), largest first; batch_decode.cpp runs them.

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "read/batch_decode.h"
#include "read/reader.h"
#include "source/range_source.h"

namespace zt::batch {

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
  // The file the task reads (raw_slice, zstd_frame, zstd_walk, and the
  // items of a group task): the reader's own, a shard's, or a buffer a
  // foreign reader holds (a sharded checkpoint's other files); null for
  // whole, which Reader::read finds.
  const Source* src = nullptr;
};

// Stored bytes [begin, end) of `src`.
struct Range {
  const Source* src;
  uint64_t begin, end;
};

// One small raw read of a gather: request `request`'s bytes in `src`.
struct Piece {
  size_t request;
  const Source* src;
  RangeRead read;
};

// One small encoded component of a remote file `src`: request `request`'s
// stored bytes [offset, offset + length).
struct Fetch {
  size_t request;
  const Source* src;
  uint64_t offset, length;
};

struct Plan {
  unsigned threads = 1;
  uint64_t bytes = 0;  // the requests' destination bytes together
  std::vector<Task> tasks;
  std::vector<Piece> pieces;     // small raw reads, in file order once gathered
  std::vector<RangeRead> reads;  // pieces' reads, in the same order (read_many's ranges)
  // Small encoded components of a remote file, in file order once grouped,
  // and their stored bytes as (offset, length) in the same order.
  std::vector<Fetch> fetches;
  std::vector<std::pair<uint64_t, uint64_t>> fetch_ranges;
  std::vector<Task> walks;           // zstd_walk tasks, one a component
  std::vector<uint64_t> split_size;  // decoded size of each request split into slices or frames
  std::vector<Range> stored;  // stored bytes the tasks will read (announced through the mappings)
};

inline const Component& component_of(const Reader& r, const DecodeRequest& q) {
  return r.manifest().objects[q.object].components[q.component];
}

// The decoded bytes a request asks for: [first, end).
struct Wanted {
  uint64_t first, end;
};

inline Wanted wanted(const DecodeRequest& q, uint64_t whole) {
  if (!q.first) return {0, whole};
  return {*q.first, *q.first + q.dst.size()};
}

// Whether the request's range lies within `whole` decoded bytes (a request
// for all of them: whether they fit its buffer).
inline bool request_fits(const DecodeRequest& q, uint64_t whole) {
  if (!q.first) return whole <= q.dst.size();
  return *q.first <= whole && q.dst.size() <= whole - *q.first;
}

// Whether a task runs items of several requests (Plan::pieces or
// Plan::fetches [src_offset, src_offset + src_size)).
inline bool is_group(const Task& t) {
  return t.kind == Task::Kind::raw_gather || t.kind == Task::Kind::fetch_group;
}

// The request of item i of a group task.
inline size_t group_request(const Plan& p, const Task& t, size_t i) {
  const size_t at = t.src_offset + i;
  return t.kind == Task::Kind::raw_gather ? p.pieces[at].request : p.fetches[at].request;
}

// The bytes a task writes: what orders the tasks, largest first.
inline uint64_t task_bytes(const Task& t) {
  return is_group(t) ? t.frame_size : t.dst.size();
}

// The plan of a call on `threads` threads (0: all cores). Sets each
// request's written to 0 and its error to a refusal of its indices; a
// refused request gets no task.
Plan plan_batch(const Reader& r, std::span<DecodeRequest> requests, unsigned threads);

}  // namespace zt::batch
