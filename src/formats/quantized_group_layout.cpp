#include "formats/quantized_group_layout.h"

#include <algorithm>
#include <charconv>

#include "cbor/cbor_item.h"
#include "read/validate.h"

namespace zt {

namespace {

using ull = unsigned long long;

// The value of attribute `key` (its first head only: a container's items are
// never read), or nullopt when the object has no such attribute.
Result<std::optional<cbor::Scalar>> attr(const Object& o, std::string_view key) {
  if (!o.attributes.present) return std::optional<cbor::Scalar>();
  auto v = cbor::find_entry(o.attributes.encoded, key);
  ZT_TRY(v);
  if (!*v) return std::optional<cbor::Scalar>();
  auto s = cbor::scalar(**v);
  ZT_TRY(s);
  return std::optional<cbor::Scalar>(std::move(*s));
}

std::optional<uint64_t> as_uint(const cbor::Scalar& n) {
  if (n.kind == cbor::Kind::uint) return n.u;
  if (n.kind == cbor::Kind::float_ && n.f >= 0 && n.f < 1e18 &&
      n.f == static_cast<double>(static_cast<uint64_t>(n.f)))
    return static_cast<uint64_t>(n.f);
  return std::nullopt;
}

bool is_minus_one(const cbor::Scalar& n) {
  return (n.kind == cbor::Kind::negint && n.u == 0) ||
         (n.kind == cbor::Kind::float_ && n.f == -1.0);
}

}  // namespace

Result<QuantLayout> quant_layout(const Object& o) {
  const std::string w = "object \"" + o.name + "\"";
  std::optional<cbor::Scalar> found[3];
  const char* const keys[3] = {"bits", "group_size", "packing"};
  for (size_t i = 0; i < 3; ++i) {
    auto a = attr(o, keys[i]);
    ZT_TRY(a);
    ZT_FAIL_IF(!*a, not_found, "%s: quantized_group needs the attribute \"%s\"", w.c_str(),
               keys[i]);
    found[i] = std::move(*a);
  }
  QuantLayout q;
  const auto bits = as_uint(*found[0]);
  ZT_FAIL_IF(!bits || *bits < 1 || *bits > 16, invalid,
             "%s: attribute \"bits\" must be an integer from 1 to 16", w.c_str());
  q.bits = static_cast<unsigned>(*bits);
  const auto gs = as_uint(*found[1]);
  const bool per_channel = !gs && is_minus_one(*found[1]);
  ZT_FAIL_IF(!per_channel && (!gs || *gs == 0), invalid,
             "%s: attribute \"group_size\" must be a positive integer, or -1 for one group over "
             "the input dimension",
             w.c_str());
  ZT_FAIL_IF(found[2]->kind != cbor::Kind::text, invalid,
             "%s: attribute \"packing\" must be a string", w.c_str());
  q.packing = std::string(found[2]->str);
  const Component* pw = o.find("packed_weight");
  ZT_FAIL_IF(!pw, invalid, "%s: quantized_group requires component \"packed_weight\"", w.c_str());
  ZT_FAIL_IF(!dtype_is_integer(pw->dtype), invalid,
             "%s: packed_weight dtype \"%s\" is not an integer type", w.c_str(),
             std::string(dtype_name(pw->dtype)).c_str());
  const unsigned word_bits = pw->width() * 8;
  if (q.packing == "bitstream") {
    q.bitstream = true;
  } else {
    const size_t us = q.packing.find("_per_");
    unsigned vpe = 0;
    const bool parsed =
        us != std::string::npos &&
        std::from_chars(q.packing.data(), q.packing.data() + us, vpe).ptr == q.packing.data() + us;
    ZT_FAIL_IF(!parsed || vpe == 0, invalid,
               "%s: packing \"%s\" is not \"<n>_per_<dtype>\" or \"bitstream\"", w.c_str(),
               q.packing.c_str());
    const std::string_view word = std::string_view(q.packing).substr(us + 5);
    ZT_FAIL_IF(word != dtype_name(pw->dtype), invalid,
               "%s: packing \"%s\" does not match packed_weight dtype \"%s\"", w.c_str(),
               q.packing.c_str(), std::string(dtype_name(pw->dtype)).c_str());
    ZT_FAIL_IF(static_cast<uint64_t>(vpe) * q.bits > word_bits, invalid,
               "%s: packing \"%s\" puts %u fields of %u bits in a %u-bit word", w.c_str(),
               q.packing.c_str(), vpe, q.bits, word_bits);
    q.values_per_word = vpe;
  }
  ZT_FAIL_IF(o.shape.empty(), invalid, "%s: quantized_group needs a shape of rank 1 or more",
             w.c_str());
  q.k = o.shape.back();
  const auto n = shape_product(std::span<const uint64_t>(o.shape).first(o.shape.size() - 1));
  ZT_FAIL_IF(!n, invalid, "%s: shape overflows", w.c_str());
  q.n = *n;
  // GPTQ writes group_size -1 for per-channel quantisation: one group
  // spanning all of K (g = K; an empty K has no groups).
  q.group_size = per_channel ? std::max<uint64_t>(q.k, 1) : *gs;
  q.groups = ceil_div(q.k, q.group_size);
  // K * bits is a claim of the shape: checked, since a wrapped product would
  // describe fewer words than the rows it promises.
  const auto column_bits = checked_mul(q.k, q.bits);
  ZT_FAIL_IF(!column_bits, invalid, "%s: input dimension K = %llu times %u bits overflows 64 bits",
             w.c_str(), static_cast<unsigned long long>(q.k), q.bits);
  const uint64_t words_per_column =
      q.bitstream ? ceil_div(*column_bits, word_bits) : ceil_div(q.k, q.values_per_word);
  const auto packed = checked_mul(words_per_column, q.n);
  ZT_FAIL_IF(!packed, invalid, "%s: shape overflows", w.c_str());
  q.packed_count = *packed;
  return q;
}

Result<void> check_quantized_layout(const Object& o,
                                    std::span<const std::span<const uint8_t>> decoded) {
  auto q = quant_layout(o);
  if (!q && q.error().status == Status::not_found) return {};
  ZT_TRY(q);
  std::vector<uint64_t> sizes;
  for (const auto& d : decoded) sizes.push_back(d.size());
  return check_quantized_sizes(o, *q, sizes);
}

Result<void> check_quantized_sizes(const Object& o, const QuantLayout& q,
                                   std::span<const uint64_t> sizes) {
  auto count = [&](std::string_view role, uint64_t* n) -> const Component* {
    for (size_t k = 0; k < o.components.size(); ++k)
      if (o.components[k].role == role) {
        *n = sizes[k] / o.components[k].width();
        return &o.components[k];
      }
    return nullptr;
  };
  const std::string w = "object \"" + o.name + "\"";
  uint64_t np = 0, ns = 0, nz = 0;
  const Component* pc = count("packed_weight", &np);
  const Component* sc = count("scales", &ns);
  const Component* zc = count("zeros", &nz);
  ZT_FAIL_IF(!pc || !sc || !zc, invalid,
             "%s: quantized_group requires packed_weight, scales and zeros", w.c_str());
  ZT_FAIL_IF(np != q.packed_count, invalid,
             "%s: packed_weight has %llu elements; shape, bits %u and packing \"%s\" need %llu",
             w.c_str(), static_cast<ull>(np), q.bits, q.packing.c_str(),
             static_cast<ull>(q.packed_count));
  const auto want_groups = checked_mul(q.groups, q.n);
  ZT_FAIL_IF(!want_groups, invalid, "%s: group count overflows", w.c_str());
  ZT_FAIL_IF(!dtype_is_float(sc->dtype), invalid, "%s: scales dtype \"%s\" is not a float type",
             w.c_str(), std::string(dtype_name(sc->dtype)).c_str());
  ZT_FAIL_IF(ns != *want_groups, invalid,
             "%s: scales has %llu elements; %llu groups x %llu columns need %llu", w.c_str(),
             static_cast<ull>(ns), static_cast<ull>(q.groups), static_cast<ull>(q.n),
             static_cast<ull>(*want_groups));
  const bool zeros_ok = nz == *want_groups || (dtype_is_integer(zc->dtype) && !q.bitstream &&
                                               nz == q.groups * ceil_div(q.n, q.values_per_word));
  ZT_FAIL_IF(!zeros_ok, invalid,
             "%s: zeros has %llu elements; %llu groups x %llu columns need %llu (or packed)",
             w.c_str(), static_cast<ull>(nz), static_cast<ull>(q.groups), static_cast<ull>(q.n),
             static_cast<ull>(*want_groups));
  // Packed zero-points share the weights' vpe and bits but sit in words of
  // the zeros' own dtype.
  ZT_FAIL_IF(
      nz != *want_groups && static_cast<uint64_t>(q.values_per_word) * q.bits > zc->width() * 8u,
      invalid, "%s: zeros packed %u per word need %u bits, a %s word has %u", w.c_str(),
      q.values_per_word, q.values_per_word * q.bits, std::string(dtype_name(zc->dtype)).c_str(),
      zc->width() * 8);
  return {};
}

}  // namespace zt
