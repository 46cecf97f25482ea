// Whether memory is advised for transparent huge pages, read from
// /proc/self/smaps: for the tests of the library's buffers (GrowingBytes,
// the decode cache) and of the C++ wrapper's Bytes. Header-only, so that
// the wrapper's tests, which link the public library alone, take it too.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace zt::test {

// Whether this kernel has transparent huge pages to advise.
inline bool has_transparent_huge_pages() {
  return std::filesystem::exists("/sys/kernel/mm/transparent_hugepage");
}

// Whether the first whole 2 MiB page at or after `address` lies in a
// mapping advised for huge pages (the "hg" flag of /proc/self/smaps); the
// mapping's VmFlags line, for a failure's message, in *flags.
inline bool advised_for_huge_pages(const void* address, std::string* flags = nullptr) {
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const std::uintptr_t at = (reinterpret_cast<std::uintptr_t>(address) + kHuge - 1) & ~(kHuge - 1);
  std::ifstream smaps("/proc/self/smaps");
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= at && at < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      if (flags) *flags = line;
      return line.find(" hg") != std::string::npos;
    }
  }
  if (flags) *flags = "no mapping holds it";
  return false;
}

}  // namespace zt::test
