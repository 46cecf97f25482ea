// Content rules that need decoded data bytes (zt_verify): bool bytes are
// 0/1, CSR indptr/indices structure, COO coordinates in range,
// quantized_group sizes against bits, group_size and packing.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "base/error.h"
#include "container/generation.h"
#include "manifest/manifest.h"

namespace zt {

// `decoded[k]` holds the decoded bytes of o.components[k].
Result<void> check_content(bool legacy, const Object& o,
                           std::span<const std::span<const uint8_t>> decoded);

// Bool bytes are 0 or 1; `bytes` are elements [first, first + size) of c,
// so a window of a streamed component names the element it failed at.
Result<void> check_bool(const Object& o, const Component& c, std::span<const uint8_t> bytes,
                        uint64_t first = 0);

// Bool bytes handed out as values (the dense view, converting calls, row
// slices), checked as zt_verify checks them: in every generation but those
// that read any non-zero byte as true (lenient_bools: 0.1, 1.0).
Result<void> check_bool_values(Generation g, const Object& o, const Component& c,
                               std::span<const uint8_t> bytes, uint64_t first = 0);

// The value count of a packed part (f4_e2m1) when the layout gives it (the
// format's values_in); nullopt otherwise.
std::optional<uint64_t> packed_value_count(const Object& o, const Component& c);

// f4_e2m1 (v2 Appendix A): with an odd value count n, the high nibble of
// the last byte is 0. `last` is the part's last decoded byte. Status::invalid.
Result<void> check_f4_tail(const Object& o, const Component& c, uint64_t n, uint8_t last);

// Whether the object's content rules need whole decoded components (sparse
// structure, quantized sizes). Other objects are verified a window at a time.
bool content_needs_whole_components(const Object& o);

// Index element k of an integer component as a signed 128-bit value.
__int128 load_index(std::span<const uint8_t> bytes, DType dtype, uint64_t k);

}  // namespace zt
