// for_each_index over the process's parked helper threads: every index once,
// the same helpers call after call, callers on several threads at once,
// nested calls, and a child of fork() that starts helpers of its own.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "base/for_each_index.h"

namespace {

pid_t kernel_thread_id() {
  return static_cast<pid_t>(::syscall(SYS_gettid));
}

// How many times each index of [0, n) was visited by for_each_index(n, threads).
std::vector<int> visits(size_t n, unsigned threads) {
  std::vector<std::atomic<int>> seen(n);
  zt::for_each_index(n, threads, [&](size_t i) { seen[i].fetch_add(1); });
  std::vector<int> out;
  for (auto& s : seen) out.push_back(s.load());
  return out;
}

TEST(HelperThreads, EveryIndexOnceWhateverTheThreads) {
  for (size_t n : {0u, 1u, 2u, 7u, 1000u})
    for (unsigned threads : {0u, 1u, 2u, 8u, 64u})
      EXPECT_EQ(visits(n, threads), std::vector<int>(n, 1))
          << n << " items, " << threads << " threads";
}

// Kernel thread ids are not handed out again soon (unlike pthread_t or
// std::thread::id): threads started for each call would show as new ids.
TEST(HelperThreads, TheSameHelpersServeCallAfterCall) {
  std::mutex m;
  std::set<pid_t> ids;
  for (int call = 0; call < 50; ++call)
    zt::for_each_index(64, 4, [&](size_t) {
      const std::lock_guard lock(m);
      ids.insert(kernel_thread_id());
    });
  // The caller and helpers started before: no call in this program asks
  // for more than 64 threads, so there are at most 63 of them. Threads
  // started for each call would be 150 (three a call).
  EXPECT_LE(ids.size(), 64u);
  EXPECT_GE(ids.size(), 1u);
}

TEST(HelperThreads, WorkIsSharedWithHelpers) {
  // Items that wait for each other until several threads hold one: only
  // helpers running beside the caller let this finish quickly.
  std::atomic<int> inside{0};
  std::atomic<int> most{0};
  zt::for_each_index(8, 4, [&](size_t) {
    const int now = inside.fetch_add(1) + 1;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (most.load() < 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    inside.fetch_sub(1);
  });
  EXPECT_GE(most.load(), 2);
}

TEST(HelperThreads, CallersOnSeveralThreadsAtOnce) {
  std::atomic<bool> wrong{false};
  std::vector<std::jthread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int call = 0; call < 200; ++call)
        if (visits(37, 4) != std::vector<int>(37, 1)) wrong = true;
    });
  callers.clear();  // joined
  EXPECT_FALSE(wrong.load());
}

TEST(HelperThreads, NestedCallsFinish) {
  std::atomic<int> inner{0};
  zt::for_each_index(
      16, 8, [&](size_t) { zt::for_each_index(16, 8, [&](size_t) { inner.fetch_add(1); }); });
  EXPECT_EQ(inner.load(), 256);
}

TEST(HelperThreads, AChildOfForkStartsItsOwn) {
  EXPECT_EQ(visits(100, 4), std::vector<int>(100, 1));  // the parent's helpers are up
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::alarm(20);  // a child waiting on its parent's helpers would hang: fail instead
    const bool ok = visits(1000, 4) == std::vector<int>(1000, 1);
    std::set<pid_t> ids;
    std::mutex m;
    zt::for_each_index(64, 4, [&](size_t) {
      const std::lock_guard lock(m);
      ids.insert(kernel_thread_id());
    });
    ::_exit(ok && !ids.empty() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child ended by signal "
                                 << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(visits(100, 4), std::vector<int>(100, 1));  // and the parent's still serve
}

}  // namespace
