#include "base/error.h"

#include <algorithm>
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
  return Error{s, fit_message(std::move(msg))};
}

std::string fit_message(std::string msg) {
  // Messages name what files gave (names, keys, text): control bytes are
  // shown escaped, so that a message neither stops at a NUL nor moves a
  // terminal, and a message is cut at kMaxMessageBytes (a key of 50 MB
  // named in full made a 50 MB message).
  if (std::any_of(msg.begin(), msg.end(), [](char ch) {
        const auto c = static_cast<unsigned char>(ch);
        return c < 0x20 || c == 0x7f;
      }))
    msg = printable(msg);
  if (msg.size() <= kMaxMessageBytes) return msg;
  size_t cut = kMaxMessageBytes;
  while (cut > 0 && (static_cast<unsigned char>(msg[cut]) & 0xC0) == 0x80) --cut;  // whole UTF-8
  const size_t more = msg.size() - cut;
  msg.resize(cut);
  msg += "... (" + std::to_string(more) + " bytes more)";
  return msg;
}

}  // namespace zt
