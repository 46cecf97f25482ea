#pragma once
// core_count: how many threads "all cores" means. The CPUs this process may
// run on (its affinity mask: taskset, a Slurm or Docker cpuset), bounded by
// its cgroup's CPU quota (Docker's --cpus, a Kubernetes CPU limit): more
// threads than that only queue for the same CPUs, and under a quota the
// kernel stops the whole process for the rest of each period once it is
// spent.

#include <optional>
#include <string>

namespace zt {

// The count, found once per process (ZT_THREADS, where it holds a whole
// number from 1 to kMostThreads, replaces it: several processes that load
// on one machine at once, ranks of one job, share its CPUs between them).
// The files it reads cost tens of microseconds, which every
// zt_decode_ranges call of one small tensor would pay
// (std::thread::hardware_concurrency() alone, reading /sys, cost 12 us on
// the project's VM). Later changes of affinity, quota or ZT_THREADS are not
// seen. At least 1.
unsigned core_count();

// "All cores" for work started on this thread (threads = 0 in
// for_each_index and the parallel decoders): core_count(), or fewer while
// a ThreadBudget of this thread says so. A batch given `threads` sets one
// on each of its threads, so that decoding one large component inside it
// does not spread over every core (zt_decode_many(threads = 1) runs on
// one thread).
unsigned threads_for_all_cores();

// Sets threads_for_all_cores() of the calling thread to min(n, core_count())
// (n = 0: core_count()) for the scope of the object.
class ThreadBudget {
 public:
  explicit ThreadBudget(unsigned n);
  ~ThreadBudget();
  ThreadBudget(const ThreadBudget&) = delete;
  ThreadBudget& operator=(const ThreadBudget&) = delete;

 private:
  unsigned before_;
};

// What core_count() is made of (tests call them directly).
namespace cpus {

inline constexpr unsigned kMostThreads = 1024;

// ZT_THREADS's value as a count, if it is a whole number from 1 to
// kMostThreads (else, or unset, nullopt: the CPUs decide).
std::optional<unsigned> from_environment(const char* value);

// CPUs in the calling thread's affinity mask (sched_getaffinity), or
// std::thread::hardware_concurrency() where that fails; at least 1.
unsigned in_affinity();

// The files the quota is read from. Tests lay out a tree of their own and
// set `root`, which goes before every mount point found in mountinfo.
struct CgroupFiles {
  std::string self_cgroup = "/proc/self/cgroup";
  std::string mountinfo = "/proc/self/mountinfo";
  std::string root;
};

// The CPU quota, in CPUs, of this process's cgroup: the smallest over the
// cgroup and its ancestors up to the hierarchy's mount (cgroup v2's cpu.max,
// v1's cpu.cfs_quota_us / cpu.cfs_period_us; both where both are mounted).
// nullopt where none is set, or where the files are missing or do not
// parse (no quota is then assumed).
std::optional<double> cgroup_quota(const CgroupFiles& files = {});

// min(affinity, quota rounded up), at least 1: a quota of 1.5 CPUs gives 2
// threads (as Go's runtime rounds), of 0.2 one.
unsigned bounded(unsigned affinity, std::optional<double> quota);

}  // namespace cpus

}  // namespace zt
