// Regression tests of what fuzzing found (fuzz/README.md, "Findings"). Each
// test states the contract that the finding broke; the reproducers are
// built here byte by byte so that the tests do not depend on the corpus.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>

#include "cbor/cbor_encode.h"
#include "hardening_support.h"

namespace zt::hardening {
namespace {

struct ReaderCloser {
  void operator()(zt_reader* r) const { zt_close(r); }
};
using ReaderPtr = std::unique_ptr<zt_reader, ReaderCloser>;

// F3: texts that the C ABI hands out as C strings must not hold NUL bytes,
// or C callers see another text than the library acts on. The fuzzer's
// case: format "dense\0" with 16 bytes of f32 under shape [1000, 1000]
// opened and verified, and a C caller saw a dense f32 [1000, 1000] object.
TEST(Findings, F3_FormatWithANulByteIsRefused) {
  Blobs blobs;
  const Bytes data(16, 0);
  const uint64_t at = blobs.add(data);
  const std::vector<uint64_t> shape = {1000, 1000};
  const Bytes file =
      assemble(blobs.bytes(), dense_manifest("1.2.0", "w", "f32", shape, at, 16, false,
                                             std::nullopt, std::string_view("dense\0", 6)));
  zt_reader* r = nullptr;
  const zt_status s = zt_open_memory(file.data(), file.size(), &r);
  ReaderPtr reader(r);
  EXPECT_EQ(s, ZT_ERR_INVALID) << "opened; zt_object_format says \""
                               << (r ? zt_object_format(r, 0) : "") << "\"";
}

// A manifest of one object of shape [4] with one u8 component of 4 bytes at
// `at`, its texts as given (type and encoding absent when nullopt).
Bytes manifest_of_one_component(std::string_view version, std::string_view name,
                                std::string_view format, std::string_view role,
                                std::optional<std::string_view> type,
                                std::optional<std::string_view> encoding, uint64_t at) {
  CborWriter w;
  begin_one_object(w, version, name, 3);
  w.text("shape");
  w.array(1);
  w.uint(4);
  w.text("format");
  w.text(format);
  w.text("components");
  w.map(1);
  w.text(role);
  w.map(3 + (type ? 1 : 0) + (encoding ? 1 : 0));
  w.text("dtype");
  w.text("u8");
  w.text("offset");
  w.uint(at);
  w.text("length");
  w.uint(4);
  if (type) {
    w.text("type");
    w.text(*type);
  }
  if (encoding) {
    w.text("encoding");
    w.text(*encoding);
  }
  return w.take();
}

// The same for the other texts the ABI returns: type, encoding, version.
TEST(Findings, F3_TypeEncodingAndVersionWithANulByteAreRefused) {
  Blobs blobs;
  const uint64_t at = blobs.add(Bytes(4, 0x38));
  using namespace std::string_view_literals;
  const struct {
    const char* what;
    Bytes manifest;
  } cases[] = {
      {"type", manifest_of_one_component("1.2.0", "w", "dense", "data", "f8_e4m3fn\0x"sv,
                                         std::nullopt, at)},
      {"encoding",
       manifest_of_one_component("1.2.0", "w", "dense", "data", std::nullopt, "raw\0x"sv, at)},
      {"version", manifest_of_one_component("1.2.0\0x"sv, "w", "dense", "data", std::nullopt,
                                            std::nullopt, at)},
  };
  for (const auto& c : cases) {
    const Bytes file = assemble(blobs.bytes(), c.manifest);
    zt_reader* r = nullptr;
    const zt_status s = zt_open_memory(file.data(), file.size(), &r);
    ReaderPtr reader(r);
    EXPECT_EQ(s, ZT_ERR_INVALID) << c.what << " with a NUL byte";
  }
}

// F2: whatever zt_writer_finish accepts must open. Attributes nested
// deeper than the reader's CBOR depth limit made a file that zt_open
// refused with ZT_ERR_LIMIT. Refusing them when they are set is fine.
TEST(Findings, F2_WriterNeverFinishesAFileTheReaderRefuses) {
  for (const int depth : {120, 126, 127, 128, 200, 10000}) {
    ScratchDir dir;
    const std::string path = dir.file("deep.zt");
    std::string json = "{\"d\": " + std::string(static_cast<size_t>(depth), '[') +
                       std::string(static_cast<size_t>(depth), ']') + "}";
    for (const bool on_object : {false, true}) {
      zt_writer* w = nullptr;
      ASSERT_EQ(zt_writer_open(path.c_str(), &w), ZT_OK);
      const uint64_t shape[] = {2};
      const uint8_t bytes[] = {1, 2};
      zt_status set = ZT_OK;
      if (on_object) {
        ASSERT_EQ(zt_writer_begin_object(w, "w", "dense", shape, 1), ZT_OK);
        set = zt_writer_set_object_attributes_json(w, json.c_str());
        ASSERT_EQ(zt_writer_add_component(w, "data", "u8", nullptr, bytes, 2, "raw"), ZT_OK);
        ASSERT_EQ(zt_writer_end_object(w), ZT_OK);
      } else {
        ASSERT_EQ(zt_writer_add_dense(w, "w", "u8", shape, 1, bytes, 2, "raw"), ZT_OK);
        set = zt_writer_set_file_attributes_json(w, json.c_str());
      }
      const zt_status fin = zt_writer_finish(w);
      if (set != ZT_OK || fin != ZT_OK) continue;  // refused: fine
      zt_reader* r = nullptr;
      const zt_status s = zt_open(path.c_str(), &r);
      ReaderPtr reader(r);
      EXPECT_EQ(s, ZT_OK) << (on_object ? "object" : "file") << " attributes nested " << depth
                          << " deep were written but do not open: " << zt_last_error();
    }
  }
}

// F5: zt_verify must not pass a file whose components cannot be read:
// 0.1.0 sparse-layout entries are listed, and both mapping their blob and
// zt_verify give ZT_ERR_UNSUPPORTED, whichever key names the layout.
// With dense_neighbour, a second entry "d" (dense float32 [2], raw, at 128).
Bytes v010_file(std::string_view layout_key, std::string_view layout, std::string_view encoding,
                bool dense_neighbour = false) {
  // The 0.1.0 magic, zeros to offset 64, then the blob. Built at its final
  // size: growing an 8-byte literal vector trips GCC 12's -Warray-bounds.
  Bytes file(dense_neighbour ? 136 : 72, 0);
  const std::string_view magic = "ZTEN0001";
  std::copy(magic.begin(), magic.end(), file.begin());
  for (uint8_t i = 0; i < 8; ++i) file[64 + i] = static_cast<uint8_t>(i + 1);
  if (dense_neighbour) file[128 + 3] = 0x3F, file[128 + 2] = 0x80;  // 1.0f, then 0.0f
  CborWriter w;
  // One 0.1.0 index entry: eight bytes of float32 [2] at `offset`.
  auto entry = [&w](std::string_view name, uint64_t offset, std::string_view enc, size_t extra_pairs) {
    w.map(6 + extra_pairs);
    w.text("name");
    w.text(name);
    w.text("offset");
    w.uint(offset);
    w.text("size");
    w.uint(8);
    w.text("dtype");
    w.text("float32");
    w.text("shape");
    w.array(1);
    w.uint(2);
    w.text("encoding");
    w.text(enc);
  };
  w.array(dense_neighbour ? 2 : 1);
  entry("s", 64, encoding, layout_key.empty() ? 0 : 1);
  if (!layout_key.empty()) {
    w.text(layout_key);
    w.text(layout);
  }
  if (dense_neighbour) entry("d", 128, "raw", 0);
  const Bytes index = w.take();
  file.insert(file.end(), index.begin(), index.end());
  uint64_t n = index.size();
  for (int i = 0; i < 8; ++i, n >>= 8) file.push_back(static_cast<uint8_t>(n & 0xFF));
  return file;
}

TEST(Findings, F5_V010SparseLayoutIsListedButNotRead) {
  const Bytes file = v010_file("layout", "csr", "raw");
  zt_reader* r = nullptr;
  ASSERT_EQ(zt_open_memory(file.data(), file.size(), &r), ZT_OK) << zt_last_error();
  ReaderPtr reader(r);
  EXPECT_STREQ(zt_object_format(r, 0), "sparse_csr");
  const void* p = nullptr;
  uint64_t n = 0;
  EXPECT_EQ(zt_component_map(r, 0, "data", &p, &n), ZT_ERR_UNSUPPORTED);
  EXPECT_EQ(zt_verify(r, nullptr, nullptr), ZT_ERR_UNSUPPORTED);
}

TEST(Findings, F5_V010EncodingNamingTheLayoutFailsMapAndVerifyAlike) {
  for (const char* encoding : {"sparse", "csc"}) {
    const Bytes file = v010_file("", "", encoding);
    zt_reader* r = nullptr;
    ASSERT_EQ(zt_open_memory(file.data(), file.size(), &r), ZT_OK) << zt_last_error();
    ReaderPtr reader(r);
    const void* p = nullptr;
    uint64_t n = 0;
    EXPECT_EQ(zt_component_map(r, 0, "data", &p, &n), ZT_ERR_UNSUPPORTED) << encoding;
    EXPECT_EQ(zt_verify(r, nullptr, nullptr), ZT_ERR_UNSUPPORTED)
        << encoding << ": verify passed a blob that cannot be mapped";
  }
}

// Issue 24, item 12: zt_decode_many applies zt_component_read's rule to an
// object the reader cannot hand out, in map and copy mode, alone and in a
// batch whose other requests still succeed.
TEST(Findings, DecodeManyRefusesWhatReadRefuses) {
  const Bytes file = v010_file("layout", "csr", "raw", /*dense_neighbour=*/true);
  for (const uint32_t mode : {uint32_t{ZT_IO_MAP}, uint32_t{ZT_IO_COPY}}) {
    const std::string path = ::testing::TempDir() + "zt_decode_many_v010.zt";
    {
      std::ofstream f(path, std::ios::binary);
      f.write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
    }
    zt_open_options opt;
    zt_open_options_init(&opt);
    opt.io_mode = mode;
    zt_reader* r = nullptr;
    ASSERT_EQ(zt_open_ex(path.c_str(), &opt, &r), ZT_OK) << zt_last_error();
    ReaderPtr reader(r);
    size_t sparse = 0, dense = 0;
    ASSERT_EQ(zt_object_find(r, "s", &sparse), ZT_OK);
    ASSERT_EQ(zt_object_find(r, "d", &dense), ZT_OK);
    uint8_t buf[8];
    uint64_t n = 0;
    EXPECT_EQ(zt_component_read(r, sparse, "data", buf, sizeof buf, &n), ZT_ERR_UNSUPPORTED);

    uint8_t a[8] = {}, b[8] = {};
    zt_decode_request reqs[2];
    zt_decode_request_init(&reqs[0]);
    zt_decode_request_init(&reqs[1]);
    reqs[0].object = sparse, reqs[0].role = "data", reqs[0].dst = a, reqs[0].capacity = sizeof a;
    reqs[1].object = dense, reqs[1].role = "data", reqs[1].dst = b, reqs[1].capacity = sizeof b;
    EXPECT_EQ(zt_decode_many(r, reqs, 1, 1), ZT_ERR_UNSUPPORTED) << "alone, mode " << mode;
    EXPECT_EQ(reqs[0].status, static_cast<uint32_t>(ZT_ERR_UNSUPPORTED));
    EXPECT_EQ(reqs[0].written, 0u);
    EXPECT_EQ(zt_decode_many(r, reqs, 2, 2), ZT_ERR_UNSUPPORTED) << "in a batch, mode " << mode;
    EXPECT_EQ(reqs[0].status, static_cast<uint32_t>(ZT_ERR_UNSUPPORTED));
    EXPECT_EQ(reqs[1].status, static_cast<uint32_t>(ZT_OK));
    EXPECT_EQ(reqs[1].written, 8u);
    float values[2];
    std::memcpy(values, b, sizeof values);
    EXPECT_EQ(values[0], 1.0f);
    EXPECT_EQ(values[1], 0.0f);
    std::remove(path.c_str());
  }
}

// F8: what the reader accepts, the writer must be able to store. The writer
// refuses empty text, so the reader does too: an empty object name, format,
// component role, type or encoding made a file that opened and verified but
// that `zt convert` could not copy.

TEST(Findings, F8_EmptyNamesAndTextsAreRefusedAtOpen) {
  Blobs blobs;
  const uint64_t at = blobs.add(Bytes(4, 1));
  const struct {
    const char* what;
    Bytes manifest;
    const char* message;
  } cases[] = {
      {"object name",
       manifest_of_one_component("1.2.0", "", "dense", "data", std::nullopt, std::nullopt, at),
       "object name is empty"},
      {"format",
       manifest_of_one_component("1.2.0", "w", "", "data", std::nullopt, std::nullopt, at),
       "\"format\" is empty"},
      {"role",
       manifest_of_one_component("1.2.0", "w", "blocks", "", std::nullopt, std::nullopt, at),
       "component name is empty"},
      {"type", manifest_of_one_component("1.2.0", "w", "dense", "data", "", std::nullopt, at),
       "\"type\" is empty"},
      {"encoding", manifest_of_one_component("1.2.0", "w", "dense", "data", std::nullopt, "", at),
       "\"encoding\" is empty"},
  };
  for (const auto& c : cases) {
    const Bytes file = assemble(blobs.bytes(), c.manifest);
    zt_reader* r = nullptr;
    const zt_status s = zt_open_memory(file.data(), file.size(), &r);
    ReaderPtr reader(r);
    EXPECT_EQ(s, ZT_ERR_INVALID) << "empty " << c.what;
    EXPECT_NE(std::string(zt_last_error()).find(c.message), std::string::npos) << zt_last_error();
  }
  // The control: the same file with every text present opens.
  const Bytes good =
      assemble(blobs.bytes(),
               manifest_of_one_component("1.2.0", "w", "dense", "data", std::nullopt, "raw", at));
  zt_reader* r = nullptr;
  EXPECT_EQ(zt_open_memory(good.data(), good.size(), &r), ZT_OK) << zt_last_error();
  zt_close(r);
}

// F11: every component of every format holds whole elements of its dtype,
// as the writer requires. A 12-byte f64 component of an unknown format
// opened and verified. Known sizes are checked at open; a zstd size the
// manifest does not give (1.1.0 allows that), at verify.
TEST(Findings, F11_ComponentsHoldWholeElementsInEveryFormat) {
  Blobs blobs;
  const Bytes twelve(12, 0);
  const uint64_t raw_at = blobs.add(twelve);
  const Bytes frame = zstd_frame(twelve);
  const uint64_t zstd_at = blobs.add(frame);
  const uint64_t shape[] = {3};
  {
    const Bytes file =
        assemble(blobs.bytes(), dense_manifest("1.2.0", "w", "f64", shape, raw_at, 12, false,
                                               std::nullopt, "some_future_format"));
    zt_reader* r = nullptr;
    EXPECT_EQ(zt_open_memory(file.data(), file.size(), &r), ZT_ERR_INVALID);
    zt_close(r);
    EXPECT_NE(
        std::string(zt_last_error()).find("12 bytes is not a whole number of 8-byte elements"),
        std::string::npos)
        << zt_last_error();
  }
  {
    const Bytes file =
        assemble(blobs.bytes(), dense_manifest("1.1.0", "w", "f64", shape, zstd_at, frame.size(),
                                               true, std::nullopt, "some_future_format"));
    zt_reader* r = nullptr;
    ASSERT_EQ(zt_open_memory(file.data(), file.size(), &r), ZT_OK) << zt_last_error();
    ReaderPtr reader(r);
    EXPECT_EQ(zt_verify(r, nullptr, nullptr), ZT_ERR_INVALID);
    EXPECT_NE(
        std::string(zt_last_error()).find("12 bytes is not a whole number of 8-byte elements"),
        std::string::npos)
        << zt_last_error();
  }
  {
    // The control: 16 bytes are two f64 elements.
    Blobs ok;
    const uint64_t at = ok.add(Bytes(16, 0));
    const uint64_t two[] = {2};
    const Bytes file = assemble(ok.bytes(), dense_manifest("1.2.0", "w", "f64", two, at, 16, false,
                                                           std::nullopt, "some_future_format"));
    zt_reader* r = nullptr;
    ASSERT_EQ(zt_open_memory(file.data(), file.size(), &r), ZT_OK) << zt_last_error();
    ReaderPtr reader(r);
    EXPECT_EQ(zt_verify(r, nullptr, nullptr), ZT_OK) << zt_last_error();
  }
}

}  // namespace
}  // namespace zt::hardening
