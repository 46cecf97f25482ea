#include "base/error.h"

#include <cstdio>
#include <vector>

namespace zt {

Error make_error(Status s, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list again;
  va_copy(again, ap);
  const int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string msg;
  if (n > 0) {
    msg.resize(static_cast<size_t>(n) + 1);
    std::vsnprintf(msg.data(), msg.size(), fmt, again);
    msg.resize(static_cast<size_t>(n));
  }
  va_end(again);
  return Error{s, std::move(msg)};
}

}  // namespace zt
