// Content rules that need decoded data bytes (zt_verify): bool bytes are
// 0/1, CSR indptr/indices structure, COO coordinates in range,
// quantized_group sizes against bits, group_size and packing.
#pragma once

#include <cstdint>
#include <span>

#include "error.h"
#include "manifest.h"

namespace zt {

// `decoded[k]` holds the decoded bytes of o.components[k].
Result<void> check_content(const cbor::Document& doc, bool legacy, const Object& o,
                           std::span<const std::span<const uint8_t>> decoded);

// Index element k of an integer component as a signed 128-bit value.
__int128 load_index(std::span<const uint8_t> bytes, DType dtype, uint64_t k);

}  // namespace zt
