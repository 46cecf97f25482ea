#include "values.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>

#include "manifest/object_format.h"
#include "read/content.h"
#include "views/views.h"

namespace zt::cli {

Component model_component(const Part& p) {
  Component c;
  c.role = p.role;
  c.dtype = p.dtype;
  c.type = p.type;
  c.known_type = p.known_type;
  return c;
}

namespace {

using ull = unsigned long long;

std::string dtype_text(const Part& p) {
  std::string s(dtype_name(p.dtype));
  if (p.type) s += " (" + *p.type + ")";
  return s;
}

// Element f of a component: a pointer to its bytes (as many as one element
// of the dtype times the ratio holds).
using ElementBytes = std::function<const uint8_t*(uint64_t f)>;

// Element `f` of a numeric component.
Cell numeric_cell(const uint8_t* element, const NumericFormat& fmt) {
  double out[2] = {0, 0};
  convert_values(element, fmt, fmt.ratio, out);
  return Cell{0, out[0], out[1]};
}

// A component's elements read forward through its windows, for printing:
// an element before the current window starts the windows again (each
// pass of the printer reads the component once, in order), so what is
// held is a window, whatever the component decodes to. What fails is kept
// in `failure` (the printer's element calls cannot return it).
class ElementCursor {
 public:
  ElementCursor(const Input& in, size_t item, size_t part, unsigned step,
                std::optional<Error>& failure)
      : in_(in), item_(item), part_(part), step_(step), failure_(failure) {}

  const uint8_t* element(uint64_t f) {
    static constexpr uint8_t kZeros[16] = {};
    if (failure_) return kZeros;
    auto e = find(f * step_);
    if (!e) {
      failure_ = std::move(e).error();
      return kZeros;
    }
    return *e;
  }

  // Reads on to the component's end, so that its decoders' checks of what
  // it decodes to (no more, no fewer bytes than stated) run as they do for
  // every whole read: elided printing stops at the last element, and the
  // check is in the window after it. Cheap: only what follows the last
  // element read is left.
  // The next element asked for starts the windows again.
  void finish() {
    if (failure_ || !windows_) return;
    for (;;) {
      auto w = windows_->next();
      if (!w) failure_ = std::move(w).error();
      if (!w || w->empty()) break;
    }
    windows_.reset();
    window_ = {};
    start_ = 0;
  }

 private:
  Result<const uint8_t*> find(uint64_t at) {
    if (!windows_ || at < start_) {
      auto w = in_.windows(item_, part_);
      ZT_TRY(w);
      windows_ = std::move(*w);
      start_ = 0;
      window_ = {};
    }
    while (at >= start_ + window_.size()) ZT_TRY(advance(at));
    const uint64_t off = at - start_;
    if (window_.size() - off >= step_) return window_.data() + off;
    // An element across windows: its bytes gathered.
    carry_.assign(window_.begin() + static_cast<std::ptrdiff_t>(off), window_.end());
    while (carry_.size() < step_) {
      ZT_TRY(advance(at + step_));
      const size_t take = std::min<size_t>(step_ - carry_.size(), window_.size());
      carry_.insert(carry_.end(), window_.begin(),
                    window_.begin() + static_cast<std::ptrdiff_t>(take));
    }
    return carry_.data();
  }
  Result<void> advance(uint64_t wanted) {
    start_ += window_.size();
    auto w = windows_->next();
    ZT_TRY(w);
    ZT_FAIL_IF(w->empty(), invalid, "%s: object \"%s\": component \"%s\" ends before byte %llu",
               in_.path.c_str(), in_.items[item_].name.c_str(),
               in_.items[item_].parts[part_].role.c_str(), static_cast<ull>(wanted));
    window_ = *w;
    return {};
  }

  const Input& in_;
  size_t item_, part_;
  unsigned step_;
  std::optional<Error>& failure_;
  std::unique_ptr<Windows> windows_;
  std::span<const uint8_t> window_;
  uint64_t start_ = 0;  // of window_ in the component
  std::vector<uint8_t> carry_;
};

// The printer visits the shown elements two or three times, in order: the
// first visit's cells are kept (up to kReplayCells) and the later passes
// replay them, so a component read through its windows is read once. An
// array that shows more (--full, or dimensions of 6 or fewer) is read again
// each pass instead of held.
constexpr size_t kReplayCells = size_t{1} << 20;

std::function<Cell(uint64_t)> replayed(std::function<Cell(uint64_t)> at) {
  struct Replay {
    std::vector<std::pair<uint64_t, Cell>> cells;
    size_t next = 0;
    bool recording = true, held = true, started = false;
    uint64_t last = 0;
  };
  auto r = std::make_shared<Replay>();
  return [at = std::move(at), r](uint64_t f) {
    const bool new_pass = r->started && f <= r->last;  // flat indices rise within a pass
    r->started = true;
    r->last = f;
    if (new_pass) r->recording = false, r->next = 0;
    if (r->recording) {
      const Cell c = at(f);
      if (r->held && r->cells.size() < kReplayCells) {
        r->cells.emplace_back(f, c);
      } else if (r->held) {
        r->held = false;
        std::vector<std::pair<uint64_t, Cell>>().swap(r->cells);
      }
      return c;
    }
    if (r->held && r->next < r->cells.size() && r->cells[r->next].first == f)
      return r->cells[r->next++].second;
    return at(f);
  };
}

// The type a densified object's values come out as: f64 if its values (or
// scales) are f64, else f32.
bool wide_values(const Item& it) {
  for (const char* role : {"data", "values", "scales"})
    if (const Part* p = it.find(role)) return p->dtype == DType::f64;
  return false;
}

bool complex_values(const Item& it) {
  for (const char* role : {"data", "values"})
    if (const Part* p = it.find(role)) return p->type && p->type->starts_with("complex");
  return false;
}

// The values of component k: `count` elements, found by element(f).
Result<std::unique_ptr<Values>> from_elements(
    const Input& in, size_t item, size_t k, std::unique_ptr<Values> v, uint64_t byte_count,
    const std::function<ElementBytes(unsigned step)>& element, bool as_object) {
  const Item& it = in.items[item];
  const Part& p = it.parts[k];
  const Component c = model_component(p);
  Object model;
  model.name = it.name;
  auto fmt = numeric_format(model, c);
  // A logical type this library cannot convert, or a part of packed values
  // on its own (f4_e2m1: its count is the layout's): its raw dtype elements.
  const bool raw_elements = (!fmt && fmt.error().status == Status::unsupported) || (fmt && fmt->f4);
  if (!fmt && !raw_elements) return std::move(fmt).error();
  const NumericFormat nf = raw_elements ? NumericFormat{p.dtype, Fp8::none, 1} : *fmt;
  const unsigned step = dtype_width(p.dtype) * nf.ratio;
  const uint64_t count = byte_count / step;
  v->what =
      dtype_text(p) +
      (raw_elements ? ", shown as raw " + std::string(dtype_name(p.dtype)) + " elements" : "");
  v->shape = {count};
  if (as_object) {
    const auto n = shape_product(it.shape);
    if (n && *n == count)
      v->shape = it.shape;
    else
      ZT_FAIL_IF(!raw_elements, invalid,
                 "%s: object \"%s\": %llu elements stored, the shape needs %llu", in.path.c_str(),
                 it.name.c_str(), static_cast<ull>(count), static_cast<ull>(n.value_or(0)));
  }
  const ElementBytes at = element(step);
  // Integers and bools (1.2's dtype, v2's type over u8) print as such.
  const bool boolean = nf.dtype == DType::boolean;
  const bool integer = boolean || ((!p.type || raw_elements) && dtype_is_integer(nf.dtype));
  if (integer) {
    v->kind = boolean ? CellKind::boolean : CellKind::integer;
    const DType d = nf.dtype;
    if (d == DType::boolean)
      v->at = [at](uint64_t f) { return Cell{*at(f) != 0, 0, 0}; };
    else
      v->at = [at, d, step](uint64_t f) {
        return Cell{load_index(std::span<const uint8_t>(at(f), step), d, 0), 0, 0};
      };
    return v;
  }
  v->kind = nf.ratio == 2 ? CellKind::complex : CellKind::real;
  // f16 values print at half precision as numpy does; bf16 and FP8 (no
  // numpy type) as the exact float32 values they are.
  v->precision = p.dtype == DType::f64                                           ? Precision::f64
                 : p.dtype == DType::f16 && nf.ratio == 1 && nf.fp8 == Fp8::none ? Precision::f16
                                                                                 : Precision::f32;
  v->at = [at, nf](uint64_t f) { return numeric_cell(at(f), nf); };
  return v;
}

// The values of component k held in `bytes_held`.
Result<std::unique_ptr<Values>> from_bytes(const Input& in, size_t item, size_t k,
                                           Buffer&& bytes_held, bool as_object) {
  auto v = std::make_unique<Values>();
  v->buffer = std::move(bytes_held);
  const std::span<const uint8_t> bytes = v->buffer.view;
  return from_elements(
      in, item, k, std::move(v), bytes.size(),
      [bytes](unsigned step) -> ElementBytes {
        return [bytes, step](uint64_t f) { return bytes.data() + f * step; };
      },
      as_object);
}

// The values of component k: bytes viewed in the file where they lie there
// raw; else (zstd, copy mode, a URL) read through its windows as printed,
// never decoded whole (cat shows a few elements of a component of GiBs).
Result<std::unique_ptr<Values>> from_component(const Input& in, size_t item, size_t k, bool as_object) {
  const Reader* r = in.reader();
  const Part& p = in.items[item].parts[k];
  if (r && p.decoded) {
    auto in_place = r->mapped_in_place(r->manifest().objects[item].components[k]);
    ZT_TRY(in_place);
    if (!*in_place) {
      auto v = std::make_unique<Values>();
      Values* held = v.get();
      std::shared_ptr<ElementCursor> cursor;
      auto made = from_elements(
          in, item, k, std::move(v), *p.decoded,
          [&](unsigned step) -> ElementBytes {
            cursor = std::make_shared<ElementCursor>(in, item, k, step, held->failure);
            return [c = cursor](uint64_t f) { return c->element(f); };
          },
          as_object);
      ZT_TRY(made);
      (*made)->finish = [cursor] { cursor->finish(); };
      (*made)->at = replayed(std::move((*made)->at));
      return made;
    }
  }
  auto b = in.bytes(item, k);
  ZT_TRY(b);
  return from_bytes(in, item, k, std::move(*b), as_object);
}

}  // namespace

std::string element_text(const Input& in, size_t item, size_t k, std::span<const uint8_t> element) {
  Buffer b;
  if (!b.owned.resize(element.size())) return "?";
  if (!element.empty()) std::memcpy(b.owned.data(), element.data(), element.size());
  b.view = b.owned.bytes();
  auto v = from_bytes(in, item, k, std::move(b), false);
  if (!v || (*v)->shape[0] == 0) return "?";
  return format_scalar((*v)->kind, (*v)->at(0), (*v)->precision);
}

Result<DenseForm> dense_form(const Input& in, size_t item) {
  const Item& it = in.items[item];
  const Reader* r = in.reader();
  ZT_FAIL_IF(!r, unsupported, "%s: object \"%s\": only .zt objects can be densified",
             in.path.c_str(), it.name.c_str());
  auto n = decoded_value_count(*r, item);
  ZT_TRY(n);
  DenseForm d;
  const bool wide = wide_values(it);
  const bool cplx = complex_values(it);
  d.dtype = wide ? "f64" : "f32";
  if (cplx) d.type = wide ? "complex128" : "complex64";
  const uint64_t width = wide ? 8 : 4;
  ZT_FAIL_IF(*n > UINT64_MAX / width, limit, "object \"%s\": too many values", it.name.c_str());
  d.bytes = *n * width;
  return d;
}

namespace {

template <typename T>
Result<void> stream_values(const Reader& r, size_t item, const ByteSink& sink) {
  auto got = decode_object_chunked<T>(r, item, kChunkValues, [&](std::span<const T> v) {
    return sink(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size_bytes()));
  });
  ZT_TRY(got);
  return {};
}

}  // namespace

Result<void> write_densified(const Input& in, size_t item, const ByteSink& sink) {
  auto form = dense_form(in, item);
  ZT_TRY(form);
  const Reader& r = *in.reader();
  return form->dtype == "f64" ? stream_values<double>(r, item, sink) : stream_values<float>(r, item, sink);
}

Result<void> write_as_f32(const Input& in, size_t item, const ByteSink& sink) {
  const Reader* r = in.reader();
  ZT_FAIL_IF(!r, unsupported, "%s: object \"%s\": only .zt objects convert to f32", in.path.c_str(),
             in.items[item].name.c_str());
  return stream_values<float>(*r, item, sink);
}

Result<void> write_dense_bytes(const Input& in, size_t item, const ByteSink& sink) {
  const Item& it = in.items[item];
  const Reader* r = in.reader();
  const auto k = it.index_of("data");
  ZT_FAIL_IF(!k, invalid, "%s: dense object \"%s\" has no \"data\" component", in.path.c_str(), it.name.c_str());
  const Part& p = it.parts[*k];
  if (!r || it.shape.empty() || !p.decoded) {
    auto b = in.bytes(item, *k);
    ZT_TRY(b);
    return sink(b->view);
  }
  // Rows at a time: raw data is read in place and zstd data frame by frame
  // where its frames allow, so the output never exists whole.
  const uint64_t rows = it.shape[0];
  if (rows == 0 || *p.decoded == 0) return {};
  const uint64_t row_bytes = *p.decoded / rows;
  const uint64_t rows_per = std::max<uint64_t>(1, kChunkValues * 4 / std::max<uint64_t>(1, row_bytes));
  std::vector<uint8_t> buf;
  for (uint64_t r0 = 0; r0 < rows; r0 += rows_per) {
    const uint64_t r1 = std::min(rows, r0 + rows_per);
    buf.resize((r1 - r0) * row_bytes);
    auto got = dense_rows(*r, item, r0, r1, buf);
    ZT_TRY(got);
    ZT_TRY(sink(std::span<const uint8_t>(buf).first(*got)));
  }
  return {};
}

Result<std::unique_ptr<Values>> load_values(const Input& in, size_t item,
                                            const std::optional<std::string>& role,
                                            uint64_t max_values) {
  const Item& it = in.items[item];
  if (role) {
    const auto k = it.index_of(*role);
    ZT_FAIL_IF(!k, not_found, "%s: object \"%s\" has no component \"%s\"", in.path.c_str(),
               it.name.c_str(), role->c_str());
    return from_component(in, item, *k, false);
  }
  const Part* dense = it.descriptor == &kDenseFormat ? it.find("data") : nullptr;
  // Packed values (f4_e2m1) are decoded with the object, which knows their count.
  if (it.descriptor == &kDenseFormat &&
      !(dense && dense->known_type && dense->known_type->per_byte)) {
    const auto k = it.index_of("data");
    ZT_FAIL_IF(!k, invalid, "%s: dense object \"%s\" has no \"data\" component", in.path.c_str(),
               it.name.c_str());
    return from_component(in, item, *k, true);
  }
  const Reader* r = in.reader();
  ZT_FAIL_IF(!r, unsupported, "%s: object \"%s\": format \"%s\" cannot be decoded", in.path.c_str(),
             it.name.c_str(), it.format.c_str());
  auto n = decoded_value_count(*r, item);
  ZT_TRY(n);
  ZT_FAIL_IF(*n > max_values, limit,
             "object \"%s\": densifying it gives %llu values, more than %llu; print one component "
             "with --component",
             it.name.c_str(), static_cast<ull>(*n), static_cast<ull>(max_values));
  auto v = std::make_unique<Values>();
  v->decoded.resize(*n);
  auto got = decode_object_as<double>(*r, item, v->decoded);
  ZT_TRY(got);
  v->shape = it.shape;
  const bool cplx = complex_values(it);
  v->kind = cplx ? CellKind::complex : CellKind::real;
  v->precision = wide_values(it) ? Precision::f64 : Precision::f32;
  const ObjectFormat& format = *it.descriptor;  // decoded: a known format
  const Part* values = format.value_role.empty() ? nullptr : it.find(format.value_role);
  const std::string how = format.decoded_as.empty() ? "decoded" : std::string(format.decoded_as);
  v->what = (values ? dtype_text(*values) + " values, " : std::string()) + how;
  const double* data = v->decoded.data();
  if (cplx)
    v->at = [data](uint64_t f) { return Cell{0, data[2 * f], data[2 * f + 1]}; };
  else
    v->at = [data](uint64_t f) { return Cell{0, data[f], 0}; };
  return v;
}

}  // namespace zt::cli
