// The plan of a decode_many call (read/batch_plan.h): every byte of every
// request in exactly one task, tasks largest first, and a call from a file
// that ends on small tasks, so that no thread is left with a large one
// while the others wait.
#include "read/batch_plan.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "read/batch_decode.h"
#include "read/reader.h"
#include "read/task_sizes.h"
#include "ztensor.h"

namespace {

constexpr uint64_t MiB = uint64_t{1} << 20;

struct Model {
  std::string path = ::testing::TempDir() + "plan-" + std::to_string(::getpid()) + ".zt";
  std::vector<std::vector<uint8_t>> tensors;

  explicit Model(const std::vector<uint64_t>& sizes) {
    zt_writer* w = nullptr;
    EXPECT_EQ(zt_writer_open(path.c_str(), &w), ZT_OK);
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::vector<uint8_t> v(sizes[i]);
      for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<uint8_t>(k * 7 + i * 13 + (k >> 12));
      const uint64_t shape[1] = {v.size()};
      EXPECT_EQ(zt_writer_add_dense(w, ("t" + std::to_string(i)).c_str(), "u8", shape, 1, v.data(),
                                    v.size(), "raw"),
                ZT_OK);
      tensors.push_back(std::move(v));
    }
    EXPECT_EQ(zt_writer_finish(w), ZT_OK) << zt_last_error();
  }
  ~Model() { ::unlink(path.c_str()); }
};

std::unique_ptr<zt::Reader> open(const Model& m) {
  auto r = zt::Reader::open_file(m.path);
  EXPECT_TRUE(r) << r.error().message;
  return std::move(*r);
}

// One request a tensor, whole, into `out`.
std::vector<zt::DecodeRequest> whole_requests(const Model& m,
                                              std::vector<std::vector<uint8_t>>& out) {
  std::vector<zt::DecodeRequest> q(m.tensors.size());
  out.assign(m.tensors.size(), {});
  for (size_t i = 0; i < q.size(); ++i) {
    out[i].assign(m.tensors[i].size(), 0xEE);
    q[i].object = i;
    q[i].dst = out[i];
  }
  return q;
}

// The bytes each task writes, as (destination address, size).
std::vector<std::pair<const uint8_t*, uint64_t>> writes(const zt::batch::Plan& p) {
  std::vector<std::pair<const uint8_t*, uint64_t>> w;
  for (const auto& t : p.tasks) {
    if (t.kind == zt::batch::Task::Kind::raw_gather) {
      for (size_t k = t.src_offset; k < t.src_offset + t.src_size; ++k)
        w.emplace_back(p.reads[k].dst.data(), p.reads[k].dst.size());
    } else {
      w.emplace_back(t.dst.data(), t.dst.size());
    }
  }
  return w;
}

// Every destination byte of `q` is written by exactly one task.
void expect_each_byte_once(const zt::batch::Plan& p, const std::vector<zt::DecodeRequest>& q) {
  auto w = writes(p);
  std::sort(w.begin(), w.end());
  uint64_t total = 0;
  for (size_t i = 0; i + 1 < w.size(); ++i) EXPECT_LE(w[i].first + w[i].second, w[i + 1].first);
  for (const auto& x : w) total += x.second;
  uint64_t want = 0;
  for (const auto& r : q) want += r.dst.size();
  EXPECT_EQ(total, want);
}

// The tasks run largest first, and the last small_tail_bytes of them are
// tasks of kLeastRawTaskBytes or less.
void expect_a_small_tail(const zt::batch::Plan& p) {
  for (size_t i = 0; i + 1 < p.tasks.size(); ++i)
    EXPECT_GE(zt::batch::task_bytes(p.tasks[i]), zt::batch::task_bytes(p.tasks[i + 1])) << i;
  uint64_t small = 0;
  for (size_t i = p.tasks.size(); i > 0 && small < zt::small_tail_bytes(p.threads); --i) {
    EXPECT_LE(zt::batch::task_bytes(p.tasks[i - 1]), zt::kLeastRawTaskBytes) << i - 1;
    small += zt::batch::task_bytes(p.tasks[i - 1]);
  }
  EXPECT_GE(small, zt::small_tail_bytes(p.threads));
}

// A model's tensors requested whole, planned for `threads` threads, the
// plan checked; then decoded on as many threads and compared.
struct Planned {
  std::unique_ptr<zt::Reader> r;
  std::vector<std::vector<uint8_t>> out;
  std::vector<zt::DecodeRequest> q;
  zt::batch::Plan p;

  Planned(const Model& m, unsigned threads) : r(open(m)), q(whole_requests(m, out)) {
    p = zt::batch::plan_batch(*r, q, threads);
    expect_each_byte_once(p, q);
    expect_a_small_tail(p);
    EXPECT_TRUE(zt::decode_many(*r, q, threads));
    for (size_t i = 0; i < q.size(); ++i) EXPECT_EQ(out[i], m.tensors[i]) << i;
  }
};

TEST(BatchPlan, LargeTensorsEndOnSmallSlicesForManyThreads) {
  // Two 24 MiB tensors on 16 threads: slices of 3 MiB, one a thread; the
  // call must end on 32 MiB of 1 MiB slices; the rest stays large.
  const Model m({24 * MiB, 24 * MiB + 12345});
  const Planned planned(m, 16);
  EXPECT_GT(zt::batch::task_bytes(planned.p.tasks.front()), zt::kLeastRawTaskBytes);
}

TEST(BatchPlan, SmallTensorsEndOnSmallGathers) {
  // 200 tensors of 256 KiB are read in gathers of up to 8 MiB: the last are
  // cut between their reads, each read in exactly one gather.
  const Model m(std::vector<uint64_t>(200, 256 << 10));
  const Planned planned(m, 8);
  std::map<size_t, int> reads;
  for (const auto& t : planned.p.tasks) {
    ASSERT_EQ(t.kind, zt::batch::Task::Kind::raw_gather);
    for (size_t k = t.src_offset; k < t.src_offset + t.src_size; ++k) ++reads[k];
  }
  EXPECT_EQ(reads.size(), planned.p.reads.size());
  for (const auto& [k, n] : reads) EXPECT_EQ(n, 1) << k;
}

TEST(BatchPlan, OnlyWhatTheTailNeedsIsCut) {
  // 64 MiB on 4 threads: 4 slices of 16 MiB; the tail wants 8 MiB, which
  // the last slice's end gives as 8 slices of 1 MiB, its head staying one.
  const Model m({64 * MiB});
  const Planned planned(m, 4);
  ASSERT_EQ(planned.p.tasks.size(), 3u + 1u + 8u);
  uint64_t small = 0;
  for (const auto& t : planned.p.tasks)
    if (zt::batch::task_bytes(t) <= zt::kLeastRawTaskBytes) small += zt::batch::task_bytes(t);
  EXPECT_EQ(small, zt::small_tail_bytes(4));
  EXPECT_EQ(zt::batch::task_bytes(planned.p.tasks[3]), 8 * MiB);
}

TEST(BatchPlan, OneThreadKeepsItsLargeSlices) {
  const Model m({24 * MiB});
  auto r = open(m);
  std::vector<std::vector<uint8_t>> out;
  auto q = whole_requests(m, out);
  const auto p = zt::batch::plan_batch(*r, q, 1);
  ASSERT_EQ(p.tasks.size(), 1u);  // nobody to wait for: one copy
  EXPECT_EQ(p.tasks.front().dst.size(), 24 * MiB);
}

TEST(BatchPlan, RefusedRequestsGetNoTask) {
  const Model m({2 * MiB});
  auto r = open(m);
  std::vector<std::vector<uint8_t>> out;
  auto q = whole_requests(m, out);
  q.push_back(q.front());
  q.back().object = 7;
  const auto p = zt::batch::plan_batch(*r, q, 4);
  EXPECT_EQ(q.back().error.status, zt::Status::not_found);
  for (const auto& t : p.tasks) EXPECT_EQ(t.request, 0u);
}

}  // namespace
