// The core deterministic encoding check (RFC 8949 §4.2.1) that zTensor v2
// manifests must pass (v2 spec §3.1; decisions 4 to 6 of docs/v2.md).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cbor/deterministic.h"

namespace {

std::vector<uint8_t> hex(const std::string& text) {
  std::vector<uint8_t> out;
  std::string digits;
  for (char c : text)
    if (c != ' ') digits += c;
  for (size_t i = 0; i + 1 < digits.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoi(digits.substr(i, 2), nullptr, 16)));
  return out;
}

struct Case {
  const char* bytes;
  const char* what;
};

constexpr unsigned kDepth = 32;

TEST(CborDeterministic, AcceptsDeterministicItems) {
  const Case cases[] = {
      {"a0", "empty map"},
      {"a2 6161 01 6162 02", "sorted text keys"},
      {"a2 6162 01 626161 02", "\"b\" before \"aa\": the order is by encoded bytes"},
      {"a2 01 00 6161 00", "an integer key before a text key"},
      {"17", "23 in the initial byte"},
      {"1818", "24 in one extra byte"},
      {"19 0100", "256 in two"},
      {"1a 00010000", "65536 in four"},
      {"1b 0000000100000000", "2^32 in eight"},
      {"37", "-24"},
      {"38 18", "-25"},
      {"f9 3c00", "1.0 as a half: floats are not reduced to integers"},
      {"f9 7e00", "the canonical NaN"},
      {"f9 7c00", "infinity"},
      {"f9 fc00", "minus infinity"},
      {"f9 0000", "zero"},
      {"f9 8000", "minus zero"},
      {"f9 0001", "the smallest half subnormal"},
      {"f9 7bff", "65504, the largest half"},
      {"fa 47c35000", "100000.0 needs a single"},
      {"fa 3dcccccd", "0.1f needs a single"},
      {"fb 3fb999999999999a", "0.1 needs a double"},
      {"fb 3690000000000000", "2^-150, below the single range"},
      {"c1 1a 5f5e1000", "tag 1 (tags are an attribute rule, not an encoding rule)"},
      {"c6 00", "a one-byte tag libcbor does not know"},
      {"f8 20", "simple value 32"},
      {"f4", "false"},
      {"62 c3a9", "two bytes of UTF-8"},
      {"40", "empty byte string"},
      {"82 a1 6161 80 a0", "nested containers"},
  };
  for (const Case& c : cases) {
    const auto bytes = hex(c.bytes);
    const auto r = zt::cbor::check_deterministic(bytes, kDepth);
    EXPECT_TRUE(r.ok()) << c.what << " (" << c.bytes << "): " << r.error().message;
  }
}

TEST(CborDeterministic, RefusesEveryOtherEncoding) {
  const Case cases[] = {
      {"18 17", "23 in one extra byte"},
      {"19 00ff", "255 in two"},
      {"1a 0000ffff", "65535 in four"},
      {"1b 00000000ffffffff", "2^32-1 in eight"},
      {"38 00", "-1 in one extra byte"},
      {"78 01 61", "a text length in one extra byte"},
      {"59 0001 00", "a byte-string length in two extra bytes"},
      {"98 01 00", "an array count in one extra byte"},
      {"b8 01 6161 00", "a map count in one extra byte"},
      {"d8 01 00", "tag 1 in one extra byte"},
      {"9f ff", "an indefinite array"},
      {"bf ff", "an indefinite map"},
      {"7f 6161 ff", "an indefinite text"},
      {"5f ff", "an indefinite byte string"},
      {"a2 6162 01 6161 02", "unsorted keys"},
      {"a2 626161 01 6162 02", "\"aa\" before \"b\""},
      {"a2 6161 01 6161 02", "a repeated key"},
      {"a2 f97e00 01 f97e00 02", "a repeated NaN key"},
      {"fa 3f800000", "1.0 as a single"},
      {"fb 3ff0000000000000", "1.0 as a double"},
      {"fb 0000000000000000", "zero as a double"},
      {"fa 80000000", "minus zero as a single"},
      {"fb 7ff0000000000000", "infinity as a double"},
      {"fa 33800000", "2^-24 (a half subnormal) as a single"},
      {"fb 40f86a0000000000", "100000.0 as a double"},
      {"fb 36a0000000000000", "2^-149 (a single subnormal) as a double"},
      {"f9 7e01", "a NaN with a payload"},
      {"f9 fe00", "a negative NaN"},
      {"fa 7fc00000", "a single NaN"},
      {"fb 7ff8000000000000", "a double NaN"},
      {"01 00", "a byte after the item"},
      {"62 c328", "invalid UTF-8"},
      {"82 01", "a truncated array"},
      {"bb 7fffffffffffffff", "a count beyond the bytes"},
      {"f8 10", "simple value 16 in two bytes"},
      {"", "no item"},
  };
  for (const Case& c : cases) {
    const auto bytes = hex(c.bytes);
    const auto r = zt::cbor::check_deterministic(bytes, kDepth);
    ASSERT_FALSE(r.ok()) << c.what << " (" << c.bytes << ")";
    EXPECT_EQ(r.error().status, zt::Status::format) << c.what;
  }
}

// Nested arrays: n levels, the innermost empty.
std::vector<uint8_t> nested(unsigned levels) {
  std::vector<uint8_t> b(levels - 1, 0x81);
  b.push_back(0x80);
  return b;
}

TEST(CborDeterministic, CountsDepthFromTheOutermostContainer) {
  EXPECT_TRUE(zt::cbor::check_deterministic(nested(kDepth), kDepth).ok());
  const auto deep = zt::cbor::check_deterministic(nested(kDepth + 1), kDepth);
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.error().status, zt::Status::format);
  EXPECT_NE(deep.error().message.find("deeper than 32"), std::string::npos) << deep.error().message;
  // Tags do not count as levels.
  auto tagged = nested(kDepth);
  tagged.insert(tagged.begin(), 0xC1);
  EXPECT_TRUE(zt::cbor::check_deterministic(tagged, kDepth).ok());
}

TEST(CborDeterministic, MessagesNameTheRuleAndTheByte) {
  const auto unsorted = hex("a2 6162 01 6161 02");
  const auto r = zt::cbor::check_deterministic(unsorted, kDepth);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("does not sort after"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("byte 4"), std::string::npos) << r.error().message;
  const auto repeated = hex("a2 6161 01 6161 02");
  const auto d = zt::cbor::check_deterministic(repeated, kDepth);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("repeats"), std::string::npos) << d.error().message;
}

// A key that is itself a container is compared by its whole encoding.
TEST(CborDeterministic, ComparesContainerKeysWhole) {
  EXPECT_TRUE(zt::cbor::check_deterministic(hex("a2 8101 00 8102 00"), kDepth).ok());
  EXPECT_FALSE(zt::cbor::check_deterministic(hex("a2 8102 00 8101 00"), kDepth).ok());
  EXPECT_FALSE(zt::cbor::check_deterministic(hex("a2 8101 00 8101 00"), kDepth).ok());
}

}  // namespace
