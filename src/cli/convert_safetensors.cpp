// zt convert to .safetensors: dense tensors of its own dtypes, others
// densified with --densify or refused by name.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <set>
#include <unordered_map>

#include "base/arithmetic.h"
#include "base/zt_limits.h"
#include "cbor/cbor_encode.h"
#include "cbor/cbor_item.h"
#include "cbor/cbor_value.h"
#include "commands.h"
#include "foreign/ggml_quant.h"
#include "foreign/gguf.h"
#include "foreign/safetensors.h"
#include "input.h"
#include "manifest/object_format.h"
#include "progress.h"
#include "read/content.h"
#include "rewrite.h"
#include "source/http_source.h"
#include "values.h"
#include "write/writer.h"

namespace zt::cli {

using ull = unsigned long long;

// safetensors holds dense tensors of its own dtypes only. Objects it cannot
// hold are densified to f32/f64 with --densify, else refused by name.
Result<void> write_st(const std::string& out, const Input& in, const RewriteOptions& opt) {
  auto plan = plan_export<foreign::SafetensorsEntry>(
      out, in, opt, "safetensors holds dense tensors of its own dtypes only",
      [](const Item& it, const Part* data) -> Result<std::optional<foreign::SafetensorsEntry>> {
        if (!data) return std::optional<foreign::SafetensorsEntry>();
        return foreign::safetensors_entry(it.name, data->dtype, data->type, it.shape,
                                          data->decoded.value_or(data->stored));
      },
      [&](foreign::SafetensorsEntry& e, const DenseForm& d, const Item& it) -> Result<void> {
        e.dtype =
            d.type ? (d.type == "complex64" ? "C64" : "") : (d.dtype == "f64" ? "F64" : "F32");
        ZT_FAIL_IF(e.dtype.empty(), argument,
                   "%s: object \"%s\": complex128 has no safetensors dtype", out.c_str(),
                   it.name.c_str());
        return {};
      });
  ZT_TRY(plan);
  const std::vector<foreign::SafetensorsEntry>& entries = plan->entries;
  std::vector<std::pair<std::string, std::string>> metadata;
  ZT_TRY(for_each_attribute(in.attributes_cbor, [&](std::string_view k, std::span<const uint8_t> v) -> Result<void> {
    auto s = cbor::scalar(v);
    ZT_TRY(s);
    metadata.emplace_back(std::string(k), s->kind == cbor::Kind::text ? std::string(s->str) : attribute_text(v));
    return {};
  }));
  uint64_t total = 0;
  for (const auto& e : entries) total += e.nbytes;
  Progress progress("convert", total);
  auto r = foreign::write_safetensors(
      out, metadata, entries, [&](size_t i, const foreign::ByteSink& sink) {
        return write_object(in, i, plan->densified[i], progress, sink);
      });
  if (!r) return qualified(std::move(r).error(), out);
  progress.finish();
  uint64_t dropped = 0;
  for (const Item& it : in.items) dropped += it.has_attributes && it.attributes_cbor.size() > 1 ? 1 : 0;
  if (dropped)
    std::fprintf(
        stderr,
        "zt: note: safetensors has no per-tensor metadata: attributes of %llu object%s not kept\n",
        static_cast<ull>(dropped), dropped == 1 ? " were" : "s were");
  return {};
}

}  // namespace zt::cli
