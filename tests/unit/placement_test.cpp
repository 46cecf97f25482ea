// Where blobs may lie (alignment, header, file and manifest bounds,
// overlaps) and the size rules of dense objects.
#include <gtest/gtest.h>

#include "test_files.h"

namespace zt::test {
namespace {

// A dense u8 object "w" of `length` elements whose component points at
// (offset, length), after 256 bytes of blob data starting at 64.
FileBuilder pointing_at(uint64_t offset, uint64_t length) {
  FileBuilder b;
  b.add_blob(pattern(256));
  b.object("w", "dense", {length},
           Json{{"data", {{"dtype", "u8"}, {"offset", offset}, {"length", length}}}});
  return b;
}

// Two u8 objects "a" and "b" over the given byte ranges of 256 bytes of data at 64.
FileBuilder two_blobs(uint64_t a_off, uint64_t a_len, uint64_t b_off, uint64_t b_len) {
  FileBuilder f;
  f.add_blob(pattern(256));
  f.object("a", "dense", {a_len},
           Json{{"data", {{"dtype", "u8"}, {"offset", a_off}, {"length", a_len}}}});
  f.object("b", "dense", {b_len},
           Json{{"data", {{"dtype", "u8"}, {"offset", b_off}, {"length", b_len}}}});
  return f;
}

TEST(Placement, AlignedBlobOpens) {
  EXPECT_TRUE(OpensWith(pointing_at(128, 64).build(), ZT_OK));
}

TEST(Placement, OffsetNotMultipleOf64IsInvalid) {
  EXPECT_TRUE(OpensWith(pointing_at(100, 8).build(), ZT_ERR_INVALID,
                        {"object \"w\": component \"data\": offset 100 is not a multiple of 64"}));
  EXPECT_TRUE(
      OpensWith(pointing_at(65, 8).build(), ZT_ERR_INVALID, {"offset 65 is not a multiple of 64"}));
}

TEST(Placement, BlobOverTheHeaderIsInvalid) {
  EXPECT_TRUE(OpensWith(pointing_at(0, 8).build(), ZT_ERR_INVALID,
                        {"object \"w\": component \"data\"", "[0, 8) overlaps the header"}));
}

TEST(Placement, OffsetPlusLengthOverflowIsInvalid) {
  const uint64_t offset = UINT64_MAX - 63;  // a multiple of 64
  EXPECT_TRUE(OpensWith(pointing_at(offset, 128).build(), ZT_ERR_INVALID,
                        {"offset 18446744073709551552 + length 128 exceeds the file size"}));
  EXPECT_TRUE(
      OpensWith(pointing_at(64, UINT64_MAX).build(), ZT_ERR_INVALID, {"exceeds the file size"}));
}

TEST(Placement, BlobBeyondTheFileIsInvalid) {
  const FileBuilder b = pointing_at(64, 100000);
  EXPECT_TRUE(
      OpensWith(b.build(), ZT_ERR_INVALID, {"offset 64 + length 100000 exceeds the file size"}));
}

TEST(Placement, BlobIntoTheManifestIsInvalid) {
  const FileBuilder b = pointing_at(256, 100);  // data ends at 320, where the manifest starts
  ASSERT_EQ(b.manifest_offset(), 320u);
  EXPECT_TRUE(
      OpensWith(b.build(), ZT_ERR_INVALID, {"blob [256, 356) overlaps the manifest at 320"}));
  // Ending exactly at the manifest is fine.
  EXPECT_TRUE(OpensWith(pointing_at(256, 64).build(), ZT_OK));
}

TEST(Placement, IdenticalBlobsAreShared) {
  const Bytes f = two_blobs(64, 128, 64, 128).build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const Mapped a = map_component(o.get(), "a", "data");
  const Mapped b = map_component(o.get(), "b", "data");
  ASSERT_EQ(a.status, ZT_OK);
  EXPECT_EQ(a.ptr, b.ptr);
  EXPECT_EQ(a.bytes, b.bytes);
}

TEST(Placement, AdjacentBlobsOpen) {
  EXPECT_TRUE(OpensWith(two_blobs(64, 64, 128, 64).build(), ZT_OK));
}

TEST(Placement, PartialOverlapIsInvalid) {
  EXPECT_TRUE(OpensWith(
      two_blobs(64, 128, 128, 128).build(), ZT_ERR_INVALID,
      {"object \"b\": component \"data\": blob [128, 256) overlaps object \"a\": component "
       "\"data\": blob [64, 192)"}));
  // One blob inside another.
  EXPECT_TRUE(OpensWith(two_blobs(64, 256, 128, 64).build(), ZT_ERR_INVALID, {"overlaps"}));
  // Same start, other length.
  EXPECT_TRUE(OpensWith(two_blobs(64, 64, 64, 65).build(), ZT_ERR_INVALID, {"overlaps"}));
}

TEST(Placement, OverlapWithinOneObjectIsInvalid) {
  FileBuilder b;
  b.add_blob(pattern(256));
  b.object("q", "my_format", {1},
           Json{{"x", {{"dtype", "u8"}, {"offset", 64}, {"length", 100}}},
                {"y", {{"dtype", "u8"}, {"offset", 128}, {"length", 10}}}});
  EXPECT_TRUE(
      OpensWith(b.build(), ZT_ERR_INVALID, {"component \"y\"", "overlaps", "component \"x\""}));
}

TEST(Placement, ZeroLengthBlobsMayLieAnywhereInside) {
  // At 0, inside another blob, and at the manifest's start.
  FileBuilder b;
  b.dense("full", "u8", {128}, pattern(128));
  b.object("at0", "dense", {0}, Json{{"data", {{"dtype", "u8"}, {"offset", 0}, {"length", 0}}}});
  b.object("inside", "dense", {0},
           Json{{"data", {{"dtype", "u8"}, {"offset", 128}, {"length", 0}}}});
  b.object("end", "dense", {0, 5},
           Json{{"data", {{"dtype", "f32"}, {"offset", b.manifest_offset()}, {"length", 0}}}});
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  for (const char* name : {"at0", "inside", "end"}) {
    const Mapped m = map_component(o.get(), name, "data");
    EXPECT_EQ(m.status, ZT_OK) << name;
    EXPECT_TRUE(m.bytes.empty());
    uint64_t written = 9;
    uint8_t buf[1];
    EXPECT_EQ(zt_component_read(o.get(), object_index(o.get(), name), "data", buf, 0, &written),
              ZT_OK);
    EXPECT_EQ(written, 0u);
  }
  EXPECT_EQ(zt_verify(o.get(), nullptr, nullptr), ZT_OK) << zt_last_error();
}

TEST(Placement, ZeroLengthBlobsStillFollowAlignmentAndFileBounds) {
  EXPECT_TRUE(
      OpensWith(pointing_at(70, 0).build(), ZT_ERR_INVALID, {"offset 70 is not a multiple of 64"}));
  EXPECT_TRUE(
      OpensWith(pointing_at(64 * 1000, 0).build(), ZT_ERR_INVALID, {"exceeds the file size"}));
}

// --- dense sizes --------------------------------------------------------------

TEST(DenseSize, LengthMustMatchShapeTimesWidth) {
  FileBuilder b;
  b.dense("w", "f32", {3}, le<float>({1, 2}));
  EXPECT_TRUE(OpensWith(
      b.build(), ZT_ERR_INVALID,
      {"object \"w\": component \"data\": length 8 does not match shape [3] x 4 bytes = 12"}));
  FileBuilder m;
  m.dense("w", "i16", {2, 3}, Bytes(12, 0));
  EXPECT_TRUE(OpensWith(m.build(), ZT_OK));
  m.component("w", "data")["length"] = 11;
  EXPECT_TRUE(OpensWith(m.build(), ZT_ERR_INVALID, {"length 11", "shape [2, 3] x 2 bytes = 12"}));
}

TEST(DenseSize, ComplexCountsTwoElementsEach) {
  FileBuilder b;
  b.dense("c", "f32", {3}, Bytes(24, 0));
  b.component("c", "data")["type"] = "complex64";
  b.dense("d", "f64", {2}, Bytes(32, 0));
  b.component("d", "data")["type"] = "complex128";
  const Bytes f = b.build();
  EXPECT_TRUE(OpensWith(f, ZT_OK));

  FileBuilder half;
  half.dense("c", "f32", {3}, Bytes(12, 0));
  half.component("c", "data")["type"] = "complex64";
  EXPECT_TRUE(OpensWith(half.build(), ZT_ERR_INVALID,
                        {"length 12 does not match shape [3] x 8 bytes = 24"}));
}

TEST(DenseSize, Fp8TypesCountOneByteEach) {
  FileBuilder b;
  for (const char* t : {"f8_e4m3fn", "f8_e5m2", "f8_e4m3fnuz", "f8_e5m2fnuz"}) {
    b.dense(t, "u8", {5}, pattern(5));
    b.component(t, "data")["type"] = t;
  }
  EXPECT_TRUE(OpensWith(b.build(), ZT_OK));
}

TEST(DenseSize, ScalarHoldsOneElement) {
  FileBuilder b;
  b.dense("s", "f64", {}, le<double>({2.5}));
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  size_t ndim = 9;
  zt_object_shape(o.get(), 0, &ndim);
  EXPECT_EQ(ndim, 0u);
  FileBuilder empty;
  empty.dense("s", "f64", {}, Bytes{});
  EXPECT_TRUE(
      OpensWith(empty.build(), ZT_ERR_INVALID, {"length 0 does not match shape [] x 8 bytes = 8"}));
}

TEST(DenseSize, ZstdUncompressedLengthMustMatchShape) {
  FileBuilder b;
  b.object("w", "dense", {10}, Json{{"data", b.zstd("f32", pattern(44))}});
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID,
                        {"uncompressed_length 44 does not match shape [10] x 4 bytes = 40"}));
}

TEST(DenseSize, ShapeProductOverflowIsInvalid) {
  FileBuilder b;
  b.object("w", "dense", {1ull << 32, 1ull << 32, 2},
           Json{{"data", {{"dtype", "u8"}, {"offset", 0}, {"length", 0}}}});
  EXPECT_TRUE(OpensWith(b.build(), ZT_ERR_INVALID, {"object \"w\"", "overflows 64 bits"}));
  // The product fits; times the width it does not.
  FileBuilder w;
  w.object("w", "dense", {1ull << 62},
           Json{{"data", {{"dtype", "f32"}, {"offset", 0}, {"length", 0}}}});
  EXPECT_TRUE(OpensWith(w.build(), ZT_ERR_INVALID, {"overflows 64 bits"}));
  // complex128: 16 bytes per element.
  FileBuilder c;
  c.object(
      "w", "dense", {1ull << 60},
      Json{{"data", {{"dtype", "f64"}, {"type", "complex128"}, {"offset", 0}, {"length", 0}}}});
  EXPECT_TRUE(OpensWith(c.build(), ZT_ERR_INVALID, {"overflows 64 bits"}));
}

TEST(DenseSize, ZeroDimensionMakesAnEmptyTensor) {
  FileBuilder b;
  b.object("w", "dense", {0, UINT64_MAX, UINT64_MAX},
           Json{{"data", {{"dtype", "f64"}, {"offset", 0}, {"length", 0}}}});
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  uint64_t n = 9;
  EXPECT_EQ(zt_component_decoded_size(o.get(), 0, "data", &n), ZT_OK);
  EXPECT_EQ(n, 0u);
}

}  // namespace
}  // namespace zt::test
