// Helpers that build .zt files byte by byte for the unit tests: blobs placed
// at 64-byte offsets with zero padding, a manifest written as JSON and
// encoded to CBOR through zt::CborWriter, then the manifest size and the
// footer. Tests change the manifest JSON (or hand-write CBOR) to break
// exactly one rule, then open the bytes through the C ABI.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "huge_pages.h"
#include "ztensor.h"

// gtest prints zt_status values by name ("ZT_ERR_INVALID").
void PrintTo(zt_status s, std::ostream* os);

namespace zt::test {

using Json = nlohmann::ordered_json;
using Bytes = std::vector<uint8_t>;

// CBOR of a JSON value through zt::CborWriter: integers >= 0 as major type
// 0, negative ones as major type 1, floats as doubles, Json::binary as byte
// strings, objects as maps in insertion order.
Bytes cbor(const Json& j);
// The same value with every map and array indefinite-length and every text
// and byte string split into two indefinite-length chunks.
Bytes cbor_indefinite(const Json& j);

// CBOR of one text string (a map key, say).
Bytes cbor_text(std::string_view s);

// Appends bytes at the end. Grows first, then copies: GCC 12 at -O3 reports
// vector::insert at end() after a short literal as an out-of-bounds memcpy
// (-Warray-bounds, a false positive), and warnings are errors in CI.
inline void append(Bytes& out, std::span<const uint8_t> bytes) {
  const size_t at = out.size();
  out.resize(at + bytes.size());
  std::copy(bytes.begin(), bytes.end(), out.begin() + static_cast<std::ptrdiff_t>(at));
}

// prefix followed by the decimal digits of i ("w17"). Appended rather than
// "w" + std::to_string(i), which GCC 12 at -O3 misreads as an overlapping
// memcpy (-Wrestrict, a false positive).
inline std::string numbered(std::string_view prefix, uint64_t i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

// Concatenation of byte strings.
Bytes cat(std::initializer_list<std::span<const uint8_t>> parts);
inline Bytes bytes_of(std::string_view s) {
  return Bytes(s.begin(), s.end());
}

// Little-endian bytes of an array of elements (the test host is
// little-endian, checked in test_files.cpp).
template <typename T>
Bytes le(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}
// n bytes of a repeatable pattern, compressible by zstd.
Bytes pattern(size_t n, uint8_t seed = 1);

// zstd frame of `src`; with content_size false the frame header carries no
// content size (written with the streaming API and ZSTD_c_contentSizeFlag=0).
Bytes zstd_compress(std::span<const uint8_t> src, bool content_size = true);

// Digest texts computed with the libraries directly (not through libztensor).
std::string xxh3_digest(std::span<const uint8_t> bytes);    // "xxh3:<16 hex>"
std::string sha256_digest(std::span<const uint8_t> bytes);  // "sha256:<64 hex>"

// A .zt file under construction. `data` holds the header and the blobs
// placed so far; `manifest` starts as {"version": "1.2.0", "objects": {}}.
class FileBuilder {
 public:
  explicit FileBuilder(std::string version = "1.2.0");

  // Zero-pads `data` to the next multiple of 64, appends the bytes, and
  // returns their offset.
  uint64_t add_blob(std::span<const uint8_t> bytes);
  // A component stored raw: {"dtype", "offset", "length"}.
  Json raw(std::string_view dtype, std::span<const uint8_t> bytes);
  // A component stored as zstd: {"dtype", "offset", "length", "encoding":
  // "zstd", "uncompressed_length"}.
  Json zstd(std::string_view dtype, std::span<const uint8_t> bytes, bool content_size = true);

  // Sets manifest["objects"][name] and returns it.
  Json& object(const std::string& name, std::string_view format, const std::vector<uint64_t>& shape,
               Json components);
  // A dense object whose one component "data" is stored raw.
  Json& dense(const std::string& name, std::string_view dtype, const std::vector<uint64_t>& shape,
              std::span<const uint8_t> bytes);
  // manifest["objects"][object]["components"][role].
  Json& component(const std::string& object, const std::string& role);

  // The whole file: data, padding to 64, CBOR of `manifest`, size, footer.
  Bytes build() const;
  // The same around manifest bytes given as they are.
  Bytes build(std::span<const uint8_t> manifest_cbor) const;
  // Offset at which build() puts the manifest.
  uint64_t manifest_offset() const;

  Bytes data;
  Json manifest;
};

// The CBOR of j in core deterministic encoding (cbor::canonical_encoding):
// what a v2 manifest must be.
Bytes cbor_v2(const Json& j);

// A zTensor v2 file under construction (v2 spec §2): magic, zeros to 4096,
// blobs at multiples of 4096; `manifest` starts as {"objects": {}}.
class FileBuilderV2 {
 public:
  FileBuilderV2();

  // Zero-pads `data` to the next multiple of 4096, appends the bytes, and
  // returns their offset.
  uint64_t add_blob(std::span<const uint8_t> bytes);
  // A raw part: {"dtype", "blob": [offset, length]}.
  Json raw(std::string_view dtype, std::span<const uint8_t> bytes);
  Json& object(const std::string& name, std::string_view layout, const std::vector<uint64_t>& shape,
               Json parts);
  // A dense object whose one part "data" is stored raw.
  Json& dense(const std::string& name, std::string_view dtype, const std::vector<uint64_t>& shape,
              std::span<const uint8_t> bytes);
  // manifest["objects"][object]["parts"][role].
  Json& part(const std::string& object, const std::string& role);

  // data, padding to 4096, the deterministic CBOR of `manifest`, the footer
  // with its XXH3-64.
  Bytes build() const;
  // The same around manifest bytes given as they are.
  Bytes build(std::span<const uint8_t> manifest_cbor) const;
  uint64_t manifest_offset() const;

  Bytes data;
  Json manifest;
};

// Header + `body` + manifest + size + footer, with a size field that may lie.
Bytes assemble(std::span<const uint8_t> body, std::span<const uint8_t> manifest,
               std::optional<uint64_t> size_field = std::nullopt);

// RAII reader handle.
struct ReaderCloser {
  void operator()(zt_reader* r) const { zt_close(r); }
};
using ReaderPtr = std::unique_ptr<zt_reader, ReaderCloser>;

// The outcome of one open call: status, zt_last_error() right after it, and
// the reader on success.
struct Opened {
  zt_status status = ZT_OK;
  std::string error;
  ReaderPtr reader;
  zt_reader* get() const { return reader.get(); }
};

// zt_open_memory over `file`, which must outlive the reader.
Opened open_memory(const Bytes& file);

// A file in the temporary directory, removed on destruction.
class TempFile {
 public:
  explicit TempFile(std::span<const uint8_t> contents);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A fresh directory in the temporary directory, named `prefix` and six
// random characters, removed with all it holds on destruction (a fixture
// holds one: a directory of its own for each test).
class TempDir {
 public:
  explicit TempDir(std::string_view prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// zt_open_ex on a file (opt NULL: defaults).
Opened open_file(const TempFile& f, const zt_open_options* opt = nullptr);

// Success when opening `file` from memory gives `want` and, if `message` is
// not empty, zt_last_error() contains every one of the `message` parts.
testing::AssertionResult OpensWith(const Bytes& file, zt_status want,
                                   std::initializer_list<std::string_view> message = {});
// Success when `got` is `want` and zt_last_error() contains every part.
testing::AssertionResult FailsWith(zt_status got, zt_status want,
                                   std::initializer_list<std::string_view> message = {});

// The index of object `name` (fails the test if absent, returning SIZE_MAX).
size_t object_index(const zt_reader* r, const char* name);

// zt_component_map's bytes as a vector (empty on failure; check the status).
struct Mapped {
  zt_status status = ZT_OK;
  const void* ptr = nullptr;
  Bytes bytes;
};
Mapped map_component(const zt_reader* r, const char* object, const char* role);

// One zt_decode_many request for component `role` of object `object` into
// dst (on 2 threads); the request as it came back (status, written).
zt_decode_request decode_one(const zt_reader* r, size_t object, const char* role,
                             std::span<uint8_t> dst);

// Under valgrind or AddressSanitizer, memory freed is not given back (their
// allocators keep it, quarantined): resident sizes say nothing there.
bool freed_memory_is_kept();

// A field of /proc/self/status in KiB (VmRSS, VmHWM), 0 if absent.
unsigned long long status_kib(const char* field);

// Runs `body` in a forked child, which ends with std::_Exit (0: passed;
// its stderr says why not), and expects it to pass.
void expect_child_passes(const std::function<void()>& body);

}  // namespace zt::test
