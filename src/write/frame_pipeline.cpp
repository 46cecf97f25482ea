#include "write/frame_pipeline.h"

#include <algorithm>
#include <system_error>

#include "base/zt_limits.h"
#include "codec/zstd_codec.h"

namespace zt {

namespace {

// Two frames per worker: one being compressed, one queued behind it, so a
// worker never waits for the writer to hand it the next frame.
size_t slots_for(unsigned workers) {
  return std::max<size_t>(1, size_t{2} * workers);
}

}  // namespace

FramePipeline::FramePipeline(unsigned workers, int level, bool checksum)
    : level_(level), checksum_(checksum) {
  workers = std::min(workers, Limits::threads);
  workers_.reserve(workers);
  try {
    for (unsigned i = 0; i < workers; ++i)
      workers_.emplace_back([this](std::stop_token stop) { work(stop); });
  } catch (const std::system_error&) {
    // No more threads to be had: the ones running share the work, and with
    // none at all submit() compresses on the caller's thread.
  }
  // Sized for the workers that started; they touch no slot before submit().
  const std::lock_guard lock(mutex_);
  slots_.resize(slots_for(static_cast<unsigned>(workers_.size())));
}

FramePipeline::~FramePipeline() {
  cancel();
  for (std::jthread& t : workers_) t.request_stop();
  job_ready_.notify_all();
}

void FramePipeline::compress(Slot& s) const {
  s.out.clear();
  auto r = s.planes ? byte_planes_encode_frame(s.input, *s.planes, level_, s.out)
                    : zstd_compress_frame(s.input, level_, s.out, checksum_);
  s.error = r ? Error{} : std::move(r).error();
}

void FramePipeline::work(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  while (job_ready_.wait(lock, stop, [this] { return next_job_ < tail_; })) {
    Slot& s = slot(next_job_++);
    lock.unlock();
    compress(s);
    lock.lock();
    s.done = true;
    frame_done_.notify_all();
  }
}

void FramePipeline::submit(std::span<const uint8_t> input, std::vector<uint8_t> owned,
                           std::optional<PlanesLayout> planes) {
  Slot& s = slot(tail_);
  s.input = input;
  s.owned = std::move(owned);
  s.planes = planes;
  s.done = false;
  if (workers_.empty()) {
    compress(s);
    s.done = true;
    ++tail_, ++next_job_;
    return;
  }
  {
    const std::lock_guard lock(mutex_);
    ++tail_;
  }
  job_ready_.notify_one();
}

bool FramePipeline::oldest_done() {
  const std::lock_guard lock(mutex_);
  return head_ < tail_ && slot(head_).done;
}

Result<std::span<const uint8_t>> FramePipeline::wait_oldest() {
  std::unique_lock lock(mutex_);
  Slot& s = slot(head_);
  frame_done_.wait(lock, [&s] { return s.done; });
  if (s.error.status != Status::ok) return s.error;
  return std::span<const uint8_t>(s.out);
}

void FramePipeline::pop_oldest() {
  Slot& s = slot(head_);
  if (s.owned.capacity() > 0) {
    s.owned.clear();
    spares_.push_back(std::move(s.owned));
    s.owned = {};
  }
  s.input = {};
  ++head_;
}

std::vector<uint8_t> FramePipeline::spare_buffer() {
  if (spares_.empty()) return {};
  std::vector<uint8_t> b = std::move(spares_.back());
  spares_.pop_back();
  return b;
}

void FramePipeline::cancel() {
  std::unique_lock lock(mutex_);
  const uint64_t queued_end = tail_;
  tail_ = next_job_;  // queued frames are never started
  frame_done_.wait(lock, [this] {
    for (uint64_t n = head_; n < tail_; ++n)
      if (!slot(n).done) return false;
    return true;
  });
  lock.unlock();
  // The frames' buffers are freed, not kept as spares: a cancel follows a
  // failure, out of memory perhaps, and must not allocate.
  for (uint64_t n = head_; n < queued_end; ++n) slot(n) = Slot{};
  head_ = tail_;
}

}  // namespace zt
