// 0.1.0 indexes upgraded to the model: each entry a dense object of one
// "data" component, custom keys as attributes, sparse entries listed only.
#include "base/zt_limits.h"
#include "cbor/cbor_encode.h"
#include "codec/digest.h"
#include "manifest/object_format.h"
#include "manifest/parser.h"

namespace zt {

namespace {

// 0.1.0 describes dense tensors only, yet 0.1.x writers marked sparse
// tensors with a "layout" or "format" other than "dense", a "sparse_format"
// key, or a dtype or encoding such as "sparsecsr". How their one blob holds
// values and indices is written down nowhere, so such an entry is listed
// but never interpreted: its marker as the object's format, every key that
// is not placement in the attributes, the blob as a u8 component "data".
// Custom keys named "layout" or "format" with other values ("NHWC") stay
// attributes of a dense tensor. Returns the marker text, or nullopt for a
// dense entry.
bool v010_names_sparse(std::string_view s) {
  std::string lower(s.substr(0, 64));
  for (char& ch : lower) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  return lower.find("sparse") != std::string::npos || lower == "csr" || lower == "coo" ||
         lower == "csc";
}

std::optional<std::string_view> v010_sparse_marker(const Document& doc, uint32_t entry) {
  auto text = [&](const char* key) -> std::optional<std::string_view> {
    const uint32_t v = doc.find(entry, key);
    if (v && doc.node(v).kind == Kind::text) return doc.node(v).str;
    return std::nullopt;
  };
  for (const char* key : {"layout", "format", "encoding", "dtype"})
    if (const auto t = text(key); t && v010_names_sparse(*t)) return t;
  if (doc.find(entry, "sparse_format")) return "sparse";
  return std::nullopt;
}

// The format shown for a 0.1.x sparse entry, in the 1.2.0 vocabulary where
// the marker names one ("sparsecsr" -> "sparse_csr"), else as written.
std::string v010_sparse_format(std::string_view marker,
                               std::optional<std::string_view> sparse_format) {
  std::string lower(sparse_format.value_or(marker).substr(0, 64));
  for (char& ch : lower) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  if (lower.find("csr") != std::string::npos) return std::string(kSparseCsrFormat.name);
  if (lower.find("coo") != std::string::npos) return std::string(kSparseCooFormat.name);
  return std::string(marker);
}

// 0.1.0: an array of {name, offset, size, dtype, shape, encoding,
// data_endianness?, checksum?, custom keys...}.
}  // namespace

Result<void> Parser::parse_entry_v010(size_t i, uint32_t e) {
  ZT_FAIL_IF(!is_map(e), invalid, "legacy entry %zu is not a map", i);
  for (const char* key : {"name", "offset", "size", "dtype", "shape", "encoding"})
    ZT_FAIL_IF(!get(e, key), invalid, "legacy entry %zu lacks the required field \"%s\"", i, key);
  const uint32_t nm = get(e, "name");
  ZT_FAIL_IF(!is_text(nm), invalid, "legacy entry %zu: \"name\" is not a string", i);
  ZT_TRY(check_name("object", node(nm).str));
  Object o;
  o.name = std::string(node(nm).str);
  o.format = kDenseFormat.name;
  const ItemName what("object", o.name);
  auto shape = parse_shape(what, get(e, "shape"));
  ZT_TRY(shape);
  o.shape = std::move(*shape);
  Component c;
  c.role = "data";
  const ItemName w("object", o.name, "data");
  ZT_FAIL_IF(!is_uint(get(e, "offset")), invalid, "%s: \"offset\" is not an unsigned integer",
             w.c_str());
  ZT_FAIL_IF(!is_uint(get(e, "size")), invalid, "%s: \"size\" is not an unsigned integer",
             w.c_str());
  c.offset = node(get(e, "offset")).u;
  c.length = node(get(e, "size")).u;
  const uint32_t dt = get(e, "dtype");
  ZT_FAIL_IF(!is_text(dt), invalid, "%s: \"dtype\" is not a string", w.c_str());
  ZT_FAIL_IF(!is_text(get(e, "encoding")), invalid, "%s: \"encoding\" is not a string", w.c_str());
  const auto sparse = v010_sparse_marker(*doc_, e);
  if (sparse) {
    const uint32_t sf = get(e, "sparse_format");
    o.format = v010_sparse_format(
        *sparse, is_text(sf) ? std::optional<std::string_view>(node(sf).str) : std::nullopt);
    o.unsupported =
        "object \"" + o.name + "\": the 0.1.0 sparse layout \"" + std::string(*sparse) + "\"" +
        (is_text(sf) ? " (sparse_format \"" + std::string(node(sf).str) + "\")" : std::string()) +
        " is not described by the spec (0.1.0 defines dense tensors only), so its data cannot be "
        "interpreted";
    c.dtype = DType::u8;
    ZT_TRY(set_encoding(c, w, get(e, "encoding")));
  } else {
    const auto dtype = dtype_from_legacy_name(node(dt).str);
    ZT_FAIL_IF(!dtype, unsupported, "%s: unknown dtype \"%s\"", w.c_str(),
               std::string(node(dt).str).c_str());
    c.dtype = *dtype;
    ZT_TRY(set_encoding(c, w, get(e, "encoding")));
    const uint32_t de = get(e, "data_endianness");
    if (de) {
      const bool little = is_text(de) && node(de).str == "little";
      const bool big = is_text(de) && node(de).str == "big";
      ZT_FAIL_IF(!little && !big, invalid, "%s: data_endianness is not \"little\" or \"big\"",
                 w.c_str());
      c.big_endian = big && c.encoding == Encoding::raw;
    }
  }
  const uint32_t cs = get(e, "checksum");
  if (cs) {
    ZT_FAIL_IF(!is_text(cs), invalid, "%s: \"checksum\" is not a string", w.c_str());
    c.digest = normalize_legacy_checksum(node(cs).str);
  }
  // A sparse entry keeps dtype and data_endianness as attributes: they
  // describe parts of the blob that this library does not interpret.
  static constexpr std::string_view kPlacement[] = {"name",  "offset",   "size",
                                                    "shape", "encoding", "checksum"};
  static constexpr std::string_view kDense[] = {"dtype", "data_endianness"};
  auto is_attribute = [&](std::string_view k) {
    for (const auto known : kPlacement)
      if (k == known) return false;
    for (const auto known : kDense)
      if (!sparse && k == known) return false;
    return true;
  };
  size_t kept = 0;
  ZT_TRY(for_each_entry(e, [&](std::string_view k, uint32_t) -> Result<void> {
    kept += is_attribute(k);
    return {};
  }));
  if (kept) {
    CborWriter map;
    map.map(kept);
    ZT_TRY(for_each_entry(e, [&](std::string_view k, uint32_t v) -> Result<void> {
      if (!is_attribute(k)) return {};
      map.text(k);
      encode_value(*doc_, v, map);
      return {};
    }));
    o.attributes = made_attributes(map.take());
  }
  o.components.push_back(std::move(c));
  return add_object(std::move(o));
}

Result<void> Parser::parse_v010() {
  m_.version = "0.1.0";
  ZT_FAIL_IF(node(0).kind != Kind::array, invalid, "legacy index is not a CBOR array");
  const uint32_t n = node(0).count;
  ZT_FAIL_IF(n > Limits::objects, limit, "too many legacy entries");
  m_.objects.reserve(n);
  uint32_t e = Document::first_child(0);
  for (uint32_t i = 0; i < n; ++i, e = doc_->next(e)) ZT_TRY(parse_entry_v010(i, e));
  return {};
}

}  // namespace zt
