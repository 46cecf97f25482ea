#include "progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "common.h"

namespace zt::cli {

Progress::Progress(std::string label, uint64_t total_bytes)
    : label_(std::move(label)),
      total_(total_bytes),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {
  enabled_ = total_bytes >= kThreshold && ::isatty(STDERR_FILENO) == 1;
}

Progress::~Progress() {
  finish();
}

void Progress::advance(uint64_t bytes) {
  done_ = std::min(total_, done_ + bytes);
  draw(false);
}

void Progress::finish() {
  if (!enabled_) return;
  if (drawn_) {
    done_ = total_;
    draw(true);
    std::fputc('\n', stderr);
  }
  enabled_ = false;
}

void Progress::draw(bool force) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  drawn_ = true;
  constexpr int kWidth = 30;
  const double frac = total_ ? static_cast<double>(done_) / static_cast<double>(total_) : 1.0;
  const int filled = static_cast<int>(frac * kWidth);
  const double secs = std::chrono::duration<double>(now - start_).count();
  const double rate = secs > 0 ? static_cast<double>(done_) / secs : 0;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kWidth - filled), ' ');
  std::fprintf(stderr, "\r%s [%s] %3d%%  %s / %s  %s/s ", label_.c_str(), bar.c_str(),
               static_cast<int>(frac * 100), human_bytes(done_).c_str(),
               human_bytes(total_).c_str(), human_bytes(static_cast<uint64_t>(rate)).c_str());
  std::fflush(stderr);
}

}  // namespace zt::cli
