// The text of a digest in a manifest ("algorithm:hex"): its rules, and the
// normalisation of the checksums older generations wrote.
#include <string>

#include "codec/digest.h"

namespace zt {

namespace {

bool is_hex(std::string_view s) {
  if (s.empty()) return false;
  for (const char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  return true;
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
