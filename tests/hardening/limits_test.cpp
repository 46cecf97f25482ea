// Every safety limit (src/base/zt_limits.h) against a hostile file, each in a
// child process whose peak resident memory the test reads: a file is
// refused with ZT_ERR_LIMIT or ZT_ERR_INVALID, and the refusal costs a
// bounded amount of memory (no allocation sized by what the file claims).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "base/zt_limits.h"
#include "hardening_support.h"

namespace zt::hardening {
namespace {

// Exit codes of the children: the status of the call under test, or 100 +
// the status of an earlier call that should have succeeded.
constexpr int kEarlier = 100;

int open_memory_status(const Bytes& file) {
  zt_reader* r = nullptr;
  const zt_status s = zt_open_memory(file.data(), file.size(), &r);
  zt_close(r);
  return s;
}

zt_status open_file(const std::string& path, uint64_t cap, zt_reader** r) {
  zt_open_options opt;
  zt_open_options_init(&opt);
  opt.max_decoded_bytes = cap;
  return zt_open_ex(path.c_str(), &opt, r);
}

// Opens (must succeed), then maps object 0's "data".
int map_status(const std::string& path, uint64_t cap = 0) {
  zt_reader* r = nullptr;
  if (const zt_status s = open_file(path, cap, &r)) return kEarlier + s;
  const void* p = nullptr;
  uint64_t n = 0;
  const zt_status s = zt_component_map(r, 0, "data", &p, &n);
  zt_close(r);
  return s;
}

// Opens (must succeed), then verifies.
int verify_status(const std::string& path, uint64_t cap = 0) {
  zt_reader* r = nullptr;
  if (const zt_status s = open_file(path, cap, &r)) return kEarlier + s;
  const zt_status s = zt_verify(r, nullptr, nullptr);
  zt_close(r);
  return s;
}

std::string status_of(int code) {
  if (code >= kEarlier)
    return std::string("an earlier call failed: ") +
           zt_status_name(static_cast<zt_status>(code - kEarlier));
  return zt_status_name(static_cast<zt_status>(code));
}

// Sanitizer builds check the statuses only, on smaller inputs.
constexpr bool kMeasure = !kSanitized;
constexpr size_t kScale = kSanitized ? 10 : 1;

testing::AssertionResult Refused(const ChildOutcome& c, std::initializer_list<zt_status> want,
                                 uint64_t max_growth) {
  if (!c.exited) return testing::AssertionFailure() << "the child died of signal " << c.signal;
  bool ok = false;
  for (const zt_status w : want) ok |= c.exit_code == static_cast<int>(w);
  if (!ok) return testing::AssertionFailure() << "got " << status_of(c.exit_code);
  if (kMeasure && c.growth() > max_growth)
    return testing::AssertionFailure()
           << "refused (" << status_of(c.exit_code) << ") but only after " << c.growth() / kMiB
           << " MiB of resident memory (bound " << max_growth / kMiB << " MiB)";
  // The figures go to the log: SECURITY.md quotes them.
  std::fprintf(stderr, "  refused with %s, peak RSS growth %llu KiB\n",
               status_of(c.exit_code).c_str(), static_cast<unsigned long long>(c.growth() / 1024));
  return testing::AssertionSuccess();
}

// The memory a refusal of a small file may cost: the library's own fixed
// costs (thread-local zstd contexts, message strings) and slack.
constexpr uint64_t kSmall = 16 * kMiB;

class Limits : public testing::Test {
 protected:
  ScratchDir dir;
};

// ---- manifest size ---------------------------------------------------------

TEST_F(Limits, ManifestOverOneGibIsRefusedFromTheFooterAlone) {
  // A sparse file of 1 GiB + 64 KiB whose footer claims a manifest of
  // 1 GiB + 1 bytes: refused without reading (or mapping in) the manifest.
  const std::string path = dir.file("big.zt");
  const uint64_t size = (uint64_t{1} << 30) + (64 << 10);
  {
    const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, "ZTEN1000", 8, 0), 8);
    uint8_t tail[16];
    uint64_t m = (uint64_t{1} << 30) + 1;
    for (int i = 0; i < 8; ++i, m >>= 8) tail[i] = static_cast<uint8_t>(m & 0xFF);
    std::memcpy(tail + 8, "ZTEN1000", 8);
    ASSERT_EQ(::pwrite(fd, tail, 16, static_cast<off_t>(size - 16)), 16);
    ::close(fd);
  }
  for (const uint32_t mode : {ZT_IO_MAP, ZT_IO_COPY}) {
    const auto c = run_child([&] {
      zt_open_options opt;
      zt_open_options_init(&opt);
      opt.io_mode = mode;
      zt_reader* r = nullptr;
      const zt_status s = zt_open_ex(path.c_str(), &opt, &r);
      zt_close(r);
      return static_cast<int>(s);
    });
    EXPECT_TRUE(Refused(c, {ZT_ERR_LIMIT}, kSmall)) << "io mode " << mode;
  }
}

TEST_F(Limits, ManifestSizeFieldOverOneGibInASmallFile) {
  const Bytes manifest = dense_manifest("1.2.0", "w", "u8", std::vector<uint64_t>{1}, 64, 1);
  Bytes file = assemble({}, manifest);
  uint64_t m = (uint64_t{1} << 30) + 1;
  for (size_t i = 0; i < 8; ++i, m >>= 8)
    file[file.size() - 16 + i] = static_cast<uint8_t>(m & 0xFF);
  EXPECT_TRUE(Refused(run_child([&] { return open_memory_status(file); }), {ZT_ERR_LIMIT}, kSmall));
}

// ---- decompression -----------------------------------------------------------

TEST_F(Limits, ZstdClaimingTerabytesIsRefusedBeforeDecoding) {
  const uint64_t claim = uint64_t{1} << 41;  // 2 TiB, over the 64 GiB default cap
  const Bytes frame = zstd_frame(Bytes(100, 0));
  Blobs blobs;
  const uint64_t at = blobs.add(frame);
  const std::vector<uint64_t> shape = {claim};
  write_file(dir.file("t.zt"), assemble(blobs.bytes(), dense_manifest("1.2.0", "w", "u8", shape, at,
                                                                      frame.size(), true, claim)));
  EXPECT_TRUE(
      Refused(run_child([&] { return map_status(dir.file("t.zt")); }), {ZT_ERR_LIMIT}, kSmall));
  EXPECT_TRUE(
      Refused(run_child([&] { return verify_status(dir.file("t.zt")); }), {ZT_ERR_LIMIT}, kSmall));
}

TEST_F(Limits, ZstdDenseShapeImplyingTerabytesWithoutUncompressedLength) {
  // 1.1.0 allowed zstd without uncompressed_length; the shape then says
  // how much: 2^40 f32 elements.
  const Bytes frame = zstd_frame(Bytes(100, 0));
  Blobs blobs;
  const uint64_t at = blobs.add(frame);
  const std::vector<uint64_t> shape = {uint64_t{1} << 40};
  write_file(dir.file("t.zt"), assemble(blobs.bytes(), dense_manifest("1.1.0", "w", "f32", shape,
                                                                      at, frame.size(), true)));
  EXPECT_TRUE(
      Refused(run_child([&] { return map_status(dir.file("t.zt")); }), {ZT_ERR_LIMIT}, kSmall));
}

TEST_F(Limits, ZstdExpandingPastTheCapStopsAtTheCap) {
  // 256 MiB of zeros in a few KiB, in an object of unknown format whose
  // decoded size nothing states: decoding must stop at the cap (8 MiB here).
  const Bytes frame = zstd_frame(Bytes(256 * kMiB, 0), 1);
  ASSERT_LT(frame.size(), 64u << 10);
  Blobs blobs;
  const uint64_t at = blobs.add(frame);
  const std::vector<uint64_t> shape = {1};
  write_file(dir.file("t.zt"),
             assemble(blobs.bytes(), dense_manifest("1.1.0", "w", "u8", shape, at, frame.size(),
                                                    true, std::nullopt, "opaque_blob")));
  const uint64_t cap = 8 * kMiB;
  EXPECT_TRUE(Refused(run_child([&] { return map_status(dir.file("t.zt"), cap); }), {ZT_ERR_LIMIT},
                      kSmall + 2 * cap));
  EXPECT_TRUE(Refused(run_child([&] { return verify_status(dir.file("t.zt"), cap); }),
                      {ZT_ERR_LIMIT}, kSmall + 2 * cap));
}

TEST_F(Limits, ZstdClaimUnderTheCapIsCheckedAgainstTheDataBeforeAllocating) {
  // A 1 GiB claim, under the cap, stored as a 100-byte frame that says in
  // its header that it holds 100 bytes. The frames cannot fill the claim,
  // so the component is corrupt: refused before a 1 GiB buffer is made
  // (fuzz/README.md, finding F1).
  const uint64_t claim = uint64_t{1} << 30;
  const Bytes frame = zstd_frame(Bytes(100, 0));
  Blobs blobs;
  const uint64_t at = blobs.add(frame);
  const std::vector<uint64_t> shape = {claim};
  write_file(dir.file("t.zt"), assemble(blobs.bytes(), dense_manifest("1.2.0", "w", "u8", shape, at,
                                                                      frame.size(), true, claim)));
  const uint64_t cap = uint64_t{4} << 30;
  EXPECT_TRUE(Refused(run_child([&] { return map_status(dir.file("t.zt"), cap); }),
                      {ZT_ERR_INVALID}, 64 * kMiB));
  EXPECT_TRUE(Refused(run_child([&] { return verify_status(dir.file("t.zt"), cap); }),
                      {ZT_ERR_INVALID}, 64 * kMiB));
}

// ---- shapes ------------------------------------------------------------------

TEST_F(Limits, ShapeProductOverflowIsRefusedAtOpen) {
  for (const std::vector<uint64_t>& shape :
       {std::vector<uint64_t>{uint64_t{1} << 32, uint64_t{1} << 32},
        std::vector<uint64_t>{uint64_t{1} << 62, 4}, std::vector<uint64_t>{UINT64_MAX, 2}}) {
    // Chosen so that a wrapping product would match the 16 stored bytes.
    const Bytes file =
        assemble(Bytes(56 + 16, 0), dense_manifest("1.2.0", "w", "f32", shape, 64, 16));
    EXPECT_TRUE(Refused(run_child([&] { return open_memory_status(file); }),
                        {ZT_ERR_INVALID, ZT_ERR_LIMIT}, kSmall))
        << "shape [" << shape[0] << ", " << shape[1] << "]";
  }
}

TEST_F(Limits, RankOverTheLimitIsRefused) {
  const std::vector<uint64_t> shape(zt::Limits::rank + 1, 1);
  const Bytes file = assemble(Bytes(56 + 4, 0), dense_manifest("1.2.0", "w", "f32", shape, 64, 4));
  EXPECT_TRUE(Refused(run_child([&] { return open_memory_status(file); }), {ZT_ERR_LIMIT}, kSmall));
}

// ---- CBOR structure -------------------------------------------------------

Bytes manifest_with_attributes(std::span<const uint8_t> attributes_value) {
  CborWriter w;
  w.map(3);
  w.text("version");
  w.text("1.2.0");
  w.text("objects");
  w.map(0);
  w.text("attributes");
  w.map(1);
  w.text("deep");
  w.raw(attributes_value);
  return w.take();
}

TEST_F(Limits, CborNestedThousandsDeepIsRefused) {
  CborWriter definite;
  for (int i = 0; i < 100000; ++i) definite.array(1);
  definite.uint(0);
  Bytes indefinite(100000, 0x9f);  // indefinite-length arrays
  indefinite.push_back(0x00);
  indefinite.insert(indefinite.end(), 100000, 0xff);
  Bytes maps;  // {"k": {"k": ... }}
  for (int i = 0; i < 100000; ++i) maps.insert(maps.end(), {0xa1, 0x61, 'k'});
  maps.push_back(0x00);
  for (const Bytes& nested : {definite.bytes(), indefinite, maps}) {
    const Bytes file = assemble({}, manifest_with_attributes(nested));
    EXPECT_TRUE(
        Refused(run_child([&] { return open_memory_status(file); }), {ZT_ERR_LIMIT}, kSmall));
  }
}

TEST_F(Limits, CborContainerClaimingMoreItemsThanTheManifestHolds) {
  // A map header claiming 2^32 - 1 pairs (and an array 2^64 - 1 items) in a
  // manifest of a few bytes: nothing may be reserved from the claim.
  const Bytes huge_map = {0xba, 0xff, 0xff, 0xff, 0xff, 0x61, 'k', 0x00};
  const Bytes huge_array = {0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00};
  for (const Bytes& v : {huge_map, huge_array}) {
    const Bytes file = assemble({}, manifest_with_attributes(v));
    EXPECT_TRUE(Refused(run_child([&] { return open_memory_status(file); }),
                        {ZT_ERR_FORMAT, ZT_ERR_LIMIT}, kSmall));
  }
}

// ---- counts and names -------------------------------------------------------

// {"version": "1.2.0", "objects": {"o0000000": <dense f32 [0], 0 bytes at 64>, ...}}
Bytes many_objects(size_t n, bool break_last) {
  CborWriter w;
  w.map(2);
  w.text("version");
  w.text("1.2.0");
  w.text("objects");
  w.map(n);
  char name[32];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(name, sizeof name, "o%07zu", i);
    w.text(name);
    w.map(3);
    w.text("shape");
    w.array(1);
    w.uint(0);
    w.text("format");
    w.text("dense");
    w.text("components");
    w.map(1);
    w.text("data");
    component(w, "f32", break_last && i + 1 == n ? 96 : 64, 0);
  }
  return assemble({}, w.bytes());
}

// Resident memory a manifest may cost per byte of it, the manifest itself
// included. Opening a valid one builds the object model and the name index
// while the CBOR is decoded (the nodes of each object are dropped once it
// is parsed): about 6 bytes per manifest byte, bounded at 8. Refusing one
// because of a count must cost no more: the object whose component count is
// over the limit exists as CBOR nodes until its entry ends (ideally the
// count would be refused when its CBOR header is read).
constexpr uint64_t kOpenPerManifestByte = 8;
constexpr uint64_t kRefusePerManifestByte = 8;

TEST_F(Limits, AMillionObjectsOpenWithinBoundedMemory) {
  const size_t count = 1000000 / kScale;
  const Bytes file = many_objects(count, false);
  const auto c = run_child([&] {
    zt_reader* r = nullptr;
    const zt_status s = zt_open_memory(file.data(), file.size(), &r);
    const bool counted = s == ZT_OK && zt_object_count(r) == count;
    zt_close(r);
    return s == ZT_OK && !counted ? 99 : static_cast<int>(s);
  });
  ASSERT_TRUE(c.exited);
  EXPECT_EQ(c.exit_code, ZT_OK) << status_of(c.exit_code);
  if (kMeasure) {
    EXPECT_LT(c.growth(), kOpenPerManifestByte * file.size())
        << "a " << file.size() / kMiB << " MiB manifest of a million objects took "
        << c.growth() / kMiB << " MiB";
  }
  std::fprintf(stderr, "  opened, manifest %llu KiB, peak RSS growth %llu KiB\n",
               static_cast<unsigned long long>(file.size() / 1024),
               static_cast<unsigned long long>(c.growth() / 1024));
}

TEST_F(Limits, ManyObjectsWithTheLastOneBrokenAreRefused) {
  const Bytes file = many_objects(250000 / kScale, true);
  EXPECT_TRUE(Refused(run_child([&] { return open_memory_status(file); }), {ZT_ERR_INVALID},
                      kOpenPerManifestByte * file.size()));
}

TEST_F(Limits, MillionsOfComponentsInOneObjectAreRefused) {
  const size_t n = 2000000 / kScale;  // over the limit either way
  CborWriter w;
  begin_one_object(w, "1.2.0", "w", 3);
  w.text("shape");
  w.array(0);
  w.text("format");
  w.text("opaque");
  w.text("components");
  w.map(n);
  char role[32];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(role, sizeof role, "c%07zu", i);
    w.text(role);
    component(w, "u8", 64, 0);
  }
  const Bytes file = assemble({}, w.bytes());
  EXPECT_TRUE(Refused(run_child([&] { return open_memory_status(file); }), {ZT_ERR_LIMIT},
                      kSmall + kRefusePerManifestByte * file.size()));
}

// The same limits when the count is left out: an indefinite-length shape
// or components map is refused as its items arrive, before they add up to
// a node each (16 M shape items were 512 MiB of nodes, then refused).
TEST_F(Limits, IndefiniteShapesAndComponentMapsAreCappedAsTheyArrive) {
  constexpr uint8_t kIndefiniteArray = 0x9F, kIndefiniteMap = 0xBF, kBreak = 0xFF;
  for (const bool components : {false, true}) {
    SCOPED_TRACE(components ? "components" : "shape");
    CborWriter w;
    begin_one_object(w, "1.2.0", "w", 3);
    w.text("format");
    w.text("opaque");
    w.text("shape");
    if (components) {
      w.array(0);
    } else {
      w.raw(std::span<const uint8_t>(&kIndefiniteArray, 1));
      for (size_t i = 0; i < (16u << 20) / kScale; ++i) w.uint(1);
      w.raw(std::span<const uint8_t>(&kBreak, 1));
    }
    w.text("components");
    if (components) {
      w.raw(std::span<const uint8_t>(&kIndefiniteMap, 1));
      char role[32];
      for (size_t i = 0; i < 2000000 / kScale; ++i) {
        std::snprintf(role, sizeof role, "c%07zu", i);
        w.text(role);
        component(w, "u8", 64, 0);
      }
      w.raw(std::span<const uint8_t>(&kBreak, 1));
    } else {
      w.map(0);
    }
    const Bytes file = assemble({}, w.bytes());
    EXPECT_TRUE(Refused(run_child([&] { return open_memory_status(file); }), {ZT_ERR_LIMIT},
                        kSmall + kRefusePerManifestByte * file.size()));
  }
  // Within the limits, an indefinite shape and components map open.
  Blobs blobs;
  const uint64_t at = blobs.add(Bytes(6, 1));
  CborWriter w;
  begin_one_object(w, "1.2.0", "w", 3);
  w.text("format");
  w.text("dense");
  w.text("shape");
  w.raw(std::span<const uint8_t>(&kIndefiniteArray, 1));
  w.uint(2);
  w.uint(3);
  w.raw(std::span<const uint8_t>(&kBreak, 1));
  w.text("components");
  w.raw(std::span<const uint8_t>(&kIndefiniteMap, 1));
  w.text("data");
  component(w, "u8", at, 6);
  w.raw(std::span<const uint8_t>(&kBreak, 1));
  const Bytes file = assemble(blobs.bytes(), w.bytes());
  zt_reader* r = nullptr;
  ASSERT_EQ(zt_open_memory(file.data(), file.size(), &r), ZT_OK) << zt_last_error();
  EXPECT_EQ(zt_verify(r, nullptr, nullptr), ZT_OK) << zt_last_error();
  zt_close(r);
}

// Item 10 of issue #24: what a manifest holds beyond the model (attribute
// values, unknown fields) is kept as its encoded bytes or skipped, never
// built as 32-byte CBOR nodes. Each file is one valid object and a 16 MB
// value of 1-byte items at one place; opening it (and rendering the
// manifest as JSON, which reads the attributes) stays within the bound of
// a manifest of objects.
enum class BigAt { file_attribute, object_attribute, root_unknown, object_unknown, component_unknown };

// An array of n one-byte integers, or a map of n/4 entries with 3-byte keys.
void big_value(CborWriter& w, size_t n, bool as_map) {
  if (!as_map) {
    w.array(n);
    for (size_t i = 0; i < n; ++i) w.uint(i % 24);
    return;
  }
  const size_t pairs = n / 4;
  w.map(pairs);
  char key[3];
  for (size_t i = 0; i < pairs; ++i) {
    key[0] = static_cast<char>('a' + i % 26);
    key[1] = static_cast<char>('a' + i / 26 % 26);
    key[2] = static_cast<char>('a' + i / 676 % 26);
    // 17576 distinct 2-character keys, then longer ones: every key unique.
    const size_t rest = i / 17576;
    std::string k(key, 3);
    if (rest) k += std::to_string(rest);
    w.text(k);
    w.uint(i % 24);
  }
}

Bytes one_object_with_big_value(BigAt at, size_t n, bool as_map) {
  CborWriter w;
  const bool root_extra = at == BigAt::file_attribute || at == BigAt::root_unknown;
  w.map(root_extra ? 3 : 2);
  if (root_extra) {
    w.text(at == BigAt::file_attribute ? "attributes" : "zz_unknown");
    if (at == BigAt::file_attribute) {
      w.map(1);
      w.text("big");
    }
    big_value(w, n, as_map);
  }
  w.text("objects");
  w.map(1);
  w.text("w");
  const bool object_extra = at == BigAt::object_attribute || at == BigAt::object_unknown;
  w.map(object_extra ? 4 : 3);
  if (object_extra) {
    w.text(at == BigAt::object_attribute ? "attributes" : "zz_unknown");
    if (at == BigAt::object_attribute) {
      w.map(1);
      w.text("big");
    }
    big_value(w, n, as_map);
  }
  w.text("shape");
  w.array(1);
  w.uint(1);
  w.text("format");
  w.text("dense");
  w.text("components");
  w.map(1);
  w.text("data");
  if (at == BigAt::component_unknown) {
    w.map(4);
    w.text("dtype");
    w.text("u8");
    w.text("length");
    w.uint(1);
    w.text("offset");
    w.uint(64);
    w.text("zz_unknown");
    big_value(w, n, as_map);
  } else {
    component(w, "u8", 64, 1);
  }
  w.text("version");
  w.text("1.2.0");
  return assemble(Bytes(56 + 1, 7), w.bytes());
}

TEST_F(Limits, AttributesAndUnknownFieldsCostNoMemoryPerItem) {
  const size_t n = (16u << 20) / kScale;
  const std::pair<BigAt, const char*> places[] = {{BigAt::file_attribute, "file attribute"},
                                                  {BigAt::object_attribute, "object attribute"},
                                                  {BigAt::root_unknown, "unknown root field"},
                                                  {BigAt::object_unknown, "unknown object field"},
                                                  {BigAt::component_unknown, "unknown component field"}};
  for (const auto& [at, what] : places) {
    for (const bool as_map : {false, true}) {
      SCOPED_TRACE(std::string(what) + (as_map ? ", a map" : ", an array"));
      const Bytes file = one_object_with_big_value(at, n, as_map);
      const auto c = run_child([&] {
        zt_reader* r = nullptr;
        const zt_status s = zt_open_memory(file.data(), file.size(), &r);
        if (s != ZT_OK) return static_cast<int>(s);
        // The JSON of the manifest holds the attributes' text.
        const char* json = zt_manifest_json(r);
        const bool ok = zt_object_count(r) == 1 && json && std::strlen(json) > 10;
        zt_close(r);
        return ok ? 0 : 99;
      });
      ASSERT_TRUE(c.exited);
      EXPECT_EQ(c.exit_code, ZT_OK) << status_of(c.exit_code);
      if (kMeasure) {
        EXPECT_LT(c.growth(), kSmall + kOpenPerManifestByte * file.size())
            << "a " << file.size() / kMiB << " MiB manifest took " << c.growth() / kMiB << " MiB";
      }
      std::fprintf(stderr, "  %s%s: manifest %llu KiB, peak RSS growth %llu KiB\n", what,
                   as_map ? " (map)" : " (array)", static_cast<unsigned long long>(file.size() / 1024),
                   static_cast<unsigned long long>(c.growth() / 1024));
    }
  }
}

// The property behind every row above, on files nobody designed: the
// valid conformance vectors and the fuzz corpus, each also cut short and
// with bytes changed (a fixed seed: the same files every run). Opening,
// verifying, rendering the manifest, mapping every component and decoding
// every object cost at most a constant plus a fixed multiple of the file
// size, whatever each call answers.
std::vector<Bytes> corpus_files() {
  std::vector<Bytes> out;
  for (const char* dir : {ZT_TEST_CORPUS "/valid", ZT_TEST_CORPUS "/reject", ZT_TEST_FUZZ_CORPUS}) {
    std::vector<std::filesystem::path> paths;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension() != ".json") paths.push_back(e.path());
    std::sort(paths.begin(), paths.end());
    for (const auto& p : paths) {
      std::ifstream in(p, std::ios::binary);
      out.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
  }
  return out;
}

int exercise(const Bytes& file) {
  zt_reader* r = nullptr;
  if (zt_open_memory(file.data(), file.size(), &r) != ZT_OK) return 0;
  (void)zt_verify(r, nullptr, nullptr);
  (void)zt_manifest_json(r);
  const size_t objects = zt_object_count(r);
  for (size_t i = 0; i < objects; ++i) {
    for (size_t k = 0; k < zt_component_count(r, i); ++k) {
      const void* p = nullptr;
      uint64_t n = 0;
      (void)zt_component_map(r, i, zt_component_role(r, i, k), &p, &n);
    }
    // The caller's buffer is the caller's memory: only objects whose
    // values fit in 4 Mi floats are decoded.
    uint64_t count = 0;
    if (zt_object_value_count(r, i, &count) != ZT_OK || count > (uint64_t{1} << 22)) continue;
    std::vector<float> values(count);
    (void)zt_object_decode_f32(r, i, values.data(), values.size(), &count);
  }
  zt_close(r);
  return 0;
}

TEST_F(Limits, MemoryFollowsTheFileOnMutatedCorpusFiles) {
  const std::vector<Bytes> files = corpus_files();
  ASSERT_GT(files.size(), 100u);
  std::mt19937_64 rng(24);
  uint64_t runs = 0, worst = 0;
  for (const Bytes& original : files) {
    for (int variant = 0; variant < (kSanitized ? 1 : 3); ++variant) {
      Bytes f = original;
      if (variant == 1 && f.size() > 24) f.resize(f.size() - 1 - rng() % 16);
      if (variant == 2 && !f.empty())
        for (int k = 0; k < 4; ++k) f[rng() % f.size()] = static_cast<uint8_t>(rng());
      const auto c = run_child([&] { return exercise(f); });
      ASSERT_TRUE(c.exited) << "signal " << c.signal << " on a file of " << f.size() << " bytes";
      ++runs;
      worst = std::max(worst, c.growth());
      if (kMeasure) {
        EXPECT_LT(c.growth(), kSmall + 16 * f.size())
            << "a " << f.size() << "-byte file cost " << c.growth() / 1024 << " KiB";
      }
    }
  }
  std::fprintf(stderr, "  %llu files, worst peak RSS growth %llu KiB\n", static_cast<unsigned long long>(runs),
               static_cast<unsigned long long>(worst / 1024));
}

TEST_F(Limits, MegabyteNamesAreRefused) {
  const std::string long_name(4 * kMiB, 'n');
  const std::vector<uint64_t> shape = {1};
  const Bytes by_object =
      assemble(Bytes(56 + 1, 0), dense_manifest("1.2.0", long_name, "u8", shape, 64, 1));
  EXPECT_TRUE(Refused(run_child([&] { return open_memory_status(by_object); }), {ZT_ERR_LIMIT},
                      kSmall + 3 * 4 * kMiB));

  CborWriter w;  // the same for a component role
  w.map(2);
  w.text("version");
  w.text("1.2.0");
  w.text("objects");
  w.map(1);
  w.text("w");
  w.map(3);
  w.text("shape");
  w.array(0);
  w.text("format");
  w.text("opaque");
  w.text("components");
  w.map(1);
  w.text(long_name);
  component(w, "u8", 64, 0);
  const Bytes by_role = assemble({}, w.bytes());
  EXPECT_TRUE(Refused(run_child([&] { return open_memory_status(by_role); }), {ZT_ERR_LIMIT},
                      kSmall + 3 * 4 * kMiB));
}

// ---- the writer ------------------------------------------------------------

// end_object of a sparse object checks its indices by reading its parts back
// a window at a time: a CSR of 128 MiB of indices and 64 MiB of values,
// streamed in 1 MiB pieces, costs a few MiB, not the object's size.
TEST_F(Limits, AWrittenSparseObjectIsCheckedInBoundedMemory) {
  const uint64_t per_row = 16, rows = (uint64_t{1} << 20) / kScale, nnz = rows * per_row;
  const std::string path = dir.file("csr.zt");
  const auto c = run_child([&] {
    zt_writer_options o;
    zt_writer_options_init(&o);
    o.digest = ZT_DIGEST_NONE;
    zt_writer* w = nullptr;
    if (zt_writer_open_ex(path.c_str(), &o, &w) != ZT_OK) return kEarlier + 1;
    const uint64_t shape[2] = {rows, per_row};
    if (zt_writer_begin_object(w, "csr", "sparse_csr", shape, 2) != ZT_OK) return kEarlier + 2;
    // Each part streamed from one 1 MiB buffer of 131072 elements.
    std::vector<uint64_t> piece(131072);
    const auto stream = [&](const char* role, const char* dtype, uint64_t count,
                            const std::function<void(uint64_t first)>& fill) {
      const uint64_t width = std::string_view(dtype) == "f32" ? 4 : 8;
      if (zt_writer_begin_component(w, role, dtype, nullptr, "raw", count * width) != ZT_OK)
        return false;
      for (uint64_t first = 0; first < count; first += piece.size()) {
        const uint64_t n = std::min<uint64_t>(piece.size(), count - first);
        fill(first);
        if (zt_writer_write(w, piece.data(), n * width) != ZT_OK) return false;
      }
      return zt_writer_end_component(w) == ZT_OK;
    };
    const bool written = stream("indices", "u64", nnz,
                                [&](uint64_t first) {
                                  for (uint64_t k = 0; k < piece.size(); ++k)
                                    piece[k] = (first + k) % per_row;
                                }) &&
                         stream("indptr", "u64", rows + 1,
                                [&](uint64_t first) {
                                  for (uint64_t k = 0; k < piece.size(); ++k)
                                    piece[k] = (first + k) * per_row;
                                }) &&
                         stream("values", "f32", nnz, [&](uint64_t) {
                           std::fill(piece.begin(), piece.end(), uint64_t{0x3f8000003f800000});
                         });
    if (!written) return kEarlier + 3;
    const zt_status s = zt_writer_end_object(w);
    if (s != ZT_OK) return static_cast<int>(s);
    return static_cast<int>(zt_writer_finish(w));
  });
  ASSERT_TRUE(c.exited) << "signal " << c.signal;
  ASSERT_EQ(c.exit_code, ZT_OK) << status_of(c.exit_code);
  if (kMeasure) {
    EXPECT_LT(c.growth(), 32 * kMiB) << "writing and checking a CSR of " << nnz * 12 / kMiB
                                     << " MiB took " << c.growth() / kMiB << " MiB";
  }
  std::fprintf(stderr, "  a CSR of %llu MiB written, peak RSS growth %llu KiB\n",
               static_cast<unsigned long long>(nnz * 12 / kMiB),
               static_cast<unsigned long long>(c.growth() / 1024));
  zt_reader* r = nullptr;
  ASSERT_EQ(zt_open(path.c_str(), &r), ZT_OK) << zt_last_error();
  EXPECT_EQ(zt_object_count(r), 1u);
  zt_close(r);
}

}  // namespace
}  // namespace zt::hardening
