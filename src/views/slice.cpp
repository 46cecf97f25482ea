// N-d boxes of dense objects (zt_dense_slice). A box is a series of runs,
// each contiguous in the row-major data: the dimensions after the first one
// the box cuts are whole, so one run spans them. Only the runs' bytes are
// touched: raw data is copied run by run from the mapping (or read at each
// run's offset in copy mode); zstd data stored as several frames that
// record their content sizes has only the frames that hold a run decoded.
// f4_e2m1 data (two values a byte) goes through the row reader.
#include <algorithm>
#include <cstring>
#include <vector>

#include "base/byte_order.h"
#include "container/zstd_codec.h"
#include "container/zstd_seekable.h"
#include "formats/object_format.h"
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
  explicit RunCursor(const Box& b) : b_(&b), idx_(b.split, 0) {
    for (size_t d = 0; d < b.begin.size(); ++d) value_ += b.begin[d] * b.stride[d];
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

// The frames of `frames` that hold a run of the box, by index.
std::vector<size_t> frames_holding_runs(const Box& b, std::span<const ZstdFrame> frames) {
  const uint64_t width = b.width(), run_bytes = b.run_values * width;
  std::vector<size_t> out;
  RunCursor cur(b);
  uint64_t pos = 0;
  for (size_t i = 0; i < frames.size(); ++i) {
    const uint64_t f_lo = pos, f_hi = pos + frames[i].content_size;
    pos = f_hi;
    while (cur.valid() && cur.first_value() * width + run_bytes <= f_lo) cur.advance();
    if (!cur.valid()) break;
    if (cur.first_value() * width < f_hi) out.push_back(i);
  }
  return out;
}

// Decodes the frames that hold a run (frame_bytes(i) gives frame i's
// stored bytes; it is asked only for those), copying the runs' bytes to dst.
template <typename FrameBytes>
Result<void> copy_runs_from_frames(const Box& b, std::span<const ZstdFrame> frames,
                                   FrameBytes frame_bytes, std::span<uint8_t> dst,
                                   const std::string& w) {
  const uint64_t width = b.width(), run_bytes = b.run_values * width;
  RunCursor cur(b);
  std::vector<uint8_t> partial;
  uint64_t pos = 0;
  for (size_t i = 0; i < frames.size(); ++i) {
    const ZstdFrame& f = frames[i];
    const uint64_t f_lo = pos, f_hi = pos + f.content_size;
    pos = f_hi;
    while (cur.valid() && cur.first_value() * width + run_bytes <= f_lo) cur.advance();
    if (!cur.valid()) break;
    const uint64_t lo = cur.first_value() * width;
    if (lo >= f_hi) continue;  // no run in this frame
    const std::span<const uint8_t> frame = frame_bytes(i);
    if (lo <= f_lo && lo + run_bytes >= f_hi) {  // inside one run: straight to dst
      ZT_TRY(zstd_decode_exact(
          frame, dst.subspan(cur.run() * run_bytes + (f_lo - lo), f.content_size), w));
      if (lo + run_bytes == f_hi) cur.advance();  // the run ends with the frame
      continue;
    }
    partial.resize(f.content_size);
    ZT_TRY(zstd_decode_exact(frame, partial, w));
    for (; cur.valid(); cur.advance()) {
      const uint64_t run_lo = cur.first_value() * width, run_hi = run_lo + run_bytes;
      if (run_lo >= f_hi) break;
      const uint64_t a = std::max(run_lo, f_lo), e = std::min(run_hi, f_hi);
      std::memcpy(dst.data() + cur.run() * run_bytes + (a - run_lo), partial.data() + (a - f_lo),
                  e - a);
      if (run_hi > f_hi) break;  // it goes on in the next frame
    }
  }
  ZT_FAIL_IF(cur.valid(), invalid, "%s: the frames end at byte %llu, before the box does",
             w.c_str(), static_cast<ull>(pos));
  return {};
}

// A v2 seekable stream that is not mapped (copy mode, a remote source):
// the seek table is read from its end, then only the frames holding a run,
// in one read_many (one request remotely), each checked against the
// profile's rules before it is decoded.
Result<void> copy_from_seekable(const Box& b, const Source& src, uint64_t total,
                                std::span<uint8_t> dst, const std::string& w) {
  const Component& c = *b.data;
  ZT_FAIL_IF(c.length < kSeekableFooterBytes, invalid,
             "%s: %llu bytes cannot end with a zstd seek table (zt.zstd-seekable/1)", w.c_str(),
             static_cast<ull>(c.length));
  uint8_t footer[kSeekableFooterBytes];
  ZT_TRY(src.read_into(c.offset + c.length - kSeekableFooterBytes, footer));
  const auto table_bytes = seekable_table_size(footer, c.length, w);
  ZT_TRY(table_bytes);
  std::vector<uint8_t> table(*table_bytes);
  ZT_TRY(src.read_into(c.offset + c.length - *table_bytes, table));
  const auto index = seekable_index(table, c.length, total, w);
  ZT_TRY(index);
  std::vector<ZstdFrame> frames;
  frames.reserve(index->size());
  for (const SeekableFrame& f : *index) frames.push_back(f.frame);
  const std::vector<size_t> needed = frames_holding_runs(b, frames);
  std::vector<std::vector<uint8_t>> stored(needed.size());
  std::vector<size_t> slot(frames.size(), SIZE_MAX);
  std::vector<RangeRead> reads;
  reads.reserve(needed.size());
  for (size_t k = 0; k < needed.size(); ++k) {
    const ZstdFrame& f = frames[needed[k]];
    stored[k].resize(f.src_size);
    slot[needed[k]] = k;
    reads.push_back({c.offset + f.src_offset, stored[k]});
  }
  ZT_TRY(src.read_many(reads));
  for (size_t k = 0; k < needed.size(); ++k)
    ZT_TRY(check_seekable_frame(stored[k], (*index)[needed[k]], needed[k], w));
  return copy_runs_from_frames(
      b, frames, [&](size_t i) { return std::span<const uint8_t>(stored[slot[i]]); }, dst, w);
}

// One past the last decoded byte of the box (its last run's end).
uint64_t box_end_byte(const Box& b) {
  uint64_t last_run = 0;
  for (size_t d = 0; d < b.begin.size(); ++d)
    last_run += (d < b.split ? b.begin[d] + b.extent[d] - 1 : b.begin[d]) * b.stride[d];
  return (last_run + b.run_values) * b.width();
}

// zstd frames without a seek table (1.x writers record none) that are not
// mapped (copy mode, a remote source): where a frame ends is known only by
// reading it, so the stored prefix that reaches the end of the box's last
// frame is fetched and only the frames that hold a run are decoded. Its
// length is guessed (frames of the writers' 1 MiB, or of the size the first
// frame declares, at the compression ratio seen so far, with a sixteenth
// and 256 KiB to spare):
// one request remotely, as a rule; a short guess grows by half at least.
// False for a single frame or a stream whose frame headers do not add up
// (decoded whole then, with its precise errors).
Result<bool> copy_from_frame_prefix(const Box& b, const Source& src, uint64_t total,
                                    std::span<uint8_t> dst, const std::string& w) {
  const Component& c = *b.data;
  const uint64_t need = box_end_byte(b);
  std::vector<ZstdFrame> frames;
  uint64_t pos = 0, decoded = 0;  // stored and decoded bytes of the frames walked
  const auto stored_guess = [&] {
    const uint64_t frame =
        frames.empty() || frames[0].content_size == 0 ? uint64_t{1} << 20 : frames[0].content_size;
    const uint64_t reach = std::min(total, (need + frame - 1) / frame * frame);
    const double ratio = decoded ? static_cast<double>(pos) / static_cast<double>(decoded)
                                 : static_cast<double>(c.length) / static_cast<double>(total);
    const auto rest = static_cast<uint64_t>(static_cast<double>(reach - decoded) * ratio);
    return pos + rest + rest / 16 + (uint64_t{256} << 10);
  };
  std::vector<uint8_t> have;
  const auto fetch = [&](uint64_t upto) -> Result<void> {
    const size_t old = have.size();
    have.resize(std::min(upto, c.length));
    return src.read_into(c.offset + old, std::span<uint8_t>(have).subspan(old));
  };
  ZT_TRY(fetch(stored_guess()));
  while (decoded < need) {
    const auto head = pos < have.size()
                          ? zstd_frame_head(std::span<const uint8_t>(have).subspan(pos))
                          : std::nullopt;
    if (!head) {  // the frame goes on past what was fetched, or is not one
      if (have.size() == c.length) return false;
      ZT_TRY(fetch(std::max(stored_guess(), have.size() + have.size() / 2)));
      continue;
    }
    if (head->content_size) {
      if (*head->content_size >= total || *head->content_size > total - decoded) return false;
      frames.push_back(ZstdFrame{pos, head->stored_size, *head->content_size});
      decoded += *head->content_size;
    }
    pos += head->stored_size;
  }
  ZT_TRY(copy_runs_from_frames(
      b, frames,
      [&](size_t i) {
        return std::span<const uint8_t>(have).subspan(frames[i].src_offset, frames[i].src_size);
      },
      dst, w));
  return true;
}

// Decodes only the zstd frames that hold a run, copying the runs' bytes to
// dst; false when the component is not stored as several frames with
// recorded sizes.
Result<bool> copy_from_frames(const Reader& r, size_t object, const Box& b,
                              std::span<uint8_t> dst) {
  const Component& c = *b.data;
  const auto total = r.known_decoded_size(object, b.k);
  if (!total) return false;
  const std::string w = component_where(*b.object, c);
  ZT_FAIL_IF(*total > r.max_decoded_bytes(), limit,
             "%s: decoded size %llu exceeds the decode limit %llu", w.c_str(),
             static_cast<ull>(*total), static_cast<ull>(r.max_decoded_bytes()));
  auto source = r.source_of(c);
  ZT_TRY(source);
  if (!(*source)->base()) {
    if (!c.encoding_id) return copy_from_frame_prefix(b, **source, *total, dst, w);
    ZT_TRY(copy_from_seekable(b, **source, *total, dst, w));
    return true;
  }
  std::vector<uint8_t> scratch;
  auto src = r.stored(*b.object, c, scratch);
  ZT_TRY(src);
  const std::vector<ZstdFrame> frames = zstd_frame_index(*src, *total);
  if (frames.size() < 2) return false;
  ZT_TRY(copy_runs_from_frames(
      b, frames, [&](size_t i) { return src->subspan(frames[i].src_offset, frames[i].src_size); },
      dst, w));
  return true;
}

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

// The box's bytes into dst (exactly values() x width bytes), not f4.
Result<void> read_box(const Reader& r, size_t object, const Box& b, std::span<uint8_t> dst) {
  const Component& c = *b.data;
  const uint64_t width = b.width(), run_bytes = b.run_values * width;
  if (c.encoding == Encoding::raw && !r.zero_copy(c)) {  // copy mode, big-endian data
    auto src = r.source_of(c);
    ZT_TRY(src);
    // The runs go to the source in batches: a remote one fetches a batch
    // in one request (multipart ranges), a file reads them one by one.
    constexpr size_t kBatch = 1024;
    std::vector<RangeRead> batch;
    batch.reserve(std::min<uint64_t>(b.runs, kBatch));
    for (RunCursor cur(b); cur.valid(); cur.advance()) {
      batch.push_back(
          {c.offset + cur.first_value() * width, dst.subspan(cur.run() * run_bytes, run_bytes)});
      if (batch.size() == kBatch) {
        ZT_TRY((*src)->read_many(batch));
        batch.clear();
      }
    }
    if (!batch.empty()) ZT_TRY((*src)->read_many(batch));
    if (c.big_endian) swap_elements(dst, c.width());
    return {};
  }
  if (c.encoding == Encoding::zstd) {
    auto done = copy_from_frames(r, object, b, dst);
    ZT_TRY(done);
    if (*done) return {};
  }
  // Mapped raw data, or zstd decoded whole once into the reader's cache.
  auto m = mapped(r, object, b);
  ZT_TRY(m);
  for (RunCursor cur(b); cur.valid(); cur.advance())
    std::memcpy(dst.data() + cur.run() * run_bytes, m->data() + cur.first_value() * width,
                run_bytes);
  return {};
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
  if (r.zero_copy(*b->data)) {  // converted run by run from the mapping
    auto m = mapped(r, object, *b);
    ZT_TRY(m);
    for (RunCursor cur(*b); cur.valid(); cur.advance())
      convert_values(m->data() + cur.first_value() * width, b->format, b->run_values,
                     dst.data() + cur.run() * b->run_values);
    return n;
  }
  std::vector<uint8_t> bytes(n * width);
  ZT_TRY(read_box(r, object, *b, bytes));
  convert_values(bytes.data(), b->format, n, dst.data());
  return n;
}

template Result<uint64_t> dense_slice_as<float>(const Reader&, size_t, std::span<const uint64_t>,
                                                std::span<const uint64_t>, std::span<float>);
template Result<uint64_t> dense_slice_as<double>(const Reader&, size_t, std::span<const uint64_t>,
                                                 std::span<const uint64_t>, std::span<double>);

}  // namespace zt
