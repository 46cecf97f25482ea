// The text of a digest in a manifest ("algorithm:hex"): its rules, and the
// normalisation of the checksums older generations wrote.
#include <string>

#include "codec/digest.h"

namespace zt {

namespace {

// Without a branch a character: hex digits are random, and a branch on
// each (digit or letter) was mispredicted half the time (most of checking
// a digest's text at open).
bool is_hex(std::string_view s) {
  bool hex = !s.empty();
  for (const char c : s) {
    const unsigned u = static_cast<unsigned char>(c);
    hex &= (u - '0' < 10u) | ((u | 0x20u) - 'a' < 6u);  // | 0x20: 'A'..'F' as 'a'..'f'
  }
  return hex;
}

bool is_algorithm_name(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '+' && c != '-'))) return false;
  }
  return true;
}

size_t known_hex_length(std::string_view algo) {
  switch (digest_algo_from_name(algo)) {
    case DigestAlgo::sha256:
      return 64;
    case DigestAlgo::xxh3:
      return 16;
    case DigestAlgo::crc32c:
      return 8;
    default:
      return 0;
  }
}

}  // namespace

std::string normalize_legacy_checksum(std::string_view cs) {
  const size_t colon = cs.find(':');
  if (colon == std::string_view::npos) return std::string(cs);
  const std::string_view algo = cs.substr(0, colon);
  std::string_view hex = cs.substr(colon + 1);
  if (hex.size() > 2 && hex[0] == '0' && (hex[1] == 'x' || hex[1] == 'X')) hex.remove_prefix(2);
  if (!is_algorithm_name(algo) || !is_hex(hex)) return std::string(cs);
  std::string out(algo);
  out += ':';
  if (algo == "crc32c" && hex.size() < 8) out.append(8 - hex.size(), '0');
  for (const char c : hex) out += static_cast<char>(c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c);
  return out;
}

std::optional<std::string> digest_text_problem(std::string_view digest) {
  // What our writers put beside every component: checked without the
  // general path's search and name lookups (every digest of a manifest
  // passes here at open).
  constexpr std::string_view kXxh3 = "xxh3:";
  if (digest.size() == kXxh3.size() + 16 && digest.starts_with(kXxh3) &&
      is_hex(digest.substr(kXxh3.size())))
    return std::nullopt;
  const size_t colon = digest.find(':');
  // Made for a message only: every digest of a manifest passes here at open.
  const auto shown = [&] { return std::string(digest.substr(0, 120)); };
  if (colon == std::string_view::npos)
    return "malformed digest \"" + shown() + "\" (want \"algorithm:hex\")";
  const std::string_view algo = digest.substr(0, colon);
  std::string_view hex = digest.substr(colon + 1);
  // 1.2-era writers emitted crc32c as "crc32c:0x%08X".
  if (algo == "crc32c" && hex.size() > 2 && hex[0] == '0' && (hex[1] == 'x' || hex[1] == 'X'))
    hex.remove_prefix(2);
  if (!is_algorithm_name(algo) || !is_hex(hex))
    return "malformed digest \"" + shown() + "\" (want \"algorithm:hex\")";
  const size_t want = known_hex_length(algo);
  if (want && hex.size() != want)
    return std::string(algo) + " digest must have " + std::to_string(want) + " hex digits, \"" +
           shown() + "\" has " + std::to_string(hex.size());
  return std::nullopt;
}

}  // namespace zt
