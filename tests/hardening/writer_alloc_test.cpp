// The writer as a state machine (issue 24, item 4): allocation failures
// injected at every allocation of a sequence of writer calls. Whatever call
// fails, the writer either rolled that call back or refuses every later call,
// and it never publishes a file that contradicts the calls that succeeded:
// a published file verifies and holds exactly the objects whose calls
// returned ZT_OK, with their bytes. Also: absurd frame sizes are refused at
// open instead of wrapping (2^61 * capacity was 0 and write spun forever).
//
// The same for I/O: write, pread, ftruncate, fsync, linkat and rename fail
// with EIO at each of their calls in turn.
//
// This binary replaces the global operator new and those system call
// wrappers (the core is linked in statically, so its calls land here);
// failures are injected on the test's own thread only (the compression
// workers allocate too, and a worker that cannot allocate is a different
// test).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "write/output_file.h"
#include "ztensor.h"

namespace {

thread_local bool t_armed = false;
thread_local long t_countdown = -1;  // the allocation that fails, counted from 0
thread_local long t_failed = 0;      // allocations failed on purpose
thread_local bool t_keep_failing = false;  // every allocation from the countdown's on fails
thread_local long t_made = 0;              // allocations made while armed

void* allocate(std::size_t n) {
  if (t_armed) ++t_made;
  if (t_armed && t_countdown >= 0) {
    if (t_countdown == 0) {
      if (!t_keep_failing) t_countdown = -1;
      ++t_failed;
      throw std::bad_alloc();
    }
    --t_countdown;
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}

thread_local long t_io_countdown = -1;  // the system call that fails, counted from 0
thread_local long t_io_failed = 0;
thread_local long t_writes = 0;  // write(2) calls made while armed
thread_local size_t t_write_most = 0;  // when not 0: each write(2) writes at most this many bytes

// Whether this call is the one to fail (errno set to EIO).
bool io_fails() {
  if (!t_armed || t_io_countdown < 0 || t_io_countdown-- != 0) return false;
  ++t_io_failed;
  errno = EIO;
  return true;
}

template <typename F>
F* real(const char* name) {
  return reinterpret_cast<F*>(dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" {
ssize_t write(int fd, const void* buf, size_t n) {
  static auto* next = real<ssize_t(int, const void*, size_t)>("write");
  if (t_armed) ++t_writes;
  if (io_fails()) return -1;
  return next(fd, buf, t_write_most && t_armed ? std::min(n, t_write_most) : n);
}
ssize_t pread(int fd, void* buf, size_t n, off_t at) {
  static auto* next = real<ssize_t(int, void*, size_t, off_t)>("pread");
  return io_fails() ? -1 : next(fd, buf, n, at);
}
int ftruncate(int fd, off_t size) {
  static auto* next = real<int(int, off_t)>("ftruncate");
  return io_fails() ? -1 : next(fd, size);
}
int fsync(int fd) {
  static auto* next = real<int(int)>("fsync");
  return io_fails() ? -1 : next(fd);
}
int linkat(int olddir, const char* oldpath, int newdir, const char* newpath, int flags) {
  static auto* next = real<int(int, const char*, int, const char*, int)>("linkat");
  return io_fails() ? -1 : next(olddir, oldpath, newdir, newpath, flags);
}
int rename(const char* from, const char* to) {
  static auto* next = real<int(const char*, const char*)>("rename");
  return io_fails() ? -1 : next(from, to);
}
}

void* operator new(std::size_t n) { return allocate(n); }
void* operator new[](std::size_t n) { return allocate(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

struct Outcome {
  bool dense_ok = false, streamed_ok = false, small_ok = false, large_ok = false, finish_ok = false;
};

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i / 5 + seed) % 7);
  return v;
}

// The sequence: a zstd dense object in one call, an object streamed in
// pieces through begin/write/end, a small raw object, a raw object larger
// than OutputFile gathers (whose call writes out the others' gathered bytes:
// a write that fails there fails a call after the one that gave the
// bytes), finish. Every call is made whatever the earlier ones returned.
enum class Fault { allocation, io };

Outcome run_sequence(const std::string& path, long fail_at, Fault fault = Fault::allocation) {
  Outcome o;
  zt_writer_options opt;
  zt_writer_options_init(&opt);
  opt.threads = 2;
  opt.frame_size = 4096;
  zt_writer* w = nullptr;
  if (zt_writer_open_ex(path.c_str(), &opt, &w) != ZT_OK) return o;
  const std::vector<uint8_t> a = pattern(20000, 1), b = pattern(30000, 2), c = pattern(64, 3);
  const std::vector<uint8_t> d = pattern(zt::OutputFile::kGatherBytes + 4000, 4);
  const uint64_t sa[1] = {a.size() / 4}, sb[1] = {b.size()}, sc[1] = {c.size()}, sd[1] = {d.size()};
  (fault == Fault::allocation ? t_countdown : t_io_countdown) = fail_at;
  t_armed = true;
  o.dense_ok = zt_writer_add_dense(w, "a", "f32", sa, 1, a.data(), a.size(), "zstd") == ZT_OK;
  bool streamed = zt_writer_begin_object(w, "b", "dense", sb, 1) == ZT_OK;
  streamed = zt_writer_begin_component(w, "data", "u8", nullptr, "zstd", b.size()) == ZT_OK && streamed;
  for (size_t at = 0; at < b.size(); at += 7000)
    streamed = zt_writer_write(w, b.data() + at, std::min<size_t>(7000, b.size() - at)) == ZT_OK && streamed;
  // A caller that tries again: a component whose end failed must not come
  // back as a whole one (it was published holding the frames that came).
  zt_status ended = zt_writer_end_component(w);
  if (ended != ZT_OK) ended = zt_writer_end_component(w);
  streamed = ended == ZT_OK && streamed;
  o.streamed_ok = zt_writer_end_object(w) == ZT_OK && streamed;
  o.small_ok = zt_writer_add_dense(w, "c", "u8", sc, 1, c.data(), c.size(), nullptr) == ZT_OK;
  o.large_ok = zt_writer_add_dense(w, "d", "u8", sd, 1, d.data(), d.size(), nullptr) == ZT_OK;
  o.finish_ok = zt_writer_finish(w) == ZT_OK;
  t_armed = false;
  t_countdown = t_io_countdown = -1;
  return o;
}

std::string temp_path() {
  return (std::filesystem::path(::testing::TempDir()) / ("zt_writer_alloc_" + std::to_string(::getpid()) + ".zt"))
      .string();
}

bool object_equals(zt_reader* r, const char* name, const std::vector<uint8_t>& want) {
  size_t i = 0;
  if (zt_object_find(r, name, &i) != ZT_OK) return false;
  std::vector<uint8_t> got(want.size() + 1);
  uint64_t n = 0;
  return zt_component_read(r, i, "data", got.data(), got.size(), &n) == ZT_OK && n == want.size() &&
         std::equal(want.begin(), want.end(), got.begin());
}

// Fails the fault's calls one at a time, from the first of the sequence to
// past its last; returns how many were failed.
long fail_each_call(Fault fault) {
  const std::string path = temp_path();
  long points = 0;
  for (long fail_at = 0;; ++fail_at) {
    std::filesystem::remove(path);
    t_failed = t_io_failed = 0;
    const Outcome o = run_sequence(path, fail_at, fault);
    if ((fault == Fault::allocation ? t_failed : t_io_failed) == 0) {
      // Past the last such call of the sequence: everything succeeded.
      EXPECT_TRUE(o.dense_ok && o.streamed_ok && o.small_ok && o.large_ok && o.finish_ok);
      break;
    }
    ++points;
    SCOPED_TRACE((fault == Fault::allocation ? "allocation " : "system call ") +
                 std::to_string(fail_at) + " failed");
    if (!o.finish_ok) {
      EXPECT_FALSE(std::filesystem::exists(path)) << "a failed finish left a file";
      continue;
    }
    zt_reader* r = nullptr;
    if (zt_open(path.c_str(), &r) != ZT_OK) {
      ADD_FAILURE() << "a finished file does not open: " << zt_last_error();
      continue;
    }
    EXPECT_EQ(zt_verify(r, nullptr, nullptr), ZT_OK) << zt_last_error();
    size_t expected = 0;
    for (const auto& [ok, name, bytes] :
         {std::tuple{o.dense_ok, "a", pattern(20000, 1)},
          std::tuple{o.streamed_ok, "b", pattern(30000, 2)},
          std::tuple{o.small_ok, "c", pattern(64, 3)},
          std::tuple{o.large_ok, "d", pattern(zt::OutputFile::kGatherBytes + 4000, 4)}}) {
      size_t i = 0;
      const bool present = zt_object_find(r, name, &i) == ZT_OK;
      EXPECT_EQ(present, ok) << "object " << name << (ok ? " was added but is missing" : " failed but is there");
      if (ok) {
        EXPECT_TRUE(object_equals(r, name, bytes)) << "object " << name << " differs";
        ++expected;
      }
    }
    EXPECT_EQ(zt_object_count(r), expected);
    zt_close(r);
  }
  std::filesystem::remove(path);
  std::fprintf(stderr, "  %ld %s failed in turn\n", points,
               fault == Fault::allocation ? "allocations" : "system calls");
  return points;
}

TEST(WriterAlloc, EveryFailedAllocationLeavesNoContradictingFile) {
  EXPECT_GT(fail_each_call(Fault::allocation), 20)
      << "the sequence made fewer allocations than expected";
}

// Memory that stays exhausted: the handlers cannot allocate their messages
// either (a second bad_alloc there ended the process). Every call returns,
// and a failed finish leaves no file.
TEST(WriterAlloc, MemoryThatStaysExhaustedEndsNoProcess) {
  const std::string path = temp_path();
  long points = 0;
  for (long fail_at = 0;; ++fail_at) {
    std::filesystem::remove(path);
    t_failed = 0;
    t_keep_failing = true;
    const Outcome o = run_sequence(path, fail_at);
    t_keep_failing = false;
    if (t_failed == 0) break;
    ++points;
    if (!o.finish_ok) {
      EXPECT_FALSE(std::filesystem::exists(path)) << "allocations from " << fail_at << " failed";
    }
  }
  std::filesystem::remove(path);
  EXPECT_GT(points, 20);
}

TEST(WriterIo, EveryFailedSystemCallLeavesNoContradictingFile) {
  // The gathered bytes of the first three objects, the fourth's, the
  // manifest's, fsync, linkat or rename: at least 6.
  EXPECT_GE(fail_each_call(Fault::io), 6) << "the sequence made fewer system calls than expected";
}

// Several files put in place together (a checkpoint folder: zt convert
// --hf): whichever fsync, linkat or rename fails, the folder holds what it
// held, the old files whole, no new file and no temporary or kept link.
TEST(WriterIo, FilesPublishedTogetherAreAllOrNone) {
  namespace fs = std::filesystem;
  const fs::path dir = temp_path() + ".d";
  fs::create_directories(dir);
  const auto put = [](const fs::path& p, const std::string& text) {
    std::FILE* f = std::fopen(p.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  };
  const auto text_of = [](const fs::path& p) {
    std::string out;
    if (std::FILE* f = std::fopen(p.c_str(), "rb")) {
      char buf[64];
      for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
      std::fclose(f);
    }
    return out;
  };
  const std::vector<std::string> names = {"a", "b", "c", "new"};
  long failures = 0;
  for (long fail_at = 0;; ++fail_at) {
    for (const std::string& n : names)
      if (n != "new") put(dir / n, "old " + n);
    fs::remove(dir / "new");  // a run that succeeded put it there
    std::vector<zt::OutputFile> files;
    for (const std::string& n : names) {
      auto f = zt::OutputFile::create((dir / n).string());
      ASSERT_TRUE(f) << f.error().message;
      const std::string text = "new " + n;
      ASSERT_TRUE(f->write(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size())));
      files.push_back(std::move(*f));
    }
    t_io_countdown = fail_at;
    t_io_failed = 0;
    t_armed = true;
    const auto r = zt::publish_together(files);
    t_armed = false;
    const bool injected = t_io_failed > 0;
    t_io_countdown = -1;
    std::vector<std::string> listed;
    for (const auto& e : fs::directory_iterator(dir))
      listed.push_back(e.path().filename().string());
    std::sort(listed.begin(), listed.end());
    if (r) {  // all new (a failed fsync of the directory after a rename is not a failure)
      EXPECT_EQ(listed, names) << "failure " << fail_at;
      for (const std::string& n : names) EXPECT_EQ(text_of(dir / n), "new " + n);
      if (!injected) break;  // every call went through
      continue;
    }
    ++failures;
    ASSERT_TRUE(injected) << r.error().message;
    EXPECT_EQ(listed, std::vector<std::string>({"a", "b", "c"})) << "failure " << fail_at;
    for (const char* n : {"a", "b", "c"})
      EXPECT_EQ(text_of(dir / n), "old " + std::string(n)) << "failure " << fail_at;
  }
  fs::remove_all(dir);
  // fsync, linkat and rename of each of four files: twelve points at least.
  EXPECT_GE(failures, 12);
}

TEST(WriterAlloc, PoisonedWriterNamesTheFirstFailure) {
  const std::string path = temp_path();
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open(path.c_str(), &w), ZT_OK);
  const std::vector<uint8_t> b = pattern(30000, 2);
  const uint64_t sb[1] = {b.size()};
  ASSERT_EQ(zt_writer_begin_object(w, "b", "dense", sb, 1), ZT_OK);
  ASSERT_EQ(zt_writer_begin_component(w, "data", "u8", nullptr, "zstd", b.size()), ZT_OK);
  t_countdown = 0;
  t_armed = true;
  const zt_status s = zt_writer_write(w, b.data(), 100);
  t_armed = false;
  ASSERT_EQ(s, ZT_ERR_NOMEM) << zt_last_error();
  // The bytes of the failed call were counted before it failed: nothing
  // after it may succeed, and finish must not publish.
  EXPECT_EQ(zt_writer_write(w, b.data() + 100, b.size() - 100), ZT_ERR_STATE);
  EXPECT_NE(std::string(zt_last_error()).find("out of memory"), std::string::npos) << zt_last_error();
  EXPECT_EQ(zt_writer_end_component(w), ZT_ERR_STATE);
  EXPECT_EQ(zt_writer_finish(w), ZT_ERR_STATE);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(WriterAlloc, AbsurdFrameSizesAreRefusedAtOpen) {
  const std::string path = temp_path();
  for (const uint64_t fs : {uint64_t{1} << 61, uint64_t{1} << 62, UINT64_MAX, (uint64_t{1} << 28) + 1}) {
    zt_writer_options opt;
    zt_writer_options_init(&opt);
    opt.frame_size = fs;
    zt_writer* w = nullptr;
    EXPECT_EQ(zt_writer_open_ex(path.c_str(), &opt, &w), ZT_ERR_ARGUMENT) << fs;
    EXPECT_NE(std::string(zt_last_error()).find("frame size"), std::string::npos) << zt_last_error();
    if (w) zt_writer_abort(w);
  }
  // auto_min_ratio: NaN and negative ratios are refused, 0 is honoured.
  for (const double ratio : {-1.0, std::numeric_limits<double>::quiet_NaN(), 0.0}) {
    zt_writer_options o;
    zt_writer_options_init(&o);
    o.auto_min_ratio = ratio;
    zt_writer* x = nullptr;
    const zt_status s = zt_writer_open_ex(path.c_str(), &o, &x);
    EXPECT_EQ(s, ratio == 0.0 ? ZT_OK : ZT_ERR_ARGUMENT) << ratio;
    if (x) zt_writer_abort(x);
  }
  // The largest allowed frame does not reserve itself for a small component.
  zt_writer_options opt;
  zt_writer_options_init(&opt);
  opt.frame_size = uint64_t{1} << 28;
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open_ex(path.c_str(), &opt, &w), ZT_OK) << zt_last_error();
  const std::vector<uint8_t> small = pattern(16384, 4);
  const uint64_t shape[1] = {small.size()};
  ASSERT_EQ(zt_writer_begin_object(w, "s", "dense", shape, 1), ZT_OK);
  ASSERT_EQ(zt_writer_begin_component(w, "data", "u8", nullptr, "zstd", small.size()), ZT_OK);
  ASSERT_EQ(zt_writer_write(w, small.data(), 1000), ZT_OK);
  ASSERT_EQ(zt_writer_write(w, small.data() + 1000, small.size() - 1000), ZT_OK);
  ASSERT_EQ(zt_writer_end_component(w), ZT_OK);
  ASSERT_EQ(zt_writer_end_object(w), ZT_OK);
  ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  zt_reader* r = nullptr;
  ASSERT_EQ(zt_open(path.c_str(), &r), ZT_OK);
  EXPECT_EQ(zt_verify(r, nullptr, nullptr), ZT_OK) << zt_last_error();
  EXPECT_TRUE(object_equals(r, "s", small));
  zt_close(r);
  std::filesystem::remove(path);
}

// A file written over an existing one asks it only whether it is a sharded
// v2 root whose shards go with it: a 1.x file or a v2 file without a shard
// table is not opened (a full open of the old file's objects cost a third
// of writing a model of 20,000 small tensors again). Counted: the finish of
// a one-object file over 2,000 objects allocates about as often as over
// nothing, where the full open made four allocations an object.
TEST(WriterAlloc, AFileWrittenOverAnotherReadsNotItsObjects) {
  const std::string path = temp_path();
  const auto write_objects = [&](size_t count, uint32_t version) {
    zt_writer_options opt;
    zt_writer_options_init(&opt);
    opt.file_version = version;
    zt_writer* w = nullptr;
    if (zt_writer_open_ex(path.c_str(), &opt, &w) != ZT_OK) return -1L;
    const float values[4] = {1, 2, 3, 4};
    const uint64_t shape[1] = {4};
    for (size_t i = 0; i < count; ++i) {
      const std::string name = "model.layers." + std::to_string(i) + ".weight";
      if (zt_writer_add_dense(w, name.c_str(), "f32", shape, 1, values, sizeof values, nullptr) !=
          ZT_OK)
        return -1L;
    }
    t_made = 0;
    t_armed = true;
    const zt_status finished = zt_writer_finish(w);
    t_armed = false;
    return finished == ZT_OK ? t_made : -1L;
  };
  for (const uint32_t version : {0u, 2u}) {
    SCOPED_TRACE("file_version " + std::to_string(version));
    std::filesystem::remove(path);
    const long over_nothing = write_objects(1, version);
    ASSERT_GE(over_nothing, 0) << zt_last_error();
    ASSERT_GE(write_objects(2000, version), 0) << zt_last_error();
    const long over_many = write_objects(1, version);
    ASSERT_GE(over_many, 0) << zt_last_error();
    std::fprintf(stderr, "  finish over nothing: %ld allocations, over 2,000 objects: %ld\n",
                 over_nothing, over_many);
    EXPECT_LE(over_many, over_nothing + 20);
    zt_reader* r = nullptr;
    ASSERT_EQ(zt_open(path.c_str(), &r), ZT_OK) << zt_last_error();
    EXPECT_EQ(zt_object_count(r), 1u);
    zt_close(r);
  }
  std::filesystem::remove(path);
}

// Small objects' bytes and their padding are gathered and written out
// together: 2,000 objects of 100 bytes (a 64-byte aligned slot of 128
// bytes each, 250 KiB) take a few write(2) calls, where they took two an
// object (data, then the next one's padding).
TEST(WriterIo, SmallObjectsAreWrittenInFewCalls) {
  const std::string path = temp_path();
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open(path.c_str(), &w), ZT_OK) << zt_last_error();
  const std::vector<uint8_t> data = pattern(100, 5);
  const uint64_t shape[1] = {data.size()};
  t_writes = 0;
  t_armed = true;
  for (int i = 0; i < 2000; ++i) {
    const std::string name = "t" + std::to_string(i);
    ASSERT_EQ(
        zt_writer_add_dense(w, name.c_str(), "u8", shape, 1, data.data(), data.size(), nullptr),
        ZT_OK);
  }
  ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  t_armed = false;
  std::fprintf(stderr, "  2,000 objects of 100 bytes: %ld write(2) calls\n", t_writes);
  EXPECT_LE(t_writes, 20);
  std::filesystem::remove(path);
}

// A write(2) that writes less than it was given is resumed where it stopped:
// with every call cut to 1,000 bytes, a model of objects smaller and larger
// than the gathering buffer is the same file, byte for byte.
TEST(WriterIo, ShortWritesAreResumedWhereTheyStopped) {
  const std::string path = temp_path();
  const std::vector<uint8_t> data = pattern(100000, 6), small = pattern(100, 7);
  const uint64_t shape[1] = {data.size()}, small_shape[1] = {small.size()};
  auto write_model = [&](size_t write_most) {
    zt_writer* w = nullptr;
    EXPECT_EQ(zt_writer_open(path.c_str(), &w), ZT_OK) << zt_last_error();
    t_writes = 0;
    t_write_most = write_most;
    t_armed = true;
    bool ok = w != nullptr;
    for (int i = 0; ok && i < 200; ++i) {
      const std::string name = "t" + std::to_string(i);
      ok = zt_writer_add_dense(w, name.c_str(), "u8", shape, 1, data.data(), data.size(),
                               nullptr) == ZT_OK &&
           zt_writer_add_dense(w, ("s" + name).c_str(), "u8", small_shape, 1, small.data(),
                               small.size(), nullptr) == ZT_OK;
    }
    ok = ok && zt_writer_finish(w) == ZT_OK;
    t_armed = false;
    t_write_most = 0;
    EXPECT_TRUE(ok) << zt_last_error();
    return t_writes;
  };
  write_model(0);
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> whole((std::istreambuf_iterator<char>(in)), {});
  in.close();
  EXPECT_GT(write_model(1000), 20000) << "the writes were not cut short";
  std::ifstream again(path, std::ios::binary);
  const std::vector<char> cut((std::istreambuf_iterator<char>(again)), {});
  EXPECT_EQ(cut, whole) << "short writes were not resumed where they stopped";
  zt_reader* r = nullptr;
  ASSERT_EQ(zt_open(path.c_str(), &r), ZT_OK) << zt_last_error();
  EXPECT_EQ(zt_verify(r, nullptr, nullptr), ZT_OK) << zt_last_error();
  EXPECT_TRUE(object_equals(r, "t199", data));
  EXPECT_TRUE(object_equals(r, "st0", small));
  zt_close(r);
  std::filesystem::remove(path);
}

}  // namespace
