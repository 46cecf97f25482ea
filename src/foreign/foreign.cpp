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
#include "foreign/hf_quantized.h"
#include "foreign/npy.h"
#include "foreign/onnx.h"
#include "foreign/pytorch.h"
#include "foreign/safetensors.h"

namespace zt::foreign {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

Result<ForeignFile> read_safetensors_file(const std::string& path, const ReadOptions&) {
  return read_safetensors(path);
}
Result<ForeignFile> read_npy_file(const std::string& path, const ReadOptions& o) {
  return read_npy(path, o.decoded_limit());
}
Result<ForeignFile> read_npz_file(const std::string& path, const ReadOptions& o) {
  return read_npz(path, o.decoded_limit());
}
Result<ForeignFile> read_pytorch_file(const std::string& path, const ReadOptions& o) {
  return read_pytorch(path, o.decoded_limit());
}
Result<ForeignFile> read_onnx_file(const std::string& path, const ReadOptions& o) {
  return read_onnx(path, o.decoded_limit());
}

constexpr std::string_view kSafetensorsExt[] = {".safetensors"};
constexpr std::string_view kGgufExt[] = {".gguf"};
constexpr std::string_view kNpyExt[] = {".npy"};
constexpr std::string_view kNpzExt[] = {".npz"};
constexpr std::string_view kPytorchExt[] = {".pt", ".pth", ".bin", ".ckpt"};
constexpr std::string_view kOnnxExt[] = {".onnx"};
// Before every other: "x.index.json" is a sharded checkpoint whatever precedes.
constexpr std::string_view kHfIndexExt[] = {".index.json"};
constexpr std::string_view kGgufKeyed[] = {"gguf.types"};

// One entry per foreign format; kind_from_path takes the first whose
// extension matches.
constexpr ForeignFormat kFormats[] = {
    {FileKind::hf_index, "hf_index", "sharded checkpoint", kHfIndexExt, read_hf_index},
    {FileKind::safetensors, "safetensors", "safetensors", kSafetensorsExt, read_safetensors_file},
    {FileKind::gguf, "gguf", "gguf", kGgufExt, read_gguf, kGgufKeyed},
    {FileKind::npy, "npy", "npy", kNpyExt, read_npy_file},
    {FileKind::npz, "npz", "npz", kNpzExt, read_npz_file},
    {FileKind::pytorch, "pytorch", "pytorch", kPytorchExt, read_pytorch_file},
    {FileKind::onnx, "onnx", "onnx", kOnnxExt, read_onnx_file},
};

}  // namespace

std::span<const ForeignFormat> foreign_formats() {
  return kFormats;
}

const ForeignFormat* foreign_format(FileKind k) {
  for (const ForeignFormat& f : kFormats)
    if (f.kind == k) return &f;
  return nullptr;
}

bool is_keyed_attribute(std::string_view key) {
  for (const ForeignFormat& f : kFormats)
    if (std::find(f.keyed_attributes.begin(), f.keyed_attributes.end(), key) !=
        f.keyed_attributes.end())
      return true;
  return false;
}

FileKind kind_from_path(std::string_view path) {
  for (const ForeignFormat& f : kFormats)
    for (const std::string_view ext : f.extensions)
      if (path.size() > ext.size() && ends_with(path, ext)) return f.kind;
  if (ends_with(path, ".zt")) return FileKind::zt;
  return FileKind::unknown;
}

std::string_view kind_name(FileKind k) {
  if (k == FileKind::zt) return "zt";
  const ForeignFormat* f = foreign_format(k);
  return f ? f->label : "unknown";
}

namespace {

Result<ForeignFile> read_by_kind(const std::string& path, FileKind kind,
                                 const ReadOptions& options) {
  if (const ForeignFormat* f = foreign_format(kind)) return f->read(path, options);
  std::string expected = ".zt";  // and every extension of the table, in its order
  for (const ForeignFormat& f : kFormats)
    for (const std::string_view ext : f.extensions) (expected += ", ") += ext;
  return make_error(Status::unsupported, "%s: unknown file type (expected %s)", path.c_str(),
                    expected.c_str());
}

}  // namespace

// What a reader returns goes straight to zt::Writer: refuse here, naming the
// file, what the writer would refuse later.
Result<void> refuse_wide_integer(const char* path, const JsonTextFaults& faults) {
  if (!faults.wide_integer) return {};
  return make_error(Status::invalid, "%s: %s", path,
                    describe_wide_integer(*faults.wide_integer).c_str());
}

Result<void> check_writable(const std::string& path, const ForeignFile& f) {
  for (const ForeignObject& o : f.objects) {
    ZT_FAIL_IF(
        name_fault(o.name) != NameFault::none, invalid,
        "%s: tensor name \"%s\" is empty, longer than %llu bytes, holds a NUL byte or is not UTF-8",
        path.c_str(), printable(std::string_view(o.name).substr(0, 100)).c_str(),
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

Result<std::optional<std::string>> model_entry(const std::string& path) {
  std::string folder;
  struct stat st {};
  const std::string_view base = std::string_view(path).substr(path.find_last_of('/') + 1);
  if (base == "config.json")
    folder = path.size() == base.size() ? "." : path.substr(0, path.size() - base.size());
  else if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    folder = path;
  else
    return std::optional<std::string>();
  if (!folder.ends_with('/')) folder += '/';
  for (const char* entry : {"model.safetensors.index.json", "model.safetensors"}) {
    const std::string candidate = folder + entry;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode))
      return std::optional<std::string>(candidate);
  }
  return make_error(Status::not_found,
                    "%s: a model folder holds model.safetensors.index.json or model.safetensors; "
                    "%s has neither",
                    path.c_str(), folder.c_str());
}

Result<ForeignFile> read_foreign(const std::string& path, const ReadOptions& options) {
  return read_foreign_as(path, kind_from_path(path), options);
}

Result<ForeignFile> read_foreign_as(const std::string& path, FileKind kind,
                                    const ReadOptions& options) {
  auto f = read_by_kind(path, kind, options);
  ZT_TRY(f);
  // A Hugging Face checkpoint's quantized layers become objects.
  if (options.group_quantized &&
      (f->kind == FileKind::safetensors || f->kind == FileKind::hf_index))
    ZT_TRY(group_quantized_layers(path, *f));
  ZT_TRY(check_writable(path, *f));
  return f;
}

namespace {

// Empties j's containers from the innermost out, so that destroying each
// finds nothing to move aside. Depth is bounded by the readers' nesting
// limits; past 64 levels nlohmann's own destructor takes over.
void release_json(Json& j, int depth = 0) {
  if (depth > 64) return;
  if (j.is_array()) {
    auto& items = j.get_ref<Json::array_t&>();
    for (Json& item : items) release_json(item, depth + 1);
    Json::array_t().swap(items);
  } else if (j.is_object()) {
    auto& entries = j.get_ref<Json::object_t&>();
    for (auto& entry : entries) release_json(entry.second, depth + 1);
    Json::object_t().swap(entries);
  }
}

}  // namespace

ForeignFile::~ForeignFile() {
  release_attributes();
}

void ForeignFile::release_attributes() {
  release_json(attributes);
  for (ForeignObject& o : objects) release_json(o.attributes);
  for (ForeignFile& part : input_files) part.release_attributes();
}

Result<ForeignFile> ForeignFile::mapped(const std::string& path, FileKind kind) {
  auto src = Source::open_file(path, Source::Mode::map);
  ZT_TRY(src);
  ForeignFile f;
  f.kind = kind;
  f.source = std::move(*src);
  return f;
}

bool Cursor::take(uint64_t n, std::span<const uint8_t>& out) {
  if (n > left()) return false;
  out = bytes_.subspan(pos_, n);
  pos_ += n;
  return true;
}

}  // namespace zt::foreign
