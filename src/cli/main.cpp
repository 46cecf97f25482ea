// zt: inspect, check and convert zTensor files and the formats they replace.
#include <cstdio>
#include <new>
#include <stdexcept>

#include "commands.h"

int main(int argc, char** argv) {
  try {
    return zt::cli::run_zt(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "zt: out of memory\n");
    return zt::cli::kIo;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zt: internal error: %s\n", e.what());
    return zt::cli::kIo;
  }
}
