// zt_verify's deep check (Reader::verify): every shard file hashed against
// the shard table, every component decoded (a window at a time where the
// format's content rules allow) and its digest checked, the content rules
// that open leaves to the data bytes run.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "codec/digest.h"
#include "manifest/object_format.h"
#include "read/content.h"
#include "read/reader.h"
#include "read/validate.h"

namespace zt {

using ull = unsigned long long;

Result<void> Reader::verify_shards(VerifyReport& rep) const {
  for (size_t i = 0; i < manifest_.shards.size(); ++i) {
    const Shard& shard = manifest_.shards[i];
    auto src = shard_source(i);
    ZT_TRY(src);
    const ParsedDigest want = parse_digest(shard.digest);
    Hasher h(want.algo);
    constexpr uint64_t kPiece = uint64_t{4} << 20;
    std::vector<uint8_t> scratch;
    for (uint64_t at = 0; at < (*src)->size(); at += kPiece) {
      auto piece = (*src)->bytes(at, std::min(kPiece, (*src)->size() - at), scratch);
      ZT_TRY(piece);
      h.update(*piece);
    }
    const std::string got = h.finish_hex();
    ZT_FAIL_IF(got != want.hex, digest,
               "shard \"%s\" (%s): %s digest mismatch: the file hashes to %s, the shard table "
               "says %s",
               shard.name.c_str(), shard_path(i).c_str(),
               std::string(digest_algo_name(want.algo)).c_str(), got.c_str(), want.hex.c_str());
    ++rep.shards;
  }
  return {};
}

Result<VerifyReport> Reader::verify() const {
  VerifyReport rep;
  ZT_TRY(verify_shards(rep));
  for (size_t i = 0; i < manifest_.objects.size(); ++i) ZT_TRY(verify_object(i, rep));
  return rep;
}

Result<uint64_t> Reader::verify_streamed(size_t object, size_t component, Hasher* hash) const {
  const Object& o = manifest_.objects[object];
  const Component& c = o.components[component];
  const bool bools = c.holds_bools() && !lenient_bools(manifest_.generation);
  const auto packed = packed_value_count(o, c);
  auto windows = this->windows(object, component);
  ZT_TRY(windows);
  uint64_t at = 0;
  uint8_t last = 0;
  for (;;) {
    auto w = (*windows)->next();
    ZT_TRY(w);
    if (w->empty()) {
      if (packed && at > 0) ZT_TRY(check_f4_tail(o, c, *packed, last));
      return at;
    }
    last = w->back();
    if (bools) ZT_TRY(check_bool(o, c, *w, at));
    if (hash) hash->update(*w);
    at += w->size();
  }
}

Result<void> Reader::verify_object(size_t object, VerifyReport& rep) const {
  ZT_FAIL_IF(object >= manifest_.objects.size(), not_found, "object index %zu is out of range",
             object);
  const Object& o = manifest_.objects[object];
  // Objects whose content rules need whole components (sparse, quantized)
  // are decoded whole; every other object is checked a window at a time.
  const bool whole = content_needs_whole_components(o);
  std::vector<uint8_t> scratch;
  std::vector<GrowingBytes> owned(o.components.size());
  std::vector<std::span<const uint8_t>> decoded(o.components.size());
  for (size_t k = 0; k < o.components.size(); ++k) {
    const Component& c = o.components[k];
    const ParsedDigest d = c.digest ? parse_digest(*c.digest) : ParsedDigest{DigestAlgo::none, {}};
    // v2 digests cover the decoded bytes: those of an encoded part are
    // hashed as they are decoded below.
    std::optional<Hasher> over_decoded;
    if (d.algo == DigestAlgo::none || d.algo == DigestAlgo::unknown) {
      ++rep.unchecked;
      if (d.algo == DigestAlgo::unknown) ++rep.unknown_algorithm;
    } else if (manifest_.digests_cover_decoded && c.encoding != Encoding::raw) {
      over_decoded.emplace(d.algo);
    } else {
      auto st = stored(o, c, scratch);
      ZT_TRY(st);
      ZT_TRY(check_digest(o, c, d, digest_hex(d.algo, *st), rep));
    }
    if (!o.unsupported.empty()) continue;  // its digests are checked, then it is refused below
    if (!whole) {
      auto size = verify_streamed(object, k, over_decoded ? &*over_decoded : nullptr);
      ZT_TRY(size);
      ZT_TRY(check_whole_elements(o, c, *size));
      ++rep.components, rep.decoded_bytes += *size;
    } else if (const auto in_place = mapped_in_place(c); !in_place) {
      return std::move(in_place).error();
    } else if (*in_place) {
      decoded[k] = mapped_bytes(**source_of(c), c);
      ++rep.components, rep.decoded_bytes += c.length;
    } else {
      // Decode without filling the cache, so verify's memory stays bounded
      // by one object.
      auto bytes = decode(object, k);
      ZT_TRY(bytes);
      owned[k] = std::move(*bytes);
      decoded[k] = owned[k].bytes();
      ZT_TRY(check_whole_elements(o, c, decoded[k].size()));
      ++rep.components, rep.decoded_bytes += decoded[k].size();
      if (over_decoded) over_decoded->update(decoded[k]);
    }
    if (over_decoded) ZT_TRY(check_digest(o, c, d, over_decoded->finish_hex(), rep));
  }
  // A file passes verify only if every component can be read.
  ZT_FAIL_IF(!o.unsupported.empty(), unsupported, "%s", o.unsupported.c_str());
  if (!whole) return {};  // its bool bytes were checked window by window
  return check_content(lenient_bools(manifest_.generation), o, decoded);
}

}  // namespace zt
