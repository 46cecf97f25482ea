// core_count: "all cores" is the affinity mask bounded by the cgroup's CPU
// quota. The quota is read from a fake /proc/self/cgroup, mountinfo and
// cgroup tree laid out per test (v2, v1, hybrid, nested limits, a
// container's own mount, text that does not parse); the affinity from the
// real mask, narrowed by the test itself; and, as root, from a real cgroup
// with a quota that a child process is moved into.
#include "base/core_count.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "base/for_each_index.h"
#include "test_files.h"

namespace {

using zt::cpus::bounded;
using zt::cpus::cgroup_quota;

// The mountinfo lines of a typical system, the cgroup ones passed in.
std::string mountinfo(const std::string& cgroup_lines) {
  return "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
         "23 22 0:5 / /proc rw,nosuid shared:2 - proc proc rw\n" +
         cgroup_lines + "40 22 0:30 / /tmp rw shared:9 - tmpfs tmpfs rw\n";
}

const std::string kV2Mount =
    "30 22 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
const std::string kV1CpuMount =
    "31 22 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:5 - cgroup cgroup rw,cpu,cpuacct\n";
const std::string kV1MemoryMount =
    "32 22 0:28 / /sys/fs/cgroup/memory rw,nosuid shared:6 - cgroup cgroup rw,memory\n";

class CgroupQuota : public testing::Test {
 protected:
  // Writes `text` at `path` under the fake root (directories made).
  void put(const std::string& path, const std::string& text) {
    const std::filesystem::path full = files_.root + path;
    std::filesystem::create_directories(full.parent_path());
    std::ofstream(full) << text;
  }
  void layout(const std::string& self_cgroup, const std::string& cgroup_mounts) {
    std::ofstream(files_.self_cgroup) << self_cgroup;
    std::ofstream(files_.mountinfo) << mountinfo(cgroup_mounts);
  }
  std::optional<double> quota() const { return cgroup_quota(files_); }

  zt::test::TempDir tmp_{"zt_core_count_"};
  const std::string dir_ = tmp_.path();
  zt::cpus::CgroupFiles files_{dir_ + "/self_cgroup", dir_ + "/mountinfo", dir_ + "/root"};
};

TEST_F(CgroupQuota, V2TheSmallestFromTheCgroupUpToTheMount) {
  layout("0::/user.slice/job\n", kV2Mount);
  put("/sys/fs/cgroup/user.slice/cpu.max", "400000 100000\n");
  put("/sys/fs/cgroup/user.slice/job/cpu.max", "max 100000\n");
  EXPECT_EQ(quota(), 4.0);  // the parent's limit binds its children
  put("/sys/fs/cgroup/user.slice/job/cpu.max", "150000 100000\n");
  EXPECT_EQ(quota(), 1.5);
  put("/sys/fs/cgroup/cpu.max", "50000 100000\n");  // the mount's own directory counts too
  EXPECT_EQ(quota(), 0.5);
}

TEST_F(CgroupQuota, V2NoLimitIsNone) {
  layout("0::/user.slice/job\n", kV2Mount);
  put("/sys/fs/cgroup/user.slice/job/cpu.max", "max 100000\n");
  EXPECT_EQ(quota(), std::nullopt);
  put("/sys/fs/cgroup/user.slice/job/cpu.max", "max\n");
  EXPECT_EQ(quota(), std::nullopt);
}

// A container with its own cgroup namespace: /proc/self/cgroup says "/",
// and its cgroup is what is mounted.
TEST_F(CgroupQuota, V2InAContainer) {
  layout("0::/\n", kV2Mount);
  put("/sys/fs/cgroup/cpu.max", "200000 100000\n");
  EXPECT_EQ(quota(), 2.0);
}

// cgroup v1 as Docker set it up before namespaces: the process's path is
// the mount's root, so the mount's directory is the process's cgroup.
TEST_F(CgroupQuota, V1MountedAtTheProcesssCgroup) {
  layout(
      "5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n",
      kV1MemoryMount +
          "31 22 0:27 /docker/abc /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n");
  put("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "250000\n");
  put("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(quota(), 2.5);
  EXPECT_EQ(bounded(64, quota()), 3u);
}

TEST_F(CgroupQuota, V1NestedAndUnlimited) {
  layout("4:cpu,cpuacct:/batch/job7\n", kV1CpuMount);
  put("/sys/fs/cgroup/cpu,cpuacct/batch/job7/cpu.cfs_quota_us", "-1\n");
  put("/sys/fs/cgroup/cpu,cpuacct/batch/job7/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(quota(), std::nullopt);
  put("/sys/fs/cgroup/cpu,cpuacct/batch/cpu.cfs_quota_us", "300000\n");
  put("/sys/fs/cgroup/cpu,cpuacct/batch/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(quota(), 3.0);
}

// Both hierarchies mounted (v2 at .../unified, without the cpu controller):
// the quota is the v1 one.
TEST_F(CgroupQuota, HybridReadsTheHierarchyThatHoldsTheCpuController) {
  layout("4:cpu,cpuacct:/job\n0::/job\n",
         kV1CpuMount + "33 22 0:29 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
  put("/sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us", "100000\n");
  put("/sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(quota(), 1.0);
}

// mountinfo escapes a space in a mount point as \040.
TEST_F(CgroupQuota, EscapedMountPoint) {
  layout("0::/a\n", "30 22 0:26 / /sys/fs/cgroup\\040x rw - cgroup2 cgroup2 rw\n");
  put("/sys/fs/cgroup x/a/cpu.max", "100000 50000\n");
  EXPECT_EQ(quota(), 2.0);
}

// A path outside the mount's root (another namespace's "..") reads only the
// mount's own directory, never a directory above it.
TEST_F(CgroupQuota, PathsOutsideTheMountReadOnlyTheMount) {
  layout("0::/../../elsewhere\n", kV2Mount);
  put("/sys/fs/cgroup/cpu.max", "300000 100000\n");
  put("/sys/fs/elsewhere/cpu.max", "100000 100000\n");
  EXPECT_EQ(quota(), 3.0);
  layout("0::/other/x\n", "30 22 0:26 /mine /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
  EXPECT_EQ(quota(), 3.0);
}

TEST_F(CgroupQuota, WhatDoesNotParseIsNoQuota) {
  EXPECT_EQ(quota(), std::nullopt);  // no files at all
  layout("0::/job\n", kV2Mount);
  for (const char* text : {"", "\n", "abc 100000\n", "100000 abc\n", "-5 100000\n", "100000 0\n",
                           "100000\n", "1 2 3\n", "99999999999999999999999 100000\n"}) {
    put("/sys/fs/cgroup/job/cpu.max", text);
    EXPECT_EQ(quota(), std::nullopt) << '"' << text << '"';
  }
  layout("garbage\n::::\n0:\n", "not a mountinfo line\n- - -\n" + kV2Mount.substr(0, 20) + "\n");
  EXPECT_EQ(quota(), std::nullopt);
  layout("4:cpu:/job\n", kV1CpuMount);
  put("/sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us", "200000\n");  // no period file
  EXPECT_EQ(quota(), std::nullopt);
}

TEST(CoreCount, BoundedRoundsTheQuotaUpAndNeverGoesBelowOne) {
  EXPECT_EQ(bounded(8, std::nullopt), 8u);
  EXPECT_EQ(bounded(8, 2.0), 2u);
  EXPECT_EQ(bounded(8, 1.5), 2u);
  EXPECT_EQ(bounded(8, 0.2), 1u);
  EXPECT_EQ(bounded(2, 16.0), 2u);
  EXPECT_EQ(bounded(0, std::nullopt), 1u);
  EXPECT_EQ(bounded(8, 0.0), 8u);
}

TEST(CoreCount, ZtThreadsIsAWholeNumberFromOneTo1024) {
  using zt::cpus::from_environment;
  EXPECT_EQ(from_environment("3"), 3u);
  EXPECT_EQ(from_environment("1"), 1u);
  EXPECT_EQ(from_environment("1024"), 1024u);
  for (const char* ignored : {"", "0", "-2", "1025", "4.5", "two", "3x", "99999999999999999999"})
    EXPECT_EQ(from_environment(ignored), std::nullopt) << '"' << ignored << '"';
  EXPECT_EQ(from_environment(nullptr), std::nullopt);
}

// std::thread::hardware_concurrency() counts the machine's CPUs whatever
// the mask (glibc 2.36): the library's count follows the mask.
TEST(CoreCount, FollowsTheAffinityMask) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  EXPECT_EQ(zt::cpus::in_affinity(), static_cast<unsigned>(CPU_COUNT(&before)));
  int first = 0;
  while (!CPU_ISSET(first, &before)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  EXPECT_EQ(zt::cpus::in_affinity(), 1u);
  ASSERT_EQ(sched_setaffinity(0, sizeof before, &before), 0);
  EXPECT_GE(zt::core_count(), 1u);
  EXPECT_LE(zt::core_count(), zt::cpus::in_affinity());
}

// A cgroup of the test's own under the cpu controller's mount (v1: the
// cpu hierarchy; v2: the root, where root may enable the controller), with
// a quota of half a CPU; removed at the end.
class RealCgroup {
 public:
  RealCgroup() {
    const std::string name = "/zt_core_count_" + std::to_string(::getpid());
    for (const char* v1 : {"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"}) {
      if (std::filesystem::exists(std::string(v1) + "/cpu.cfs_quota_us") && make(v1 + name) &&
          write("cpu.cfs_period_us", "100000") && write("cpu.cfs_quota_us", "50000"))
        return;
      drop();
    }
    const std::string v2 = "/sys/fs/cgroup";
    if (std::filesystem::exists(v2 + "/cgroup.subtree_control") &&
        (std::ofstream(v2 + "/cgroup.subtree_control") << "+cpu").flush() && make(v2 + name) &&
        write("cpu.max", "50000 100000"))
      return;
    drop();
  }
  ~RealCgroup() { drop(); }
  bool ready() const { return !dir_.empty(); }
  bool take(pid_t pid) { return write("cgroup.procs", std::to_string(pid)); }

 private:
  bool make(const std::string& dir) {
    std::error_code error;
    if (!std::filesystem::create_directory(dir, error)) return false;
    dir_ = dir;
    return true;
  }
  bool write(const std::string& file, const std::string& text) {
    std::ofstream out(dir_ + "/" + file);
    return static_cast<bool>(out << text << std::flush);
  }
  void drop() {
    if (!dir_.empty()) ::rmdir(dir_.c_str());  // empty once its process has exited
    dir_.clear();
  }
  std::string dir_;
};

TEST(CoreCount, ARealCgroupQuota) {
  if (::geteuid() != 0) GTEST_SKIP() << "making a cgroup needs root";
  RealCgroup cgroup;
  if (!cgroup.ready()) GTEST_SKIP() << "no writable cgroup cpu controller here";
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Waits until moved, then reports what it reads through the real /proc.
    char byte;
    ::close(go[1]);
    if (::read(go[0], &byte, 1) != 1) ::_exit(90);
    const auto quota = cgroup_quota();
    ::_exit(!quota                                         ? 91
            : *quota != 0.5                                ? 92
            : bounded(zt::cpus::in_affinity(), quota) != 1 ? 93
                                                           : 0);
  }
  ::close(go[0]);
  const bool moved = cgroup.take(child);
  EXPECT_TRUE(moved);
  EXPECT_EQ(::write(go[1], "x", 1), 1);
  ::close(go[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "90: not told, 91: no quota read, 92: not 0.5 CPUs, 93: not 1 thread";
}

}  // namespace

namespace zt::test {
namespace {

// A batch given `threads` keeps the decodes inside it to that many: work
// asked for "all cores" under a budget of 1 runs on the calling thread.
TEST(CoreCount, AThreadBudgetBoundsAllCoresWhileItLasts) {
  EXPECT_EQ(threads_for_all_cores(), core_count());
  {
    const ThreadBudget one(1);
    EXPECT_EQ(threads_for_all_cores(), 1u);
    std::atomic<bool> elsewhere{false};
    const auto me = std::this_thread::get_id();
    for_each_index(64, 0, [&](size_t) {
      if (std::this_thread::get_id() != me) elsewhere = true;
    });
    EXPECT_FALSE(elsewhere) << "work of a budget of one thread ran on another";
    {
      const ThreadBudget wide(100000);  // never more than the cores
      EXPECT_EQ(threads_for_all_cores(), core_count());
    }
    EXPECT_EQ(threads_for_all_cores(), 1u);
  }
  EXPECT_EQ(threads_for_all_cores(), core_count());
}

}  // namespace
}  // namespace zt::test
