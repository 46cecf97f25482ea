#include "foreign/foreign.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/zt_limits.h"
#include "cbor/cbor_value.h"
#include "foreign/gguf.h"
#include "foreign/hf_index.h"
#include "foreign/npy.h"
#include "foreign/pytorch.h"
#include "foreign/safetensors.h"

namespace zt::foreign {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

FileKind kind_from_path(std::string_view path) {
  if (is_hf_index(path)) return FileKind::hf_index;
  if (ends_with(path, ".zt")) return FileKind::zt;
  if (ends_with(path, ".safetensors")) return FileKind::safetensors;
  if (ends_with(path, ".gguf")) return FileKind::gguf;
  if (ends_with(path, ".npy")) return FileKind::npy;
  if (ends_with(path, ".npz")) return FileKind::npz;
  for (const std::string_view ext : {".pt", ".pth", ".bin", ".ckpt"})
    if (ends_with(path, ext)) return FileKind::pytorch;
  return FileKind::unknown;
}

std::string_view kind_name(FileKind k) {
  switch (k) {
    case FileKind::zt:
      return "zt";
    case FileKind::safetensors:
      return "safetensors";
    case FileKind::gguf:
      return "gguf";
    case FileKind::npy:
      return "npy";
    case FileKind::npz:
      return "npz";
    case FileKind::pytorch:
      return "pytorch";
    case FileKind::hf_index:
      return "sharded checkpoint";
    case FileKind::unknown:
      break;
  }
  return "unknown";
}

namespace {

Result<ForeignFile> read_by_kind(const std::string& path, const ReadOptions& options) {
  switch (kind_from_path(path)) {
    case FileKind::safetensors:
      return read_safetensors(path);
    case FileKind::gguf:
      return read_gguf(path, options);
    case FileKind::npy:
      return read_npy(path);
    case FileKind::npz:
      return read_npz(path);
    case FileKind::pytorch:
      return read_pytorch(path);
    case FileKind::hf_index:
      return read_hf_index(path, options);
    case FileKind::zt:
    case FileKind::unknown:
      break;
  }
  return make_error(
      Status::unsupported,
      "%s: unknown file type (expected .zt, .safetensors, .gguf, .npy, .npz, a PyTorch "
      ".pt/.pth/.bin/.ckpt or a sharded checkpoint's .index.json)",
      path.c_str());
}

// What a reader returns goes straight to zt::Writer: refuse here, naming the
// file, what the writer would refuse later.
Result<void> check_writable(const std::string& path, const ForeignFile& f) {
  for (const ForeignObject& o : f.objects) {
    ZT_FAIL_IF(
        name_fault(o.name) != NameFault::none,
        invalid,
        "%s: tensor name \"%s\" is empty, longer than %llu bytes, holds a NUL byte or is not UTF-8",
        path.c_str(), o.name.substr(0, 100).c_str(),
        static_cast<unsigned long long>(Limits::name_bytes));
    for (const ForeignComponent& c : o.components) {
      if (c.dtype != DType::boolean) continue;
      const auto bad =
          std::find_if(c.bytes.begin(), c.bytes.end(), [](uint8_t b) { return b > 1; });
      ZT_FAIL_IF(bad != c.bytes.end(), invalid,
                 "%s: tensor \"%s\": bool byte 0x%02x at element %zu is neither 0 nor 1",
                 path.c_str(), o.name.c_str(), *bad, static_cast<size_t>(bad - c.bytes.begin()));
    }
  }
  return {};
}

}  // namespace

Result<ForeignFile> read_foreign(const std::string& path, const ReadOptions& options) {
  auto f = read_by_kind(path, options);
  ZT_TRY(f);
  ZT_TRY(check_writable(path, *f));
  return f;
}

bool Cursor::take(uint64_t n, std::span<const uint8_t>& out) {
  if (n > left()) return false;
  out = bytes_.subspan(pos_, n);
  pos_ += n;
  return true;
}

}  // namespace zt::foreign
