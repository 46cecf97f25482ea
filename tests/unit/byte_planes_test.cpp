// The byte-planes codec (src/codec/byte_planes.h, issue #46): streams the
// encoder makes decode to the same bytes for every width, transform, frame
// size and thread count; bf16 weights come out smaller than zstd makes
// them; and each rule of the stream broken alone is refused by the check
// that reads no plane, or (checksums, corrupt planes) by the decode.
#include "codec/byte_planes.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace zt {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes encode(const Bytes& src, PlanesLayout l, int level = 3) {
  Bytes out;
  EXPECT_TRUE(byte_planes_encode(src, l, level, out).ok());
  return out;
}

Bytes decode(const Bytes& stored, size_t n, unsigned threads = 1) {
  Bytes out(n, 0xEE);
  auto r = byte_planes_decode(stored, out, "w", threads);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return out;
}

// bf16 bit patterns of normal weights with sigma 0.02 (trained-like).
Bytes bf16_weights(size_t n, unsigned seed = 1) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, 0.02f);
  Bytes out(2 * n);
  for (size_t i = 0; i < n; ++i) {
    float f = d(g);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    out[2 * i] = static_cast<uint8_t>(u >> 16);
    out[2 * i + 1] = static_cast<uint8_t>(u >> 24);
  }
  return out;
}

Bytes random_bytes(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  Bytes out(n);
  for (auto& b : out) b = static_cast<uint8_t>(g());
  return out;
}

TEST(BytePlanes, RoundTripsEveryLayout) {
  for (const uint8_t width : {uint8_t{1}, uint8_t{2}, uint8_t{4}, uint8_t{8}}) {
    for (bool rotate : {false, true}) {
      if (rotate && width == 1) continue;
      for (uint32_t frame : {uint32_t{width}, 64u * width, 1u << 20}) {
        for (size_t elements : {size_t{0}, size_t{1}, size_t{64}, size_t{1000}, size_t{4099}}) {
          const Bytes src =
              random_bytes(elements * width, static_cast<unsigned>(width * 7 + elements));
          const PlanesLayout l{width, rotate, frame};
          const Bytes stored = encode(src, l);
          EXPECT_EQ(decode(stored, src.size()), src) << int{width} << " " << rotate << " " << frame;
          EXPECT_EQ(decode(stored, src.size(), 4), src);
          auto x = byte_planes_index(stored, src.size(), "w");
          ASSERT_TRUE(x.ok()) << x.error().message;
          EXPECT_EQ(x->frames.size(), (src.size() + frame - 1) / frame);
        }
      }
    }
  }
}

TEST(BytePlanes, Bf16WeightsComeOutSmallerThanZstd) {
  const Bytes src = bf16_weights(1 << 20);
  const Bytes planes = encode(src, {2, true, 1u << 20});
  Bytes z(ZSTD_compressBound(src.size()));
  z.resize(ZSTD_compress(z.data(), z.size(), src.data(), src.size(), 3));
  // About 1.49x against zstd's 1.28x on these weights (issue #46).
  EXPECT_LT(planes.size() * 11 / 10, z.size()) << planes.size() << " vs zstd " << z.size();
  EXPECT_EQ(decode(planes, src.size(), 2), src);
  // Incompressible planes are stored, never larger than themselves.
  const Bytes noise = random_bytes(1 << 16, 5);
  EXPECT_LE(encode(noise, {2, true, 1u << 14}).size(), noise.size() + 4 * 4 * 3 + 16);
}

// Frames encoded apart (on other threads, as the writer's workers do) and
// adopted in order make the very stream the encoder makes alone.
TEST(BytePlanes, FramesEncodedApartMakeTheSameStream) {
  const Bytes src = bf16_weights(5000);
  const PlanesLayout l{2, true, 4096};
  const Bytes whole = encode(src, l);
  std::vector<Bytes> frames((src.size() + l.frame_bytes - 1) / l.frame_bytes);
  std::vector<std::thread> threads;
  for (size_t f = 0; f < frames.size(); ++f)
    threads.emplace_back([&, f] {
      const size_t at = f * l.frame_bytes;
      const auto bytes =
          std::span(src).subspan(at, std::min<size_t>(l.frame_bytes, src.size() - at));
      EXPECT_TRUE(byte_planes_encode_frame(bytes, l, 3, frames[f]).ok());
    });
  for (auto& t : threads) t.join();
  PlanesEncoder e(l, 3);
  Bytes out;
  for (const Bytes& f : frames) {
    auto planes = e.adopt_frame(f);
    ASSERT_TRUE(planes.ok()) << planes.error().message;
    EXPECT_EQ(planes->size(), f.size() - 4 * 3);
    out.insert(out.end(), planes->begin(), planes->end());
  }
  e.finish(out);
  EXPECT_EQ(out, whole);
  EXPECT_EQ(e.adopt_frame(Bytes(11)).error().status, Status::argument);
}

TEST(BytePlanes, EncoderRefusesWhatIsNotALayout) {
  Bytes out;
  EXPECT_EQ(byte_planes_encode(Bytes(6), {3, false, 6}, 3, out).error().status, Status::argument);
  EXPECT_EQ(byte_planes_encode(Bytes(6), {2, false, 3}, 3, out).error().status, Status::argument);
  EXPECT_EQ(byte_planes_encode(Bytes(6), {1, true, 6}, 3, out).error().status, Status::argument);
  EXPECT_EQ(byte_planes_encode(Bytes(5), {2, false, 6}, 3, out).error().status, Status::argument);
}

// A stream of 3 frames of 2-byte elements (the last shorter): 1000 bytes in
// frames of 400; plane 0 (random low bytes) stored, plane 1 (exponents) coded.
struct Sample {
  Bytes src, stored;
  Sample() {
    src = bf16_weights(500, 3);
    const Bytes noise = random_bytes(500, 4);
    for (size_t i = 0; i < 500; ++i) src[2 * i] = noise[i];
    stored = encode(src, {2, true, 400});
  }
  uint8_t* footer() { return stored.data() + stored.size() - 16; }
  size_t index_at() const { return stored.size() - 16 - 3 * 12; }
};

std::string refusal(const Bytes& stored, uint64_t n) {
  auto x = byte_planes_index(stored, n, "obj");
  EXPECT_FALSE(x.ok());
  return x ? std::string() : x.error().message;
}

TEST(BytePlanes, EachRuleBrokenAloneIsRefusedWithoutDecoding) {
  {
    Sample s;
    auto x = byte_planes_index(s.stored, s.src.size(), "obj");
    ASSERT_TRUE(x.ok()) << x.error().message;
    ASSERT_EQ(x->frames.size(), 3u);
    EXPECT_FALSE(x->frames[0].coded[0]);
    EXPECT_TRUE(x->frames[0].coded[1]);
  }
  EXPECT_NE(refusal(Bytes(10), 0).find("cannot hold the 16-byte footer"), std::string::npos);
  auto broken = [](auto&& edit, uint64_t n, const char* fragment) {
    Sample s;
    edit(s);
    const std::string m = refusal(s.stored, n ? n : s.src.size());
    EXPECT_NE(m.find(fragment), std::string::npos) << fragment << " / " << m;
    EXPECT_NE(m.find("obj: byte planes: "), std::string::npos) << m;
  };
  broken([](Sample& s) { s.footer()[15] ^= 1; }, 0, "magic");
  broken([](Sample& s) { s.footer()[8] = 3; }, 0, "is not a layout");
  broken([](Sample& s) { s.footer()[9] = 2; }, 0, "is not a layout");
  broken([](Sample& s) { s.footer()[10] = 1; }, 0, "reserved bytes 0");
  broken([](Sample& s) { s.footer()[4] = 0x91; }, 0,
         "not whole elements of 2 bytes");  // 401-byte frames
  broken([](Sample&) {}, 999, "999 decoded bytes are not whole elements");
  // 3 frames as 1200 bytes would have: the last frame's planes are too short.
  broken([](Sample&) {}, 1200, "frame 2 plane 0 is stored as 100 bytes, not its 200");
  broken([](Sample&) {}, 1202, "3 frames, where 1202 bytes in frames of 400 need 4");
  broken(
      [](Sample& s) {
        s.footer()[0] = 0xff;
        s.footer()[1] = 0xff;
      },
      400 * 65535, "does not fit");
  broken([](Sample& s) { s.stored[s.index_at()] ^= 0x01; }, 0, "frame 0 plane 0 is stored as");
  broken([](Sample& s) { s.stored[s.index_at() + 3] |= 0x80; }, 0,
         "frame 0 plane 0 is not one zstd frame");
  broken([](Sample& s) { s.stored[s.index_at() + 4] ^= 0x01; }, 0,
         "frame 0 plane 1 is not one zstd frame");
  broken([](Sample& s) { s.stored[s.index_at() + 2] = 0x7f; }, 0, "goes beyond the planes");
  broken(
      [](Sample& s) {
        s.stored.insert(s.stored.begin() + static_cast<ptrdiff_t>(s.index_at()), 0);
      },
      0, "lie before the index");
}

TEST(BytePlanes, DecodeChecksEachFramesChecksumAndPlanes) {
  Sample s;
  auto x = byte_planes_index(s.stored, s.src.size(), "obj");
  ASSERT_TRUE(x.ok());
  // A stored plane's byte changed: the frame's checksum says so.
  const auto& f1 = x->frames[1];
  Bytes bad = s.stored;
  bad[f1.offset + 3] ^= 0x10;
  Bytes out(s.src.size());
  auto r = byte_planes_decode(bad, out, "obj", 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("frame 1 does not match its checksum"), std::string::npos)
      << r.error().message;
  // A corrupt zstd plane.
  bad = s.stored;
  const auto& f2 = x->frames[2];
  bad[f2.offset + f2.sizes[0] + f2.sizes[1] - 2] ^= 0xff;
  r = byte_planes_decode(bad, out, "obj", 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().status, Status::invalid);
  // A checksum entry changed.
  bad = s.stored;
  bad[s.index_at() + 8] ^= 1;
  r = byte_planes_decode(bad, out, "obj", 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("frame 0 does not match its checksum"), std::string::npos);
}

}  // namespace
}  // namespace zt
