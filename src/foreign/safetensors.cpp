#include "foreign/safetensors.h"

#include <algorithm>
#include <array>
#include <unordered_set>

#include "base/json_text.h"
#include "base/zt_limits.h"
#include "container/container.h"
#include "manifest/manifest.h"
#include "write/output_file.h"

namespace zt::foreign {

using ull = unsigned long long;

namespace {

struct DTypeMap {
  std::string_view st;
  DType dtype;
  std::string_view type;  // "" for none
  // The dtype's place in the safetensors library's Dtype enum, by which its
  // writer orders a file's tensors (descending, then by name).
  int rank;
};

constexpr std::array<DTypeMap, 20> kDTypes = {{
    {"BOOL", DType::boolean, "", 0},
    {"U8", DType::u8, "", 4},
    {"I8", DType::i8, "", 5},
    {"U16", DType::u16, "", 12},
    {"I16", DType::i16, "", 11},
    {"U32", DType::u32, "", 16},
    {"I32", DType::i32, "", 15},
    {"U64", DType::u64, "", 21},
    {"I64", DType::i64, "", 20},
    {"F16", DType::f16, "", 13},
    {"BF16", DType::bf16, "", 14},
    {"F32", DType::f32, "", 17},
    {"F64", DType::f64, "", 19},
    {"F8_E4M3", DType::u8, "f8_e4m3fn", 7},
    {"F8_E5M2", DType::u8, "f8_e5m2", 6},
    {"F8_E8M0", DType::u8, "f8_e8m0fnu", 8},
    {"F8_E4M3FNUZ", DType::u8, "f8_e4m3fnuz", 9},  // safetensors >= 0.6; logical types of spec 1.2
    {"F8_E5M2FNUZ", DType::u8, "f8_e5m2fnuz", 10},
    {"C64", DType::f32, "complex64", 18},
    // Two E2M1 values a byte, low nibble first, the shape counting values:
    // v2's f4_e2m1 exactly (docs/cli.md, "FP4", says what a 1.2 file holds).
    // (F6_E2M3 and F6_E3M2, ranks 2 and 3, are not read.)
    {"F4", DType::u8, "f4_e2m1", 1},
}};

const DTypeMap* from_safetensors(std::string_view name) {
  for (const auto& m : kDTypes)
    if (m.st == name) return &m;
  return nullptr;
}

// The logical type of a safetensors dtype (nullptr: none), in v2's
// vocabulary (F4 is v2's f4_e2m1).
const LogicalType* logical_type(const DTypeMap& m) {
  return m.type.empty() ? nullptr : find_logical_type(m.type, true);
}

// A tensor's byte size (nullopt: it overflows 64 bits), and whether its
// values fill whole bytes (a packed type's odd count does not).
struct TensorBytes {
  std::optional<uint64_t> size;
  bool whole = true;
};

TensorBytes tensor_bytes(const DTypeMap& m, std::span<const uint64_t> shape) {
  const auto count = shape_product(shape);
  const LogicalType* lt = logical_type(m);
  TensorBytes b;
  b.size = count ? values_bytes(m.dtype, lt, *count) : std::nullopt;
  b.whole = !count || !lt || !lt->per_byte || *count % lt->per_byte == 0;
  return b;
}

bool is_uint(const nlohmann::json& j) {
  return j.is_number_unsigned();
}

struct Entry {
  std::string name;
  const DTypeMap* dtype = nullptr;
  std::vector<uint64_t> shape;
  uint64_t begin = 0, end = 0;
};

Result<Entry> parse_entry(const std::string& path, const std::string& name, const nlohmann::json& v,
                          uint64_t data_size) {
  const char* p = path.c_str();
  const char* n = name.c_str();
  ZT_FAIL_IF(name.empty(), invalid, "%s: a tensor has an empty name", p);
  ZT_FAIL_IF(!v.is_object(), invalid, "%s: tensor \"%s\": the header entry is not a JSON object", p,
             n);
  const auto dt = v.find("dtype");
  const auto shape = v.find("shape");
  const auto offs = v.find("data_offsets");
  ZT_FAIL_IF(dt == v.end() || !dt->is_string(), invalid,
             "%s: tensor \"%s\": \"dtype\" is missing or not a string", p, n);
  ZT_FAIL_IF(shape == v.end() || !shape->is_array(), invalid,
             "%s: tensor \"%s\": \"shape\" is missing or not an array", p, n);
  ZT_FAIL_IF(offs == v.end() || !offs->is_array() || offs->size() != 2 || !is_uint((*offs)[0]) ||
                 !is_uint((*offs)[1]),
             invalid,
             "%s: tensor \"%s\": \"data_offsets\" must be [begin, end] with non-negative integers",
             p, n);
  Entry e;
  e.name = name;
  const std::string dname = dt->get<std::string>();
  e.dtype = from_safetensors(dname);
  if (!e.dtype && dname.starts_with("F6_"))
    return make_error(Status::unsupported,
                      "%s: tensor \"%s\": dtype %s packs 6-bit elements across bytes; no zTensor "
                      "type holds them",
                      p, n, dname.c_str());
  ZT_FAIL_IF(!e.dtype, unsupported, "%s: tensor \"%s\": unknown safetensors dtype \"%s\"", p, n,
             dname.c_str());
  ZT_FAIL_IF(shape->size() > Limits::rank, limit,
             "%s: tensor \"%s\": %zu dimensions, more than the limit %u", p, n, shape->size(),
             Limits::rank);
  for (const auto& d : *shape) {
    ZT_FAIL_IF(!is_uint(d), invalid,
               "%s: tensor \"%s\": shape entries must be non-negative integers", p, n);
    e.shape.push_back(d.get<uint64_t>());
  }
  e.begin = (*offs)[0].get<uint64_t>();
  e.end = (*offs)[1].get<uint64_t>();
  ZT_FAIL_IF(e.begin > e.end, invalid,
             "%s: tensor \"%s\": data_offsets [%llu, %llu] end before they begin", p, n,
             static_cast<ull>(e.begin), static_cast<ull>(e.end));
  ZT_FAIL_IF(e.end > data_size, invalid,
             "%s: tensor \"%s\": data_offsets [%llu, %llu] go beyond the %llu bytes of data after "
             "the header",
             p, n, static_cast<ull>(e.begin), static_cast<ull>(e.end), static_cast<ull>(data_size));
  const auto count = shape_product(e.shape);
  const auto bytes = tensor_bytes(*e.dtype, e.shape);
  ZT_FAIL_IF(!count || !bytes.size, invalid,
             "%s: tensor \"%s\": the shape's byte size overflows 64 bits", p, n);
  // A packed type's values must fill whole bytes (safetensors refuses the rest too).
  ZT_FAIL_IF(!bytes.whole, invalid, "%s: tensor \"%s\": %llu %s elements do not fill whole bytes",
             p, n, static_cast<ull>(*count), dname.c_str());
  ZT_FAIL_IF(*bytes.size != e.end - e.begin, invalid,
             "%s: tensor \"%s\": shape x %s (%llu bytes) does not match its byte span [%llu, %llu) "
             "of %llu bytes",
             p, n, dname.c_str(), static_cast<ull>(*bytes.size), static_cast<ull>(e.begin),
             static_cast<ull>(e.end), static_cast<ull>(e.end - e.begin));
  return e;
}

}  // namespace

std::optional<std::string_view> safetensors_dtype(DType dtype,
                                                  const std::optional<std::string>& type) {
  // v2's bool is a type over u8 (1.2's a dtype): BOOL either way.
  if (dtype == DType::u8 && type == "bool") return "BOOL";
  for (const auto& m : kDTypes)
    if (m.dtype == dtype && (type ? m.type == *type : m.type.empty())) return m.st;
  return std::nullopt;
}

std::optional<SafetensorsEntry> safetensors_entry(std::string_view name, DType dtype,
                                                  const std::optional<std::string>& type,
                                                  std::span<const uint64_t> shape,
                                                  uint64_t nbytes) {
  SafetensorsEntry e;
  e.name = std::string(name);
  e.shape.assign(shape.begin(), shape.end());
  e.nbytes = nbytes;
  if (dtype == DType::u8 && type == kF4PairsType) {
    // torch's float4_e2m1fn_x2: a byte per pair, so F4's last dimension is twice it.
    if (e.shape.empty() || e.shape.back() > UINT64_MAX / 2) return std::nullopt;
    e.shape.back() *= 2;
    e.dtype = "F4";
    return e;
  }
  const auto st = safetensors_dtype(dtype, type);
  if (!st) return std::nullopt;
  e.dtype = *st;
  return e;
}

std::optional<SafetensorsEntry> safetensors_tensor(std::string_view name, std::string_view dtype,
                                                   std::span<const uint64_t> shape) {
  const DTypeMap* m = from_safetensors(dtype);
  if (!m) return std::nullopt;
  const TensorBytes b = tensor_bytes(*m, shape);
  if (!b.size || !b.whole) return std::nullopt;
  SafetensorsEntry e;
  e.name = std::string(name);
  e.dtype = m->st;
  e.shape.assign(shape.begin(), shape.end());
  e.nbytes = *b.size;
  return e;
}

bool safetensors_writes_before(const SafetensorsEntry& a, const SafetensorsEntry& b) {
  const DTypeMap* x = from_safetensors(a.dtype);
  const DTypeMap* y = from_safetensors(b.dtype);
  const int rx = x ? x->rank : -1, ry = y ? y->rank : -1;
  return rx != ry ? rx > ry : a.name < b.name;
}

namespace {

// A safetensors header as checked: the tensors in file order (offsets
// relative to data_start), __metadata__ as attributes.
struct Header {
  Json attributes = Json::object();
  std::vector<Entry> entries;
  uint64_t data_start = 0;
};

// The header's length from the first 8 bytes of a file of `size` bytes.
Result<uint64_t> header_length(const std::string& path, std::span<const uint8_t> first8,
                               uint64_t size) {
  const char* p = path.c_str();
  ZT_FAIL_IF(size < 8, format,
             "%s: %llu bytes is too short for a safetensors file (8-byte header length first)", p,
             static_cast<ull>(size));
  const uint64_t n = load_u64_le(first8.data());
  ZT_FAIL_IF(n > Limits::safetensors_header_bytes, limit,
             "%s: safetensors header of %llu bytes exceeds the limit of %llu bytes", p,
             static_cast<ull>(n), static_cast<ull>(Limits::safetensors_header_bytes));
  ZT_FAIL_IF(n > size - 8, format,
             "%s: safetensors header length %llu goes beyond the file (%llu bytes follow it)", p,
             static_cast<ull>(n), static_cast<ull>(size - 8));
  return n;
}

// `head`: the file's first 8 + header_length bytes (at least).
Result<Header> parse_header(const std::string& path, std::span<const uint8_t> head, uint64_t size) {
  const char* p = path.c_str();
  auto len = header_length(path, head, size);
  ZT_TRY(len);
  const uint64_t n = *len;
  const std::string_view text(reinterpret_cast<const char*>(head.data() + 8), n);
  const size_t depth = json_nesting_depth(text);
  ZT_FAIL_IF(depth > 8, invalid,
             "%s: safetensors header nests %zu levels deep; a valid one needs 3", p, depth);

  // Parsed into nlohmann::json (a sorted map): ordered_json inserts keys with
  // a linear search, quadratic in the tensor count. File order comes from
  // the offsets anyway. A key given twice would silently shadow the other:
  // a tensor name, or a key of __metadata__.
  JsonTextFaults faults;
  const nlohmann::json header = parse_json_checking_keys<nlohmann::json>(text, faults);
  ZT_FAIL_IF(header.is_discarded(), format, "%s: the safetensors header is not valid JSON", p);
  ZT_FAIL_IF(!header.is_object(), format, "%s: the safetensors header is not a JSON object", p);
  const auto& twice = faults.repeated;
  ZT_FAIL_IF(twice && twice->depth == 1, invalid, "%s: tensor \"%s\" appears twice in the header",
             p, printable(std::string_view(twice->key).substr(0, 200)).c_str());
  ZT_FAIL_IF(twice, invalid, "%s: key \"%s\" appears twice in one object of the header", p,
             printable(std::string_view(twice->key).substr(0, 200)).c_str());
  ZT_TRY(refuse_wide_integer(p, faults));

  Header h;
  h.data_start = 8 + n;
  const uint64_t data_size = size - h.data_start;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      ZT_FAIL_IF(!value.is_object(), invalid, "%s: \"__metadata__\" is not a JSON object", p);
      for (const auto& [k, v] : value.items())
        h.attributes.get_ref<Json::object_t&>().emplace_back(k, v);
      continue;
    }
    auto e = parse_entry(path, key, value, data_size);
    ZT_TRY(e);
    h.entries.push_back(std::move(*e));
  }
  // File order; two tensors may not share a byte (empty ones share none).
  std::stable_sort(h.entries.begin(), h.entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const Entry* last = nullptr;
  for (const Entry& e : h.entries) {
    if (e.begin == e.end) continue;
    ZT_FAIL_IF(last && e.begin < last->end, invalid,
               "%s: tensors \"%s\" [%llu, %llu) and \"%s\" [%llu, %llu) overlap", p,
               last->name.c_str(), static_cast<ull>(last->begin), static_cast<ull>(last->end),
               e.name.c_str(), static_cast<ull>(e.begin), static_cast<ull>(e.end));
    last = &e;
  }
  return h;
}

// The objects of a checked header; place(entry, c) says where c's bytes are.
template <typename Place>
ForeignFile file_of(ForeignFile f, Header h, Place&& place) {
  f.attributes = std::move(h.attributes);
  for (Entry& e : h.entries) {
    ForeignObject o;
    ForeignComponent c;
    c.role = "data";
    c.dtype = e.dtype->dtype;
    if (!e.dtype->type.empty()) c.type = std::string(e.dtype->type);
    place(e, c);
    o.name = std::move(e.name);
    o.shape = std::move(e.shape);
    o.components.push_back(std::move(c));
    f.objects.push_back(std::move(o));
  }
  return f;
}

}  // namespace

Result<ForeignFile> read_safetensors(const std::string& path) {
  auto mapped = ForeignFile::mapped(path, FileKind::safetensors);
  ZT_TRY(mapped);
  const std::span<const uint8_t> file(mapped->source.base(), mapped->source.size());
  auto h = parse_header(path, file, file.size());
  ZT_TRY(h);
  const uint64_t data_start = h->data_start;
  return file_of(std::move(*mapped), std::move(*h), [&](const Entry& e, ForeignComponent& c) {
    c.bytes = file.subspan(data_start + e.begin, e.end - e.begin);
  });
}

Result<ForeignFile> read_safetensors_remote(std::shared_ptr<const RangeCache> src) {
  const std::string& name = src->name();
  const uint64_t size = src->size();
  // The header is read first, in one request when it fits the first 64 KiB.
  std::vector<uint8_t> head(static_cast<size_t>(std::min(size, kSafetensorsOpenBytes)));
  ZT_TRY(src->read(0, head));
  auto n = header_length(name, head, size);
  ZT_TRY(n);
  // The rest grows with what arrives, doubling (1 MiB at least): a length
  // field is a claim, and a server that states a 99 MB header and then
  // stalls must not cost 99 MB before a byte of it came.
  const size_t want = static_cast<size_t>(8 + *n);
  while (head.size() < want) {
    const size_t had = head.size();
    head.resize(std::min(want, had + std::max<size_t>(had, size_t{1} << 20)));
    ZT_TRY(src->read(had, std::span<uint8_t>(head).subspan(had)));
  }
  auto h = parse_header(name, head, size);
  ZT_TRY(h);
  ForeignFile f;
  f.kind = FileKind::safetensors;
  const uint64_t data_start = h->data_start;
  return file_of(std::move(f), std::move(*h), [&](const Entry& e, ForeignComponent& c) {
    c.remote = RemoteBytes{src, data_start + e.begin, e.end - e.begin};
  });
}

Result<OutputFile> write_safetensors_unpublished(
    const std::string& path, const std::vector<std::pair<std::string, std::string>>& metadata,
    const std::vector<SafetensorsEntry>& entries,
    const std::function<Result<void>(size_t, const ByteSink&)>& write_tensor) {
  // Built piecewise: an ordered_json map looks keys up linearly, which would
  // make a header of many tensors quadratic.
  std::string text = "{";
  if (!metadata.empty()) {
    Json m = Json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    text += "\"__metadata__\":" + dump_json(m);
  }
  std::unordered_set<std::string_view> names;
  uint64_t offset = 0;
  for (const SafetensorsEntry& e : entries) {
    ZT_FAIL_IF(e.name == "__metadata__" || !names.insert(e.name).second, argument,
               "%s: tensor name \"%s\" is used twice or is reserved", path.c_str(), e.name.c_str());
    if (text.size() > 1) text += ',';
    text +=
        dump_json(e.name) + ':' +
        dump_json(Json{
            {"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {offset, offset + e.nbytes}}});
    offset += e.nbytes;
  }
  text += '}';
  text.append((8 - text.size() % 8) % 8, ' ');
  auto out = OutputFile::create(path);
  ZT_TRY(out);
  uint8_t len[8];
  for (int i = 0; i < 8; ++i)
    len[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
  ZT_TRY(out->write(len));
  ZT_TRY(out->write(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size())));
  for (size_t i = 0; i < entries.size(); ++i) {
    uint64_t written = 0;
    const ByteSink sink = [&](std::span<const uint8_t> piece) -> Result<void> {
      written += piece.size();
      return out->write(piece);
    };
    ZT_TRY(write_tensor(i, sink));
    ZT_FAIL_IF(written != entries[i].nbytes, invalid,
               "%s: tensor \"%s\": %llu bytes delivered, %llu announced", path.c_str(),
               entries[i].name.c_str(), static_cast<ull>(written),
               static_cast<ull>(entries[i].nbytes));
  }
  return std::move(*out);
}

Result<void> write_safetensors(
    const std::string& path, const std::vector<std::pair<std::string, std::string>>& metadata,
    const std::vector<SafetensorsEntry>& entries,
    const std::function<Result<void>(size_t, const ByteSink&)>& write_tensor) {
  auto out = write_safetensors_unpublished(path, metadata, entries, write_tensor);
  ZT_TRY(out);
  return out->publish();
}

}  // namespace zt::foreign
