// Digests over a component's stored bytes: xxh3 (XXH3-64, canonical
// big-endian hex), sha256 (libcrypto EVP) and legacy crc32c (Castagnoli).
#pragma once

#include <cstdint>
#include <memory>
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
std::string_view digest_algo_name(DigestAlgo a);

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

}  // namespace zt
