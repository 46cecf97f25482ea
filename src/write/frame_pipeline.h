// zstd frames (or byte-planes frames) compressed on persistent worker
// threads and handed back in the order they were submitted, with a bounded
// number in flight. The writer
// writes frame k while the workers compress the frames after it; workers
// live as long as the pipeline, so their zstd contexts are made once.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "base/error.h"
#include "codec/byte_planes.h"

namespace zt {

class FramePipeline {
 public:
  // `workers` threads (at most Limits::threads, fewer if the system has no
  // more) compress at `level`; with none, submit() compresses on the calling
  // thread. At most capacity() frames are in flight (submitted, not popped).
  // With `checksum`, every frame carries its content checksum (v2).
  FramePipeline(unsigned workers, int level, bool checksum = false);
  ~FramePipeline();  // cancel(), then the workers stop
  FramePipeline(const FramePipeline&) = delete;
  FramePipeline& operator=(const FramePipeline&) = delete;

  size_t capacity() const { return slots_.size(); }
  size_t in_flight() const { return tail_ - head_; }
  bool full() const { return in_flight() == capacity(); }

  // Queues `input` as one frame; `owned` (may be empty) is kept with it, so
  // that `input` may point into it. The caller keeps any other memory that
  // `input` points to alive until the frame is popped or cancelled.
  // With `planes`, the frame is a byte-planes frame of that layout instead
  // (byte_planes_encode_frame: its planes, then its index entries).
  // Precondition: !full().
  void submit(std::span<const uint8_t> input, std::vector<uint8_t> owned = {},
              std::optional<PlanesLayout> planes = std::nullopt);

  // Whether the oldest frame in flight is compressed (never waits).
  bool oldest_done();
  // Waits for the oldest frame in flight and returns its compressed bytes,
  // or the compression error. Valid until pop_oldest(). Precondition:
  // in_flight() > 0.
  Result<std::span<const uint8_t>> wait_oldest();
  // Drops the oldest frame; its owned buffer is kept for reuse.
  void pop_oldest();

  // An empty buffer for owned input, with the capacity of a used one.
  std::vector<uint8_t> spare_buffer();

  // Drops every frame in flight: queued ones are never compressed, running
  // ones are waited for, so no worker touches submitted memory afterwards.
  void cancel();

 private:
  struct Slot {
    std::span<const uint8_t> input;
    std::vector<uint8_t> owned;
    std::optional<PlanesLayout> planes;
    std::vector<uint8_t> out;
    Error error;
    bool done = false;
  };

  void work(std::stop_token stop);
  void compress(Slot& s) const;
  Slot& slot(uint64_t n) { return slots_[n % slots_.size()]; }

  const int level_;
  const bool checksum_;
  std::vector<Slot> slots_;  // two per worker that started (one without workers)
  std::vector<std::vector<uint8_t>> spares_;
  // Frame numbers: [head_, tail_) in flight, [next_job_, tail_) not started.
  uint64_t head_ = 0, tail_ = 0, next_job_ = 0;
  std::mutex mutex_;
  std::condition_variable_any job_ready_;  // workers wait here
  std::condition_variable frame_done_;     // the submitting thread waits here
  std::vector<std::jthread> workers_;      // last: joined before the slots go
};

}  // namespace zt
