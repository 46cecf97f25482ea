// The reader under allocation failures: each allocation of a sequence of
// reading calls (open, verify, map, read, decode_many, slice, rows, a
// conversion, a sparse view) fails in turn, on the test's own thread. Every
// call returns ZT_OK with the right bytes or ZT_ERR_NOMEM (never a crash,
// another status or wrong bytes); once memory is back, the same reader gives
// every call's bytes (a failed call leaves nothing half made behind); and a
// map that failed holds none of the memory its decode had taken.
//
// This binary replaces the global operator new (the core is linked in
// statically, so its allocations land here) and counts the bytes it has
// handed out and not yet had back.
#include <elf.h>
#include <execinfo.h>
#include <gtest/gtest.h>
#include <link.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "hardening_support.h"
#include "ztensor.h"

namespace {

thread_local bool t_armed = false;   // set only inside the library's calls (in_library)
thread_local long t_countdown = -1;  // the allocation that fails, counted from 0
thread_local long t_failed = 0;      // allocations failed on purpose
thread_local long t_made = 0;        // allocations made inside the library's calls
std::atomic<long> g_live_bytes{0};   // operator new's bytes not yet deleted, all threads
long g_let_through = 0;  // json destructors' allocations not failed (made_by_json_destructor)

// nlohmann::json's destructor flattens a tree onto a heap stack
// (json_value::destroy): a destructor cannot throw, so an allocation failing
// there ends any process, whatever the library around it does. The test lets
// such an allocation through and fails the next one instead. Where destroy
// lies is read from this executable's symbol table (its instances are
// hidden symbols: backtrace_symbols cannot name them).
struct CodeRange {
  uintptr_t begin, end;
};

uintptr_t load_base() {
  uintptr_t base = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        *static_cast<uintptr_t*>(out) = info->dlpi_addr;
        return 1;  // the first object is the executable
      },
      &base);
  return base;
}

std::vector<CodeRange> json_destroy_code() {
  std::vector<CodeRange> out;
  std::FILE* f = std::fopen("/proc/self/exe", "rb");
  if (!f) return out;
  std::vector<char> elf;
  char buf[1 << 16];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) elf.insert(elf.end(), buf, buf + n);
  std::fclose(f);
  if (elf.size() < sizeof(Elf64_Ehdr)) return out;
  Elf64_Ehdr eh;
  std::memcpy(&eh, elf.data(), sizeof eh);
  const auto section = [&](size_t k) {
    Elf64_Shdr sh;
    std::memcpy(&sh, elf.data() + eh.e_shoff + k * sizeof sh, sizeof sh);
    return sh;
  };
  const uintptr_t base = load_base();
  for (size_t k = 0; k < eh.e_shnum; ++k) {
    const Elf64_Shdr symtab = section(k);
    if (symtab.sh_type != SHT_SYMTAB) continue;
    const Elf64_Shdr strtab = section(symtab.sh_link);
    for (size_t at = 0; at + sizeof(Elf64_Sym) <= symtab.sh_size; at += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      std::memcpy(&sym, elf.data() + symtab.sh_offset + at, sizeof sym);
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_size == 0) continue;
      const std::string_view name(elf.data() + strtab.sh_offset + sym.st_name);
      // json_value::destroy, or a basic_json destructor where it is inlined.
      const bool destructor = name.ends_with("D1Ev") || name.ends_with("D2Ev");
      if (name.find("basic_json") != std::string_view::npos &&
          (name.find("json_value7destroy") != std::string_view::npos || destructor))
        out.push_back({base + sym.st_value, base + sym.st_value + sym.st_size});
    }
  }
  return out;
}

const std::vector<CodeRange>& json_destroy_ranges() {
  static const std::vector<CodeRange> ranges = [] {
    void* warm[1];
    backtrace(warm, 1);  // loads the unwinder now, not inside an allocation
    return json_destroy_code();
  }();
  return ranges;
}

bool made_by_json_destructor() {
  void* frames[64];
  const int n = backtrace(frames, 64);
  for (int i = 0; i < n; ++i) {
    const auto at = reinterpret_cast<uintptr_t>(frames[i]);
    for (const CodeRange& r : json_destroy_ranges())
      if (at > r.begin && at <= r.end) return true;  // a return address: just past its call
  }
  return false;
}

void* allocate(std::size_t n) {
  if (t_armed) ++t_made;
  if (t_armed && t_countdown >= 0 && t_countdown-- == 0) {
    if (made_by_json_destructor()) {
      t_countdown = 0;
      ++g_let_through;
    } else {
      ++t_failed;
      throw std::bad_alloc();
    }
  }
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  g_live_bytes += static_cast<long>(malloc_usable_size(p));
  return p;
}

void release(void* p) noexcept {
  if (!p) return;
  g_live_bytes -= static_cast<long>(malloc_usable_size(p));
  std::free(p);
}

}  // namespace

void* operator new(std::size_t n) {
  return allocate(n);
}
void* operator new[](std::size_t n) {
  return allocate(n);
}
void operator delete(void* p) noexcept {
  release(p);
}
void operator delete[](void* p) noexcept {
  release(p);
}
void operator delete(void* p, std::size_t) noexcept {
  release(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  release(p);
}
// The nothrow forms too (std::stable_sort's buffer): their memory comes back
// through the operator delete above, so it must come from the same malloc.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return allocate(n);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept {
  return operator new(n, t);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  release(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  release(p);
}

namespace {

constexpr uint64_t kRawRows = 256, kRawCols = 64;  // f32, raw: 64 KiB
constexpr uint64_t kZRows = 1024, kZCols = 256;    // f32, zstd in 64 KiB frames: 1 MiB
constexpr uint64_t kHRows = 64, kHCols = 32;       // bf16, raw

std::vector<float> floats(size_t n, float seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>((i * 7 + static_cast<size_t>(seed)) % 97) + seed;
  return v;
}

std::vector<uint16_t> bf16_of(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &v[i], 4);
    out[i] = static_cast<uint16_t>(bits >> 16);  // the values are small integers: exact in bf16
  }
  return out;
}

struct Data {
  std::vector<float> raw = floats(kRawRows * kRawCols, 1), z = floats(kZRows * kZCols, 2),
                     h = floats(kHRows * kHCols, 3);
  std::vector<float> csr_values = {1, 2, 3, 4};
  std::vector<uint64_t> csr_indices = {0, 2, 1, 3}, csr_indptr = {0, 2, 3, 4};
};

// shard_bytes (v2): the model split into shard files beside `path`.
void write_file(const std::string& path, uint32_t version, const Data& d,
                uint64_t shard_bytes = 0) {
  zt_writer_options opt;
  zt_writer_options_init(&opt);
  opt.file_version = version;
  opt.shard_bytes = shard_bytes;
  opt.frame_size = 64 << 10;
  opt.threads = 1;
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open_ex(path.c_str(), &opt, &w), ZT_OK) << zt_last_error();
  const uint64_t raw_shape[2] = {kRawRows, kRawCols}, z_shape[2] = {kZRows, kZCols},
                 h_shape[2] = {kHRows, kHCols}, csr_shape[2] = {3, 4};
  ASSERT_EQ(
      zt_writer_add_dense(w, "raw", "f32", raw_shape, 2, d.raw.data(), d.raw.size() * 4, nullptr),
      ZT_OK);
  ASSERT_EQ(zt_writer_add_dense(w, "z", "f32", z_shape, 2, d.z.data(), d.z.size() * 4, "zstd"),
            ZT_OK);
  const std::vector<uint16_t> h = bf16_of(d.h);
  ASSERT_EQ(zt_writer_add_dense(w, "h", "bf16", h_shape, 2, h.data(), h.size() * 2, nullptr),
            ZT_OK);
  ASSERT_EQ(zt_writer_begin_object(w, "csr", "sparse_csr", csr_shape, 2), ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "values", "f32", nullptr, d.csr_values.data(), 16, nullptr),
            ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "indices", "u64", nullptr, d.csr_indices.data(), 32, "zstd"),
            ZT_OK);
  ASSERT_EQ(zt_writer_add_component(w, "indptr", "u64", nullptr, d.csr_indptr.data(), 32, nullptr),
            ZT_OK);
  ASSERT_EQ(zt_writer_end_object(w), ZT_OK) << zt_last_error();
  ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
}

bool same(const void* got, uint64_t n, const void* want, uint64_t want_n) {
  return n == want_n && std::memcmp(got, want, n) == 0;
}

// A call's outcome: ZT_OK with the right bytes, or ZT_ERR_NOMEM where
// memory may fail (`may_fail`); anything else is a failure of the test.
void expect_outcome(const char* call, zt_status s, bool right, bool may_fail) {
  if (s == ZT_OK) {
    EXPECT_TRUE(right) << call << " returned ZT_OK with wrong bytes";
  } else {
    EXPECT_TRUE(may_fail && s == ZT_ERR_NOMEM)
        << call << " returned " << zt_status_name(s) << ": " << zt_last_error();
  }
}

size_t index_of(zt_reader* r, const char* name) {
  size_t i = 0;
  EXPECT_EQ(zt_object_find(r, name, &i), ZT_OK) << name;
  return i;
}

// Runs one library call with failures armed where `inject` is set: the
// test's own allocations (its buffers, its messages) never fail.
thread_local bool t_inject = false;
template <typename Call>
zt_status in_library(Call call) {
  t_armed = t_inject;
  const zt_status s = call();
  t_armed = false;
  return s;
}

// Every reading call of the sequence after open, each made whatever the
// ones before it returned. `map_held` gets, for a zt_component_map of the
// zstd object that failed, the bytes it left allocated.
void read_everything(zt_reader* r, const Data& d, bool may_fail, long* map_held) {
  const size_t raw = index_of(r, "raw"), z = index_of(r, "z"), h = index_of(r, "h"),
               csr = index_of(r, "csr");
  expect_outcome("zt_verify", in_library([&] { return zt_verify(r, nullptr, nullptr); }), true,
                 may_fail);

  const void* data = nullptr;
  uint64_t n = 0;
  const long before = g_live_bytes.load();
  const zt_status mapped = in_library([&] { return zt_component_map(r, z, "data", &data, &n); });
  if (mapped != ZT_OK && map_held) *map_held = g_live_bytes.load() - before;
  expect_outcome("zt_component_map", mapped,
                 mapped == ZT_OK && same(data, n, d.z.data(), d.z.size() * 4), may_fail);

  std::vector<float> raw_out(d.raw.size());
  zt_status s = in_library(
      [&] { return zt_component_read(r, raw, "data", raw_out.data(), raw_out.size() * 4, &n); });
  expect_outcome("zt_component_read", s, s == ZT_OK && raw_out == d.raw, may_fail);

  std::vector<float> all_raw(d.raw.size()), all_z(d.z.size());
  zt_decode_request reqs[2];
  for (auto& q : reqs) zt_decode_request_init(&q);
  reqs[0].object = raw, reqs[0].role = "data", reqs[0].dst = all_raw.data(),
  reqs[0].capacity = d.raw.size() * 4;
  reqs[1].object = z, reqs[1].role = "data", reqs[1].dst = all_z.data(),
  reqs[1].capacity = d.z.size() * 4;
  s = in_library([&] { return zt_decode_many(r, reqs, 2, 1); });
  expect_outcome("zt_decode_many", s, s == ZT_OK && all_raw == d.raw && all_z == d.z, may_fail);

  const uint64_t begin[2] = {3, 5}, end[2] = {700, 200};
  std::vector<float> box((end[0] - begin[0]) * (end[1] - begin[1])), want_box;
  for (uint64_t i = begin[0]; i < end[0]; ++i)
    for (uint64_t j = begin[1]; j < end[1]; ++j) want_box.push_back(d.z[i * kZCols + j]);
  s = in_library(
      [&] { return zt_dense_slice(r, z, 2, begin, end, box.data(), box.size() * 4, &n); });
  expect_outcome("zt_dense_slice", s, s == ZT_OK && box == want_box, may_fail);

  s = in_library([&] { return zt_dense_rows_map(r, raw, 10, 20, &data, &n); });
  expect_outcome("zt_dense_rows_map", s,
                 s == ZT_OK && same(data, n, d.raw.data() + 10 * kRawCols, 10 * kRawCols * 4),
                 may_fail);

  std::vector<float> h_out(d.h.size());
  s = in_library([&] { return zt_object_read_f32(r, h, h_out.data(), h_out.size(), &n); });
  expect_outcome("zt_object_read_f32", s, s == ZT_OK && h_out == d.h, may_fail);

  zt_csr_info v;
  zt_csr_info_init(&v);
  s = in_library([&] { return zt_csr_view(r, csr, &v); });
  expect_outcome("zt_csr_view", s,
                 s == ZT_OK && v.nnz == 4 && same(v.values, 16, d.csr_values.data(), 16) &&
                     same(v.indices, 32, d.csr_indices.data(), 32) &&
                     same(v.indptr, 32, d.csr_indptr.data(), 32),
                 may_fail);
}

struct Points {
  long failed = 0;            // sequences with an allocation failed on purpose
  long failed_maps = 0;       // of those, the ones whose map of the zstd object failed
  long most_held_by_map = 0;  // the most bytes such a map left allocated
  size_t files = 0;           // the model's files (the root and its shards)
};

constexpr long kNoFailedMap = std::numeric_limits<long>::min();

// How the file is opened: zt_open_ex mapped or with pread, or zt_open_source
// over the file's bytes in memory (callbacks, as a URL is read: no mapping,
// reads kept in the reader's cache).
enum class Way { map, copy, source };

const char* way_name(Way way) {
  return way == Way::map ? "" : way == Way::copy ? " (copy mode)" : " (a callback source)";
}

zt_status read_at(void* ctx, uint64_t offset, size_t length, void* buf, size_t* done) {
  const auto& bytes = *static_cast<const std::vector<uint8_t>*>(ctx);
  *done = std::min<uint64_t>(length, bytes.size() - offset);
  std::memcpy(buf, bytes.data() + offset, *done);
  return ZT_OK;
}

zt_status size_of(void* ctx, uint64_t* size) {
  *size = static_cast<const std::vector<uint8_t>*>(ctx)->size();
  return ZT_OK;
}

zt_status open_the_way(const std::string& path, Way way, const std::vector<uint8_t>& bytes,
                       zt_reader** r) {
  zt_open_options opt;
  zt_open_options_init(&opt);
  opt.io_mode = way == Way::map ? ZT_IO_MAP : ZT_IO_COPY;
  if (way != Way::source) return zt_open_ex(path.c_str(), &opt, r);
  opt.cache_bytes = 4 << 20;
  zt_source src;
  zt_source_init(&src);
  src.ctx = const_cast<std::vector<uint8_t>*>(&bytes);
  src.read_at = read_at;
  src.size = size_of;
  return zt_open_source(&src, &opt, r);
}

// Fails the sequence's allocations one at a time, from the first to past
// the last (the run in which none failed ends it).
Points fail_each_allocation(uint32_t version, Way way, uint64_t shard_bytes = 0) {
  EXPECT_FALSE(json_destroy_ranges().empty())
      << "no json_value::destroy in this executable's symbols";
  const Data d;
  // The model's files (the root and any shards beside it), removed with the directory.
  const zt::hardening::ScratchDir dir;
  const std::string path = dir.file("model.zt");
  write_file(path, version, d, shard_bytes);
  const std::vector<uint8_t> bytes =
      way == Way::source ? zt::hardening::read_file(path) : std::vector<uint8_t>();
  Points p;
  for (long fail_at = 0;; ++fail_at) {
    SCOPED_TRACE("allocation " + std::to_string(fail_at) + " failed");
    t_failed = 0;
    t_countdown = fail_at;
    t_inject = true;
    zt_reader* r = nullptr;
    const zt_status opened = in_library([&] { return open_the_way(path, way, bytes, &r); });
    long held = kNoFailedMap;
    if (opened == ZT_OK) read_everything(r, d, true, &held);
    t_inject = false;
    t_countdown = -1;
    if (t_failed == 0) {  // past the sequence's last allocation
      EXPECT_EQ(opened, ZT_OK) << zt_last_error();
      if (r) zt_close(r);
      break;
    }
    ++p.failed;
    if (held != kNoFailedMap) {
      ++p.failed_maps;
      p.most_held_by_map = std::max(p.most_held_by_map, held);
    }
    if (opened != ZT_OK) {
      EXPECT_EQ(opened, ZT_ERR_NOMEM) << zt_last_error();
      EXPECT_EQ(r, nullptr);
      continue;
    }
    read_everything(r, d, false, nullptr);  // memory is back: everything as it should be
    zt_close(r);
  }
  p.files = dir.list().size();
  std::fprintf(stderr,
               "  v%u%s, %zu file(s): %ld allocations failed in turn, %ld maps failed, the most "
               "one held %ld bytes\n",
               version, way_name(way), p.files, p.failed, p.failed_maps, p.most_held_by_map);
  return p;
}

// The zstd object decodes to 1 MiB: a failed map may keep the decoder's
// bookkeeping for the next call, never the object's bytes.
constexpr long kMostHeldByAFailedMap = 64 << 10;

TEST(ReaderAlloc, EveryFailedAllocationIsNomemAndLeavesTheReaderWhole) {
  const Points p = fail_each_allocation(0, Way::map);
  EXPECT_GT(p.failed, 50) << "the sequence made fewer allocations than expected";
  EXPECT_LE(p.most_held_by_map, kMostHeldByAFailedMap);
}

TEST(ReaderAlloc, V2FileInCopyModeToo) {
  const Points p = fail_each_allocation(2, Way::copy);
  EXPECT_GT(p.failed, 50) << "the sequence made fewer allocations than expected";
  EXPECT_LE(p.most_held_by_map, kMostHeldByAFailedMap);
}

// Through zt_open_source's callbacks (what a URL's reader is made of, less
// HTTP), with the reader's cache of small reads on: 1.2 and v2.
TEST(ReaderAlloc, CallbackSourceToo) {
  for (const uint32_t version : {0u, 2u}) {
    const Points p = fail_each_allocation(version, Way::source);
    EXPECT_GT(p.failed, 50) << "the sequence made fewer allocations than expected";
    EXPECT_LE(p.most_held_by_map, kMostHeldByAFailedMap);
  }
}

// A v2 model in shard files: a part's shard is opened when it is first
// read (its file state made then), so allocations fail there too.
TEST(ReaderAlloc, ShardedV2ModelMappedAndCopied) {
  for (const Way way : {Way::map, Way::copy}) {
    const Points p = fail_each_allocation(2, way, 128 << 10);
    EXPECT_GE(p.files, 3u) << "the model was not split into shards";
    EXPECT_GT(p.failed, 50) << "the sequence made fewer allocations than expected";
    EXPECT_LE(p.most_held_by_map, kMostHeldByAFailedMap);
  }
}

// Every component of every object of a file, read one at a time: the
// status of each read and the bytes of those that succeeded.
struct Reads {
  zt_status verified = ZT_OK;
  std::vector<zt_status> status;
  std::vector<std::vector<uint8_t>> bytes;
};

Reads read_all_components(zt_reader* r) {
  Reads out;
  out.verified = in_library([&] { return zt_verify(r, nullptr, nullptr); });
  for (size_t i = 0; i < zt_object_count(r); ++i) {
    for (size_t k = 0; k < zt_component_count(r, i); ++k) {
      const char* role = zt_component_role(r, i, k);
      uint64_t size = 0, n = 0;
      zt_status s = in_library([&] { return zt_component_read_size(r, i, role, &size); });
      std::vector<uint8_t> got;
      if (s == ZT_OK) {
        got.resize(size);
        s = in_library([&] { return zt_component_read(r, i, role, got.data(), got.size(), &n); });
        got.resize(s == ZT_OK ? n : 0);
      }
      out.status.push_back(s);
      out.bytes.push_back(std::move(got));
    }
  }
  return out;
}

// A run with failures against the clean one: each read as it was, or NOMEM
// where memory may fail.
void expect_reads(const Reads& got, const Reads& want, bool may_fail) {
  const auto fine = [&](zt_status g, zt_status w) {
    return g == w || (may_fail && g == ZT_ERR_NOMEM);
  };
  EXPECT_TRUE(fine(got.verified, want.verified)) << "zt_verify: " << zt_status_name(got.verified);
  ASSERT_EQ(got.status.size(), want.status.size());
  for (size_t c = 0; c < want.status.size(); ++c) {
    EXPECT_TRUE(fine(got.status[c], want.status[c]))
        << "component " << c << ": " << zt_status_name(got.status[c]);
    if (got.status[c] == ZT_OK) {
      EXPECT_EQ(got.bytes[c], want.bytes[c]) << "component " << c << " differs";
    }
  }
}

// A foreign file (read through allow_foreign: zip, pickle, JSON, protobuf
// and the formats' own rules) with each allocation of opening it and
// reading all of it failed in turn.
long fail_each_allocation_of(const std::string& path) {
  EXPECT_FALSE(json_destroy_ranges().empty())
      << "no json_value::destroy in this executable's symbols";
  zt_open_options opt;
  zt_open_options_init(&opt);
  opt.allow_foreign = 1;
  zt_reader* clean = nullptr;
  EXPECT_EQ(zt_open_ex(path.c_str(), &opt, &clean), ZT_OK) << path << ": " << zt_last_error();
  if (!clean) return 0;
  const Reads want = read_all_components(clean);
  zt_close(clean);
  EXPECT_FALSE(want.status.empty()) << path;
  long points = 0;
  for (long fail_at = 0;; ++fail_at) {
    SCOPED_TRACE(path + ": allocation " + std::to_string(fail_at) + " failed");
    t_failed = 0;
    t_countdown = fail_at;
    t_inject = true;
    zt_reader* r = nullptr;
    const zt_status opened = in_library([&] { return zt_open_ex(path.c_str(), &opt, &r); });
    Reads got;
    if (opened == ZT_OK) got = read_all_components(r);
    t_inject = false;
    t_countdown = -1;
    if (opened == ZT_OK) expect_reads(got, want, true);
    if (t_failed == 0) {
      EXPECT_EQ(opened, ZT_OK) << zt_last_error();
      if (r) zt_close(r);
      break;
    }
    ++points;
    if (opened != ZT_OK) {
      EXPECT_EQ(opened, ZT_ERR_NOMEM) << zt_last_error();
      continue;
    }
    expect_reads(read_all_components(r), want, false);
    zt_close(r);
  }
  std::fprintf(stderr,
               "  %s: %ld allocations failed in turn (%ld of json's destructor let through)\n",
               path.c_str(), points, g_let_through);
  return points;
}

TEST(ReaderAlloc, ForeignFilesOfTodaysToolsToo) {
  const std::string dir = ZT_TODAY_FIXTURES;
  for (const char* file :
       {"safetensors_dtypes.safetensors", "torch_dtypes.pt", "torch_views.pt",
        "torch_legacy_format.pt", "hf_llama_sharded/model.safetensors.index.json",
        "onnx_external/model.onnx"}) {
    EXPECT_GT(fail_each_allocation_of(dir + "/" + file), 10)
        << file << ": fewer allocations than expected";
  }
}

// 4.03 measured (2026-12-03): an object's name, shape, component list and
// digest. A message's text made ahead (object "w", object "w": component
// "data") and a digest's copy for one were three more (7 an object).
constexpr double kMostAllocationsAnObject = 4.5;

// What opening a file of many objects allocates an object: its name, shape,
// components and digest, not a message's text made in case one is needed
// (two strings an object until session 56's ItemName) nor copies of what
// parsing moved (an Object moved five times on its way into the manifest).
TEST(ReaderAlloc, AnOpenAllocatesAFewTimesAnObject) {
  constexpr size_t kObjects = 2000;
  const zt::hardening::ScratchDir dir;
  const std::string path = dir.file("many.zt");
  zt_writer* w = nullptr;
  ASSERT_EQ(zt_writer_open(path.c_str(), &w), ZT_OK) << zt_last_error();
  const float values[4] = {1, 2, 3, 4};
  const uint64_t shape[1] = {4};
  for (size_t i = 0; i < kObjects; ++i) {
    const std::string name = "model.layers." + std::to_string(i) + ".mlp.up_proj.weight";
    ASSERT_EQ(zt_writer_add_dense(w, name.c_str(), "f32", shape, 1, values, sizeof values, nullptr),
              ZT_OK);
  }
  ASSERT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  zt_reader* r = nullptr;
  t_made = 0;
  t_inject = true;  // counted, none failed (t_countdown is -1)
  const zt_status opened = in_library([&] { return zt_open(path.c_str(), &r); });
  t_inject = false;
  ASSERT_EQ(opened, ZT_OK) << zt_last_error();
  zt_close(r);
  const double each = static_cast<double>(t_made) / kObjects;
  std::fprintf(stderr, "  zt_open of %zu objects: %ld allocations, %.2f an object\n", kObjects,
               t_made, each);
  EXPECT_LE(each, kMostAllocationsAnObject);
}

}  // namespace
