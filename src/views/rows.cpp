// Row slices of dense objects: only what covers the rows is read or
// decoded (raw data at its offset, zstd frame by frame where the frames
// record their sizes: frame_reads.h).
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

#include "base/byte_order.h"
#include "manifest/object_format.h"
#include "read/content.h"
#include "read/frame_reads.h"
#include "views/kernels.h"

namespace zt {

using namespace zt::views;
using ull = unsigned long long;

namespace {

struct Rows {
  const Object* object = nullptr;
  const Component* data = nullptr;
  size_t k = 0;
  NumericFormat format;
  uint64_t row_values = 0;  // storage elements per row (f4_e2m1: values)
  uint64_t offset = 0;      // first byte of the range in the decoded data
  uint64_t bytes = 0;       // byte count of the range
  // f4_e2m1 packs two values a byte: the range's first value is nibble
  // first_nibble of its first byte, and rows of an odd length need not
  // start or end on a byte.
  uint64_t first_nibble = 0;
  bool byte_aligned = true;
  // The range holds the part's last byte, after the last value: its count.
  std::optional<uint64_t> total_values;
  Generation generation = Generation::v1;  // whether bool bytes must be 0 or 1
};

Result<Rows> rows_of(const Reader& r, size_t object, uint64_t begin, uint64_t end) {
  auto o = object_of_format(r, object, kDenseFormat, "");
  ZT_TRY(o);
  const Object& obj = **o;
  ZT_FAIL_IF(obj.shape.empty(), argument, "%s is a scalar: it has no rows",
             object_where(obj).c_str());
  ZT_FAIL_IF(begin > end || end > obj.shape[0], argument,
             "%s: rows [%llu, %llu) are not within [0, %llu)", object_where(obj).c_str(),
             static_cast<ull>(begin), static_cast<ull>(end), static_cast<ull>(obj.shape[0]));
  Rows rows;
  rows.object = &obj;
  rows.data = obj.find("data");
  rows.generation = r.manifest().generation;
  rows.k = index_of(obj, rows.data);
  auto f = numeric_format(obj, *rows.data);
  ZT_TRY(f);
  rows.format = *f;
  if (begin == end) return rows;
  // shape[0] >= 1 here, so the rest of the shape cannot overflow: the whole
  // product was checked at open.
  const auto per_row = shape_product(std::span<const uint64_t>(obj.shape).subspan(1));
  ZT_FAIL_IF(!per_row, limit, "%s: the shape overflows", object_where(obj).c_str());
  rows.row_values = *per_row * f->ratio;
  const uint64_t first = begin * rows.row_values, last = end * rows.row_values;
  rows.offset = f->f4 ? first / 2 : value_bytes(*f, first);
  rows.bytes = value_bytes(*f, last) - rows.offset;
  rows.first_nibble = f->f4 ? first % 2 : 0;
  rows.byte_aligned = !f->f4 || (first % 2 == 0 && (last % 2 == 0 || end == obj.shape[0]));
  if (end == obj.shape[0]) rows.total_values = last;
  return rows;
}

// The content rules a range of values can be held to: bool bytes are 0 or
// 1 (a bool is one byte, so the range's offset is its first element), and
// f4_e2m1's rule on the part's last byte, when the range holds it.
Result<void> check_range_content(const Rows& rows, std::span<const uint8_t> bytes) {
  ZT_TRY(check_bool_values(rows.generation, *rows.object, *rows.data, bytes, rows.offset));
  if (!rows.format.f4 || !rows.total_values || bytes.empty()) return {};
  return check_f4_tail(*rows.object, *rows.data, *rows.total_values, bytes.back());
}

Result<void> require_byte_aligned(const Rows& rows, uint64_t begin, uint64_t end) {
  ZT_FAIL_IF(!rows.byte_aligned, unsupported,
             "%s: rows [%llu, %llu) of %llu f4_e2m1 values each do not start and end on a byte; "
             "the converting calls (zt_dense_rows_f32) read them",
             component_where(*rows.object, *rows.data).c_str(), static_cast<ull>(begin),
             static_cast<ull>(end), static_cast<ull>(rows.row_values));
  return {};
}

// The decoded bytes [offset, offset + bytes) of the range, mapped.
Result<std::span<const uint8_t>> map_range(const Reader& r, size_t object, const Rows& rows) {
  if (rows.bytes == 0) return std::span<const uint8_t>();
  auto m = r.map(object, rows.k);
  ZT_TRY(m);
  ZT_FAIL_IF(m->size() < rows.offset + rows.bytes, invalid, "%s: %zu decoded bytes, rows need %llu",
             component_where(*rows.object, *rows.data).c_str(), m->size(),
             static_cast<ull>(rows.offset + rows.bytes));
  const auto range = m->subspan(rows.offset, rows.bytes);
  ZT_TRY(check_range_content(rows, range));
  return range;
}

// The range's decoded bytes into out (exactly rows.bytes long).
Result<void> read_range(const Reader& r, size_t object, const Rows& rows, std::span<uint8_t> out) {
  const Component& c = *rows.data;
  if (c.encoding == Encoding::raw) {
    auto src = r.source_of(c);
    ZT_TRY(src);
    ZT_TRY((*src)->read_into(c.offset + rows.offset, out));
    if (c.big_endian) swap_elements(out, c.width());
    return check_range_content(rows, out);
  }
  if (c.encoding == Encoding::zstd || c.encoding == Encoding::byte_planes) {
    auto partial = copy_runs_from_frames(r, object, rows.k, OneRun(rows.offset, rows.bytes), out);
    ZT_TRY(partial);
    if (*partial) return check_range_content(rows, out);
  }
  auto m = map_range(r, object, rows);
  ZT_TRY(m);
  std::memcpy(out.data(), m->data(), m->size());
  return {};
}

}  // namespace

Result<std::span<const uint8_t>> dense_rows_map(const Reader& r, size_t object, uint64_t begin,
                                                uint64_t end) {
  auto rows = rows_of(r, object, begin, end);
  ZT_TRY(rows);
  ZT_TRY(require_byte_aligned(*rows, begin, end));
  return map_range(r, object, *rows);
}

Result<uint64_t> dense_rows(const Reader& r, size_t object, uint64_t begin, uint64_t end,
                            std::span<uint8_t> dst) {
  auto rows = rows_of(r, object, begin, end);
  ZT_TRY(rows);
  ZT_TRY(require_byte_aligned(*rows, begin, end));
  ZT_FAIL_IF(rows->bytes > dst.size(), argument,
             "%s: %llu bytes of rows do not fit in a buffer of %zu",
             component_where(*rows->object, *rows->data).c_str(), static_cast<ull>(rows->bytes),
             dst.size());
  if (rows->bytes == 0) return uint64_t{0};
  ZT_TRY(read_range(r, object, *rows, dst.first(rows->bytes)));
  return rows->bytes;
}

template <typename T>
Result<uint64_t> dense_rows_as(const Reader& r, size_t object, uint64_t begin, uint64_t end,
                               std::span<T> dst) {
  auto rows = rows_of(r, object, begin, end);
  ZT_TRY(rows);
  const uint64_t n = (end - begin) * rows->row_values;
  ZT_TRY(fits(component_where(*rows->object, *rows->data), n, dst));
  if (n == 0) return uint64_t{0};
  auto convert = [&](std::span<const uint8_t> bytes) {
    if (rows->format.f4)
      convert_f4_values(bytes.data(), rows->first_nibble, n, dst.data());
    else
      convert_values(bytes.data(), rows->format, n, dst.data());
  };
  const auto in_place = r.mapped_in_place(*rows->data);
  ZT_TRY(in_place);
  if (*in_place) {
    auto m = map_range(r, object, *rows);
    ZT_TRY(m);
    convert(*m);
    return n;
  }
  // Not zeroed: a size a file claims (zstd data's uncompressed_length)
  // costs no memory until the read has decoded that many bytes.
  const auto held = std::make_unique_for_overwrite<uint8_t[]>(rows->bytes);
  const std::span<uint8_t> bytes(held.get(), rows->bytes);
  ZT_TRY(read_range(r, object, *rows, bytes));
  convert(bytes);
  return n;
}

template Result<uint64_t> dense_rows_as<float>(const Reader&, size_t, uint64_t, uint64_t,
                                               std::span<float>);
template Result<uint64_t> dense_rows_as<double>(const Reader&, size_t, uint64_t, uint64_t,
                                                std::span<double>);

}  // namespace zt
