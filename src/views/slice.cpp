// N-d boxes of dense objects (zt_dense_slice). A box is a series of runs,
// each contiguous in the row-major data: the dimensions after the first one
// the box cuts are whole, so one run spans them. Only the runs' bytes are
// touched: raw data is copied run by run from the mapping (or read at each
// run's offset in copy mode), on every core for a large box; zstd data
// stored as several frames that record their content sizes has only the
// frames that hold a run decoded (frame_reads.h).
// f4_e2m1 data (two values a byte) goes through the row reader.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "base/byte_order.h"
#include "base/for_each_index.h"
#include "manifest/object_format.h"
#include "read/content.h"
#include "read/frame_reads.h"
#include "views/kernels.h"

namespace zt {

using namespace zt::views;
using ull = unsigned long long;

namespace {

struct Box {
  const Object* object = nullptr;
  const Component* data = nullptr;
  size_t k = 0;
  NumericFormat format;
  std::vector<uint64_t> begin, extent;
  std::vector<uint64_t> stride;  // storage values per step in each dimension
  size_t split = 0;              // runs span dimensions split.. ; outer ones index them
  uint64_t run_values = 0;       // storage values in one run
  uint64_t runs = 0;             // 0: an empty box
  uint64_t total_values = 0;     // storage values of the whole data (non-empty boxes)
  uint64_t values() const { return runs * run_values; }
  uint64_t width() const { return dtype_width(format.dtype); }
};

Result<Box> box_of(const Reader& r, size_t object, std::span<const uint64_t> begin,
                   std::span<const uint64_t> end) {
  auto o = object_of_format(r, object, kDenseFormat, "");
  ZT_TRY(o);
  const Object& obj = **o;
  const size_t n = obj.shape.size();
  ZT_FAIL_IF(begin.size() != n || end.size() != n, argument,
             "%s has %zu dimensions; the box gives %zu", object_where(obj).c_str(), n,
             begin.size());
  Box b;
  b.object = &obj;
  b.data = obj.find("data");
  b.k = index_of(obj, b.data);
  auto f = numeric_format(obj, *b.data);
  ZT_TRY(f);
  b.format = *f;
  b.begin.assign(begin.begin(), begin.end());
  b.extent.resize(n);
  b.stride.resize(n);
  for (size_t d = 0; d < n; ++d) {
    ZT_FAIL_IF(begin[d] > end[d] || end[d] > obj.shape[d], argument,
               "%s: [%llu, %llu) is not within [0, %llu) in dimension %zu",
               object_where(obj).c_str(), static_cast<ull>(begin[d]), static_cast<ull>(end[d]),
               static_cast<ull>(obj.shape[d]), d);
    b.extent[d] = end[d] - begin[d];
  }
  if (n == 0) {  // a scalar: its one element
    b.runs = 1;
    b.run_values = b.total_values = f->ratio;
    return b;
  }
  if (std::find(b.extent.begin(), b.extent.end(), 0) != b.extent.end()) return b;
  // Products of a non-empty shape's dimensions cannot overflow: the whole
  // product (times the ratio) was checked against the data size at open.
  b.stride[n - 1] = f->ratio;
  for (size_t d = n - 1; d > 0; --d) b.stride[d - 1] = b.stride[d] * obj.shape[d];
  b.total_values = b.stride[0] * obj.shape[0];
  b.split = n - 1;
  while (b.split > 0 && b.begin[b.split] == 0 && b.extent[b.split] == obj.shape[b.split]) --b.split;
  b.run_values = b.extent[b.split] * b.stride[b.split];
  b.runs = 1;
  for (size_t d = 0; d < b.split; ++d) b.runs *= b.extent[d];
  return b;
}

// The runs of a box in order: the index of the current one and its first
// storage value in the data.
class RunCursor {
 public:
  // From run `first` on (0: the box's first).
  explicit RunCursor(const Box& b, uint64_t first = 0) : b_(&b), idx_(b.split, 0), run_(first) {
    for (size_t d = b.split; d-- > 0;) {
      idx_[d] = first % b.extent[d];
      first /= b.extent[d];
    }
    for (size_t d = 0; d < b.begin.size(); ++d)
      value_ += (b.begin[d] + (d < b.split ? idx_[d] : 0)) * b.stride[d];
  }
  bool valid() const { return run_ < b_->runs; }
  uint64_t run() const { return run_; }
  uint64_t first_value() const { return value_; }
  void advance() {
    ++run_;
    for (size_t d = b_->split; d-- > 0;) {
      if (++idx_[d] < b_->extent[d]) {
        value_ += b_->stride[d];
        return;
      }
      value_ -= (b_->extent[d] - 1) * b_->stride[d];
      idx_[d] = 0;
    }
  }

 private:
  const Box* b_;
  std::vector<uint64_t> idx_;
  uint64_t run_ = 0;
  uint64_t value_ = 0;
};

// The box's runs as decoded byte runs, for the frame reader.
class BoxRuns final : public ByteRuns {
 public:
  explicit BoxRuns(const Box& b) : ByteRuns(b.run_values * b.width(), end_byte(b)), b_(b) {}
  void each_from(uint64_t first,
                 const std::function<bool(uint64_t, uint64_t)>& visit) const override {
    for (RunCursor cur(b_, first); cur.valid(); cur.advance())
      if (!visit(cur.run(), cur.first_value() * b_.width())) return;
  }

 private:
  // One past the last decoded byte of the box (its last run's end).
  static uint64_t end_byte(const Box& b) {
    uint64_t last_run = 0;
    for (size_t d = 0; d < b.begin.size(); ++d)
      last_run += (d < b.split ? b.begin[d] + b.extent[d] - 1 : b.begin[d]) * b.stride[d];
    return (last_run + b.run_values) * b.width();
  }
  const Box& b_;
};

// The whole data through the reader's map (a view of the mapping, or the
// decode cache), checked to hold what the shape implies.
Result<std::span<const uint8_t>> mapped(const Reader& r, size_t object, const Box& b) {
  auto m = r.map(object, b.k);
  ZT_TRY(m);
  ZT_FAIL_IF(m->size() / b.width() < b.total_values, invalid,
             "%s: %zu decoded bytes, the shape needs %llu values",
             component_where(*b.object, *b.data).c_str(), m->size(),
             static_cast<ull>(b.total_values));
  return m;
}

// Bool bytes of the box held to the rule zt_verify applies, run by run, so
// that a message names the element (a bool is one byte: a run's first value
// is its first element). run_bytes(cur) gives the run's bytes.
template <typename RunBytes>
Result<void> check_box_bools(const Reader& r, const Box& b, RunBytes run_bytes) {
  if (!b.data->holds_bools()) return {};
  for (RunCursor cur(b); cur.valid(); cur.advance())
    ZT_TRY(check_bool_values(r.manifest().generation, *b.object, *b.data, run_bytes(cur),
                             cur.first_value()));
  return {};
}

// A thread's least share of a box copied from memory: smaller boxes are
// copied on one thread (starting helpers costs more than the copy).
constexpr uint64_t kLeastShareBytes = uint64_t{4} << 20;

// The box's runs copied out of `from` (the whole data) into dst, on every
// core for a large box: each thread takes an equal span of dst, its runs
// (or part of one) in order. A tensor-parallel share of columns is
// thousands of runs; one of rows, one long run.
void copy_runs(const Box& b, std::span<const uint8_t> from, std::span<uint8_t> dst) {
  const uint64_t width = b.width(), run_bytes = b.run_values * width, total = b.runs * run_bytes;
  const unsigned threads = threads_for_all_cores();
  const uint64_t shares = std::clamp<uint64_t>(total / kLeastShareBytes, 1, threads);
  for_each_index(shares, threads, [&](size_t k) {
    uint64_t at = total * k / shares;
    const uint64_t end = total * (k + 1) / shares;
    for (RunCursor cur(b, at / run_bytes); at < end; cur.advance()) {
      const uint64_t within = at % run_bytes, n = std::min(run_bytes - within, end - at);
      std::memcpy(dst.data() + at, from.data() + cur.first_value() * width + within, n);
      at += n;
    }
  });
}

// The box's runs read from `src` (the data at `offset` in it) into dst, on
// every core for a large box: each thread an equal share of the runs, in
// batches. A remote source fetches a batch in one request (multipart
// ranges), a file reads each run with a syscall (~0.7 us: a rank's columns
// of a 32 MiB tensor, 8,192 runs, took 15 ms on one thread of the 2-core
// VM). The first failed share's error, in order.
Result<void> read_runs(const Box& b, const Source& src, uint64_t offset, std::span<uint8_t> dst) {
  const uint64_t width = b.width(), run_bytes = b.run_values * width;
  const unsigned threads = threads_for_all_cores();
  const uint64_t shares = std::clamp<uint64_t>(b.runs * run_bytes / kLeastShareBytes, 1,
                                               std::min<uint64_t>(threads, b.runs));
  std::vector<Result<void>> results(shares);
  for_each_index(shares, threads, [&](size_t k) {
    constexpr size_t kBatch = 1024;
    const uint64_t last = b.runs * (k + 1) / shares;
    std::vector<RangeRead> batch;
    batch.reserve(std::min<uint64_t>(last - b.runs * k / shares, kBatch));
    for (RunCursor cur(b, b.runs * k / shares); cur.run() < last; cur.advance()) {
      batch.push_back(
          {offset + cur.first_value() * width, dst.subspan(cur.run() * run_bytes, run_bytes)});
      if (batch.size() == kBatch || cur.run() + 1 == last) {
        results[k] = src.read_many(batch);
        if (!results[k]) return;
        batch.clear();
      }
    }
  });
  for (Result<void>& res : results) ZT_TRY(res);
  return {};
}

// The box's bytes into dst (exactly values() x width bytes), not f4.
Result<void> copy_box(const Reader& r, size_t object, const Box& b, std::span<uint8_t> dst) {
  const Component& c = *b.data;
  const auto in_place = r.mapped_in_place(c);
  ZT_TRY(in_place);
  if (c.encoding == Encoding::raw && !*in_place) {  // copy mode, big-endian data
    auto src = r.source_of(c);
    ZT_TRY(src);
    ZT_TRY(read_runs(b, **src, c.offset, dst));
    if (c.big_endian) swap_elements(dst, c.width());
    return {};
  }
  if (c.encoding == Encoding::zstd || c.encoding == Encoding::byte_planes) {
    auto done = copy_runs_from_frames(r, object, b.k, BoxRuns(b), dst);
    ZT_TRY(done);
    if (*done) return {};
  }
  // Mapped raw data, or zstd decoded whole once into the reader's cache.
  auto m = mapped(r, object, b);
  ZT_TRY(m);
  copy_runs(b, *m, dst);
  return {};
}

// copy_box, with the content rules the box's values are held to.
Result<void> read_box(const Reader& r, size_t object, const Box& b, std::span<uint8_t> dst) {
  ZT_TRY(copy_box(r, object, b, dst));
  const uint64_t run_bytes = b.run_values * b.width();
  return check_box_bools(r, b, [&](const RunCursor& cur) {
    return std::span<const uint8_t>(dst.subspan(cur.run() * run_bytes, run_bytes));
  });
}

}  // namespace

Result<uint64_t> dense_slice(const Reader& r, size_t object, std::span<const uint64_t> begin,
                             std::span<const uint64_t> end, std::span<uint8_t> dst) {
  auto b = box_of(r, object, begin, end);
  ZT_TRY(b);
  if (b->format.f4) {
    // Two values a byte: a box of whole rows is a byte range (the row
    // reader's rules); another box has no byte form.
    ZT_FAIL_IF(b->object->shape.empty() || (b->runs > 1 && b->split > 0), unsupported,
               "%s: an f4_e2m1 box that is not a range of whole rows has no byte form; the "
               "converting calls (zt_dense_slice_f32) read it",
               component_where(*b->object, *b->data).c_str());
    return dense_rows(r, object, begin[0], b->runs ? end[0] : begin[0], dst);
  }
  const uint64_t bytes = b->values() * b->width();
  ZT_FAIL_IF(bytes > dst.size(), argument,
             "%s: %llu bytes of the box do not fit in a buffer of %zu",
             component_where(*b->object, *b->data).c_str(), static_cast<ull>(bytes), dst.size());
  if (bytes == 0) return uint64_t{0};
  ZT_TRY(read_box(r, object, *b, dst.first(bytes)));
  return bytes;
}

template <typename T>
Result<uint64_t> dense_slice_as(const Reader& r, size_t object, std::span<const uint64_t> begin,
                                std::span<const uint64_t> end, std::span<T> dst) {
  auto b = box_of(r, object, begin, end);
  ZT_TRY(b);
  const uint64_t n = b->values();
  ZT_TRY(fits(component_where(*b->object, *b->data), n, dst));
  if (n == 0) return uint64_t{0};
  if (b->format.f4) {
    if (b->object->shape.empty()) return read_dense_as(r, object, dst);
    // The rows that hold the box, converted, then the box's runs from them.
    const uint64_t first_row = b->begin[0] * b->stride[0];
    std::vector<T> rows(b->extent[0] * b->stride[0]);
    ZT_TRY(dense_rows_as(r, object, begin[0], end[0], std::span<T>(rows)));
    for (RunCursor cur(*b); cur.valid(); cur.advance())
      std::copy_n(rows.begin() + static_cast<ptrdiff_t>(cur.first_value() - first_row),
                  b->run_values, dst.begin() + static_cast<ptrdiff_t>(cur.run() * b->run_values));
    return n;
  }
  const uint64_t width = b->width();
  const auto in_place = r.mapped_in_place(*b->data);
  ZT_TRY(in_place);
  if (*in_place) {  // converted run by run from the mapping
    auto m = mapped(r, object, *b);
    ZT_TRY(m);
    ZT_TRY(check_box_bools(r, *b, [&](const RunCursor& cur) {
      return m->subspan(cur.first_value() * width, b->run_values * width);
    }));
    for (RunCursor cur(*b); cur.valid(); cur.advance())
      convert_values(m->data() + cur.first_value() * width, b->format, b->run_values,
                     dst.data() + cur.run() * b->run_values);
    return n;
  }
  // Not zeroed, as dense_rows_as: a claimed size costs nothing until read.
  const auto held = std::make_unique_for_overwrite<uint8_t[]>(n * width);
  ZT_TRY(read_box(r, object, *b, std::span<uint8_t>(held.get(), n * width)));
  convert_values(held.get(), b->format, n, dst.data());
  return n;
}

template Result<uint64_t> dense_slice_as<float>(const Reader&, size_t, std::span<const uint64_t>,
                                                std::span<const uint64_t>, std::span<float>);
template Result<uint64_t> dense_slice_as<double>(const Reader&, size_t, std::span<const uint64_t>,
                                                 std::span<const uint64_t>, std::span<double>);

}  // namespace zt
