// Support for the hardening tests: .zt files assembled around manifests
// written with zt::CborWriter (so that huge manifests are streamed, not
// built as JSON first), a scratch directory, and child processes whose
// exit status and peak resident memory the parent reads (wait4).
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../unit/sanitized.h"
#include "cbor/cbor_encode.h"
#include "ztensor.h"

namespace zt::hardening {

using Bytes = std::vector<uint8_t>;

// Appends bytes at the end. Grows first, then copies: GCC 12 at -O3 reports
// vector::insert at end() after a short literal as an out-of-bounds memcpy
// (-Warray-bounds, a false positive), and warnings are errors in CI.
inline void append(Bytes& out, std::span<const uint8_t> bytes) {
  const size_t at = out.size();
  out.resize(at + bytes.size());
  std::copy(bytes.begin(), bytes.end(), out.begin() + static_cast<std::ptrdiff_t>(at));
}

// "ZTEN1000" + blobs (zero-padded to 64) + manifest + size + "ZTEN1000".
// `blobs` is what follows the 8-byte header; its first byte is at offset 8,
// so a first blob at offset 64 needs 56 bytes of padding in front of it.
Bytes assemble(std::span<const uint8_t> blobs, std::span<const uint8_t> manifest);

// Blobs placed at 64-byte offsets after the header, for assemble().
class Blobs {
 public:
  // Appends and returns the blob's file offset.
  uint64_t add(std::span<const uint8_t> bytes);
  const Bytes& bytes() const { return bytes_; }

 private:
  Bytes bytes_;
};

// Writes {"dtype", "offset", "length"} plus, for zstd, "encoding" and
// "uncompressed_length" (when given) as a CBOR map.
void component(CborWriter& w, std::string_view dtype, uint64_t offset, uint64_t length,
               bool zstd = false, std::optional<uint64_t> uncompressed_length = std::nullopt);

// Starts a manifest of one object: {"version": version, "objects": {name:
// a map of `fields` entries, which the caller writes next}}.
void begin_one_object(CborWriter& w, std::string_view version, std::string_view name,
                      size_t fields);

// The manifest of one dense object with one "data" component.
Bytes dense_manifest(std::string_view version, std::string_view name, std::string_view dtype,
                     std::span<const uint64_t> shape, uint64_t offset, uint64_t length,
                     bool zstd = false, std::optional<uint64_t> uncompressed_length = std::nullopt,
                     std::string_view format = "dense");

// One zstd frame of `src` (with the content size in its header).
Bytes zstd_frame(std::span<const uint8_t> src, int level = 3);

// A fresh directory under $TMPDIR, removed with its files on destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }
  // Names of the entries in the directory, sorted.
  std::vector<std::string> list() const;

 private:
  std::string path_;
};

void write_file(const std::string& path, std::span<const uint8_t> bytes);
Bytes read_file(const std::string& path);

// What a child process did.
struct ChildOutcome {
  bool exited = false;
  int exit_code = -1;
  int signal = 0;
  uint64_t peak_rss = 0;      // bytes (ru_maxrss of the child alone)
  uint64_t baseline_rss = 0;  // the same for an idle child forked just before

  // What the body itself made resident.
  uint64_t growth() const { return peak_rss > baseline_rss ? peak_rss - baseline_rss : 0; }
};

// Runs `body` in a forked child; its return value is the exit code. The
// child's resident set counts the parent's pages that it touches, so an
// idle child is measured first and growth() is the difference.
ChildOutcome run_child(const std::function<int()>& body);

inline constexpr uint64_t kMiB = uint64_t{1} << 20;

using test::kSanitized;  // ../unit/sanitized.h

}  // namespace zt::hardening
