// A queue of work items shared by a pool of threads, where some items
// ("leads") find more work as they run: decode_many's walks, which read a
// zstd stream and queue a task for each frame they find.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

namespace zt {

// Leads go first and one at a time (cold, a walk reads its component from
// the disk, which one reader keeps busy, while the other threads run what
// it has found so far); then the items, in the order given and pushed.
template <class Item>
class WorkQueue {
 public:
  WorkQueue(const std::vector<Item>& items, const std::vector<Item>& leads)
      : items_(items.begin(), items.end()), leads_(leads.begin(), leads.end()) {}

  // The next item to run; waits while none is queued but a lead that is
  // running may still push some. nullopt once nothing is left.
  std::optional<Item> next() {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (!leading_ && !leads_.empty()) {
        leading_ = true;
        return take(leads_);
      }
      if (!items_.empty()) return take(items_);
      if (!leading_) return std::nullopt;
      more_.wait(lock);
    }
  }
  // Queues an item (from a running lead).
  void push(const Item& t) {
    {
      std::lock_guard lock(mutex_);
      items_.push_back(t);
    }
    more_.notify_one();
  }
  // The running lead has ended: the next may start, and waiting threads
  // learn whether anything is left.
  void lead_ended() {
    {
      std::lock_guard lock(mutex_);
      leading_ = false;
    }
    more_.notify_all();
  }

 private:
  static Item take(std::deque<Item>& from) {
    const Item t = from.front();
    from.pop_front();
    return t;
  }
  std::mutex mutex_;
  std::condition_variable more_;
  std::deque<Item> items_, leads_;
  bool leading_ = false;
};

}  // namespace zt
