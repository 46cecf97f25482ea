#include "base/nfc.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace zt {

bool is_nfc(std::string_view utf8) {
  if (std::all_of(utf8.begin(), utf8.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x80; }))
    return true;
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(utf8.data()),
                   static_cast<utf8proc_ssize_t>(utf8.size()), &mapped,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) return false;  // not UTF-8 (or out of memory: not provably NFC)
  const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> hold(mapped, &std::free);
  return static_cast<size_t>(n) == utf8.size() &&
         std::memcmp(mapped, utf8.data(), utf8.size()) == 0;
}

}  // namespace zt
