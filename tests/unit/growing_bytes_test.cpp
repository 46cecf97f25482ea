// GrowingBytes: resized across the heap/mapping boundary (1 MiB), it keeps
// its bytes, moves and frees cleanly (valgrind runs this file too), grows
// a large buffer without a second copy of it, and advises mappings of
// 4 MiB or more for transparent huge pages.
#include "base/growing_bytes.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>

#include "test_files.h"

namespace zt {
namespace {

void fill(GrowingBytes& b, size_t from) {
  for (size_t i = from; i < b.size(); ++i) b.data()[i] = static_cast<uint8_t>(i * 31 + 7);
}

bool holds_fill(const GrowingBytes& b) {
  for (size_t i = 0; i < b.size(); ++i)
    if (b.data()[i] != static_cast<uint8_t>(i * 31 + 7)) return false;
  return true;
}

TEST(GrowingBytes, KeepsItsBytesAcrossEveryResize) {
  GrowingBytes b;
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.data(), nullptr);
  size_t had = 0;
  // Growing by doubling from a stream block, past the mapping threshold, to
  // an odd size; then shrinking below it and to nothing.
  for (const size_t n : {size_t{131072}, size_t{262144}, size_t{1} << 20, (size_t{1} << 20) + 1,
                         size_t{3} << 20, (size_t{5} << 20) + 12345, size_t{4096}, size_t{100}}) {
    SCOPED_TRACE(n);
    ASSERT_TRUE(b.resize(n));
    EXPECT_EQ(b.size(), n);
    EXPECT_EQ(b.bytes().size(), n);
    if (n > had) fill(b, had);
    EXPECT_TRUE(holds_fill(b));
    had = n;
  }
  ASSERT_TRUE(b.resize(0));
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.data(), nullptr);
}

TEST(GrowingBytes, MovesOwnership) {
  GrowingBytes a;
  ASSERT_TRUE(a.resize(size_t{2} << 20));
  fill(a, 0);
  const uint8_t* at = a.data();
  GrowingBytes b(std::move(a));
  EXPECT_EQ(b.data(), at);
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
  GrowingBytes c;
  ASSERT_TRUE(c.resize(10));
  c = std::move(b);
  EXPECT_EQ(c.size(), size_t{2} << 20);
  EXPECT_TRUE(holds_fill(c));
}

TEST(GrowingBytes, RefusesWhatCannotBeHadAndKeepsWhatItHeld) {
  GrowingBytes b;
  ASSERT_TRUE(b.resize(size_t{2} << 20));
  fill(b, 0);
  EXPECT_FALSE(b.resize(SIZE_MAX - 100));   // whole pages of it overflow
  EXPECT_FALSE(b.resize(size_t{1} << 62));  // a mapping no machine grants (mremap)
  EXPECT_EQ(b.size(), size_t{2} << 20);
  EXPECT_TRUE(holds_fill(b));
  GrowingBytes small;
  EXPECT_FALSE(small.resize(SIZE_MAX - 100));
  EXPECT_FALSE(small.resize(size_t{1} << 62));  // (mmap)
  EXPECT_TRUE(small.empty());
}

TEST(GrowingBytes, AdvisesMappingsOf4MiBOrMoreForHugePages) {
  if (!test::has_transparent_huge_pages())
    GTEST_SKIP() << "this kernel has no transparent huge pages to advise";
  std::string flags;
  GrowingBytes b;
  ASSERT_TRUE(b.resize(size_t{3} << 20));  // a mapping, too small to be advised
  EXPECT_FALSE(test::advised_for_huge_pages(b.data(), &flags)) << flags;
  ASSERT_TRUE(b.resize(size_t{9} << 20));  // grown by mremap
  EXPECT_TRUE(test::advised_for_huge_pages(b.data(), &flags)) << flags;
  fill(b, 0);
  EXPECT_TRUE(holds_fill(b));
  GrowingBytes fresh;
  ASSERT_TRUE(fresh.resize(100));
  ASSERT_TRUE(fresh.resize(size_t{8} << 20));  // from the heap to a mapping of its own
  EXPECT_TRUE(test::advised_for_huge_pages(fresh.data(), &flags)) << flags;
}

}  // namespace
}  // namespace zt
