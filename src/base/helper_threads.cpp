#include "base/helper_threads.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

namespace zt {

namespace {

// More helpers than this are never started: a caller asking for more
// threads than that gets its work shared by these.
constexpr size_t kMostHelpers = 1024;

// One call's work, on its caller's stack while helpers may join it.
struct Job {
  void (*drain)(void*);
  void* context;
  size_t wanted;       // helpers that may still join
  size_t running = 0;  // helpers inside drain
};

class Helpers {
 public:
  pid_t process() const { return process_; }
  // A fork child's helpers hold its copy of the parent's (never used
  // there): still reachable, not a leak to a leak checker.
  void left_behind(Helpers* parent) { left_behind_ = parent; }

  void run(size_t helpers, void (*drain)(void*), void* context) {
    Job job{drain, context, std::min(helpers, kMostHelpers)};
    {
      const std::lock_guard lock(mutex_);
      jobs_.push_back(&job);
      start_up_to(job.wanted);
    }
    wake_.notify_all();
    drain(context);
    std::unique_lock lock(mutex_);
    // The caller's drain has returned, so no item is left to take: no
    // helper joins from now on, and those inside finish their last item.
    std::erase(jobs_, &job);
    done_.wait(lock, [&] { return job.running == 0; });
  }

 private:
  // Starts threads until `wanted` are idle (or no more can start). They
  // are detached: nothing ever joins them (see run_with_helpers), and a
  // plain pthread owns no heap memory of ours while it is parked.
  void start_up_to(size_t wanted) {
    while (idle_ < wanted && started_ < kMostHelpers) {
      pthread_t thread;
      const auto serve = [](void* self) -> void* {
        static_cast<Helpers*>(self)->serve();
        return nullptr;
      };
      if (::pthread_create(&thread, nullptr, serve, this) != 0)
        return;  // those there share the work
      ::pthread_detach(thread);
      ++started_;
      ++idle_;
    }
  }

  Job* open_job() const {
    for (Job* j : jobs_)
      if (j->wanted > 0) return j;
    return nullptr;
  }

  void serve() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return open_job() != nullptr; });
      Job* job = open_job();
      --job->wanted;
      ++job->running;
      --idle_;
      lock.unlock();
      job->drain(job->context);
      lock.lock();
      ++idle_;
      if (--job->running == 0) done_.notify_all();
    }
  }

  const pid_t process_ = ::getpid();
  Helpers* left_behind_ = nullptr;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<Job*> jobs_;
  size_t started_ = 0;
  size_t idle_ = 0;
};

}  // namespace

void run_with_helpers(size_t helpers, void (*drain)(void*), void* context) {
  // The helpers are never stopped or destroyed: parked threads end with
  // the process, and nothing at exit may wait for them (exit() may come
  // while a caller waits). A child of fork() has none of its parent's
  // threads, and perhaps a mutex that one of them held at the fork: it
  // starts helpers of its own and leaves its copy of the parent's alone.
  static std::atomic<Helpers*> current{nullptr};
  Helpers* h = current.load(std::memory_order_acquire);
  const pid_t self = ::getpid();
  while (h == nullptr || h->process() != self) {
    auto fresh = std::make_unique<Helpers>();
    fresh->left_behind(h);
    if (current.compare_exchange_strong(h, fresh.get(), std::memory_order_acq_rel)) {
      h = fresh.release();  // kept for the life of the process, on purpose
      break;
    }
    // Another thread's helpers came first: h is theirs now.
  }
  h->run(helpers, drain, context);
}

}  // namespace zt
