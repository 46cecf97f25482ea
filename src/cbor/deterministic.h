// The Core Deterministic Encoding of RFC 8949 §4.2.1, checked on the bytes.
//
// zTensor v2 requires its manifest in that encoding (v2 spec §3.1) so that
// one model has one manifest: a decoder that accepted two encodings of the
// same map would accept, for instance, two NaN-payload keys as distinct
// keys. The check runs on the encoded bytes before anything is decoded,
// because a decoded tree no longer shows how a value was written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/error.h"

namespace zt::cbor {

// OK when `bytes` is exactly one CBOR item in core deterministic encoding:
//  - every head (integer, length, count, tag) in its shortest form;
//  - definite lengths only (no indefinite string, array or map);
//  - the keys of every map strictly increasing in the bytewise order of
//    their encodings (so no key is repeated);
//  - every float in the shortest of half, single and double precision that
//    holds its value exactly, and NaN only as 0xF9 0x7E 0x00;
//  - text valid UTF-8; no bytes after the item.
// Arrays and maps may nest at most max_depth deep, the outermost container
// being level 1 (tags do not count). Each violation is Status::format with
// the rule and the byte offset. Memory is one small frame per level; time is
// linear in the size.
Result<void> check_deterministic(std::span<const uint8_t> bytes, unsigned max_depth);

// OK when the item (well-formed, as check_deterministic leaves it) holds
// only the value types v2 permits in attributes (v2 spec §3.1): integers,
// text, bytes, booleans, null, floats, arrays and maps. A tag, undefined or
// any other simple value is Status::invalid, naming its byte offset within
// the item.
Result<void> check_plain_values(std::span<const uint8_t> item);

}  // namespace zt::cbor
