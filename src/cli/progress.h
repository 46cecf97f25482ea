// A progress bar on stderr, shown only when stderr is a terminal and the
// work is large (256 MiB or more by default); silent otherwise, so output
// that goes to files and pipes stays clean.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace zt::cli {

class Progress {
 public:
  Progress(std::string label, uint64_t total_bytes);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void advance(uint64_t bytes);
  void finish();

  static constexpr uint64_t kThreshold = uint64_t{256} << 20;

 private:
  void draw(bool force);
  std::string label_;
  uint64_t total_ = 0, done_ = 0;
  bool enabled_ = false, drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace zt::cli
