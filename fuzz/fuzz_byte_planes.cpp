// libFuzzer target: the libztensor.byte_planes/1 codec (src/codec/byte_planes.h)
// on its own, below the file format, so that every input reaches the index
// and frame decoders instead of first having to be a valid v2 file.
//
// Input: control bytes, then data.
//   [0]     bit 0: round trip (else decode a hostile stream); bits 1-2: the
//           width (1, 2, 4, 8); bit 3: no sign rotation; bits 4-7: the
//           frame size in elements for a round trip (1 + that, times 16)
//   [1..3]  the decoded length the stream is read against (20 bits, little-
//           endian: memory stays bounded by the claim, at most 1 MiB)
//   then    the stream (decode) or the bytes to encode (round trip)
// Invariants: decoding never writes outside its destination (ASan), a
// stream that decodes gives the same bytes on one thread, on four and
// frame by frame, and any whole elements encode to a stream that checks
// and decodes back to them.
#include <cstdint>
#include <string>
#include <vector>

#include "codec/byte_planes.h"
#include "fuzz_support.h"

namespace {

using namespace zt::fuzz;

std::string detail(const zt::Error& e) {
  return e.message;
}

void decode_hostile(const std::vector<uint8_t>& stream, uint64_t length) {
  std::vector<uint8_t> one(length), four(length);
  auto a = zt::byte_planes_decode(stream, one, "fuzz", 1);
  auto b = zt::byte_planes_decode(stream, four, "fuzz", 4);
  FUZZ_CHECK(static_cast<bool>(a) == static_cast<bool>(b),
             a ? detail(b.error()) : detail(a.error()));
  if (!a) {
    FUZZ_CHECK(a.error().status == b.error().status, detail(a.error()) + " / " + detail(b.error()));
    return;
  }
  FUZZ_CHECK(one == four, "one thread and four decode different bytes");
  auto index = zt::byte_planes_index(stream, length, "fuzz");
  FUZZ_CHECK(static_cast<bool>(index), "decoded, but the index is refused");
  std::vector<uint8_t> framewise(length);
  uint64_t at = 0;
  for (size_t k = 0; k < index->frames.size(); ++k) {
    const uint64_t n = index->frames[k].decoded;
    FUZZ_CHECK(at + n <= length, "frames decode past the length");
    auto r = zt::byte_planes_decode_frame(zt::byte_planes_frame(stream, *index, k), *index, k,
                                          std::span<uint8_t>(framewise).subspan(at, n), "fuzz");
    FUZZ_CHECK(static_cast<bool>(r), "frame " + std::to_string(k) + ": " + detail(r.error()));
    at += n;
  }
  FUZZ_CHECK(at == length, "the frames do not cover the length");
  FUZZ_CHECK(framewise == one, "frame by frame decodes different bytes");
}

void round_trip(std::vector<uint8_t> raw, uint8_t control) {
  zt::PlanesLayout layout;
  layout.width = static_cast<uint8_t>(1u << ((control >> 1) & 3));
  layout.rotate_sign = layout.width > 1 && !(control & 8);
  layout.frame_bytes = static_cast<uint32_t>(layout.width * 16u * (1u + (control >> 4)));
  raw.resize(raw.size() / layout.width * layout.width);
  std::vector<uint8_t> stream;
  auto e = zt::byte_planes_encode(raw, layout, 3, stream);
  FUZZ_CHECK(static_cast<bool>(e), detail(e.error()));
  std::vector<uint8_t> back(raw.size());
  auto d = zt::byte_planes_decode(stream, back, "fuzz", 2);
  FUZZ_CHECK(static_cast<bool>(d), detail(d.error()));
  FUZZ_CHECK(back == raw, "a round trip changed the bytes");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteReader in(data, size);
  const uint8_t control = in.u8();
  const uint64_t length = in.u8() | (uint64_t{in.u8()} << 8) | (uint64_t{in.u8() & 0x0Fu} << 16);
  std::vector<uint8_t> rest = in.bytes(in.remaining());
  if (control & 1)
    round_trip(std::move(rest), control);
  else
    decode_hostile(rest, length);
  return 0;
}
