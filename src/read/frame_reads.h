// Runs of a zstd or byte-planes component's decoded bytes, read frame by
// frame: only the frames that hold a run are decoded, and where the data is
// not mapped (copy mode, a remote source) only the stored bytes that lead to
// them are fetched. The row reader (rows.cpp) asks for one run, the box
// reader (slice.cpp) for one per contiguous piece of the box, a decode range
// (batch_decode.cpp) for one. Mapped or not, the same frames are found and
// checked, so a part reads the same every way: a part checks what it reads
// (the seek table or index, the frames holding a run; a 1.x stream's frame
// headers up to the frame holding the last run's end), not the frames past
// it, which whole reads and verify check.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "base/error.h"
#include "read/reader.h"

namespace zt {

// Runs of `run_bytes` decoded bytes each, ascending and not overlapping;
// run i goes to dst[i * run_bytes, (i + 1) * run_bytes).
class ByteRuns {
 public:
  ByteRuns(uint64_t run_bytes, uint64_t end_byte) : run_bytes_(run_bytes), end_byte_(end_byte) {}
  virtual ~ByteRuns() = default;
  uint64_t run_bytes() const { return run_bytes_; }
  // One past the last run's last byte.
  uint64_t end_byte() const { return end_byte_; }
  // Calls visit(i, first decoded byte of run i) for each run from run
  // `first` on, in order, until visit returns false.
  virtual void each_from(uint64_t first,
                         const std::function<bool(uint64_t, uint64_t)>& visit) const = 0;
  void each(const std::function<bool(uint64_t, uint64_t)>& visit) const { each_from(0, visit); }

 private:
  uint64_t run_bytes_, end_byte_;
};

// A single run: bytes [first, first + bytes).
class OneRun final : public ByteRuns {
 public:
  OneRun(uint64_t first, uint64_t bytes) : ByteRuns(bytes, first + bytes), first_(first) {}
  void each_from(uint64_t first,
                 const std::function<bool(uint64_t, uint64_t)>& visit) const override {
    if (first == 0) visit(0, first_);
  }

 private:
  uint64_t first_;
};

// Copies the runs of component `k` of object `object` (zstd or byte planes) to
// dst, decoding only the frames that hold them. False, with nothing
// copied, when the component is not several frames that record their
// sizes (decode it whole then, which also gives the precise error of a
// stream that is not well formed).
Result<bool> copy_runs_from_frames(const Reader& r, size_t object, size_t k, const ByteRuns& runs,
                                   std::span<uint8_t> dst);

}  // namespace zt
