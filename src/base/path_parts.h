// Parts of a file's path, as files named beside one another (temporaries,
// shards, the files a model names) are found.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

namespace zt {

// The directory holding `path`: "." for a bare name, "/" for a file at the
// root.
inline std::string directory_of(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  return slash == 0 ? std::string("/") : std::string(path.substr(0, slash));
}

// Whether `text` is one or more decimal digits (a shard's number, a pid).
inline bool all_decimal_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace zt
