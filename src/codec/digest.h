// Digests over a component's stored bytes: xxh3 (XXH3-64, canonical
// big-endian hex), sha256 (libcrypto EVP) and legacy crc32c (Castagnoli).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace zt {

enum class DigestAlgo : uint8_t { none, xxh3, sha256, crc32c, unknown };

struct ParsedDigest {
  DigestAlgo algo = DigestAlgo::unknown;
  std::string hex;  // lowercase, without a 0x prefix
};

// Splits validated digest text ("xxh3:…", "crc32c:0x…"); other algorithms
// are DigestAlgo::unknown (counted as unchecked by verify).
ParsedDigest parse_digest(std::string_view text);
// "xxh3", "sha256", "crc32c", "none", and back; other names are unknown.
std::string_view digest_algo_name(DigestAlgo a);
DigestAlgo digest_algo_from_name(std::string_view name);

// Incremental digest; one instance per component.
class Hasher {
 public:
  explicit Hasher(DigestAlgo algo);
  ~Hasher();
  Hasher(Hasher&&) noexcept;
  Hasher& operator=(Hasher&&) noexcept;
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  void update(std::span<const uint8_t> bytes);
  // Lowercase hex of the digest; the hasher must not be used afterwards.
  std::string finish_hex();
  DigestAlgo algo() const { return algo_; }

 private:
  struct State;
  DigestAlgo algo_;
  std::unique_ptr<State> state_;
};

// One-shot lowercase hex digest of bytes.
std::string digest_hex(DigestAlgo algo, std::span<const uint8_t> bytes);

uint32_t crc32c(uint32_t crc, std::span<const uint8_t> bytes);

// Checks a digest text ("algorithm:hex"). Known algorithms must have their
// exact hex length; crc32c may carry a 0x prefix. Returns the error text.
std::optional<std::string> digest_text_problem(std::string_view digest);

// "crc32c:0x1A2B3C4D" -> "crc32c:1a2b3c4d": the checksums 0.1.0 and 1.0.x
// files hold, in the 1.2 form; other text unchanged.
std::string normalize_legacy_checksum(std::string_view cs);

}  // namespace zt
