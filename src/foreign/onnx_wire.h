// The protobuf wire format of ONNX models, as far as the weights need it
// (internal to src/foreign; onnx.cpp reads models with it): onnx.proto's
// field numbers, the data types, a reader of fields in place over the
// mapped file (protobuf's CodedInputStream decodes), a TensorProto's
// fields, and the typed-field decoder.
#pragma once

#include <google/protobuf/io/coded_stream.h>

#include <array>
#include <climits>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/dtype.h"
#include "base/json_text.h"

namespace zt::foreign::onnx_wire {

using google::protobuf::io::CodedInputStream;

// onnx.proto field numbers, for the messages on the path to the weights.
namespace model {
constexpr uint32_t ir_version = 1, producer_name = 2, producer_version = 3, domain = 4,
                   model_version = 5, graph = 7, opset_import = 8, metadata_props = 14;
}
namespace graph {
constexpr uint32_t name = 2, initializer = 5, sparse_initializer = 15;
}
namespace tensor {
constexpr uint32_t dims = 1, data_type = 2, segment = 3, float_data = 4, int32_data = 5,
                   string_data = 6, int64_data = 7, name = 8, raw_data = 9, double_data = 10,
                   uint64_data = 11, external_data = 13, data_location = 14;
}
constexpr uint32_t kEntryKey = 1, kEntryValue = 2;       // StringStringEntryProto
constexpr uint32_t kOpsetDomain = 1, kOpsetVersion = 2;  // OperatorSetIdProto
constexpr uint64_t kExternal = 1;                        // TensorProto.DataLocation

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

// An ONNX data type and where the typed fields keep its values.
struct OnnxType {
  uint64_t id;
  std::string_view name;
  DType dtype;
  std::string_view type;  // logical type, "" for none
  unsigned lanes;         // storage elements per value (complex: 2)
  uint32_t field;         // the typed field holding its values
  int64_t min, max;       // what int32_data / uint64_data may hold
};

// Types ONNX has that zTensor does not ("" for others).
std::string_view unsupported_type_name(uint64_t id);
// The data type of an id zTensor stores; nullptr for others.
const OnnxType* find_type(uint64_t id);

// The wire format over the mapped file: CodedInputStream does the decoding;
// this keeps the file's base to hand out length-delimited fields in place.
class Wire {
 public:
  explicit Wire(std::span<const uint8_t> bytes)
      : base_(bytes.data()), in_(bytes.data(), static_cast<int>(bytes.size())) {}

  // The next field's tag of the message being read; 0 at its end (end()
  // tells a clean end from a malformed tag).
  uint32_t next() { return in_.ReadTag(); }
  bool at_end(int end) const { return in_.CurrentPosition() == end; }

  bool varint(uint64_t& v) { return in_.ReadVarint64(&v); }
  bool fixed32(uint32_t& v) { return in_.ReadLittleEndian32(&v); }
  bool fixed64(uint64_t& v) { return in_.ReadLittleEndian64(&v); }

  // A length-delimited field, in place.
  bool bytes(std::span<const uint8_t>& out) {
    uint32_t n = 0;
    if (!in_.ReadVarint32(&n) || n > INT_MAX) return false;
    const int at = in_.CurrentPosition();
    if (!in_.Skip(static_cast<int>(n))) return false;
    out = std::span<const uint8_t>(base_ + at, n);
    return true;
  }

  // Any field of `tag`'s wire type, unread. Groups (deprecated, and not in
  // onnx.proto) are malformed here.
  bool skip(uint32_t tag) {
    uint64_t v = 0;
    std::span<const uint8_t> b;
    switch (tag & 7) {
      case kVarint:
        return varint(v);
      case kFixed64:
        return in_.Skip(8);
      case kBytes:
        return bytes(b);
      case kFixed32:
        return in_.Skip(4);
      default:
        return false;
    }
  }

 private:
  const uint8_t* base_;
  CodedInputStream in_;
};

// Reads one message's fields: visit(tag) consumes each field (or returns
// false for a malformed one); the message must end exactly at its length.
template <typename Visit>
bool read_message(std::span<const uint8_t> message, Visit&& visit) {
  Wire w(message);
  for (uint32_t tag = w.next(); tag != 0; tag = w.next())
    if (!visit(w, tag)) return false;
  return w.at_end(static_cast<int>(message.size()));
}

inline uint32_t field_of(uint32_t tag) {
  return tag >> 3;
}
inline uint32_t wire_of(uint32_t tag) {
  return tag & 7;
}

// A text field as JSON text (binary when it is not UTF-8), and as a view.
Json text_of(std::span<const uint8_t> b);
std::string_view as_text(std::span<const uint8_t> b);

// A TensorProto as read in the first pass: what it is and where its data is.
struct TensorFields {
  std::span<const uint8_t> name, raw;
  bool has_name = false, has_raw = false, has_type = false;
  uint64_t data_type = 0, location = 0;
  std::vector<uint64_t> dims;
  uint64_t typed_count[16] = {};  // values per typed field number (< 16)
  std::vector<std::pair<std::string, std::string>> external;
  bool segmented = false, strings = false;
};

// Values a field holds: packed (one length-delimited run) or one at a time.
bool count_values(Wire& w, uint32_t tag, uint64_t& count);
// A StringStringEntryProto's key and value.
bool read_entry(std::span<const uint8_t> message, std::string& key, std::string& value);
// A TensorProto's fields, its data in place (first pass).
bool read_tensor_fields(std::span<const uint8_t> message, TensorFields& t);

// The typed field's values as little-endian elements of the type's dtype,
// `count` of them (counted in the first pass).
struct TypedDecoder {
  const OnnxType& type;
  std::vector<uint8_t>& out;
  uint64_t index = 0;
  std::string error;

  bool put(uint64_t bits) {
    const unsigned width = dtype_width(type.dtype);
    // int32_data holds every narrow type as an int32 (its varint's low 32
    // bits, as protobuf reads an int32); UINT32 travels in uint64_data.
    const bool ranged = type.field == tensor::int32_data || type.dtype == DType::u32;
    const int64_t v = type.field == tensor::int32_data
                          ? static_cast<int32_t>(static_cast<uint32_t>(bits))
                          : static_cast<int64_t>(bits);
    if (ranged && (v < type.min || v > type.max || (type.dtype == DType::u32 && bits >> 32))) {
      error = "value " + (type.dtype == DType::u32 ? std::to_string(bits) : std::to_string(v)) +
              " is outside " + std::string(type.name) + "'s range";
      return false;
    }
    if (type.field == tensor::int32_data) bits = static_cast<uint64_t>(v);
    if (index + width > out.size()) return false;
    for (unsigned i = 0; i < width; ++i) out[index++] = static_cast<uint8_t>(bits >> (8 * i));
    return true;
  }

  bool one(Wire& w, uint32_t wire) {
    uint64_t v = 0;
    uint32_t v32 = 0;
    if (type.field == tensor::float_data) return wire == kFixed32 && w.fixed32(v32) && put(v32);
    if (type.field == tensor::double_data) return wire == kFixed64 && w.fixed64(v) && put(v);
    return wire == kVarint && w.varint(v) && put(v);
  }

  bool field(Wire& w, uint32_t tag) {
    if (field_of(tag) != type.field) return w.skip(tag);
    if (wire_of(tag) != kBytes) return one(w, wire_of(tag));
    std::span<const uint8_t> run;
    if (!w.bytes(run)) return false;
    Wire packed(run);
    const uint32_t wire = type.field == tensor::float_data    ? kFixed32
                          : type.field == tensor::double_data ? kFixed64
                                                              : kVarint;
    while (!packed.at_end(static_cast<int>(run.size())))
      if (!one(packed, wire)) return false;
    return true;
  }
};

}  // namespace zt::foreign::onnx_wire
