// zt cat, zt export.
#include <cstdio>
#include <cstring>

#include "commands.h"
#include "npy.h"
#include "values.h"
#include "views.h"

namespace zt::cli {

namespace {

using ull = unsigned long long;

constexpr uint64_t kDefaultMaxValues = uint64_t{1} << 27;

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
  std::printf("# %s%s: %s %s %s\n", it.name.c_str(), role ? ("." + *role).c_str() : "",
              role ? "component" : it.format.c_str(), shape_text((*v)->shape).c_str(),
              (*v)->what.c_str());
  PrintOptions opt;
  opt.full = a.has("--full");
  opt.precision = (*v)->precision;
  std::printf("%s\n", format_array((*v)->shape, (*v)->kind, (*v)->at, opt).c_str());
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
  const Item& it = (*in)->items[*i];
  const auto role = a.get("--component");
  // Corrupt input is refused, never exported (issue 24, item 1).
  if (auto c = (*in)->check(*i); !c) return report(c.error(), a.pos[0]);

  std::vector<uint64_t> shape;
  std::string descr;
  Buffer bytes;
  const std::optional<size_t> k = role                   ? it.index_of(*role)
                                  : it.format == "dense" ? it.index_of("data")
                                                         : std::nullopt;
  if (role && !k)
    return report(make_error(Status::not_found, "object \"%s\" has no component \"%s\"",
                             it.name.c_str(), role->c_str()),
                  a.pos[0]);
  if (k) {
    const Part& p = it.parts[*k];
    auto b = (*in)->bytes(*i, *k);
    if (!b) return report(b.error(), a.pos[0]);
    const unsigned step = dtype_width(p.dtype) * part_ratio(p);
    shape = role ? std::vector<uint64_t>{b->view.size() / step} : it.shape;
    if (const auto d = formats::npy_descr(p.dtype, p.type)) {
      descr = *d;
      bytes = std::move(*b);
    } else {
      // bf16 and FP8 have no numpy dtype: their values go out as float32.
      Component c;
      c.role = p.role;
      c.dtype = p.dtype;
      c.type = p.type;
      c.known_type = p.type ? find_logical_type(*p.type) : nullptr;
      Object model;
      model.name = it.name;
      auto fmt = numeric_format(model, c);
      if (!fmt) return report(fmt.error(), a.pos[0]);
      const uint64_t n = b->view.size() / dtype_width(p.dtype);
      std::vector<float> values(n);
      convert_values(b->view.data(), *fmt, n, values.data());
      descr = fmt->ratio == 2 ? "<c8" : "<f4";
      bytes.owned.resize(n * 4);
      if (n) std::memcpy(bytes.owned.data(), values.data(), n * 4);  // no NULL pointers at 0
      bytes.view = bytes.owned;
    }
  } else {
    auto d = densify(**in, *i);
    if (!d) return report(d.error(), a.pos[0]);
    shape = it.shape;
    descr = d->type ? (d->dtype == "f64" ? "<c16" : "<c8") : (d->dtype == "f64" ? "<f8" : "<f4");
    bytes.owned = std::move(d->bytes);
    bytes.view = bytes.owned;
  }
  const std::string header = formats::npy_header(descr, shape);
  auto file = formats::AtomicFile::create(*out);
  if (!file) return report(file.error(), *out);
  auto w = file->write(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(header.data()), header.size()));
  if (w) w = file->write(bytes.view);
  if (w) w = file->commit();
  if (!w) return report(w.error(), *out);
  std::fprintf(stderr, "wrote %s: %s %s (%s)\n", out->c_str(), descr.c_str(),
               shape_text(shape).c_str(), human_bytes(bytes.view.size()).c_str());
  return kOk;
}

}  // namespace zt::cli
