// v2's zt.zstd-seekable/1 encoding (its profile, decision 23 of docs/v2.md):
// streams our encoder makes decode through every path, and each rule of the
// profile broken alone is refused when the part is read or verified (never
// at open: bounds before bytes).
#include <gtest/gtest.h>
#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "codec/zstd_seekable.h"
#include "test_files.h"

namespace zt::test {
namespace {

Bytes seekable(std::span<const uint8_t> data, uint64_t frame_size) {
  Bytes out;
  EXPECT_TRUE(seekable_compress(data, frame_size, 3, out).ok());
  return out;
}

// A v2 file with a dense u8 object "w" of data.size() bytes stored as `z`.
Bytes file_with(std::span<const uint8_t> data, const Bytes& z, std::string digest = "") {
  FileBuilderV2 b;
  b.object("w", "dense", {data.size()}, Json{{"data", b.raw("u8", z)}});
  b.part("w", "data")["encoding"] = "zt.zstd-seekable/1";
  b.part("w", "data")["decoded_length"] = data.size();
  if (!digest.empty()) b.part("w", "data")["digest"] = digest;
  return b.build();
}

TEST(Seekable, OurStreamsDecodeWholeAndByRows) {
  const Bytes data = pattern(100000);
  const Bytes file = file_with(data, seekable(data, 4096), xxh3_digest(data));
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const Mapped m = map_component(o.get(), "w", "data");
  ASSERT_EQ(m.status, ZT_OK) << zt_last_error();
  EXPECT_EQ(m.bytes, data);
  uint64_t checked = 0;
  EXPECT_EQ(zt_verify(o.get(), &checked, nullptr), ZT_OK) << zt_last_error();
  EXPECT_EQ(checked, 1u);
  Bytes rows(5000);
  uint64_t written = 0;
  ASSERT_EQ(zt_dense_rows(o.get(), 0, 10000, 15000, rows.data(), rows.size(), &written), ZT_OK)
      << zt_last_error();
  EXPECT_EQ(0, std::memcmp(rows.data(), data.data() + 10000, 5000));
}

TEST(Seekable, AnEmptyPartIsJustTheSeekTable) {
  const Bytes none;
  const Bytes file = file_with(none, seekable(none, 4096));
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_EQ(zt_verify(o.get(), nullptr, nullptr), ZT_OK) << zt_last_error();
}

// Every way of reading the part, with the answer each gives.
struct Answer {
  std::string way;
  zt_status status;
  std::string message;  // zt_last_error() after it
};
std::vector<Answer> read_every_way(const Bytes& file, size_t size) {
  std::vector<Answer> got;
  const auto answer = [&](std::string way, zt_status status) {
    got.push_back(Answer{std::move(way), status, status == ZT_OK ? "" : zt_last_error()});
  };
  const TempFile f(file);
  for (const bool copy : {false, true}) {
    zt_open_options opt;
    zt_open_options_init(&opt);
    opt.io_mode = copy ? ZT_IO_COPY : ZT_IO_MAP;
    const Opened o = open_file(f, &opt);
    if (o.status != ZT_OK) {
      answer("open", o.status);
      continue;
    }
    const std::string mode = copy ? "copy " : "map ";
    answer(mode + "verify", zt_verify(o.get(), nullptr, nullptr));
    answer(mode + "map_component", map_component(o.get(), "w", "data").status);
    Bytes dst(size);
    uint64_t written = 0;
    answer(mode + "component_read",
           zt_component_read(o.get(), 0, "data", dst.data(), dst.size(), &written));
    answer(mode + "rows", zt_dense_rows(o.get(), 0, 120, 160, dst.data(), 40, &written));
    answer(mode + "decode_many",
           static_cast<zt_status>(decode_one(o.get(), 0, "data", dst).status));
  }
  return got;
}

// Opens (the rules are not checked at open) and fails verify for `rule`;
// every other way of reading the part (the mapping, a copy, rows, decode
// many, in map and copy mode) refuses it for the same rule.
void expect_refused(const Bytes& data, const Bytes& z, std::string_view rule) {
  const Bytes file = file_with(data, z);
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_TRUE(FailsWith(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_INVALID,
                        {"object \"w\": component \"data\"", rule}));
  const Mapped m = map_component(o.get(), "w", "data");
  EXPECT_EQ(m.status, ZT_ERR_INVALID);
  for (const Answer& a : read_every_way(file, std::max<size_t>(data.size(), 160))) {
    EXPECT_EQ(a.status, ZT_ERR_INVALID) << a.way;
    EXPECT_NE(a.message.find(rule), std::string::npos) << a.way << ": " << a.message;
  }
}

uint32_t le32_at(const Bytes& b, size_t at) {
  uint32_t v = 0;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}
void put32(Bytes& b, size_t at, uint32_t v) {
  std::memcpy(b.data() + at, &v, 4);
}

TEST(Seekable, APlainZstdStreamHasNoSeekTable) {
  const Bytes data = pattern(1000);
  expect_refused(data, zstd_compress(data), "no zstd seek table");
}

TEST(Seekable, EveryFrameCarriesAChecksum) {
  const Bytes data = pattern(1000);
  Bytes frame = zstd_compress(data);  // no checksum
  // Build the table by hand around a frame without a checksum.
  Bytes z = frame;
  const Bytes table = cat({le<uint32_t>({0x184D2A5E, 8 + 9}),
                           le<uint32_t>({static_cast<uint32_t>(frame.size()), 1000}),
                           le<uint32_t>({1}), Bytes{0x00}, le<uint32_t>({0x8F92EAB1})});
  append(z, table);
  expect_refused(data, z, "no content checksum");
}

TEST(Seekable, FramesButTheLastAreEqual) {
  const Bytes data = pattern(3000);
  Bytes z;
  Bytes table;
  auto frame = [&](size_t at, size_t n) {
    const size_t before = z.size();
    ASSERT_TRUE(zstd_compress_frame(std::span(data).subspan(at, n), 3, z, true).ok());
    append(table,
           le<uint32_t>({static_cast<uint32_t>(z.size() - before), static_cast<uint32_t>(n)}));
  };
  frame(0, 1000);
  frame(1000, 1500);
  frame(2500, 500);
  append(z, cat({le<uint32_t>({0x184D2A5E, static_cast<uint32_t>(table.size() + 9)}), table,
                 le<uint32_t>({3}), Bytes{0x00}, le<uint32_t>({0x8F92EAB1})}));
  expect_refused(data, z, "all frames but the last must be equal");
}

TEST(Seekable, TheFramesAddUpToDecodedLength) {
  const Bytes data = pattern(1000);
  const Bytes z = seekable(data, 256);
  FileBuilderV2 b;
  b.object("w", "acme.x/1", {1}, Json{{"data", b.raw("u8", z)}});
  b.part("w", "data")["encoding"] = "zt.zstd-seekable/1";
  b.part("w", "data")["decoded_length"] = 999;
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_TRUE(FailsWith(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_INVALID,
                        {"the frames hold 1000 bytes, decoded_length says 999"}));
}

TEST(Seekable, TheTableAgreesWithTheFrames) {
  const Bytes data = pattern(1000);
  const Bytes good = seekable(data, 256);  // 4 frames, entries of 12 bytes
  const size_t entries = good.size() - 9 - 4 * 12;
  {
    Bytes z = good;
    put32(z, entries + 8, le32_at(z, entries + 8) ^ 1);  // frame 0's checksum
    expect_refused(data, z, "checksum differs");
  }
  {
    // Two frames (256 + 244 bytes) listed as 255 + 245: the table adds up,
    // and frame 0's header says otherwise.
    const Bytes two = pattern(500);
    Bytes z = seekable(two, 256);
    const size_t at = z.size() - 9 - 2 * 12;
    put32(z, at + 4, 255);
    put32(z, at + 12 + 4, 245);
    expect_refused(two, z, "records 256 bytes of content");
  }
  {
    Bytes z = good;
    // Frame 0's compressed size: the entries no longer fit the stream,
    // which the table shows before any frame is read (so a remote read,
    // which fetches no frame to learn it, says the same).
    put32(z, entries, le32_at(z, entries) + 1);
    expect_refused(data, z, "runs past the frames");
  }
  {
    Bytes z = good;
    z[z.size() - 5] = 0x84;  // a reserved descriptor bit
    expect_refused(data, z, "reserved bits");
  }
}

// A frame with its checksum but no content size in its header, as other
// encoders may write it: only the seek table says what it decodes to.
Bytes frame_without_size(std::span<const uint8_t> data) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0);
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  Bytes out(ZSTD_compressBound(data.size()));
  const size_t n = ZSTD_compress2(c, out.data(), out.size(), data.data(), data.size());
  ZSTD_freeCCtx(c);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

// Frames holding first.size() and second.size() bytes, listed by the seek
// table as holding `listed` bytes each (checksums included).
Bytes two_frames(std::span<const uint8_t> first, std::span<const uint8_t> second,
                 std::array<uint32_t, 2> listed) {
  const Bytes a = frame_without_size(first), b = frame_without_size(second);
  const auto size = [](const Bytes& f) { return static_cast<uint32_t>(f.size()); };
  return cat({a, b, le<uint32_t>({0x184D2A5E, 2 * 12 + 9}),
              le<uint32_t>({size(a), listed[0], le32_at(a, a.size() - 4), size(b), listed[1],
                            le32_at(b, b.size() - 4), 2}),
              Bytes{0x80}, le<uint32_t>({0x8F92EAB1})});
}

// Issue #42 item 9: a table that says 100 + 100 bytes for frames holding
// 150 + 50 is refused by every path (it was accepted by verify and by the
// mapping, refused by slices); a table that agrees is read by every path.
TEST(Seekable, EachFrameDecodesToWhatItsTableEntrySays) {
  const Bytes data = pattern(200);
  const auto first = std::span(data).first(150), second = std::span(data).subspan(150);
  for (const Answer& a : read_every_way(file_with(data, two_frames(first, second, {150, 50})), 200))
    EXPECT_EQ(a.status, ZT_OK) << a.way << ": " << a.message;
  for (const Answer& a :
       read_every_way(file_with(data, two_frames(first, second, {100, 100})), 200))
    EXPECT_EQ(a.status, ZT_ERR_INVALID) << a.way;
}

TEST(Seekable, FramesHoldAtMost16MiB) {
  const Bytes data((16u << 20) + 1, 0);
  Bytes z;
  ASSERT_TRUE(zstd_compress_frame(data, 1, z, true).ok());
  const uint32_t csize = static_cast<uint32_t>(z.size());
  append(z, cat({le<uint32_t>({0x184D2A5E, 8 + 9}),
                 le<uint32_t>({csize, static_cast<uint32_t>(data.size())}), le<uint32_t>({1}),
                 Bytes{0x00}, le<uint32_t>({0x8F92EAB1})}));
  expect_refused(data, z, "more than 16 MiB");
  Bytes out;
  EXPECT_EQ(seekable_compress(data, (16u << 20) + 1, 3, out).error().status, Status::argument);
}

}  // namespace
}  // namespace zt::test
