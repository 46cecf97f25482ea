#include "formats/profile_rules.h"

#include <utility>

#include "cbor/cbor_item.h"
#include "read/content.h"
#include "views/kernels.h"

namespace zt {

std::string layout_where(const Object& o) {
  return object_where(o) + ": layout \"" + o.layout + "\"";
}

Result<void> check_part_size(const Object& o, const Component& c, std::optional<uint64_t> want,
                             const char* equation) {
  const auto got = decoded_size(c);
  if (!got) return {};
  ZT_FAIL_IF(!want, invalid, "%s: part \"%s\": %s overflows 64 bits", layout_where(o).c_str(),
             c.role.c_str(), equation);
  ZT_FAIL_IF(*got != *want, invalid, "%s: part \"%s\" has %llu bytes; %s = %llu",
             layout_where(o).c_str(), c.role.c_str(), static_cast<unsigned long long>(*got),
             equation, static_cast<unsigned long long>(*want));
  return {};
}

template <typename T>
Result<void> element_values(const Reader& r, size_t object, const Component& data,
                            const NumericFormat& f, uint64_t elements, uint64_t first,
                            std::span<T> dst) {
  const Object& o = r.manifest().objects[object];
  auto d = r.map(object, views::index_of(o, &data));
  ZT_TRY(d);
  ZT_FAIL_IF(d->size() != value_bytes(f, elements), invalid,
             "%s: %zu decoded bytes, %llu elements need %llu", component_where(o, data).c_str(),
             d->size(), static_cast<unsigned long long>(elements),
             static_cast<unsigned long long>(value_bytes(f, elements)));
  if (f.f4 && !d->empty()) ZT_TRY(check_f4_tail(o, data, elements, d->back()));
  if (f.f4)
    convert_f4_values(d->data(), first, dst.size(), dst.data());
  else
    convert_values(d->data() + first * data.width(), f, dst.size(), dst.data());
  return {};
}

template Result<void> element_values<float>(const Reader&, size_t, const Component&,
                                            const NumericFormat&, uint64_t, uint64_t,
                                            std::span<float>);
template Result<void> element_values<double>(const Reader&, size_t, const Component&,
                                             const NumericFormat&, uint64_t, uint64_t,
                                             std::span<double>);

std::optional<DType> word_dtype(std::string_view name) {
  for (const DType d : {DType::u8, DType::u16, DType::u32, DType::u64})
    if (dtype_name(d) == name) return d;
  return std::nullopt;
}

DType unsigned_of(DType d) {
  switch (d) {
    case DType::i8:
      return DType::u8;
    case DType::i16:
      return DType::u16;
    case DType::i32:
      return DType::u32;
    case DType::i64:
      return DType::u64;
    default:
      return d;
  }
}

ProfileAttributes::ProfileAttributes(const Object& o)
    : o_(&o), map_(o.attributes.present ? o.attributes.encoded : std::span<const uint8_t>()) {}

std::string ProfileAttributes::where(std::string_view key) const {
  return layout_where(*o_) + ": attribute \"" + path_ + std::string(key) + "\"";
}

Error ProfileAttributes::wrong_kind(std::string_view key, const char* want) const {
  return make_error(Status::invalid, "%s must be %s", where(key).c_str(), want);
}

Error ProfileAttributes::missing(std::string_view key) const {
  return make_error(Status::invalid, "%s is required by the profile", where(key).c_str());
}

Result<std::optional<std::span<const uint8_t>>> ProfileAttributes::item(
    std::string_view key) const {
  if (map_.empty()) return std::optional<std::span<const uint8_t>>();
  return cbor::find_entry(map_, key);
}

Result<std::optional<uint64_t>> ProfileAttributes::uint_(std::string_view key) const {
  auto v = item(key);
  ZT_TRY(v);
  if (!*v) return std::optional<uint64_t>();
  auto s = cbor::scalar(**v);
  ZT_TRY(s);
  if (s->kind != cbor::Kind::uint) return wrong_kind(key, "an unsigned integer");
  return std::optional<uint64_t>(s->u);
}

Result<std::optional<int64_t>> ProfileAttributes::int_(std::string_view key) const {
  auto v = item(key);
  ZT_TRY(v);
  if (!*v) return std::optional<int64_t>();
  auto s = cbor::scalar(**v);
  ZT_TRY(s);
  // A negint n is -1 - n; both kinds must fit int64 (docs/v2.md decision 19).
  constexpr uint64_t kMax = static_cast<uint64_t>(INT64_MAX);
  if ((s->kind != cbor::Kind::uint && s->kind != cbor::Kind::negint) || s->u > kMax)
    return wrong_kind(key, "an integer that fits in 64 signed bits");
  const auto n = static_cast<int64_t>(s->u);
  return std::optional<int64_t>(s->kind == cbor::Kind::uint ? n : -1 - n);
}

Result<std::optional<std::string>> ProfileAttributes::text(std::string_view key) const {
  auto v = item(key);
  ZT_TRY(v);
  if (!*v) return std::optional<std::string>();
  auto s = cbor::scalar(**v);
  ZT_TRY(s);
  if (s->kind != cbor::Kind::text) return wrong_kind(key, "text");
  return std::optional<std::string>(std::string(s->str));
}

Result<std::optional<ProfileAttributes>> ProfileAttributes::map(std::string_view key) const {
  auto v = item(key);
  ZT_TRY(v);
  if (!*v) return std::optional<ProfileAttributes>();
  auto s = cbor::scalar(**v);
  ZT_TRY(s);
  if (s->kind != cbor::Kind::map) return wrong_kind(key, "a map");
  return std::optional<ProfileAttributes>(
      ProfileAttributes(*o_, **v, path_ + std::string(key) + "."));
}

Result<std::optional<std::vector<uint64_t>>> ProfileAttributes::uint_list(std::string_view key,
                                                                          size_t max_items) const {
  auto v = item(key);
  ZT_TRY(v);
  if (!*v) return std::optional<std::vector<uint64_t>>();
  auto s = cbor::scalar(**v);
  ZT_TRY(s);
  if (s->kind != cbor::Kind::array) return wrong_kind(key, "an array of unsigned integers");
  std::vector<uint64_t> out;
  ZT_TRY(cbor::for_each_item(**v, [&](std::span<const uint8_t> one) -> Result<void> {
    if (out.size() == max_items)
      return make_error(Status::invalid, "%s has more than %zu items", where(key).c_str(),
                        max_items);
    auto x = cbor::scalar(one);
    ZT_TRY(x);
    if (x->kind != cbor::Kind::uint) return wrong_kind(key, "an array of unsigned integers");
    out.push_back(x->u);
    return {};
  }));
  return std::optional(std::move(out));
}

Result<uint64_t> ProfileAttributes::required_uint(std::string_view key) const {
  auto v = uint_(key);
  ZT_TRY(v);
  if (!*v) return missing(key);
  return **v;
}

Result<std::string> ProfileAttributes::required_text(std::string_view key) const {
  auto v = text(key);
  ZT_TRY(v);
  if (!*v) return missing(key);
  return std::move(**v);
}

Result<ProfileAttributes> ProfileAttributes::required_map(std::string_view key) const {
  auto v = map(key);
  ZT_TRY(v);
  if (!*v) return missing(key);
  return std::move(**v);
}

}  // namespace zt
