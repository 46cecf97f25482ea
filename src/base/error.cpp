#include "base/error.h"

#include <cstdio>
#include <vector>

namespace zt {

std::string printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != 0x7f) {
      out += ch;
      continue;
    }
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

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
