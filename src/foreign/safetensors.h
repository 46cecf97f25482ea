// safetensors: an 8-byte little-endian header length, a JSON header
// ({"__metadata__": {str: str}, name: {"dtype", "shape", "data_offsets"}}),
// then the tensor bytes. The header is parsed with nlohmann-json after the
// checks that made other readers crash: header length within the file and
// under 100 MB, bounded nesting, offsets inside the data area, no two
// tensors sharing bytes, shape x dtype equal to each byte span.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "foreign/foreign.h"
#include "write/output_file.h"

namespace zt::foreign {

// Tensors become dense objects in file order; __metadata__ becomes the file
// attributes. F8_E4M3 -> u8 + f8_e4m3fn, F8_E5M2 -> u8 + f8_e5m2,
// F8_E8M0 -> u8 + f8_e8m0fnu, C64 -> f32 + complex64, F4 -> u8 + f4_e2m1
// (packed two a byte, the shape counting values, as v2's type); the 6-bit
// F6_E2M3 / F6_E3M2, packed across bytes, are refused.
Result<ForeignFile> read_safetensors(const std::string& path);
// The same over a remote file: the header is fetched (one read when it fits
// the first kSafetensorsOpenBytes, which an open can bring: see
// open_safetensors_remote), every tensor stays remote
// (ForeignComponent::remote).
constexpr uint64_t kSafetensorsOpenBytes = uint64_t{64} << 10;
Result<ForeignFile> read_safetensors_remote(std::shared_ptr<const RangeCache> src);

// The safetensors dtype of a zTensor dtype and logical type, if it has one.
std::optional<std::string_view> safetensors_dtype(DType dtype,
                                                  const std::optional<std::string>& type);

struct SafetensorsEntry {
  std::string name;
  std::string_view dtype;  // a safetensors dtype name
  std::vector<uint64_t> shape;
  uint64_t nbytes = 0;
};

// The safetensors tensor of a dense zTensor object, if safetensors can hold
// it: its dtype and shape (1.2's f4_e2m1fn_x2 pairs become F4 values, the
// last dimension doubled), the bytes unchanged.
std::optional<SafetensorsEntry> safetensors_entry(std::string_view name, DType dtype,
                                                  const std::optional<std::string>& type,
                                                  std::span<const uint64_t> shape, uint64_t nbytes);

// The entry of a tensor `name` of safetensors dtype `dtype` (by its name)
// and `shape`, its byte size computed; nullopt for an unknown dtype, a size
// that overflows 64 bits, or packed values (F4) that do not fill whole bytes.
std::optional<SafetensorsEntry> safetensors_tensor(std::string_view name, std::string_view dtype,
                                                   std::span<const uint64_t> shape);

// The order in which the safetensors library writes a file's tensors
// (safetensors' serialize: dtypes in descending order of its Dtype enum,
// then names bytewise), which every checkpoint written through it has: a
// strict weak order for std::sort.
bool safetensors_writes_before(const SafetensorsEntry& a, const SafetensorsEntry& b);

// Receives one tensor's bytes in pieces.
using ByteSink = std::function<Result<void>(std::span<const uint8_t>)>;

// Writes a safetensors file atomically: __metadata__ first (when not
// empty), tensors in the given order, the header padded with spaces to a
// multiple of 8 bytes. write_tensor(i, sink) must deliver exactly
// entries[i].nbytes bytes.
Result<void> write_safetensors(
    const std::string& path, const std::vector<std::pair<std::string, std::string>>& metadata,
    const std::vector<SafetensorsEntry>& entries,
    const std::function<Result<void>(size_t, const ByteSink&)>& write_tensor);
// The same, written but not yet in place: the caller publishes it together
// with the other files of a model (write_safetensors publishes at once).
Result<OutputFile> write_safetensors_unpublished(
    const std::string& path, const std::vector<std::pair<std::string, std::string>>& metadata,
    const std::vector<SafetensorsEntry>& entries,
    const std::function<Result<void>(size_t, const ByteSink&)>& write_tensor);

}  // namespace zt::foreign
