// The PyTorch checkpoint reader's inside, internal to src/foreign
// (pytorch.cpp: storages, tensors and the walk of the unpickled value;
// pytorch_archives.cpp: the zip and legacy containers). read_pytorch
// (pytorch.h) is the one way in.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "base/dtype.h"
#include "base/error.h"
#include "base/json_text.h"
#include "foreign/foreign.h"
#include "foreign/pickle.h"

namespace zt::foreign::torch_reader {

// The torch.<Name>Storage classes: what a tensor on each stores.
struct StorageType {
  std::string_view name;
  DType dtype;
  const char* type;  // logical type, or nullptr
  unsigned width;    // bytes of one element
};

// The storage classes and the torch dtypes (pytorch.cpp).
const StorageType* storage_type(const PickleValue& g);

// Functions whose calls are tensors (interpreted here, never run).
inline constexpr std::string_view kRebuildTensorV2 = "_rebuild_tensor_v2";
inline constexpr std::string_view kRebuildTensorV3 = "_rebuild_tensor_v3";
inline constexpr std::string_view kRebuildTensor = "_rebuild_tensor";
inline constexpr std::string_view kRebuildParameter = "_rebuild_parameter";
inline constexpr std::string_view kRebuildParameterWithState = "_rebuild_parameter_with_state";
inline constexpr std::string_view kRebuildFromType = "_rebuild_from_type_v2";

// What torch's own weights_only loader allows, less what stores no data we
// can keep (sparse and quantized rebuilds are refused by name).
std::vector<PickleGlobal> allowed_globals();

bool is_global(const PickleValue& v, std::string_view module, std::string_view name);

// One storage as the pickle describes it, and its bytes once read.
struct Storage {
  const StorageType* type = nullptr;
  uint64_t numel = 0;
  std::span<const uint8_t> bytes;
  std::optional<uint32_t> crc_check;  // a zip member's CRC-32 not checked yet (PendingCrc)
};

// A persistent id: ("storage", torch.<T>Storage, key, location, numel),
// legacy files adding a sixth field (None).
struct StorageRef {
  std::string key;
  const StorageType* type = nullptr;
  uint64_t numel = 0;
};

struct TensorRef {
  StorageRef storage;
  const StorageType* element = nullptr;  // _rebuild_tensor_v3's dtype over a byte storage
  int64_t offset = 0;
  std::vector<int64_t> size, stride;
};

// Element width for byte order: complex numbers swap each half.
inline unsigned swap_width(const StorageType& t) {
  return t.type ? t.width / 2 : t.width;
}

inline std::string stem_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = base.rfind('.');
  if (dot != std::string::npos && dot > 0) base.resize(dot);
  return base;
}

class TorchReader {
 public:
  TorchReader(const std::string& path, ForeignFile& f, uint64_t limit)
      : path_(path), f_(f), limit_(limit), globals_(allowed_globals()), pickle_(globals_) {}

  Result<void> read_zip();
  Result<void> read_legacy();

 private:
  Result<StorageRef> storage_ref(uint32_t pid, const std::string& where) const;
  Result<void> collect_storages(const std::string& where);
  // A storage's pending CRC-32 checked now, before bytes are copied out
  // of it at open (reordered, gathered); no-op when checked or none.
  Result<void> check_now(const Storage& s);
  Result<std::optional<TensorRef>> tensor_of(uint32_t v, const std::string& where,
                                             unsigned depth) const;
  Result<std::vector<int64_t>> int_tuple(uint32_t v, const std::string& what,
                                         const std::string& where) const;
  Result<ForeignObject> make_object(const TensorRef& t, const std::string& name);
  Result<bool> holds_tensor(uint32_t v, unsigned depth);
  Result<Json> to_json(uint32_t v, const std::string& where, unsigned depth);
  Result<std::string> key_text(uint32_t k, const std::string& where) const;
  Result<void> walk(uint32_t v, const std::string& path, unsigned depth);
  // One path visited, `bytes` of text copied for it (a name, a string).
  Result<void> spend(const std::string& where, uint64_t bytes);
  Result<void> spend_bytes(const std::string& where, uint64_t bytes);

  const std::string& path_;
  ForeignFile& f_;
  const uint64_t limit_;     // on one component's bytes
  bool big_endian_ = false;  // a zip's byteorder record says "big"
  std::vector<PickleGlobal> globals_;
  Pickle pickle_;
  std::map<std::string, Storage> storages_;
  std::vector<int8_t> holds_;                        // holds_tensor per value: -1 unknown
  std::unordered_set<std::string> names_;            // objects
  std::unordered_set<std::string> attribute_names_;  // keys of f_.attributes
  uint64_t budget_ = 0;                              // values visited by the walk
  uint64_t bytes_spent_ = 0;                         // text it copied (names and strings)
  uint64_t byte_budget_ = 0;                         // 0 until the first spend works it out
  uint64_t copied_ = 0;                              // bytes of strided views copied out
  uint64_t copy_budget_ = 0;                         // 0 until the first strided view works it out
};

}  // namespace zt::foreign::torch_reader
