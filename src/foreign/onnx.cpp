#include "foreign/onnx.h"

#include <array>
#include <charconv>
#include <climits>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/arithmetic.h"
#include "base/zt_limits.h"
#include "cbor/cbor_value.h"
#include "foreign/onnx_wire.h"
#include "source/io.h"
#include "source/model_folder.h"

namespace zt::foreign {

namespace {

using ull = unsigned long long;
using namespace onnx_wire;

class OnnxReader {
 public:
  OnnxReader(std::string path, ForeignFile& f, uint64_t limit)
      : path_(std::move(path)), f_(f), limit_(limit) {}

  Result<void> read_model(std::span<const uint8_t> file) {
    file_ = file;
    bool graph_seen = false;
    Json opsets = Json::object(), metadata = Json::object();
    std::optional<Error> failed;
    const bool ok = read_message(file, [&](Wire& w, uint32_t tag) {
      std::span<const uint8_t> b;
      uint64_t v = 0;
      const uint32_t f = field_of(tag);
      const bool is_bytes = wire_of(tag) == kBytes;
      if ((f == model::ir_version || f == model::model_version) && wire_of(tag) == kVarint) {
        if (!w.varint(v)) return false;
        f_.attributes[f == model::ir_version ? "onnx.ir_version" : "onnx.model_version"] = v;
        return true;
      }
      if (!is_bytes) return w.skip(tag);
      if (f == model::producer_name || f == model::producer_version || f == model::domain) {
        if (!w.bytes(b)) return false;
        f_.attributes[f == model::producer_name      ? "onnx.producer_name"
                      : f == model::producer_version ? "onnx.producer_version"
                                                     : "onnx.domain"] = text_of(b);
        return true;
      }
      if (f == model::opset_import) {
        std::string domain;
        uint64_t version = 0;
        const auto opset_field = [&](Wire& o, uint32_t t) {
          std::span<const uint8_t> d;
          if (field_of(t) == kOpsetVersion && wire_of(t) == kVarint) return o.varint(version);
          if (field_of(t) != kOpsetDomain || wire_of(t) != kBytes) return o.skip(t);
          if (!o.bytes(d)) return false;
          domain = std::string(as_text(d));
          return true;
        };
        if (!w.bytes(b) || !read_message(b, opset_field)) return false;
        if (!key_is_text(domain, "an opset_import domain", failed)) return false;
        // A repeat would replace the other's version (the ONNX checker
        // refuses it): nothing is dropped silently.
        if (opsets.contains(domain)) {
          failed = make_error(Status::invalid, "%s: opset_import names domain \"%s\" twice",
                              path_.c_str(), domain.c_str());
          return false;
        }
        opsets[domain] = version;
        return entries_within_limit(opsets, failed);
      }
      if (f == model::metadata_props) {
        std::string key, value;
        if (!w.bytes(b) || !read_entry(b, key, value)) return false;
        if (!key_is_text(key, "a metadata_props key", failed)) return false;
        if (metadata.contains(key)) {
          failed = make_error(Status::invalid, "%s: metadata_props holds key \"%s\" twice",
                              path_.c_str(), key.c_str());
          return false;
        }
        metadata[key] = text_of(
            std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(value.data()), value.size()));
        return entries_within_limit(metadata, failed);
      }
      if (f == model::graph) {
        if (!w.bytes(b)) return false;
        if (graph_seen) {
          failed = make_error(Status::invalid, "%s: the model holds two graphs", path_.c_str());
          return false;
        }
        graph_seen = true;
        if (auto r = read_graph(b); !r) {
          failed = std::move(r).error();
          return false;
        }
        return true;
      }
      return w.skip(tag);
    });
    if (failed) return std::move(*failed);
    ZT_FAIL_IF(!ok, format, "%s: not an ONNX model (malformed protobuf)", path_.c_str());
    ZT_FAIL_IF(!graph_seen, format, "%s: not an ONNX model (no graph)", path_.c_str());
    if (!opsets.empty()) f_.attributes["onnx.opset_import"] = std::move(opsets);
    if (!metadata.empty()) f_.attributes["onnx.metadata_props"] = std::move(metadata);
    return {};
  }

 private:
  // Attribute map keys are CBOR text.
  bool key_is_text(const std::string& key, const char* what, std::optional<Error>& failed) const {
    if (cbor::is_valid_utf8(key)) return true;
    failed = make_error(Status::invalid, "%s: %s is not UTF-8", path_.c_str(), what);
    return false;
  }

  bool entries_within_limit(const Json& map, std::optional<Error>& failed) const {
    if (map.size() <= Limits::onnx_entries) return true;
    failed = make_error(Status::limit, "%s: more than %zu opset_import or metadata_props entries",
                        path_.c_str(), Limits::onnx_entries);
    return false;
  }

  Result<void> read_graph(std::span<const uint8_t> message) {
    std::optional<Error> failed;
    const bool ok = read_message(message, [&](Wire& w, uint32_t tag) {
      std::span<const uint8_t> b;
      const uint32_t f = field_of(tag);
      if (wire_of(tag) != kBytes) return w.skip(tag);
      if (f == graph::name) {
        if (!w.bytes(b)) return false;
        f_.attributes["onnx.graph_name"] = text_of(b);
        return true;
      }
      if (f == graph::sparse_initializer) {
        failed = make_error(Status::unsupported,
                            "%s: the graph has sparse initializers, which this reader does not "
                            "read (its dense initializers would be read without them)",
                            path_.c_str());
        return false;
      }
      if (f != graph::initializer) return w.skip(tag);
      if (!w.bytes(b)) return false;
      if (auto r = read_initializer(b, static_cast<uint64_t>(b.data() - file_.data())); !r) {
        failed = std::move(r).error();
        return false;
      }
      return true;
    });
    if (failed) return std::move(*failed);
    ZT_FAIL_IF(!ok, format, "%s: malformed protobuf in the graph", path_.c_str());
    return {};
  }

  Result<void> read_initializer(std::span<const uint8_t> message, uint64_t at) {
    const size_t index = f_.objects.size();
    ZT_FAIL_IF(index >= Limits::objects, limit, "%s: more than %llu initializers", path_.c_str(),
               static_cast<ull>(Limits::objects));
    TensorFields t;
    ZT_FAIL_IF(!read_tensor_fields(message, t), format,
               "%s: initializer #%zu (at byte %llu): malformed protobuf, more than %u dims or "
               "more than %zu external_data entries",
               path_.c_str(), index, static_cast<ull>(at), Limits::rank, Limits::onnx_entries);
    ZT_FAIL_IF(!t.has_name || t.name.empty(), invalid, "%s: initializer #%zu has no name",
               path_.c_str(), index);
    ForeignObject o;
    o.name = std::string(as_text(t.name));
    const std::string where = path_ + ": initializer \"" + o.name.substr(0, 200) + "\"";
    const char* w = where.c_str();
    ZT_FAIL_IF(!names_.insert(o.name).second, invalid, "%s appears twice", w);
    ZT_FAIL_IF(t.segmented, unsupported, "%s: segmented tensors are not read", w);
    ZT_FAIL_IF(!t.has_type, invalid, "%s has no data_type", w);
    const OnnxType* type = find_type(t.data_type);
    if (!type) {
      const std::string_view known = unsupported_type_name(t.data_type);
      ZT_FAIL_IF(!known.empty(), unsupported, "%s: ONNX type %s has no zTensor dtype", w,
                 std::string(known).c_str());
      return make_error(Status::unsupported, "%s: unknown ONNX data_type %llu", w,
                        static_cast<ull>(t.data_type));
    }
    ZT_FAIL_IF(t.strings, invalid, "%s: string_data in a %s tensor", w,
               std::string(type->name).c_str());
    o.shape = t.dims;
    for (const uint64_t d : o.shape)
      ZT_FAIL_IF(static_cast<int64_t>(d) < 0, invalid, "%s: dimension %lld is negative", w,
                 static_cast<long long>(d));
    const auto elements = shape_product(o.shape);
    const auto values = elements ? checked_mul(*elements, type->lanes) : std::nullopt;
    const unsigned width = dtype_width(type->dtype);
    const auto bytes = values ? checked_mul(*values, width) : std::nullopt;
    ZT_FAIL_IF(!bytes, invalid, "%s: its size overflows", w);
    ForeignComponent c;
    c.role = "data";
    c.dtype = type->dtype;
    if (!type->type.empty()) c.type = std::string(type->type);
    auto data = data_of(t, *type, message, *values, *bytes, where);
    ZT_TRY(data);
    c.bytes = *data;
    o.components.push_back(std::move(c));
    f_.objects.push_back(std::move(o));
    return {};
  }

  // Where the initializer's bytes are: raw_data in place, external data in
  // its file, or the typed field converted.
  Result<std::span<const uint8_t>> data_of(const TensorFields& t, const OnnxType& type,
                                           std::span<const uint8_t> message, uint64_t values,
                                           uint64_t bytes, const std::string& where) {
    const char* w = where.c_str();
    uint64_t typed = 0;
    for (const uint64_t n : t.typed_count) typed += n;
    const int sources = int{t.has_raw} + int{typed > 0} + int{t.location == kExternal};
    ZT_FAIL_IF(sources > 1, invalid,
               "%s: its data is in more than one of raw_data, a typed field and external data", w);
    if (t.location == kExternal) return external_data(t, bytes, where);
    ZT_FAIL_IF(!t.external.empty(), invalid, "%s: external_data without data_location EXTERNAL", w);
    if (t.has_raw) {
      ZT_FAIL_IF(t.raw.size() != bytes, invalid,
                 "%s: raw_data holds %llu bytes; %s of its dims take %llu", w,
                 static_cast<ull>(t.raw.size()), std::string(type.name).c_str(),
                 static_cast<ull>(bytes));
      return t.raw;
    }
    ZT_FAIL_IF(typed != t.typed_count[type.field], invalid,
               "%s: its values are in a field that is not the one for %s", w,
               std::string(type.name).c_str());
    ZT_FAIL_IF(typed != values, invalid, "%s: holds %llu values; its dims need %llu", w,
               static_cast<ull>(typed), static_cast<ull>(values));
    if (bytes == 0) return std::span<const uint8_t>();
    ZT_FAIL_IF(bytes > limit_, limit, "%s: %llu bytes of typed values, more than the limit %llu", w,
               static_cast<ull>(bytes), static_cast<ull>(limit_));
    f_.owned.emplace_back(bytes);
    TypedDecoder decoder{type, f_.owned.back(), 0, {}};
    const bool ok =
        read_message(message, [&](Wire& wire, uint32_t tag) { return decoder.field(wire, tag); });
    ZT_FAIL_IF(!ok || decoder.index != bytes, invalid, "%s: %s", w,
               decoder.error.empty() ? "malformed typed values" : decoder.error.c_str());
    return std::span<const uint8_t>(f_.owned.back());
  }

  Result<std::span<const uint8_t>> external_data(const TensorFields& t, uint64_t bytes,
                                                 const std::string& where) {
    const char* w = where.c_str();
    std::string location;
    std::optional<uint64_t> offset, length;
    for (const auto& [key, value] : t.external) {
      if (key == "location") {
        location = value;
        continue;
      }
      if (key != "offset" && key != "length") continue;  // "checksum" and others
      uint64_t n = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      ZT_FAIL_IF(ec != std::errc() || end != value.data() + value.size() || value.empty(), invalid,
                 "%s: external_data %s \"%s\" is not a number", w, key.c_str(),
                 value.substr(0, 40).c_str());
      (key == "offset" ? offset : length) = n;
    }
    ZT_FAIL_IF(!inside_directory(location), invalid,
               "%s: external data location \"%s\" is not a relative path inside the model's "
               "directory",
               w, location.substr(0, 300).c_str());
    auto file = external_file(location);
    ZT_TRY(file);
    const uint64_t size = (*file)->source.size();
    const uint64_t from = offset.value_or(0);
    ZT_FAIL_IF(length && *length != bytes, invalid,
               "%s: external data length %llu; its dims take %llu bytes", w,
               static_cast<ull>(*length), static_cast<ull>(bytes));
    ZT_FAIL_IF(from > size || bytes > size - from, invalid,
               "%s: external data [%llu, +%llu) is past the end of %s (%llu bytes)", w,
               static_cast<ull>(from), static_cast<ull>(bytes), location.c_str(),
               static_cast<ull>(size));
    if (bytes == 0) return std::span<const uint8_t>();
    return std::span<const uint8_t>((*file)->source.base() + from, bytes);
  }

  // A relative path of plain names: no "..", ".", empty parts or NUL.
  static bool inside_directory(std::string_view p) {
    if (p.empty() || p.size() > 4096 || p.front() == '/' || p.find('\0') != p.npos) return false;
    size_t start = 0;
    while (start <= p.size()) {
      const size_t slash = std::min(p.find('/', start), p.size());
      const std::string_view part = p.substr(start, slash - start);
      if (part.empty() || part == "." || part == "..") return false;
      start = slash + 1;
    }
    return true;
  }

  // Each external file mapped once, held as a part of the ForeignFile.
  Result<ForeignFile*> external_file(const std::string& location) {
    if (const auto it = external_.find(location); it != external_.end())
      return &f_.input_files[it->second];
    auto real = resolve_beside_model(path_, location, "external data location");
    ZT_TRY(real);
    const LinksRefused as_checked;  // no link put in its path since is followed
    auto part = ForeignFile::mapped(*real, FileKind::onnx);
    ZT_TRY(part);
    f_.input_files.push_back(std::move(*part));
    external_.emplace(location, f_.input_files.size() - 1);
    return &f_.input_files.back();
  }

  std::string path_;
  ForeignFile& f_;
  const uint64_t limit_;  // on the bytes one tensor's typed values widen to
  std::span<const uint8_t> file_;
  std::unordered_set<std::string> names_;
  std::unordered_map<std::string, size_t> external_;
};

}  // namespace

Result<ForeignFile> read_onnx(const std::string& path, uint64_t limit) {
  auto mapped = ForeignFile::mapped(path, FileKind::onnx);
  ZT_TRY(mapped);
  ForeignFile f = std::move(*mapped);
  ZT_FAIL_IF(f.source.size() > static_cast<uint64_t>(INT_MAX), limit,
             "%s: %llu bytes; a protobuf message (an ONNX model) is under 2 GiB, larger models "
             "keep their weights in external data files",
             path.c_str(), static_cast<ull>(f.source.size()));
  const std::span<const uint8_t> file(f.source.base(), f.source.size());
  OnnxReader reader(path, f, limit);
  ZT_TRY(reader.read_model(file));
  return f;
}

}  // namespace zt::foreign
