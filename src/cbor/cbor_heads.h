// Internal to src/cbor: the heads of encoded CBOR, one at a time.
//
// HeadReader walks an encoded item head by head with libcbor's streaming
// decoder (cbor_stream_decode, one head per call), working around the heads
// libcbor 0.8 refuses (unassigned_head). It is the one place that turns
// bytes into heads for the functions that read items in place
// (cbor_item.cpp) and for the deterministic-encoding check
// (deterministic.cpp); what each does with the heads is its own business.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/error.h"
#include "cbor/cbor_value.h"

// Binds the value of a Result<T> expression to `var`, or returns its error.
#define ZT_ITEM_LET(var, expr) ZT_ITEM_LET_(var, expr, ZT_CAT(zt_item_r_, __COUNTER__))
#define ZT_ITEM_LET_(var, expr, tmp)            \
  auto tmp = (expr);                            \
  if (!tmp.ok()) return std::move(tmp).error(); \
  auto& var = tmp.value()

namespace zt::cbor {

enum class HeadType : uint8_t {
  value,         // a scalar, a definite string or the head of an array or map
  tag,           // a tag head
  brk,           // the break byte 0xFF
  string_start,  // the head of an indefinite-length string (kind text or bytes)
};

// One head as libcbor's streaming decoder reports it, or, from
// HeadReader::item, one item's first head after its tags.
struct Head {
  HeadType type = HeadType::value;
  Kind kind = Kind::null;
  uint64_t u = 0;  // uint, negint (-1 - u), simple value, container count, tag number
  double f = 0;
  bool flag = false;
  bool indefinite = false;  // array, map or string of indefinite length
  std::string_view str;     // text or bytes
  size_t start = 0;         // offset of the item's first byte (its first tag)
};

inline bool is_container(Kind k) {
  return k == Kind::array || k == Kind::map;
}

// Whether IEEE binary16 / binary32 holds v exactly (infinities do; NaN
// does not): which float heads a deterministic encoding may use for v.
bool fits_half(double v);
bool fits_single(double v);

// Whether the encoded map key a sorts strictly before the encoded key b
// (bytewise, a shorter prefix first): the deterministic key order.
bool sorts_before(std::span<const uint8_t> a, std::span<const uint8_t> b);

class HeadReader {
 public:
  explicit HeadReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  size_t pos() const { return pos_; }
  size_t left() const { return bytes_.size() - pos_; }
  std::span<const uint8_t> bytes() const { return bytes_; }

  // The next head, whatever it is; Status::format when the bytes there are
  // truncated or not a well-formed head. Text is not checked here.
  Result<Head> head();

  // The next item's first head: tags skipped, an indefinite-length string
  // read to its break (joined into *joined unless that is null), text
  // checked to be UTF-8. A break is returned only when allow_break.
  Result<Head> item(std::string* joined, bool allow_break);

 private:
  Result<void> join(Head& h, std::string* joined);

  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

}  // namespace zt::cbor
