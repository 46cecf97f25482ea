// The writer's frame pipeline: frames come back in submission order whatever
// the number of workers, never more than capacity() are in flight, and
// cancel() leaves no worker reading submitted memory.
#include "write/frame_pipeline.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "base/zt_limits.h"
#include "codec/zstd_codec.h"

namespace {

using Bytes = std::vector<uint8_t>;

// Frame i: a different length and content for every i, so that any
// reordering or mix-up of frames shows in the decoded bytes.
Bytes frame_input(size_t i) {
  Bytes b(1000 + (i * 7919) % 30000);
  for (size_t k = 0; k < b.size(); ++k) b[k] = static_cast<uint8_t>((k * (i + 3)) >> 4);
  return b;
}

Bytes decoded(std::span<const uint8_t> frame, size_t size) {
  Bytes out(size);
  EXPECT_TRUE(zt::zstd_decode_exact(frame, out, "test").ok());
  return out;
}

class FramePipelineTest : public ::testing::TestWithParam<unsigned> {};

TEST_P(FramePipelineTest, FramesComeBackInOrderWithinCapacity) {
  zt::FramePipeline p(GetParam(), 3);
  ASSERT_GE(p.capacity(), 1u);
  constexpr size_t kFrames = 64;
  std::vector<Bytes> inputs;
  for (size_t i = 0; i < kFrames; ++i) inputs.push_back(frame_input(i));
  size_t next_out = 0;
  auto pop_one = [&] {
    auto out = p.wait_oldest();
    ASSERT_TRUE(out.ok()) << out.error().message;
    EXPECT_EQ(decoded(*out, inputs[next_out].size()), inputs[next_out]) << "frame " << next_out;
    p.pop_oldest();
    ++next_out;
  };
  for (size_t i = 0; i < kFrames; ++i) {
    while (p.full()) pop_one();
    p.submit(inputs[i]);
    EXPECT_LE(p.in_flight(), p.capacity());
  }
  while (p.in_flight() > 0) pop_one();
  EXPECT_EQ(next_out, kFrames);
}

TEST_P(FramePipelineTest, OwnedInputTravelsWithTheFrameAndIsReused) {
  zt::FramePipeline p(GetParam(), 1);
  Bytes first = frame_input(5);
  const Bytes want = first;
  const size_t cap = first.capacity();
  const std::span<const uint8_t> view(
      first);  // taken before the move: argument order is unspecified
  p.submit(view, std::move(first));
  auto out = p.wait_oldest();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(decoded(*out, want.size()), want);
  p.pop_oldest();
  const Bytes spare = p.spare_buffer();
  EXPECT_TRUE(spare.empty());
  EXPECT_EQ(spare.capacity(), cap);
  EXPECT_EQ(p.spare_buffer().capacity(), 0u);  // only one was given back
}

TEST_P(FramePipelineTest, CancelDropsEverythingInFlightAndTheNextFramesWork) {
  zt::FramePipeline p(GetParam(), 19);  // slow level: cancel meets running frames
  for (int round = 0; round < 3; ++round) {
    std::vector<Bytes> inputs;
    for (size_t i = 0; i < p.capacity(); ++i) inputs.push_back(frame_input(i + 100));
    for (Bytes& b : inputs) {
      const std::span<const uint8_t> view(b);
      p.submit(view, std::move(b));
    }
    EXPECT_EQ(p.in_flight(), p.capacity());
    p.cancel();
    EXPECT_EQ(p.in_flight(), 0u);
    // Memory the caller submitted may go right after cancel().
    {
      Bytes transient = frame_input(7);
      p.submit(transient);
      p.cancel();
    }
    const Bytes after = frame_input(round);
    p.submit(after);
    auto out = p.wait_oldest();
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(decoded(*out, after.size()), after);
    p.pop_oldest();
  }
}

TEST_P(FramePipelineTest, DestroyedWithFramesInFlight) {
  zt::FramePipeline p(GetParam(), 19);
  Bytes b = frame_input(1);
  const std::span<const uint8_t> view(b);
  p.submit(view, std::move(b));
  EXPECT_EQ(p.in_flight(), 1u);
}  // the destructor cancels and joins; ASan/TSan see any late access

INSTANTIATE_TEST_SUITE_P(Workers, FramePipelineTest, ::testing::Values(0u, 1u, 2u, 5u));

TEST(FramePipeline, ZeroWorkersCompressesOnSubmit) {
  zt::FramePipeline p(0, 3);
  EXPECT_EQ(p.capacity(), 1u);
  const Bytes in = frame_input(3);
  p.submit(in);
  EXPECT_TRUE(p.oldest_done());
  EXPECT_TRUE(p.full());
}

TEST(FramePipeline, WorkersAreClampedToTheLimit) {
  zt::FramePipeline p(100000, 3);
  EXPECT_LE(p.capacity(), size_t{2} * zt::Limits::threads);
}

}  // namespace
