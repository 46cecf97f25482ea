// zt cat, zt export.
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>

#include "commands.h"
#include "foreign/npy.h"
#include "manifest/object_format.h"
#include "values.h"
#include "views/views.h"
#include "write/output_file.h"

namespace zt::cli {

namespace {

using ull = unsigned long long;

constexpr uint64_t kDefaultMaxValues = uint64_t{1} << 27;

// What export writes: the .npy dtype and shape, and how the values are
// written, known before any of them is decoded.
struct NpyExport {
  std::string descr;
  std::vector<uint64_t> shape;
  std::function<Result<void>(const ByteSink&)> write;
};

// A component in pieces of whole elements of `width` bytes, whatever its
// windows' sizes.
Result<void> for_each_elements(std::unique_ptr<Windows> w, unsigned width,
                               const std::function<Result<void>(std::span<const uint8_t>)>& f) {
  Blocks blocks(std::move(w));
  const size_t piece = size_t{width} << 16;
  for (;;) {
    auto b = blocks.take(piece);
    ZT_TRY(b);
    if (b->empty()) return {};
    ZT_TRY(f(b->first(b->size() / width * width)));  // a part ends on an element
  }
}

// One component as a 1-D array, read a window at a time. Its elements as
// stored where numpy has their dtype; bf16 and FP8 as float32 values; packed
// FP4 as its raw bytes (u8), as zt cat -c shows it (the values' count is
// the object's layout's, not the part's).
Result<NpyExport> component_export(const Input& in, size_t i, size_t k) {
  const Item& it = in.items[i];
  const Part& p = it.parts[k];
  NpyExport plan;
  Object model;
  model.name = it.name;
  auto fmt = numeric_format(model, model_component(p));
  const bool packed = fmt && fmt->f4;
  const unsigned width = dtype_width(p.dtype) * (packed ? 1 : part_ratio(p));
  std::optional<uint64_t> size = p.decoded;
  if (!size) {  // a legacy zstd part that does not say: decoded to be counted
    auto b = in.bytes(i, k);
    ZT_TRY(b);
    size = b->view.size();
  }
  plan.shape = {*size / width};
  const auto descr = foreign::npy_descr(p.dtype, packed ? std::nullopt : p.type);
  if (descr) {
    plan.descr = *descr;
    plan.write = [&in, i, k, width](const ByteSink& sink) -> Result<void> {
      auto w = in.windows(i, k);
      ZT_TRY(w);
      return for_each_elements(std::move(*w), width, sink);
    };
    return plan;
  }
  ZT_TRY(fmt);
  plan.descr = fmt->ratio == 2 ? "<c8" : "<f4";
  plan.write = [&in, i, k, f = *fmt, width](const ByteSink& sink) -> Result<void> {
    auto w = in.windows(i, k);
    ZT_TRY(w);
    std::vector<float> values;
    return for_each_elements(
        std::move(*w), width, [&](std::span<const uint8_t> piece) -> Result<void> {
          const uint64_t n = piece.size() / width;
          values.resize(std::min(n, kChunkValues) * f.ratio);
          for (uint64_t at = 0; at < n; at += kChunkValues) {
            const uint64_t m = std::min<uint64_t>(kChunkValues, n - at);
            convert_values(piece.data() + at * width, f, m * f.ratio, values.data());
            ZT_TRY(sink(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(values.data()),
                                                 m * f.ratio * 4)));
          }
          return {};
        });
  };
  return plan;
}

Result<NpyExport> npy_export(const Input& in, size_t i, const std::optional<std::string>& role) {
  const Item& it = in.items[i];
  NpyExport plan;
  if (role) {  // one component as a 1-D array: its decoded bytes, as stored
    const auto k = it.index_of(*role);
    ZT_FAIL_IF(!k, not_found, "object \"%s\" has no component \"%s\"", it.name.c_str(), role->c_str());
    return component_export(in, i, *k);
  }
  plan.shape = it.shape;
  const Part* data = it.descriptor == &kDenseFormat ? it.find("data") : nullptr;
  if (data) {
    if (const auto d = foreign::npy_descr(data->dtype, data->type)) {
      plan.descr = *d;
      plan.write = [&in, i](const ByteSink& sink) { return write_dense_bytes(in, i, sink); };
      return plan;
    }
    // bf16 and FP8 have no numpy dtype: their values go out as float32.
    plan.descr = part_ratio(*data) == 2 ? "<c8" : "<f4";
    plan.write = [&in, i](const ByteSink& sink) { return write_as_f32(in, i, sink); };
    return plan;
  }
  auto form = dense_form(in, i);
  ZT_TRY(form);
  plan.descr = form->type ? (form->dtype == "f64" ? "<c16" : "<c8") : (form->dtype == "f64" ? "<f8" : "<f4");
  plan.write = [&in, i](const ByteSink& sink) { return write_densified(in, i, sink); };
  return plan;
}

Result<size_t> find_item(const Input& in, const std::string& name) {
  const auto i = in.find(name);
  ZT_FAIL_IF(!i, not_found, "%s: no object named \"%s\"", in.path.c_str(), name.c_str());
  return *i;
}

}  // namespace

int run_cat(const Args& a) {
  if (a.pos.size() != 2) return usage_error("cat", "expects FILE and NAME");
  uint64_t max_values = kDefaultMaxValues;
  if (const auto m = a.get("--max-values")) {
    auto v = parse_uint("--max-values", *m);
    if (!v) return usage_error("cat", v.error().message);
    max_values = *v;
  }
  auto in = Input::open(a.pos[0]);
  if (!in) return report(in.error(), a.pos[0]);
  auto i = find_item(**in, a.pos[1]);
  if (!i) return report(i.error());
  auto v = load_values(**in, *i, a.get("--component"), max_values);
  if (!v) return report(v.error(), a.pos[0]);
  const Item& it = (*in)->items[*i];
  const auto role = a.get("--component");
  std::printf("# %s%s: %s %s %s\n", printable(it.name).c_str(),
              role ? printable("." + *role).c_str() : "",
              role ? "component" : printable(it.format).c_str(), shape_text((*v)->shape).c_str(),
              printable((*v)->what).c_str());
  PrintOptions opt;
  opt.full = a.has("--full");
  opt.precision = (*v)->precision;
  const Values& values = **v;
  opt.failed = [&] {
    if (values.finish) values.finish();
    return values.failure.has_value();
  };
  print_array(values.shape, values.kind, values.at, opt,
              [](std::string_view t) { std::fwrite(t.data(), 1, t.size(), stdout); });
  if (values.failure) {
    std::fflush(stdout);
    return report(*values.failure, a.pos[0]);
  }
  std::printf("\n");
  return kOk;
}

int run_export(const Args& a) {
  if (a.pos.size() != 2) return usage_error("export", "expects FILE and NAME");
  const auto out = a.get("--output");
  if (!out) return usage_error("export", "needs -o OUT.npy");
  auto in = Input::open(a.pos[0]);
  if (!in) return report(in.error(), a.pos[0]);
  auto i = find_item(**in, a.pos[1]);
  if (!i) return report(i.error());
  const auto role = a.get("--component");
  // Corrupt input is refused, never exported.
  if (auto c = (*in)->check(*i); !c) return report(c.error(), a.pos[0]);

  auto plan = npy_export(**in, *i, role);
  if (!plan) return report(plan.error(), a.pos[0]);
  // The values go out piece by piece behind the header: a 1 GiB array is
  // never held whole. The file appears at OUT only when all of it is written.
  const std::string header = foreign::npy_header(plan->descr, plan->shape);
  auto file = OutputFile::create(*out);
  if (!file) return report(file.error(), *out);
  uint64_t written = 0;
  bool output_failed = false;
  auto w = file->write(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(header.data()), header.size()));
  if (w) {
    w = plan->write([&](std::span<const uint8_t> piece) {
      written += piece.size();
      auto put = file->write(piece);
      output_failed = !put;
      return put;
    });
    // Decoding failed: the input's fault, named as such.
    if (!w && !output_failed) return report(w.error(), a.pos[0]);
  }
  if (w) w = file->publish();
  if (!w) return report(w.error(), *out);
  std::fprintf(stderr, "wrote %s: %s %s (%s)\n", out->c_str(), plan->descr.c_str(),
               shape_text(plan->shape).c_str(), human_bytes(written).c_str());
  return kOk;
}

}  // namespace zt::cli
