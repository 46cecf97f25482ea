// Faults while writing and reading.
//
// Writer: a full disk (RLIMIT_FSIZE, SIGXFSZ ignored), a failing fsync,
// rename or link (an LD_PRELOAD shim), SIGKILL in the middle of a write,
// and abort: the target keeps its old bytes and no temporary file is left,
// with the unnamed O_TMPFILE temporary and with the named fallback (the shim
// refuses O_TMPFILE as some file systems do). The writer runs as a helper
// process (write_helper.cpp) because these faults are applied per process.
//
// Reader: a file truncated under an open mapping raises SIGBUS (the
// documented price of ZT_IO_MAP); ZT_IO_COPY turns the same event into
// ZT_ERR_IO, and a file rewritten in place into ZT_ERR_DIGEST.
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "hardening_support.h"

extern char** environ;

namespace zt::hardening {
namespace {

const Bytes kOld = {'o', 'l', 'd', ' ', 'c', 'o', 'n', 't', 'e', 'n', 't', '\n'};

struct Helper {
  pid_t pid = -1;
  int out = -1;  // the helper's stdout
};

// Starts the helper with extra environment variables (and the shim
// preloaded if `preload`).
Helper spawn(const std::string& mode, const std::string& target,
             const std::map<std::string, std::string>& env, bool preload) {
  std::vector<std::string> vars;
  for (char** e = environ; *e; ++e) {
    const std::string v = *e;
    const std::string key = v.substr(0, v.find('='));
    if (!env.count(key) && key != "LD_PRELOAD" && key != "ASAN_OPTIONS") vars.push_back(v);
  }
  for (const auto& [k, v] : env) vars.push_back(k + "=" + v);
  if (preload) {
    vars.push_back(std::string("LD_PRELOAD=") + ZT_FAULT_SHIM);
    // A sanitized helper must accept a library loaded before its runtime.
    vars.push_back("ASAN_OPTIONS=verify_asan_link_order=0");
  }
  std::vector<char*> envp;
  for (auto& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  const std::string helper = ZT_WRITE_HELPER;
  std::vector<char*> argv = {const_cast<char*>(helper.c_str()), const_cast<char*>(mode.c_str()),
                             const_cast<char*>(target.c_str()), nullptr};
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe");
  Helper h;
  h.pid = ::fork();
  if (h.pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  h.out = fds[0];
  return h;
}

struct Exit {
  bool exited = false;
  int code = -1;
  int signal = 0;
};

Exit wait_for(Helper& h) {
  int status = 0;
  ::waitpid(h.pid, &status, 0);
  ::close(h.out);
  return Exit{WIFEXITED(status), WIFEXITED(status) ? WEXITSTATUS(status) : -1,
              WIFSIGNALED(status) ? WTERMSIG(status) : 0};
}

Exit run_helper(const std::string& mode, const std::string& target,
                const std::map<std::string, std::string>& env, bool preload) {
  Helper h = spawn(mode, target, env, preload);
  return wait_for(h);
}

std::string listing(const ScratchDir& d) {
  std::string s;
  for (const auto& n : d.list()) s += n + " ";
  return s;
}

// After a failed or aborted write: the target holds its old bytes and it is
// the only entry in the directory.
testing::AssertionResult Untouched(const ScratchDir& d) {
  if (d.list() != std::vector<std::string>{"t.zt"})
    return testing::AssertionFailure() << "the directory holds: " << listing(d);
  if (read_file(d.file("t.zt")) != kOld)
    return testing::AssertionFailure() << "the target was changed";
  return testing::AssertionSuccess();
}

// Each writer fault runs twice: with the unnamed O_TMPFILE temporary, and
// with the named one that file systems without O_TMPFILE get.
class WriterFaults : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override { write_file(dir.file("t.zt"), kOld); }
  std::map<std::string, std::string> env(std::map<std::string, std::string> extra) const {
    if (GetParam()) extra["ZT_SHIM_NO_TMPFILE"] = "1";
    return extra;
  }
  ScratchDir dir;
};

TEST_P(WriterFaults, SucceedsWithoutFaults) {
  // The harness itself: a clean run replaces the target with a valid file.
  const Exit e = run_helper("small", dir.file("t.zt"), env({}), true);
  ASSERT_TRUE(e.exited);
  ASSERT_EQ(e.code, 0);
  EXPECT_EQ(dir.list(), std::vector<std::string>{"t.zt"});
  zt_reader* r = nullptr;
  ASSERT_EQ(zt_open(dir.file("t.zt").c_str(), &r), ZT_OK) << zt_last_error();
  EXPECT_EQ(zt_object_count(r), 2u);
  EXPECT_EQ(zt_verify(r, nullptr, nullptr), ZT_OK);
  zt_close(r);
}

TEST_P(WriterFaults, DiskFull) {
  const Exit e = run_helper("big", dir.file("t.zt"), env({{"ZT_HELPER_FSIZE", "65536"}}), true);
  ASSERT_TRUE(e.exited) << "signal " << e.signal;
  EXPECT_TRUE(e.code == ZT_ERR_IO || e.code == 100 + ZT_ERR_IO) << "exit code " << e.code;
  EXPECT_TRUE(Untouched(dir));
}

TEST_P(WriterFaults, DiskFullWhileWritingTheManifest) {
  // Room for the data but not for the manifest and footer.
  const Exit e = run_helper("small", dir.file("t.zt"), env({{"ZT_HELPER_FSIZE", "200"}}), true);
  ASSERT_TRUE(e.exited) << "signal " << e.signal;
  EXPECT_TRUE(e.code == ZT_ERR_IO || e.code == 100 + ZT_ERR_IO) << "exit code " << e.code;
  EXPECT_TRUE(Untouched(dir));
}

TEST_P(WriterFaults, FsyncFails) {
  const Exit e = run_helper("small", dir.file("t.zt"), env({{"ZT_SHIM_FAIL_FSYNC", "1"}}), true);
  ASSERT_TRUE(e.exited);
  EXPECT_EQ(e.code, ZT_ERR_IO);
  EXPECT_TRUE(Untouched(dir));
}

TEST_P(WriterFaults, RenameFails) {
  const Exit e = run_helper("small", dir.file("t.zt"), env({{"ZT_SHIM_FAIL_RENAME", "1"}}), true);
  ASSERT_TRUE(e.exited);
  EXPECT_EQ(e.code, ZT_ERR_IO);
  EXPECT_TRUE(Untouched(dir));
}

TEST_P(WriterFaults, LinkFails) {
  // Only the O_TMPFILE path links; the named path must not care.
  const Exit e = run_helper("small", dir.file("t.zt"), env({{"ZT_SHIM_FAIL_LINKAT", "1"}}), true);
  ASSERT_TRUE(e.exited);
  if (GetParam()) {
    EXPECT_EQ(e.code, ZT_OK);
    EXPECT_EQ(dir.list(), std::vector<std::string>{"t.zt"});
  } else {
    EXPECT_EQ(e.code, ZT_ERR_IO);
    EXPECT_TRUE(Untouched(dir));
  }
}

// Without /proc (a container or chroot), an O_TMPFILE file cannot be
// given a name (linkat through /proc/self/fd): the writer names its
// temporary from the start.
TEST(WriterWithoutProc, NamesItsTemporaryFromTheStart) {
  ScratchDir dir;
  write_file(dir.file("t.zt"), kOld);
  const Exit e = run_helper("small", dir.file("t.zt"), {{"ZT_SHIM_NO_PROC", "1"}}, true);
  ASSERT_TRUE(e.exited) << "signal " << e.signal;
  ASSERT_EQ(e.code, ZT_OK);
  EXPECT_EQ(dir.list(), std::vector<std::string>{"t.zt"});
  zt_reader* r = nullptr;
  ASSERT_EQ(zt_open(dir.file("t.zt").c_str(), &r), ZT_OK) << zt_last_error();
  EXPECT_EQ(zt_object_count(r), 2u);
  zt_close(r);
}

TEST_P(WriterFaults, Abort) {
  const Exit e = run_helper("abort", dir.file("t.zt"), env({}), true);
  ASSERT_TRUE(e.exited);
  EXPECT_EQ(e.code, 0);
  EXPECT_TRUE(Untouched(dir));
}

TEST_P(WriterFaults, SigkillMidWrite) {
  Helper h = spawn("slow", dir.file("t.zt"), env({}), true);
  // Wait (at most 30 s) until the first piece is written.
  pollfd p{h.out, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 30000), 1) << "the helper never got going";
  char buf[16] = {};
  ASSERT_GT(::read(h.out, buf, sizeof buf - 1), 0);
  ASSERT_STREQ(buf, "ready\n");
  ::kill(h.pid, SIGKILL);
  const Exit e = wait_for(h);
  ASSERT_EQ(e.signal, SIGKILL);
  if (!GetParam()) {
    // The unnamed temporary disappears with the process.
    EXPECT_TRUE(Untouched(dir));
  } else {
    // A named temporary cannot be removed by a process killed outright: it
    // stays beside the target, which is untouched (documented in
    // SECURITY.md). Anything left carries the temporary prefix.
    EXPECT_EQ(read_file(dir.file("t.zt")), kOld);
    for (const std::string& n : dir.list())
      EXPECT_TRUE(n == "t.zt" || n.rfind("t.zt.tmp-", 0) == 0) << "unexpected entry " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Temporary, WriterFaults, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& i) {
                           return i.param ? "Named" : "Unnamed";
                         });

// ---- append (v2 spec §2.5) --------------------------------------------------

// A crash or failure while appending leaves the previous generation: the
// file keeps its bytes and opens with its objects, and nothing stays beside
// it (but a named temporary after SIGKILL, as for any write).
class AppendFaults : public testing::Test {
 protected:
  void SetUp() override {
    zt_writer_options o;
    zt_writer_options_init(&o);
    o.file_version = 2;
    zt_writer* w = nullptr;
    ASSERT_EQ(zt_writer_open_ex(dir.file("t.zt").c_str(), &o, &w), ZT_OK) << zt_last_error();
    const float v[] = {1, 2, 3};
    const uint64_t shape[] = {3};
    ASSERT_EQ(zt_writer_add_dense(w, "kept", "f32", shape, 1, v, sizeof v, "raw"), ZT_OK);
    ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
    before = read_file(dir.file("t.zt"));
  }
  // The previous generation, byte for byte, and readable.
  testing::AssertionResult Previous() const {
    if (read_file(dir.file("t.zt")) != before)
      return testing::AssertionFailure() << "the file was changed";
    zt_reader* r = nullptr;
    if (zt_open(dir.file("t.zt").c_str(), &r) != ZT_OK)
      return testing::AssertionFailure() << "does not open: " << zt_last_error();
    const size_t n = zt_object_count(r);
    const zt_status v = zt_verify(r, nullptr, nullptr);
    zt_close(r);
    if (n != 1 || v != ZT_OK) return testing::AssertionFailure() << n << " objects, verify " << v;
    return testing::AssertionSuccess();
  }
  ScratchDir dir;
  Bytes before;
};

TEST_F(AppendFaults, SucceedsWithoutFaults) {
  const Exit e = run_helper("append", dir.file("t.zt"), {}, true);
  ASSERT_TRUE(e.exited);
  ASSERT_EQ(e.code, 0);
  EXPECT_EQ(dir.list(), std::vector<std::string>{"t.zt"});
  const Bytes after = read_file(dir.file("t.zt"));
  ASSERT_GT(after.size(), before.size());
  EXPECT_TRUE(std::equal(before.begin(), before.end(), after.begin()));
  zt_reader* r = nullptr;
  ASSERT_EQ(zt_open(dir.file("t.zt").c_str(), &r), ZT_OK) << zt_last_error();
  EXPECT_EQ(zt_object_count(r), 2u);
  EXPECT_EQ(zt_verify(r, nullptr, nullptr), ZT_OK) << zt_last_error();
  zt_close(r);
}

TEST_F(AppendFaults, DiskFull) {
  const std::string room = std::to_string(before.size() + 65536);
  const Exit e = run_helper("append", dir.file("t.zt"), {{"ZT_HELPER_FSIZE", room}}, true);
  ASSERT_TRUE(e.exited) << "signal " << e.signal;
  EXPECT_TRUE(e.code == ZT_ERR_IO || e.code == 100 + ZT_ERR_IO) << "exit code " << e.code;
  EXPECT_EQ(dir.list(), std::vector<std::string>{"t.zt"});
  EXPECT_TRUE(Previous());
}

TEST_F(AppendFaults, FsyncAndRenameFail) {
  for (const char* fault : {"ZT_SHIM_FAIL_FSYNC", "ZT_SHIM_FAIL_RENAME"}) {
    const Exit e = run_helper("append", dir.file("t.zt"), {{fault, "1"}}, true);
    ASSERT_TRUE(e.exited);
    EXPECT_EQ(e.code, ZT_ERR_IO) << fault;
    EXPECT_EQ(dir.list(), std::vector<std::string>{"t.zt"}) << fault;
    EXPECT_TRUE(Previous()) << fault;
  }
}

TEST_F(AppendFaults, SigkillMidAppend) {
  Helper h = spawn("append-slow", dir.file("t.zt"), {}, true);
  pollfd p{h.out, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 30000), 1) << "the helper never got going";
  char buf[16] = {};
  ASSERT_GT(::read(h.out, buf, sizeof buf - 1), 0);
  ASSERT_STREQ(buf, "ready\n");
  ::kill(h.pid, SIGKILL);
  const Exit e = wait_for(h);
  ASSERT_EQ(e.signal, SIGKILL);
  EXPECT_TRUE(Previous());
  for (const std::string& n : dir.list())
    EXPECT_TRUE(n == "t.zt" || n.rfind("t.zt.tmp-", 0) == 0) << "unexpected entry " << n;
}

// ---- writing shards ---------------------------------------------------------

// A sharded write that fails publishes nothing: no shard and no root
// appear, and the old file at the target stays as it was.
class ShardFaults : public testing::Test {
 protected:
  void SetUp() override { write_file(dir.file("t.zt"), kOld); }
  ScratchDir dir;
};

// The first byte of object "x" in the model at `path`, and whether the
// model verifies (every shard's size and digest, every part's bytes).
struct ModelState {
  bool opens = false, verifies = false;
  int x_byte1 = -1;
};
ModelState model_at(const std::string& path) {
  ModelState m;
  zt_reader* r = nullptr;
  if (zt_open(path.c_str(), &r) != ZT_OK) return m;
  m.opens = true;
  m.verifies = zt_verify(r, nullptr, nullptr) == ZT_OK;
  size_t x = 0;
  std::vector<uint8_t> bytes(100000);
  uint64_t got = 0;
  if (zt_object_find(r, "x", &x) == ZT_OK &&
      zt_component_read(r, x, "data", bytes.data(), bytes.size(), &got) == ZT_OK && got > 1)
    m.x_byte1 = bytes[1];
  zt_close(r);
  return m;
}

bool all_start_with(const std::vector<std::string>& names, const std::string& prefix) {
  return std::all_of(names.begin(), names.end(),
                     [&](const std::string& n) { return n.rfind(prefix, 0) == 0; });
}

TEST_F(ShardFaults, SucceedsWithoutFaults) {
  const Exit e = run_helper("shards", dir.file("t.zt"), {}, true);
  ASSERT_TRUE(e.exited);
  ASSERT_EQ(e.code, 0);
  // Shards are named after their content: 00001-<12 hex of their sha256>.
  const std::vector<std::string> names = dir.list();
  ASSERT_EQ(names.size(), 4u);
  for (size_t k = 0; k < 3; ++k) {
    const std::string want = "t-0000" + std::to_string(k + 1) + "-";
    EXPECT_EQ(names[k].rfind(want, 0), 0u) << names[k];
    EXPECT_EQ(names[k].size(), want.size() + 12 + 3) << names[k];
  }
  EXPECT_EQ(names.back(), "t.zt");
  zt_reader* r = nullptr;
  ASSERT_EQ(zt_open(dir.file("t.zt").c_str(), &r), ZT_OK) << zt_last_error();
  EXPECT_EQ(zt_object_count(r), 3u);
  EXPECT_EQ(zt_verify(r, nullptr, nullptr), ZT_OK) << zt_last_error();
  zt_close(r);
  // The same model again: the same names and bytes, nothing else left.
  const Exit again = run_helper("shards", dir.file("t.zt"), {}, true);
  ASSERT_TRUE(again.exited && again.code == 0);
  EXPECT_EQ(dir.list(), names);
}

TEST_F(ShardFaults, DiskFullAndFailedPublication) {
  const std::map<std::string, std::string> faults[] = {{{"ZT_HELPER_FSIZE", "100000"}},
                                                       {{"ZT_SHIM_FAIL_FSYNC", "1"}},
                                                       {{"ZT_SHIM_FAIL_RENAME", "1"}},
                                                       {{"ZT_SHIM_FAIL_RENAME_ONTO", "/t.zt"}}};
  for (const auto& fault : faults) {
    const Exit e = run_helper("shards", dir.file("t.zt"), fault, true);
    ASSERT_TRUE(e.exited) << "signal " << e.signal;
    EXPECT_TRUE(e.code == ZT_ERR_IO || e.code == 100 + ZT_ERR_IO)
        << fault.begin()->first << ": exit code " << e.code;
    EXPECT_EQ(dir.list(), std::vector<std::string>{"t.zt"}) << fault.begin()->first;
    EXPECT_EQ(read_file(dir.file("t.zt")), kOld) << fault.begin()->first;
  }
}

// Issue #42 item 1: a sharded model replaced by another whose write fails
// late (its shards published, its root not) stays the old model, whole;
// the write that succeeds replaces it whole and removes its shards.
TEST_F(ShardFaults, AFailedRewriteKeepsTheOldShardedModel) {
  ASSERT_EQ(run_helper("shards", dir.file("t.zt"), {}, true).code, 0);
  const std::vector<std::string> old_files = dir.list();
  const ModelState before = model_at(dir.file("t.zt"));
  ASSERT_TRUE(before.opens && before.verifies);
  const std::map<std::string, std::string> faults[] = {{{"ZT_SHIM_FAIL_RENAME_ONTO", "/t.zt"}},
                                                       {{"ZT_HELPER_FSIZE", "100000"}},
                                                       {{"ZT_SHIM_FAIL_FSYNC", "1"}}};
  for (const auto& fault : faults) {
    const Exit e = run_helper("shards-b", dir.file("t.zt"), fault, true);
    ASSERT_TRUE(e.exited) << "signal " << e.signal;
    EXPECT_TRUE(e.code == ZT_ERR_IO || e.code == 100 + ZT_ERR_IO) << fault.begin()->first;
    EXPECT_EQ(dir.list(), old_files) << fault.begin()->first;
    const ModelState after = model_at(dir.file("t.zt"));
    EXPECT_TRUE(after.opens && after.verifies) << fault.begin()->first;
    EXPECT_EQ(after.x_byte1, before.x_byte1) << fault.begin()->first;
  }
  ASSERT_EQ(run_helper("shards-b", dir.file("t.zt"), {}, true).code, 0);
  const std::vector<std::string> new_files = dir.list();
  EXPECT_EQ(new_files.size(), old_files.size());
  for (const std::string& n : old_files) {
    if (n == "t.zt") continue;
    EXPECT_EQ(std::count(new_files.begin(), new_files.end(), n), 0) << n << " was left";
  }
  const ModelState b = model_at(dir.file("t.zt"));
  EXPECT_TRUE(b.opens && b.verifies);
  EXPECT_NE(b.x_byte1, before.x_byte1);
  EXPECT_TRUE(all_start_with(new_files, "t"));
}

// ---- reader ---------------------------------------------------------------

// A file with one raw u8 object "w" of `n` bytes at offset 64, with an xxh3
// digest written by the library's writer.
void write_raw_file(const std::string& path, size_t n) {
  std::vector<uint8_t> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<uint8_t>(i * 31);
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open(path.c_str(), &w), ZT_OK);
  const uint64_t shape[] = {n};
  ASSERT_EQ(zt_writer_add_dense(w, "w", "u8", shape, 1, data.data(), n, "raw"), ZT_OK);
  ASSERT_EQ(zt_writer_finish(w), ZT_OK);
}

class ReaderFaults : public testing::Test {
 protected:
  void SetUp() override { write_raw_file(path, 4 << 20); }
  ScratchDir dir;
  std::string path = dir.file("r.zt");
};

zt_reader* open_mode(const std::string& path, uint32_t mode) {
  zt_open_options opt;
  zt_open_options_init(&opt);
  opt.io_mode = mode;
  zt_reader* r = nullptr;
  return zt_open_ex(path.c_str(), &opt, &r) == ZT_OK ? r : nullptr;
}

TEST_F(ReaderFaults, TruncatedUnderAMappingRaisesSigbus) {
  const auto c = run_child([&] {
    zt_reader* r = open_mode(path, ZT_IO_MAP);
    if (!r) return 90;
    if (::truncate(path.c_str(), 4096) != 0) return 91;
    // Reading the data touches pages past the new end of the file.
    (void)zt_verify(r, nullptr, nullptr);
    return 92;  // not reached: SIGBUS
  });
  if (kSanitized) {
    // The sanitizer catches the SIGBUS, reports it and exits non-zero.
    EXPECT_TRUE(c.signal == SIGBUS || (c.exited && c.exit_code != 0 && c.exit_code < 90))
        << "exit code " << c.exit_code;
  } else {
    EXPECT_EQ(c.signal, SIGBUS) << "exit code " << c.exit_code;
  }
}

TEST_F(ReaderFaults, CopyModeTurnsTruncationIntoAnIoError) {
  const auto c = run_child([&] {
    zt_reader* r = open_mode(path, ZT_IO_COPY);
    if (!r) return 90;
    if (::truncate(path.c_str(), 4096) != 0) return 91;
    const void* p = nullptr;
    uint64_t n = 0;
    std::vector<uint8_t> buf(4 << 20);
    uint64_t written = 0;
    const bool all_io =
        zt_component_map(r, 0, "data", &p, &n) == ZT_ERR_IO &&
        zt_component_read(r, 0, "data", buf.data(), buf.size(), &written) == ZT_ERR_IO &&
        zt_verify(r, nullptr, nullptr) == ZT_ERR_IO;
    zt_close(r);
    return all_io ? 0 : 93;
  });
  ASSERT_TRUE(c.exited) << "signal " << c.signal;
  EXPECT_EQ(c.exit_code, 0);
}

TEST_F(ReaderFaults, CopyModeSeesARewriteAsADigestMismatch) {
  zt_reader* r = open_mode(path, ZT_IO_COPY);
  ASSERT_NE(r, nullptr);
  const int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  const uint8_t junk[8] = {0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef};
  ASSERT_EQ(::pwrite(fd, junk, sizeof junk, 1000), 8);
  ::close(fd);
  EXPECT_EQ(zt_verify(r, nullptr, nullptr), ZT_ERR_DIGEST) << zt_last_error();
  zt_close(r);
}

// Whether a line of /proc/self/smaps starts a mapping ("7f00-7f40 r--s ...
// /path"), not a field of one ("Rss:   12 kB").
bool starts_mapping(const std::string& line) {
  const size_t dash = line.find('-');
  return dash != std::string::npos && dash > 0 && dash < line.find(' ') &&
         std::all_of(line.begin(), line.begin() + static_cast<long>(dash),
                     [](char ch) { return std::isxdigit(static_cast<unsigned char>(ch)) != 0; });
}

// Kilobytes of the file at `path` that this process has mapped in (the Rss
// of its mappings in /proc/self/smaps); -1 where smaps cannot be read.
long mapped_kib_of(const std::string& path) {
  FILE* f = std::fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  long total = 0;
  bool inside = false;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, f)) {
    std::string line(buf);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    long kib = 0;
    if (starts_mapping(line))
      inside = line.ends_with(path);
    else if (inside && std::sscanf(line.c_str(), "Rss: %ld kB", &kib) == 1)
      total += kib;
  }
  std::fclose(f);
  return total;
}

// In map mode a zt_component_read of 64 KiB or more goes through pread, hot
// or cold: cold, it gets the kernel's readahead; hot, it skips mapping the
// pages into the process (page-table work that made a hot load 3x slower on
// the project's VM), so the file's pages do not count in the process's
// memory. The bytes are the same, and a file truncated under the reader
// gives ZT_ERR_IO instead of SIGBUS.
TEST(ReaderLargeReads, LargeReadsInMapModeUsePreadAndSurviveTruncation) {
  ScratchDir dir;
  const std::string path = dir.file("big.zt");
  constexpr size_t kBytes = size_t{24} << 20;
  write_raw_file(path, kBytes);
  auto drop_cache = [&] {
    const int fd = ::open(path.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  };
  zt_reader* r = open_mode(path, ZT_IO_MAP);
  ASSERT_NE(r, nullptr);
  std::vector<uint8_t> buf(kBytes);
  for (const bool cold : {true, false}) {  // not in the page cache, then resident
    if (cold) drop_cache();
    std::fill(buf.begin(), buf.end(), uint8_t{0});
    uint64_t written = 0;
    ASSERT_EQ(zt_component_read(r, 0, "data", buf.data(), buf.size(), &written), ZT_OK) << zt_last_error();
    ASSERT_EQ(written, kBytes);
    for (size_t i = 0; i < kBytes; i += 4099) ASSERT_EQ(buf[i], static_cast<uint8_t>(i * 31)) << "byte " << i;
  }
  // Both reads copied 24 MiB; of the mapping, only the manifest's pages
  // were touched (and the kernel's fault-around next to them).
  const long mapped = mapped_kib_of(path);
  ASSERT_GE(mapped, 0) << "/proc/self/smaps";
  EXPECT_LT(mapped, 1024) << "KiB of the file mapped into the process after two reads of 24 MiB";
  zt_close(r);

  const auto c = run_child([&] {
    zt_reader* rr = open_mode(path, ZT_IO_MAP);
    if (!rr) return 90;
    if (::truncate(path.c_str(), 4096) != 0) return 91;
    std::vector<uint8_t> b(kBytes);
    uint64_t written = 0;
    const zt_status st = zt_component_read(rr, 0, "data", b.data(), b.size(), &written);
    zt_close(rr);
    return st == ZT_ERR_IO ? 0 : 93;
  });
  ASSERT_TRUE(c.exited) << "signal " << c.signal;
  EXPECT_EQ(c.exit_code, 0);
}

}  // namespace
}  // namespace zt::hardening
