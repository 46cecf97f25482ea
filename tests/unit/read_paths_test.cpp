// Every way of reading an object gives the same bytes or the same refusal
// (issue #42's property). Files are generated from a seed: dtypes, shapes,
// encodings (raw; one zstd frame with or without its content size; several
// frames; v2's seekable stream and byte planes), generations (1.2, v2), with and without a
// digest; each also broken in one place (a stored byte flipped, the stored
// length one short, frames that decode to one element more or less than
// the shape says). Each file is opened from memory, mapped, in copy mode and
// through a callback source (the remote path), and read whole by every call
// that hands out bytes (500 cases: 0.2 s, 15 s under valgrind). zt_verify
// must refuse whatever any read refuses.
#include <gtest/gtest.h>
#include <zstd.h>

#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "codec/byte_planes.h"
#include "codec/zstd_seekable.h"
#include "test_files.h"

namespace zt::test {
namespace {

enum class Encoding { raw, zstd_sized, zstd_unsized, zstd_frames, seekable, planes };
enum class Damage { none, flipped_byte, short_length, one_element_more, one_element_less };

struct Case {
  bool v2 = false;
  std::string dtype;
  size_t element = 1;
  std::vector<uint64_t> shape;
  Encoding encoding = Encoding::raw;
  Damage damage = Damage::none;
  bool digest = false;
  uint32_t seed = 0;

  std::string describe() const {
    static const char* const encodings[] = {"raw",         "zstd",     "zstd without size",
                                            "zstd frames", "seekable", "byte planes"};
    static const char* const damages[] = {"intact", "flipped byte", "short length",
                                          "one element more", "one element less"};
    std::string s = v2 ? "v2 " : "1.2 ";
    s += dtype + " [";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
    s += "] ";
    s += encodings[static_cast<int>(encoding)];
    s += digest ? " digest " : " ";
    s += damages[static_cast<int>(damage)];
    s += " seed " + std::to_string(seed);
    return s;
  }
};

// Frames of at most `frame` bytes each, every one recording its size.
Bytes zstd_frames(std::span<const uint8_t> data, size_t frame) {
  Bytes out;
  for (size_t at = 0; at < data.size() || (at == 0 && data.empty()); at += frame) {
    append(out, zstd_compress(data.subspan(at, std::min(frame, data.size() - at))));
    if (data.empty()) break;
  }
  return out;
}

Bytes encode(const Case& c, std::span<const uint8_t> data) {
  switch (c.encoding) {
    case Encoding::raw:
      return Bytes(data.begin(), data.end());
    case Encoding::zstd_sized:
      return zstd_compress(data);
    case Encoding::zstd_unsized:
      return zstd_compress(data, false);
    case Encoding::zstd_frames:
      return zstd_frames(data, 96);
    case Encoding::seekable: {
      Bytes out;
      EXPECT_TRUE(seekable_compress(data, 128, 3, out).ok());
      return out;
    }
    case Encoding::planes: {  // frames of 8 elements: rows and boxes cut them
      const PlanesLayout layout{static_cast<uint8_t>(c.element), c.element > 1,
                                static_cast<uint32_t>(8 * c.element)};
      Bytes out;
      EXPECT_TRUE(byte_planes_encode(data, layout, 3, out).ok());
      return out;
    }
  }
  return {};
}

// The file for `c` holding `data` (what the shape says) as dense object "w".
Bytes build(const Case& c, const Bytes& data, std::mt19937& rng) {
  Bytes encoded = data;  // what the stored bytes decode to
  if (c.damage == Damage::one_element_more) append(encoded, Bytes(c.element, 0x5A));
  if (c.damage == Damage::one_element_less) {
    if (encoded.size() < c.element) return {};  // nothing to take from: see random_case
    encoded.resize(encoded.size() - c.element);
  }
  Bytes stored = encode(c, encoded);
  if (c.damage == Damage::flipped_byte && !stored.empty())
    stored[rng() % stored.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
  uint64_t length = stored.size();
  if (c.damage == Damage::short_length && length > 0) --length;

  if (c.v2) {
    FileBuilderV2 b;
    b.object("w", "dense", c.shape, Json{{"data", b.raw(c.dtype, stored)}});
    Json& part = b.part("w", "data");
    part["blob"][1] = length;
    if (c.encoding == Encoding::seekable || c.encoding == Encoding::planes) {
      part["encoding"] =
          c.encoding == Encoding::seekable ? "zt.zstd-seekable/1" : "libztensor.byte_planes/1";
      part["decoded_length"] = data.size();
    }
    if (c.digest) part["digest"] = xxh3_digest(data);  // v2: over the decoded bytes
    return b.build();
  }
  FileBuilder b;
  Json component = b.raw(c.dtype, stored);
  component["length"] = length;
  if (c.encoding != Encoding::raw) {
    component["encoding"] = "zstd";
    component["uncompressed_length"] = data.size();
  }
  // 1.x: over the stored bytes, as written (before any shortening).
  if (c.digest) component["digest"] = sha256_digest(std::span(stored).first(length));
  b.object("w", "dense", c.shape, Json{{"data", component}});
  return b.build();
}

uint64_t row_bytes(const Case& c) {
  uint64_t n = c.element;
  for (size_t i = 1; i < c.shape.size(); ++i) n *= c.shape[i];
  return n;
}

Case random_case(std::mt19937& rng, uint32_t seed) {
  static const std::pair<const char*, size_t> dtypes[] = {{"u8", 1},  {"i16", 2}, {"bf16", 2},
                                                          {"f32", 4}, {"f64", 8}, {"i64", 8}};
  Case c;
  c.seed = seed;
  c.v2 = rng() % 2;
  const auto& [dtype, element] = dtypes[rng() % std::size(dtypes)];
  c.dtype = dtype;
  c.element = element;
  const size_t ndim = 1 + rng() % 3;
  for (size_t i = 0; i < ndim; ++i) c.shape.push_back(rng() % 9 == 0 ? 0 : 1 + rng() % 23);
  const Encoding v1[] = {Encoding::raw, Encoding::zstd_sized, Encoding::zstd_unsized,
                         Encoding::zstd_frames};
  const Encoding v2[] = {Encoding::raw, Encoding::seekable, Encoding::planes};
  c.encoding = c.v2 ? v2[rng() % 3] : v1[rng() % 4];
  c.damage = static_cast<Damage>(rng() % 5 < 2 ? 0 : rng() % 5);
  c.digest = rng() % 2;
  if (c.damage == Damage::one_element_less && c.shape[0] * row_bytes(c) == 0)
    c.damage = Damage::one_element_more;  // no element to take away
  return c;
}

// One read's answer: its status and, on success, the bytes it gave.
struct Answer {
  zt_status status = ZT_OK;
  Bytes bytes;
};

// Every call that hands out the object's bytes, each reading all of them.
std::vector<std::pair<std::string, Answer>> read_every_way(const zt_reader* r, const Case& c,
                                                           size_t size) {
  std::vector<std::pair<std::string, Answer>> got;
  const auto record = [&](std::string way, zt_status st, Bytes bytes) {
    got.emplace_back(std::move(way), Answer{st, st == ZT_OK ? std::move(bytes) : Bytes{}});
  };
  {
    const void* p = nullptr;
    uint64_t n = 0;
    const zt_status st = zt_component_map(r, 0, "data", &p, &n);
    record("component_map", st,
           st == ZT_OK ? Bytes(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n)
                       : Bytes{});
  }
  {
    Bytes dst(size);
    uint64_t written = 0;
    const zt_status st = zt_component_read(r, 0, "data", dst.data(), dst.size(), &written);
    dst.resize(written);
    record("component_read", st, std::move(dst));
  }
  {
    Bytes dst(size);
    const zt_decode_request q = decode_one(r, 0, "data", dst);
    dst.resize(q.written);
    record("decode_many", static_cast<zt_status>(q.status), std::move(dst));
  }
  {
    // Three ranges, cut where the bytes allow; the first refusal is the answer.
    Bytes dst(size);
    std::vector<zt_decode_range> ranges;
    const uint64_t cuts[] = {0, size / 3, 2 * size / 3, size};
    for (int i = 0; i < 3; ++i) {
      if (cuts[i] == cuts[i + 1] && !(i == 0 && size == 0)) continue;
      zt_decode_range g;
      zt_decode_range_init(&g);
      g.object = 0;
      g.role = "data";
      g.offset = cuts[i];
      g.dst = dst.data() + cuts[i];
      g.length = cuts[i + 1] - cuts[i];
      ranges.push_back(g);
    }
    const zt_status st = zt_decode_ranges(r, ranges.data(), ranges.size(), 2, nullptr, nullptr);
    record("decode_ranges", st, std::move(dst));
  }
  {
    // Rows in two calls, the first half and the rest.
    Bytes dst(size);
    const uint64_t rows = c.shape[0], half = rows / 2, stride = row_bytes(c);
    uint64_t w1 = 0, w2 = 0;
    zt_status st = zt_dense_rows(r, 0, 0, half, dst.data(), half * stride, &w1);
    if (st == ZT_OK) st = zt_dense_rows(r, 0, half, rows, dst.data() + w1, dst.size() - w1, &w2);
    dst.resize(w1 + w2);
    record("dense_rows", st, std::move(dst));
  }
  {
    const void* p = nullptr;
    uint64_t n = 0;
    const zt_status st = zt_dense_rows_map(r, 0, 0, c.shape[0], &p, &n);
    record("dense_rows_map", st,
           st == ZT_OK ? Bytes(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n)
                       : Bytes{});
  }
  {
    Bytes dst(size);
    const std::vector<uint64_t> begin(c.shape.size(), 0);
    uint64_t written = 0;
    const zt_status st = zt_dense_slice(r, 0, c.shape.size(), begin.data(), c.shape.data(),
                                        dst.data(), dst.size(), &written);
    dst.resize(written);
    record("dense_slice", st, std::move(dst));
  }
  return got;
}

// A callback source over `file` (its ctx), which must outlive the reader:
// the path remote files take.
Opened open_through_source(const Bytes& file) {
  zt_source s;
  zt_source_init(&s);
  s.flags = ZT_SOURCE_CONCURRENT;
  s.ctx = const_cast<Bytes*>(&file);  // read only
  s.read_at = [](void* ctx, uint64_t offset, size_t length, void* buf, size_t* done) {
    const Bytes& f = *static_cast<const Bytes*>(ctx);
    *done = std::min<uint64_t>(length, f.size() - offset);
    std::memcpy(buf, f.data() + offset, *done);
    return ZT_OK;
  };
  s.size = [](void* ctx, uint64_t* out) {
    *out = static_cast<const Bytes*>(ctx)->size();
    return ZT_OK;
  };
  zt_reader* r = nullptr;
  Opened o;
  o.status = zt_open_source(&s, nullptr, &r);
  o.error = zt_last_error();
  o.reader.reset(r);
  return o;
}

// The first answer's way and answer are kept; every later one must have
// its status, and on success its bytes.
void expect_as_first(const std::string& name, const Answer& answer, std::string& first_way,
                     Answer& first) {
  if (first_way.empty()) {
    first_way = name;
    first = answer;
  }
  EXPECT_EQ(answer.status, first.status) << name << " vs " << first_way << ": " << zt_last_error();
  if (answer.status == ZT_OK && first.status == ZT_OK) {
    EXPECT_EQ(answer.bytes, first.bytes) << name << " vs " << first_way;
  }
}

// `file` (also at `temp`) opened every way: from memory, mapped, in copy
// mode and through a callback source.
std::vector<std::pair<std::string, Opened>> open_every_way(const Bytes& file,
                                                           const TempFile& temp) {
  std::vector<std::pair<std::string, Opened>> readers;
  readers.emplace_back("memory", open_memory(file));
  for (const zt_io_mode mode : {ZT_IO_MAP, ZT_IO_COPY}) {
    zt_open_options opt;
    zt_open_options_init(&opt);
    opt.io_mode = mode;
    readers.emplace_back(mode == ZT_IO_MAP ? "mapped file" : "copy mode", open_file(temp, &opt));
  }
  readers.emplace_back("source", open_through_source(file));
  return readers;
}

// Checks the property for one generated case.
void check_case(const Case& c) {
  SCOPED_TRACE(c.describe());
  std::mt19937 rng(c.seed);
  uint64_t size = row_bytes(c) * c.shape[0];
  Bytes data(size);
  for (auto& b : data) b = static_cast<uint8_t>(rng() % 7 == 0 ? rng() : 0x11 * (rng() % 3));
  const Bytes file = build(c, data, rng);
  const TempFile temp(file);

  const auto readers = open_every_way(file, temp);

  // Opening: the same answer whichever way.
  for (const auto& [how, o] : readers)
    ASSERT_EQ(o.status, readers[0].second.status) << how << ": " << o.error;
  if (readers[0].second.status != ZT_OK) {
    // Only raw bytes whose length the shape contradicts are refused at open.
    EXPECT_TRUE(c.encoding == Encoding::raw && c.damage != Damage::none &&
                c.damage != Damage::flipped_byte)
        << readers[0].second.error;
    return;
  }

  std::string first_way;
  Answer first;
  bool any_refused = false;
  for (const auto& [how, o] : readers) {
    for (auto& [way, answer] : read_every_way(o.get(), c, size)) {
      const std::string name = how + " " + way;
      // Rows, slices and ranges decode only what covers them: none of an
      // empty object's bytes.
      if (size == 0 && !way.starts_with("component_") && way != "decode_many") continue;
      expect_as_first(name, answer, first_way, first);
      any_refused |= answer.status != ZT_OK;
    }
    const zt_status verified = zt_verify(o.get(), nullptr, nullptr);
    if (any_refused) {
      EXPECT_NE(verified, ZT_OK) << how << " verify accepts what a read refuses";
    }
    if (c.damage == Damage::none) {
      EXPECT_EQ(verified, ZT_OK) << how << ": " << zt_last_error();
    }
  }
  if (c.damage == Damage::none) {
    EXPECT_EQ(first.status, ZT_OK) << zt_last_error();
    EXPECT_EQ(first.bytes, data);
  }
  // Frames that decode to another size than the shape's are never read.
  if ((c.damage == Damage::one_element_more || c.damage == Damage::one_element_less) &&
      c.encoding != Encoding::raw) {
    EXPECT_EQ(first.status, ZT_ERR_INVALID);
  }
}

// The first row, read every way that reads part of an object: a partial
// read checks what it reads (the frames that hold the row, and the seek
// table or index that says where they are), whichever way the file was
// opened, so a stream damaged only past the row gives the row everywhere.
std::vector<std::pair<std::string, Answer>> read_first_row(const zt_reader* r, const Case& c) {
  std::vector<std::pair<std::string, Answer>> got;
  const uint64_t stride = row_bytes(c);
  const auto record = [&](std::string way, zt_status st, Bytes bytes) {
    got.emplace_back(std::move(way), Answer{st, st == ZT_OK ? std::move(bytes) : Bytes{}});
  };
  {
    Bytes dst(stride);
    uint64_t written = 0;
    const zt_status st = zt_dense_rows(r, 0, 0, 1, dst.data(), dst.size(), &written);
    record("dense_rows", st, std::move(dst));
  }
  {
    Bytes dst(stride);
    std::vector<uint64_t> end = c.shape;
    end[0] = 1;
    const std::vector<uint64_t> begin(c.shape.size(), 0);
    uint64_t written = 0;
    const zt_status st = zt_dense_slice(r, 0, c.shape.size(), begin.data(), end.data(), dst.data(),
                                        dst.size(), &written);
    record("dense_slice", st, std::move(dst));
  }
  {
    Bytes dst(stride);
    zt_decode_range g;
    zt_decode_range_init(&g);
    g.object = 0;
    g.role = "data";
    g.dst = dst.data();
    g.length = stride;
    const zt_status st = zt_decode_ranges(r, &g, 1, 1, nullptr, nullptr);
    record("decode_ranges", st, std::move(dst));
  }
  return got;
}

// Checks, for one generated case, that the first row reads the same every
// way (the damage, where there is one, falls in the row's frames or past
// them as the seed has it). True when a damaged file gave the row.
bool check_first_row(const Case& c) {
  SCOPED_TRACE(c.describe());
  std::mt19937 rng(c.seed);
  const uint64_t size = row_bytes(c) * c.shape[0];
  if (size == 0) return false;
  Bytes data(size);
  for (auto& b : data) b = static_cast<uint8_t>(rng() % 7 == 0 ? rng() : 0x11 * (rng() % 3));
  const Bytes file = build(c, data, rng);
  if (file.empty()) return false;
  const TempFile temp(file);
  const auto readers = open_every_way(file, temp);
  for (const auto& [how, o] : readers)
    EXPECT_EQ(o.status, readers[0].second.status) << how << ": " << o.error;
  if (readers[0].second.status != ZT_OK) return false;
  std::string first_way;
  Answer first;
  for (const auto& [how, o] : readers) {
    for (auto& [way, answer] : read_first_row(o.get(), c)) {
      const std::string name = how + " " + way;
      expect_as_first(name, answer, first_way, first);
    }
  }
  if (c.damage == Damage::none) {
    EXPECT_EQ(first.status, ZT_OK) << zt_last_error();
    EXPECT_EQ(first.bytes,
              Bytes(data.begin(), data.begin() + static_cast<ptrdiff_t>(row_bytes(c))));
  }
  return c.damage != Damage::none && first.status == ZT_OK;
}

TEST(ReadPaths, APartOfAnObjectReadsTheSameEveryWay) {
  std::mt19937 rng(20261202);
  int served_past_damage = 0;
  for (uint32_t i = 0; i < 500; ++i) {
    const uint32_t seed = static_cast<uint32_t>(rng());
    std::mt19937 case_rng(seed);
    const Case c = random_case(case_rng, seed);
    if (c.encoding == Encoding::raw) continue;  // nothing to decode
    served_past_damage += check_first_row(c);
    if (testing::Test::HasFailure()) break;  // one case to read at a time
  }
  // Damage past the row's frames is not the row's: such cases were met.
  EXPECT_GT(served_past_damage, 10);
}

TEST(ReadPaths, EveryWayGivesTheSameBytesOrTheSameRefusal) {
  std::mt19937 rng(20261127);
  for (uint32_t i = 0; i < 500; ++i) {
    const uint32_t seed = static_cast<uint32_t>(rng());
    std::mt19937 case_rng(seed);
    check_case(random_case(case_rng, seed));
    if (HasFatalFailure() || testing::Test::HasFailure()) break;  // one case to read at a time
  }
}

}  // namespace
}  // namespace zt::test
