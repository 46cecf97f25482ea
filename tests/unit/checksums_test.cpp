// The CRCs the library takes from ISA-L: CRC-32C (legacy digests, v2 frame
// checks) and the zip format's CRC-32 (members viewed in place), each
// against a bit-at-a-time reference over every length up to a few vector
// widths, at every alignment, whole and chained across a split.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "codec/digest.h"
#include "foreign/zip_archive.h"
#include "test_files.h"

namespace {

// Reflected CRC of `poly`, initial value and final XOR all ones.
uint32_t reference_crc(uint32_t poly, std::span<const uint8_t> bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const uint8_t b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ poly : crc >> 1;
  }
  return ~crc;
}
constexpr uint32_t kCastagnoli = 0x82F63B78u;
constexpr uint32_t kIeee = 0xEDB88320u;

std::vector<uint8_t> random_bytes(size_t n) {
  std::mt19937 rng(41);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// f(piece) for pieces of `data` of every length up to a few vector widths
// (then in steps), at every alignment.
template <class F>
void for_each_piece(std::span<const uint8_t> data, F f) {
  for (size_t at = 0; at < 8; ++at)
    for (size_t n = 0; n + at <= 520; n += (n < 80 ? 1 : 37)) {
      SCOPED_TRACE(std::to_string(at) + "+" + std::to_string(n));
      f(data.subspan(at, n));
    }
}

TEST(Checksums, Crc32cOfTheCheckString) {
  const std::string_view s = "123456789";
  EXPECT_EQ(zt::crc32c(0, std::span(reinterpret_cast<const uint8_t*>(s.data()), s.size())),
            0xE3069283u);
  EXPECT_EQ(zt::crc32c(0, {}), 0u);
}

TEST(Checksums, Crc32cIsTheReferenceAtEveryLengthAlignmentAndSplit) {
  const std::vector<uint8_t> data = random_bytes(600);
  for_each_piece(data, [](std::span<const uint8_t> bytes) {
    const uint32_t want = reference_crc(kCastagnoli, bytes);
    ASSERT_EQ(zt::crc32c(0, bytes), want);
    for (size_t cut = 0; cut <= bytes.size(); cut += 7)
      ASSERT_EQ(zt::crc32c(zt::crc32c(0, bytes.first(cut)), bytes.subspan(cut)), want) << cut;
  });
}

TEST(Checksums, AHasherChainsCrc32cAcrossUpdates) {
  const std::vector<uint8_t> data = random_bytes(100'000);
  zt::Hasher h(zt::DigestAlgo::crc32c);
  for (size_t at = 0; at < data.size(); at += 4'093)
    h.update(std::span(data).subspan(at, std::min<size_t>(4'093, data.size() - at)));
  char want[9];
  std::snprintf(want, sizeof want, "%08x", reference_crc(kCastagnoli, data));
  EXPECT_EQ(h.finish_hex(), want);
}

TEST(Checksums, AZipMembersCrc32IsTheReferenceAtEveryLengthAndAlignment) {
  const std::vector<uint8_t> data = random_bytes(600);
  for_each_piece(data, [](std::span<const uint8_t> bytes) {
    const uint32_t crc = reference_crc(kIeee, bytes);
    ASSERT_TRUE(zt::foreign::check_member_crc(bytes, crc, "m").ok());
    const auto bad = zt::foreign::check_member_crc(bytes, crc ^ 1u, "member 'x'");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().status, zt::Status::digest);
    EXPECT_NE(bad.error().message.find("member 'x': CRC-32 mismatch"), std::string::npos)
        << bad.error().message;
  });
}

}  // namespace
