#include "foreign/onnx_wire.h"

#include "base/zt_limits.h"
#include "cbor/cbor_value.h"

namespace zt::foreign::onnx_wire {

constexpr int64_t kI32Min = INT32_MIN, kI32Max = INT32_MAX;
constexpr std::array<OnnxType, 19> kTypes = {{
    {1, "FLOAT", DType::f32, "", 1, tensor::float_data, 0, 0},
    {2, "UINT8", DType::u8, "", 1, tensor::int32_data, 0, 255},
    {3, "INT8", DType::i8, "", 1, tensor::int32_data, -128, 127},
    {4, "UINT16", DType::u16, "", 1, tensor::int32_data, 0, 65535},
    {5, "INT16", DType::i16, "", 1, tensor::int32_data, -32768, 32767},
    {6, "INT32", DType::i32, "", 1, tensor::int32_data, kI32Min, kI32Max},
    {7, "INT64", DType::i64, "", 1, tensor::int64_data, 0, 0},
    {9, "BOOL", DType::boolean, "", 1, tensor::int32_data, 0, 1},
    {10, "FLOAT16", DType::f16, "", 1, tensor::int32_data, 0, 65535},
    {11, "DOUBLE", DType::f64, "", 1, tensor::double_data, 0, 0},
    {12, "UINT32", DType::u32, "", 1, tensor::uint64_data, 0, 0xFFFFFFFFll},
    {13, "UINT64", DType::u64, "", 1, tensor::uint64_data, 0, 0},
    {14, "COMPLEX64", DType::f32, "complex64", 2, tensor::float_data, 0, 0},
    {15, "COMPLEX128", DType::f64, "complex128", 2, tensor::double_data, 0, 0},
    {16, "BFLOAT16", DType::bf16, "", 1, tensor::int32_data, 0, 65535},
    {17, "FLOAT8E4M3FN", DType::u8, "f8_e4m3fn", 1, tensor::int32_data, 0, 255},
    {18, "FLOAT8E4M3FNUZ", DType::u8, "f8_e4m3fnuz", 1, tensor::int32_data, 0, 255},
    {19, "FLOAT8E5M2", DType::u8, "f8_e5m2", 1, tensor::int32_data, 0, 255},
    {20, "FLOAT8E5M2FNUZ", DType::u8, "f8_e5m2fnuz", 1, tensor::int32_data, 0, 255},
}};

// Types ONNX has that zTensor does not.
std::string_view unsupported_type_name(uint64_t id) {
  switch (id) {
    case 8:
      return "STRING";
    case 21:
      return "UINT4";
    case 22:
      return "INT4";
    case 23:
      return "FLOAT4E2M1";
    default:
      return "";
  }
}

const OnnxType* find_type(uint64_t id) {
  for (const OnnxType& t : kTypes)
    if (t.id == id) return &t;
  return nullptr;
}

Json text_of(std::span<const uint8_t> b) {
  const std::string s(b.begin(), b.end());
  if (cbor::is_valid_utf8(s)) return Json(s);
  return Json::binary(std::vector<uint8_t>(b.begin(), b.end()));
}

std::string_view as_text(std::span<const uint8_t> b) {
  return std::string_view(reinterpret_cast<const char*>(b.data()), b.size());
}

// Key/value lists (external_data, metadata_props, opset_import) longer than
// Limits::onnx_entries are refused: each entry costs more memory than its
// bytes in the file.

// Values a field holds: packed (one length-delimited run) or one at a time.
bool count_values(Wire& w, uint32_t tag, uint64_t& count) {
  std::span<const uint8_t> run;
  if (wire_of(tag) != kBytes) {
    ++count;
    return w.skip(tag);
  }
  if (!w.bytes(run)) return false;
  const uint32_t f = field_of(tag);
  const unsigned fixed = f == tensor::float_data ? 4 : f == tensor::double_data ? 8 : 0;
  if (fixed) {
    if (run.size() % fixed != 0) return false;
    count += run.size() / fixed;
    return true;
  }
  for (const uint8_t b : run) count += b < 0x80;  // varints: one final byte each
  return true;
}

bool read_entry(std::span<const uint8_t> message, std::string& key, std::string& value) {
  return read_message(message, [&](Wire& w, uint32_t tag) {
    std::span<const uint8_t> b;
    if (wire_of(tag) != kBytes || (field_of(tag) != kEntryKey && field_of(tag) != kEntryValue))
      return w.skip(tag);
    if (!w.bytes(b)) return false;
    (field_of(tag) == kEntryKey ? key : value) = std::string(as_text(b));
    return true;
  });
}

bool read_tensor_fields(std::span<const uint8_t> message, TensorFields& t) {
  return read_message(message, [&](Wire& w, uint32_t tag) {
    const uint32_t f = field_of(tag);
    const uint32_t wire = wire_of(tag);
    uint64_t v = 0;
    std::span<const uint8_t> b;
    switch (f) {
      case tensor::dims:
        if (wire == kVarint) {
          if (!w.varint(v) || t.dims.size() >= Limits::rank) return false;
          t.dims.push_back(v);
          return true;
        }
        if (wire != kBytes || !w.bytes(b)) return false;
        {
          Wire packed(b);  // a packed run: varints without tags
          while (!packed.at_end(static_cast<int>(b.size()))) {
            if (!packed.varint(v) || t.dims.size() >= Limits::rank) return false;
            t.dims.push_back(v);
          }
        }
        return true;
      case tensor::data_type:
        t.has_type = true;
        return wire == kVarint && w.varint(t.data_type);
      case tensor::segment:
        t.segmented = true;
        return w.skip(tag);
      case tensor::string_data:
        t.strings = true;
        return w.skip(tag);
      case tensor::float_data:
      case tensor::int32_data:
      case tensor::int64_data:
      case tensor::double_data:
      case tensor::uint64_data:
        return count_values(w, tag, t.typed_count[f]);
      case tensor::name:
        t.has_name = true;
        return wire == kBytes && w.bytes(t.name);
      case tensor::raw_data:
        t.has_raw = true;
        return wire == kBytes && w.bytes(t.raw);
      case tensor::external_data: {
        std::string key, value;
        if (wire != kBytes || !w.bytes(b) || !read_entry(b, key, value) ||
            t.external.size() >= Limits::onnx_entries)
          return false;
        t.external.emplace_back(std::move(key), std::move(value));
        return true;
      }
      case tensor::data_location:
        return wire == kVarint && w.varint(t.location);
      default:
        return w.skip(tag);
    }
  });
}

}  // namespace zt::foreign::onnx_wire
