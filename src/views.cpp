#include "views.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "content.h"
#include "validate.h"
#include "zstd_codec.h"

namespace zt {

namespace {

using ull = unsigned long long;

std::string where(const Object& o) {
  return "object \"" + o.name + "\"";
}

template <typename S>
S load(const uint8_t* p) {
  S v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// dst[i] = T(f(S at src + i * sizeof(S))). Blocks of a fixed 16 elements,
// which the compiler unrolls and vectorises at -O2 (a loop of unknown
// length it leaves scalar there).
template <typename S, typename T, typename F>
void convert_loop(const uint8_t* src, uint64_t n, T* dst, F&& f) {
  constexpr uint64_t kBlock = 16;
  uint64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    S in[kBlock];
    std::memcpy(in, src + i * sizeof(S), sizeof in);
    for (uint64_t l = 0; l < kBlock; ++l) dst[i + l] = static_cast<T>(f(in[l]));
  }
  for (; i < n; ++i) dst[i] = static_cast<T>(f(load<S>(src + i * sizeof(S))));
}

template <typename S, typename T>
void convert_loop(const uint8_t* src, uint64_t n, T* dst) {
  convert_loop<S>(src, n, dst, [](S v) { return v; });
}

size_t index_of(const Object& o, const Component* c) {
  return static_cast<size_t>(c - o.components.data());
}

bool is_zero_copy(const Reader& r, const Component& c) {
  return r.source().base() != nullptr && c.encoding == Encoding::raw && !c.big_endian;
}

// Decoded bytes for a one-off conversion: the mapping when raw, otherwise a
// fresh buffer (not the reader's cache, so a converted copy does not keep a
// second decoded copy alive until zt_close).
struct Fetched {
  std::span<const uint8_t> mapped;
  std::vector<uint8_t> owned;
  bool is_owned = false;
  std::span<const uint8_t> bytes() const {
    return is_owned ? std::span<const uint8_t>(owned) : mapped;
  }
};

Result<Fetched> fetch(const Reader& r, size_t object, size_t k) {
  const Component& c = r.manifest().objects[object].components[k];
  Fetched f;
  if (is_zero_copy(r, c)) {
    auto m = r.map(object, k);
    ZT_TRY(m);
    f.mapped = *m;
    return f;
  }
  auto d = r.decode(object, k);
  ZT_TRY(d);
  f.owned = std::move(*d);
  f.is_owned = true;
  return f;
}

// A component through the reader's map (zero-copy or cached).
Result<ComponentView> view_of(const Reader& r, size_t object, const Component& c) {
  const Object& o = r.manifest().objects[object];
  auto m = r.map(object, index_of(o, &c));
  ZT_TRY(m);
  ZT_FAIL_IF(m->size() % c.width() != 0, invalid,
             "%s: %zu decoded bytes are not a whole number of %u-byte elements",
             component_where(o, c).c_str(), m->size(), c.width());
  return ComponentView{&c, *m, m->size() / c.width(), is_zero_copy(r, c)};
}

Result<const Object*> object_of_format(const Reader& r, size_t object, std::string_view format,
                                       const char* hint) {
  const Object& o = r.manifest().objects[object];
  ZT_TRY(require_interpretable(o));
  ZT_FAIL_IF(o.format != format, argument, "%s has format \"%s\", not \"%.*s\"%s", where(o).c_str(),
             o.format.c_str(), static_cast<int>(format.size()), format.data(), hint);
  return &o;
}

Result<NumericFormat> scalar_format(const Object& o, const Component& c) {
  auto f = numeric_format(o, c);
  ZT_TRY(f);
  ZT_FAIL_IF(f->ratio != 1, unsupported, "%s: complex %s are not supported",
             component_where(o, c).c_str(), c.role.c_str());
  return f;
}

// Runs the content rules of zt_verify over the components already mapped.
Result<void> check_structure(const Reader& r, const Object& o,
                             std::initializer_list<const ComponentView*> views) {
  std::vector<std::span<const uint8_t>> decoded(o.components.size());
  for (const ComponentView* v : views) decoded[index_of(o, v->component)] = v->bytes;
  return check_content(r.manifest().generation != Generation::v1, o, decoded);
}

// Calls f(I{}) with I the C++ type of an integer dtype.
template <typename F>
void with_index_type(DType d, F&& f) {
  switch (d) {
    case DType::u8:
      return f(uint8_t{});
    case DType::u16:
      return f(uint16_t{});
    case DType::u32:
      return f(uint32_t{});
    case DType::u64:
      return f(uint64_t{});
    case DType::i8:
      return f(int8_t{});
    case DType::i16:
      return f(int16_t{});
    case DType::i32:
      return f(int32_t{});
    case DType::i64:
      return f(int64_t{});
    default:
      return;  // views are built only over integer index components
  }
}

// Calls f(W{}) with W the unsigned integer type of `width` bytes.
template <typename F>
void with_word_type(unsigned width, F&& f) {
  switch (width) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    default:
      return f(uint64_t{});
  }
}

// Unsigned bit pattern of word i of an integer component.
uint64_t word_at(std::span<const uint8_t> bytes, unsigned width, uint64_t i) {
  const uint8_t* p = bytes.data() + i * width;
  switch (width) {
    case 1:
      return *p;
    case 2:
      return load<uint16_t>(p);
    case 4:
      return load<uint32_t>(p);
    default:
      return load<uint64_t>(p);
  }
}

uint64_t ceil_div(uint64_t a, uint64_t b) {
  return a / b + (a % b != 0);
}

template <typename T>
std::vector<T> converted(const ComponentView& v, const NumericFormat& f) {
  std::vector<T> out(v.count);
  convert_values(v.bytes.data(), f, v.count, out.data());
  return out;
}

}  // namespace

template <typename T>
void convert_values(const uint8_t* src, const NumericFormat& f, uint64_t n, T* dst) {
  if (f.fp8 != Fp8::none) {
    const float* table = fp8_table(f.fp8);
    for (uint64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(table[src[i]]);
    return;
  }
  switch (f.dtype) {
    case DType::f64:
      return convert_loop<double>(src, n, dst);
    case DType::f32:
      if constexpr (std::is_same_v<T, float>) {
        if (n) std::memcpy(dst, src, n * sizeof(float));
        return;
      } else {
        return convert_loop<float>(src, n, dst);
      }
    case DType::f16:
      return convert_loop<uint16_t>(src, n, dst, f16_to_f32);
    case DType::bf16:
      return convert_loop<uint16_t>(src, n, dst, bf16_to_f32);
    case DType::i64:
      return convert_loop<int64_t>(src, n, dst);
    case DType::i32:
      return convert_loop<int32_t>(src, n, dst);
    case DType::i16:
      return convert_loop<int16_t>(src, n, dst);
    case DType::i8:
      return convert_loop<int8_t>(src, n, dst);
    case DType::u64:
      return convert_loop<uint64_t>(src, n, dst);
    case DType::u32:
      return convert_loop<uint32_t>(src, n, dst);
    case DType::u16:
      return convert_loop<uint16_t>(src, n, dst);
    case DType::u8:
      return convert_loop<uint8_t>(src, n, dst);
    case DType::boolean:
      for (uint64_t i = 0; i < n; ++i) dst[i] = src[i] != 0 ? T{1} : T{0};
      return;
  }
}

template void convert_values<float>(const uint8_t*, const NumericFormat&, uint64_t, float*);
template void convert_values<double>(const uint8_t*, const NumericFormat&, uint64_t, double*);

Result<NumericFormat> numeric_format(const Object& o, const Component& c) {
  NumericFormat f;
  f.dtype = c.dtype;
  if (!c.type) return f;
  const std::string& t = *c.type;
  if (t == "f8_e4m3fn") {
    f.fp8 = Fp8::e4m3fn;
  } else if (t == "f8_e5m2") {
    f.fp8 = Fp8::e5m2;
  } else if (t == "f8_e4m3fnuz") {
    f.fp8 = Fp8::e4m3fnuz;
  } else if (t == "f8_e5m2fnuz") {
    f.fp8 = Fp8::e5m2fnuz;
  } else if (t == "complex64" || t == "complex128") {
    f.ratio = 2;
  } else {
    return make_error(Status::unsupported,
                      "%s: logical type \"%s\" is not one this library can convert",
                      component_where(o, c).c_str(), t.c_str());
  }
  // The parser pairs known types with their storage dtype; checked again
  // because a table lookup trusts it.
  ZT_FAIL_IF(f.fp8 != Fp8::none && c.dtype != DType::u8, invalid,
             "%s: type \"%s\" needs dtype \"u8\"", component_where(o, c).c_str(), t.c_str());
  return f;
}

Result<void> require_interpretable(const Object& o) {
  ZT_FAIL_IF(!o.unsupported.empty(), unsupported, "%s", o.unsupported.c_str());
  ZT_FAIL_IF(!required_roles(o.format), unsupported,
             "%s: format \"%s\" is not one this library can decode", where(o).c_str(),
             o.format.c_str());
  return {};
}

Result<uint64_t> element_count(const Object& o) {
  const auto n = shape_product(o.shape);
  ZT_FAIL_IF(!n, limit, "%s: the product of the shape overflows 64 bits", where(o).c_str());
  return *n;
}

Result<uint64_t> decoded_value_count(const Reader& r, size_t object) {
  const Object& o = r.manifest().objects[object];
  ZT_TRY(require_interpretable(o));
  auto n = element_count(o);
  ZT_TRY(n);
  unsigned ratio = 1;
  const Component* c = o.format == "dense" ? o.find("data") : o.find("values");
  if (c && o.format != "quantized_group") {
    auto f = numeric_format(o, *c);
    ZT_TRY(f);
    ratio = f->ratio;
  }
  const auto total = checked_mul(*n, ratio);
  ZT_FAIL_IF(!total, limit, "%s: the value count overflows 64 bits", where(o).c_str());
  return *total;
}

Result<DenseView> dense_view(const Reader& r, size_t object) {
  auto o = object_of_format(r, object, "dense", "");
  ZT_TRY(o);
  const Component& c = *(*o)->find("data");
  DenseView v;
  auto n = element_count(**o);
  ZT_TRY(n);
  v.elements = *n;
  auto data = view_of(r, object, c);
  ZT_TRY(data);
  v.data = *data;
  if (c.type && !c.known_type) return v;
  auto f = numeric_format(**o, c);
  ZT_TRY(f);
  v.format = *f;
  ZT_FAIL_IF(v.data.count != v.elements * f->ratio, invalid,
             "%s: %llu decoded elements, the shape needs %llu", component_where(**o, c).c_str(),
             static_cast<ull>(v.data.count), static_cast<ull>(v.elements * f->ratio));
  return v;
}

Result<CsrView> csr_view(const Reader& r, size_t object) {
  auto o = object_of_format(r, object, "sparse_csr", "");
  ZT_TRY(o);
  const Object& obj = **o;
  CsrView v;
  auto f = numeric_format(obj, *obj.find("values"));
  ZT_TRY(f);
  v.values_format = *f;
  auto values = view_of(r, object, *obj.find("values"));
  ZT_TRY(values);
  auto indices = view_of(r, object, *obj.find("indices"));
  ZT_TRY(indices);
  auto indptr = view_of(r, object, *obj.find("indptr"));
  ZT_TRY(indptr);
  v.values = *values, v.indices = *indices, v.indptr = *indptr;
  ZT_TRY(check_structure(r, obj, {&v.values, &v.indices, &v.indptr}));
  v.rows = obj.shape[0], v.cols = obj.shape[1];
  v.nnz = v.values.count / v.values_format.ratio;
  return v;
}

Result<CooView> coo_view(const Reader& r, size_t object) {
  auto o = object_of_format(r, object, "sparse_coo", "");
  ZT_TRY(o);
  const Object& obj = **o;
  CooView v;
  auto f = numeric_format(obj, *obj.find("values"));
  ZT_TRY(f);
  v.values_format = *f;
  auto values = view_of(r, object, *obj.find("values"));
  ZT_TRY(values);
  auto coords = view_of(r, object, *obj.find("coords"));
  ZT_TRY(coords);
  v.values = *values, v.coords = *coords;
  ZT_TRY(check_structure(r, obj, {&v.values, &v.coords}));
  v.shape = obj.shape;
  v.nnz = v.values.count / v.values_format.ratio;
  return v;
}

Result<QuantView> quant_view(const Reader& r, size_t object) {
  auto o = object_of_format(r, object, "quantized_group", "");
  ZT_TRY(o);
  const Object& obj = **o;
  auto layout = quant_layout(obj);
  if (!layout && layout.error().status == Status::not_found)
    return make_error(Status::unsupported, "%s; it cannot be dequantised without it",
                      layout.error().message.c_str());
  ZT_TRY(layout);
  QuantView v;
  v.layout = std::move(*layout);
  auto sf = scalar_format(obj, *obj.find("scales"));
  ZT_TRY(sf);
  auto zf = scalar_format(obj, *obj.find("zeros"));
  ZT_TRY(zf);
  v.scales_format = *sf, v.zeros_format = *zf;
  auto packed = view_of(r, object, *obj.find("packed_weight"));
  ZT_TRY(packed);
  auto scales = view_of(r, object, *obj.find("scales"));
  ZT_TRY(scales);
  auto zeros = view_of(r, object, *obj.find("zeros"));
  ZT_TRY(zeros);
  v.packed_weight = *packed, v.scales = *scales, v.zeros = *zeros;
  ZT_TRY(check_structure(r, obj, {&v.packed_weight, &v.scales, &v.zeros}));
  const QuantLayout& q = v.layout;
  // check_structure accepted the zeros either as [G, N] values or as
  // integer words packed along N that fit vpe fields of `bits`.
  v.zeros_packed = v.zeros.count != q.groups * q.n;
  ZT_FAIL_IF(v.zeros_packed && v.zeros_format.fp8 != Fp8::none, invalid,
             "%s: packed zeros must be plain integer words",
             component_where(obj, *v.zeros.component).c_str());
  return v;
}

template <typename T>
void materialize(const CsrView& v, std::span<T> dst) {
  std::fill(dst.begin(), dst.end(), T{0});
  const unsigned ratio = v.values_format.ratio;
  const std::vector<T> values = converted<T>(v.values, v.values_format);
  std::vector<uint64_t> indptr(v.rows + 1);
  for (uint64_t i = 0; i <= v.rows; ++i)
    indptr[i] = static_cast<uint64_t>(load_index(v.indptr.bytes, v.indptr.component->dtype, i));
  with_index_type(v.indices.component->dtype, [&](auto tag) {
    using I = decltype(tag);
    for (uint64_t row = 0; row < v.rows; ++row) {
      T* out = dst.data() + row * v.cols * ratio;
      for (uint64_t p = indptr[row]; p < indptr[row + 1]; ++p) {
        const auto col = static_cast<uint64_t>(load<I>(v.indices.bytes.data() + p * sizeof(I)));
        for (unsigned c = 0; c < ratio; ++c) out[col * ratio + c] += values[p * ratio + c];
      }
    }
  });
}

namespace {

// Calls f(k, flat) for each COO entry k with its row-major element position
// (coordinates were checked against the shape by check_structure).
template <typename F>
void for_each_coo_position(const CooView& v, F&& f) {
  const size_t nd = v.shape.size();
  with_index_type(v.coords.component->dtype, [&](auto tag) {
    using I = decltype(tag);
    const uint8_t* coords = v.coords.bytes.data();
    for (uint64_t k = 0; k < v.nnz; ++k) {
      uint64_t flat = 0;
      for (size_t d = 0; d < nd; ++d)
        flat = flat * v.shape[d] +
               static_cast<uint64_t>(load<I>(coords + (d * v.nnz + k) * sizeof(I)));
      f(k, flat);
    }
  });
}

}  // namespace

template <typename T>
void materialize(const CooView& v, std::span<T> dst) {
  std::fill(dst.begin(), dst.end(), T{0});
  const unsigned ratio = v.values_format.ratio;
  const std::vector<T> values = converted<T>(v.values, v.values_format);
  for_each_coo_position(v, [&](uint64_t k, uint64_t flat) {
    for (unsigned c = 0; c < ratio; ++c) dst[flat * ratio + c] += values[k * ratio + c];
  });
}

template <typename T>
void dequantize(const QuantView& v, std::span<T> dst) {
  dequantize_rows(v, 0, v.layout.n, dst);
}

template <typename T>
void dequantize_rows(const QuantView& v, uint64_t n_begin, uint64_t n_end, std::span<T> dst) {
  const QuantLayout& q = v.layout;
  const uint64_t n_out = q.n, k_in = q.k, g = q.group_size;
  // No values: return before walking the other dimension, which an empty
  // object may claim to be 2^62 long (issue 24, item 6).
  if (n_out == 0 || k_in == 0 || n_begin >= n_end) return;
  const std::vector<T> scale = converted<T>(v.scales, v.scales_format);
  const uint64_t mask = (uint64_t{1} << q.bits) - 1;
  std::vector<T> zero;
  if (v.zeros_packed) {
    // GPTQ qzeros: zero(gi, n) is field n % vpe of word [gi, n / vpe].
    const unsigned zw = v.zeros.component->width();
    const uint64_t words_per_group = ceil_div(n_out, q.values_per_word);
    zero.resize(q.groups * n_out);
    for (uint64_t gi = 0; gi < q.groups; ++gi)
      for (uint64_t n = 0; n < n_out; ++n) {
        const uint64_t word =
            word_at(v.zeros.bytes, zw, gi * words_per_group + n / q.values_per_word);
        zero[gi * n_out + n] = static_cast<T>((word >> ((n % q.values_per_word) * q.bits)) & mask);
      }
  } else {
    zero = converted<T>(v.zeros, v.zeros_format);
  }
  const unsigned width = v.packed_weight.component->width();
  // Blocks of 16 output rows: a block reads the packed words of a word row
  // as one run (16 adjacent words) and writes 16 output rows in order.
  // Within a segment of k where both the word and the group stay the same,
  // the field position and the group's scale and zero are fixed, so the
  // inner loop is shifts, a subtraction and a product.
  constexpr uint64_t kBlock = 16;
  with_word_type(width, [&](auto tag) {
    using W = decltype(tag);
    const uint8_t* words = v.packed_weight.bytes.data();
    auto word = [&](uint64_t row, uint64_t n) -> uint64_t {
      return load<W>(words + (row * n_out + n) * sizeof(W));
    };
    for (uint64_t n0 = n_begin; n0 < n_end; n0 += kBlock) {
      const uint64_t n1 = std::min(n_end, n0 + kBlock);
      if (!q.bitstream) {
        const unsigned vpe = q.values_per_word;
        for (uint64_t k = 0; k < k_in;) {
          const uint64_t gi = k / g, row = k / vpe, j = k % vpe;
          const uint64_t end = std::min({k_in, (gi + 1) * g, (row + 1) * vpe});
          for (uint64_t n = n0; n < n1; ++n) {
            const T s = scale[gi * n_out + n], z = zero[gi * n_out + n];
            uint64_t bits = word(row, n) >> (j * q.bits);
            T* out = dst.data() + (n - n_begin) * k_in;
            for (uint64_t i = k; i < end; ++i, bits >>= q.bits)
              out[i] = (static_cast<T>(bits & mask) - z) * s;
          }
          k = end;
        }
        continue;
      }
      // bitstream: column n's words, read in order, form one little-endian
      // bit string; q(n, k) is its bits [k * bits, (k + 1) * bits).
      constexpr unsigned kWordBits = sizeof(W) * 8;
      for (uint64_t gi = 0; gi < q.groups; ++gi) {
        const uint64_t k_end = std::min(k_in, (gi + 1) * g);
        for (uint64_t n = n0; n < n1; ++n) {
          const T s = scale[gi * n_out + n], z = zero[gi * n_out + n];
          T* out = dst.data() + (n - n_begin) * k_in;
          for (uint64_t k = gi * g; k < k_end; ++k) {
            const uint64_t bit = k * q.bits;
            const uint64_t row = bit / kWordBits;
            const unsigned off = static_cast<unsigned>(bit % kWordBits);
            uint64_t field = word(row, n) >> off;
            if (off + q.bits > kWordBits) field |= word(row + 1, n) << (kWordBits - off);
            out[k] = (static_cast<T>(field & mask) - z) * s;
          }
        }
      }
    }
  });
}

template void materialize<float>(const CsrView&, std::span<float>);
template void materialize<double>(const CsrView&, std::span<double>);
template void materialize<float>(const CooView&, std::span<float>);
template void materialize<double>(const CooView&, std::span<double>);
template void dequantize<float>(const QuantView&, std::span<float>);
template void dequantize<double>(const QuantView&, std::span<double>);
template void dequantize_rows<float>(const QuantView&, uint64_t, uint64_t, std::span<float>);
template void dequantize_rows<double>(const QuantView&, uint64_t, uint64_t, std::span<double>);

namespace {

template <typename T>
constexpr DType kNativeDType = std::is_same_v<T, float> ? DType::f32 : DType::f64;

template <typename T>
Result<void> fits(const std::string& what, uint64_t n, std::span<T> dst) {
  ZT_FAIL_IF(n > dst.size(), argument, "%s: %llu values do not fit in a buffer of %zu",
             what.c_str(), static_cast<ull>(n), dst.size());
  return {};
}

}  // namespace

template <typename T>
Result<uint64_t> read_dense_as(const Reader& r, size_t object, std::span<T> dst) {
  auto o = object_of_format(r, object, "dense", " (zt_object_decode_* reads every format)");
  ZT_TRY(o);
  const Component& c = *(*o)->find("data");
  const size_t k = index_of(**o, &c);
  auto f = numeric_format(**o, c);
  ZT_TRY(f);
  auto elements = element_count(**o);
  ZT_TRY(elements);
  const uint64_t n = *elements * f->ratio;
  ZT_TRY(fits(component_where(**o, c), n, dst));
  if (c.dtype == kNativeDType<T> && !is_zero_copy(r, c)) {
    // Same type: decode straight into the caller's buffer.
    auto got = r.read(object, k,
                      std::span<uint8_t>(reinterpret_cast<uint8_t*>(dst.data()), n * sizeof(T)));
    ZT_TRY(got);
    ZT_FAIL_IF(*got != n * sizeof(T), invalid, "%s: decoded %llu bytes, the shape needs %llu",
               component_where(**o, c).c_str(), static_cast<ull>(*got),
               static_cast<ull>(n * sizeof(T)));
    return n;
  }
  auto bytes = fetch(r, object, k);
  ZT_TRY(bytes);
  ZT_FAIL_IF(bytes->bytes().size() != n * c.width(), invalid,
             "%s: decoded %zu bytes, the shape needs %llu", component_where(**o, c).c_str(),
             bytes->bytes().size(), static_cast<ull>(n * c.width()));
  convert_values(bytes->bytes().data(), *f, n, dst.data());
  return n;
}

template <typename T>
Result<uint64_t> read_component_as(const Reader& r, size_t object, size_t component,
                                   std::span<T> dst) {
  const Object& o = r.manifest().objects[object];
  const Component& c = o.components[component];
  const std::string w = component_where(o, c);
  // Components of any format convert on their own; the blob of a 0.1.x
  // sparse layout holds parts of unknown structure and does not.
  ZT_FAIL_IF(!o.unsupported.empty(), unsupported, "%s", o.unsupported.c_str());
  auto f = numeric_format(o, c);
  ZT_TRY(f);
  if (const auto known = r.known_decoded_size(object, component))
    ZT_TRY(fits(w, *known / c.width(), dst));
  auto bytes = fetch(r, object, component);
  ZT_TRY(bytes);
  ZT_FAIL_IF(bytes->bytes().size() % c.width() != 0, invalid,
             "%s: %zu decoded bytes are not a whole number of %u-byte elements", w.c_str(),
             bytes->bytes().size(), c.width());
  const uint64_t n = bytes->bytes().size() / c.width();
  ZT_TRY(fits(w, n, dst));
  convert_values(bytes->bytes().data(), *f, n, dst.data());
  return n;
}

template <typename T>
Result<uint64_t> decode_object_as(const Reader& r, size_t object, std::span<T> dst) {
  const Object& o = r.manifest().objects[object];
  auto n = decoded_value_count(r, object);
  ZT_TRY(n);
  ZT_TRY(fits(where(o), *n, dst));
  if (o.format == "dense") return read_dense_as(r, object, dst);
  if (o.format == "sparse_csr") {
    auto v = csr_view(r, object);
    ZT_TRY(v);
    materialize(*v, dst.first(*n));
  } else if (o.format == "sparse_coo") {
    auto v = coo_view(r, object);
    ZT_TRY(v);
    materialize(*v, dst.first(*n));
  } else {
    auto v = quant_view(r, object);
    ZT_TRY(v);
    dequantize(*v, dst.first(*n));
  }
  return *n;
}

template Result<uint64_t> read_dense_as<float>(const Reader&, size_t, std::span<float>);
template Result<uint64_t> read_dense_as<double>(const Reader&, size_t, std::span<double>);
template Result<uint64_t> read_component_as<float>(const Reader&, size_t, size_t, std::span<float>);
template Result<uint64_t> read_component_as<double>(const Reader&, size_t, size_t,
                                                    std::span<double>);
template Result<uint64_t> decode_object_as<float>(const Reader&, size_t, std::span<float>);
template Result<uint64_t> decode_object_as<double>(const Reader&, size_t, std::span<double>);

// ---- row slices ----------------------------------------------------------

namespace {

struct Rows {
  const Object* object = nullptr;
  const Component* data = nullptr;
  size_t k = 0;
  NumericFormat format;
  uint64_t row_values = 0;  // storage elements per row
  uint64_t row_bytes = 0;
  uint64_t offset = 0;  // first byte of the range in the decoded data
  uint64_t bytes = 0;   // byte count of the range
};

Result<Rows> rows_of(const Reader& r, size_t object, uint64_t begin, uint64_t end) {
  auto o = object_of_format(r, object, "dense", "");
  ZT_TRY(o);
  const Object& obj = **o;
  ZT_FAIL_IF(obj.shape.empty(), argument, "%s is a scalar: it has no rows", where(obj).c_str());
  ZT_FAIL_IF(begin > end || end > obj.shape[0], argument,
             "%s: rows [%llu, %llu) are not within [0, %llu)", where(obj).c_str(),
             static_cast<ull>(begin), static_cast<ull>(end), static_cast<ull>(obj.shape[0]));
  Rows rows;
  rows.object = &obj;
  rows.data = obj.find("data");
  rows.k = index_of(obj, rows.data);
  auto f = numeric_format(obj, *rows.data);
  ZT_TRY(f);
  rows.format = *f;
  if (begin == end) return rows;
  // shape[0] >= 1 here, so the rest of the shape cannot overflow: the whole
  // product was checked at open.
  const auto per_row = shape_product(std::span<const uint64_t>(obj.shape).subspan(1));
  ZT_FAIL_IF(!per_row, limit, "%s: the shape overflows", where(obj).c_str());
  rows.row_values = *per_row * f->ratio;
  rows.row_bytes = rows.row_values * rows.data->width();
  rows.offset = begin * rows.row_bytes;
  rows.bytes = (end - begin) * rows.row_bytes;
  return rows;
}

void swap_elements(std::span<uint8_t> bytes, unsigned width) {
  if (width <= 1) return;
  for (size_t i = 0; i + width <= bytes.size(); i += width)
    std::reverse(bytes.data() + i, bytes.data() + i + width);
}

// Decodes only the zstd frames that overlap the range; false when the
// component is not stored as several frames with recorded sizes.
Result<bool> decode_frames(const Reader& r, size_t object, const Rows& rows,
                           std::span<uint8_t> dst) {
  const Component& c = *rows.data;
  const auto total = r.known_decoded_size(object, rows.k);
  if (!total) return false;
  ZT_FAIL_IF(*total > r.max_decoded_bytes(), limit,
             "%s: decoded size %llu exceeds the decode limit %llu",
             component_where(*rows.object, c).c_str(), static_cast<ull>(*total),
             static_cast<ull>(r.max_decoded_bytes()));
  std::vector<uint8_t> scratch;
  auto src = r.stored(c, scratch);
  ZT_TRY(src);
  const std::vector<ZstdFrame> frames = zstd_frame_index(*src, *total);
  if (frames.size() < 2) return false;
  const std::string w = component_where(*rows.object, c);
  const uint64_t lo = rows.offset, hi = rows.offset + rows.bytes;
  uint64_t pos = 0;
  std::vector<uint8_t> partial;
  for (const ZstdFrame& f : frames) {
    const uint64_t f_lo = pos, f_hi = pos + f.content_size;
    pos = f_hi;
    if (f_hi <= lo || f_lo >= hi) continue;
    const auto frame = src->subspan(f.src_offset, f.src_size);
    if (f_lo >= lo && f_hi <= hi) {
      ZT_TRY(zstd_decode_exact(frame, dst.subspan(f_lo - lo, f.content_size), w));
      continue;
    }
    partial.resize(f.content_size);
    ZT_TRY(zstd_decode_exact(frame, partial, w));
    const uint64_t a = std::max(lo, f_lo), b = std::min(hi, f_hi);
    std::memcpy(dst.data() + (a - lo), partial.data() + (a - f_lo), b - a);
  }
  return true;
}

}  // namespace

Result<std::span<const uint8_t>> dense_rows_map(const Reader& r, size_t object, uint64_t begin,
                                                uint64_t end) {
  auto rows = rows_of(r, object, begin, end);
  ZT_TRY(rows);
  if (rows->bytes == 0) return std::span<const uint8_t>();
  auto m = r.map(object, rows->k);
  ZT_TRY(m);
  ZT_FAIL_IF(m->size() < rows->offset + rows->bytes, invalid,
             "%s: %zu decoded bytes, rows need %llu",
             component_where(*rows->object, *rows->data).c_str(), m->size(),
             static_cast<ull>(rows->offset + rows->bytes));
  return m->subspan(rows->offset, rows->bytes);
}

Result<uint64_t> dense_rows(const Reader& r, size_t object, uint64_t begin, uint64_t end,
                            std::span<uint8_t> dst) {
  auto rows = rows_of(r, object, begin, end);
  ZT_TRY(rows);
  const Component& c = *rows->data;
  const std::string w = component_where(*rows->object, c);
  ZT_FAIL_IF(rows->bytes > dst.size(), argument,
             "%s: %llu bytes of rows do not fit in a buffer of %zu", w.c_str(),
             static_cast<ull>(rows->bytes), dst.size());
  if (rows->bytes == 0) return uint64_t{0};
  const std::span<uint8_t> out = dst.first(rows->bytes);
  if (c.encoding == Encoding::raw) {
    ZT_TRY(r.source().read_into(c.offset + rows->offset, out));
    if (c.big_endian) swap_elements(out, c.width());
    return rows->bytes;
  }
  if (c.encoding == Encoding::zstd) {
    auto partial = decode_frames(r, object, *rows, out);
    ZT_TRY(partial);
    if (*partial) return rows->bytes;
  }
  auto m = dense_rows_map(r, object, begin, end);
  ZT_TRY(m);
  std::memcpy(out.data(), m->data(), m->size());
  return rows->bytes;
}

template <typename T>
Result<uint64_t> dense_rows_as(const Reader& r, size_t object, uint64_t begin, uint64_t end,
                               std::span<T> dst) {
  auto rows = rows_of(r, object, begin, end);
  ZT_TRY(rows);
  const uint64_t n = (end - begin) * rows->row_values;
  ZT_TRY(fits(component_where(*rows->object, *rows->data), n, dst));
  if (n == 0) return uint64_t{0};
  if (is_zero_copy(r, *rows->data)) {
    auto m = dense_rows_map(r, object, begin, end);
    ZT_TRY(m);
    convert_values(m->data(), rows->format, n, dst.data());
    return n;
  }
  std::vector<uint8_t> bytes(rows->bytes);
  auto got = dense_rows(r, object, begin, end, bytes);
  ZT_TRY(got);
  convert_values(bytes.data(), rows->format, n, dst.data());
  return n;
}

template Result<uint64_t> dense_rows_as<float>(const Reader&, size_t, uint64_t, uint64_t,
                                               std::span<float>);
template Result<uint64_t> dense_rows_as<double>(const Reader&, size_t, uint64_t, uint64_t,
                                                std::span<double>);

namespace {

// Rows of `row_values` values each, `rows_per` at a time, filled by
// fill(first_row, end_row, dst) into one reused buffer.
template <typename T, typename Fill>
Result<void> by_rows(uint64_t rows, uint64_t row_values, uint64_t chunk_values, const ValueSink<T>& sink,
                     Fill&& fill) {
  const uint64_t rows_per = std::max<uint64_t>(1, chunk_values / std::max<uint64_t>(1, row_values));
  std::vector<T> buf;
  for (uint64_t r0 = 0; r0 < rows; r0 += rows_per) {
    const uint64_t r1 = std::min(rows, r0 + rows_per);
    buf.assign((r1 - r0) * row_values, T{0});
    ZT_TRY(fill(r0, r1, std::span<T>(buf)));
    ZT_TRY(sink(buf));
  }
  return {};
}

template <typename T>
Result<void> csr_chunked(const CsrView& v, uint64_t chunk_values, const ValueSink<T>& sink) {
  const unsigned ratio = v.values_format.ratio;
  const std::vector<T> values = converted<T>(v.values, v.values_format);
  const uint64_t row_values = v.cols * ratio;
  return by_rows<T>(v.rows, row_values, chunk_values, sink, [&](uint64_t r0, uint64_t r1, std::span<T> dst) {
    with_index_type(v.indices.component->dtype, [&](auto tag) {
      using I = decltype(tag);
      for (uint64_t row = r0; row < r1; ++row) {
        T* out = dst.data() + (row - r0) * row_values;
        const auto p0 = static_cast<uint64_t>(load_index(v.indptr.bytes, v.indptr.component->dtype, row));
        const auto p1 = static_cast<uint64_t>(load_index(v.indptr.bytes, v.indptr.component->dtype, row + 1));
        for (uint64_t p = p0; p < p1; ++p) {
          const auto col = static_cast<uint64_t>(load<I>(v.indices.bytes.data() + p * sizeof(I)));
          for (unsigned c = 0; c < ratio; ++c) out[col * ratio + c] += values[p * ratio + c];
        }
      }
    });
    return Result<void>{};
  });
}

// COO entries in row-major order (a sort of their flat positions), then
// consecutive element ranges filled from a cursor: duplicates add up as in
// materialize.
template <typename T>
Result<void> coo_chunked(const CooView& v, uint64_t elements, uint64_t chunk_values, const ValueSink<T>& sink) {
  const unsigned ratio = v.values_format.ratio;
  const std::vector<T> values = converted<T>(v.values, v.values_format);
  std::vector<std::pair<uint64_t, uint64_t>> order(v.nnz);  // (flat position, entry)
  for_each_coo_position(v, [&](uint64_t k, uint64_t flat) { order[k] = {flat, k}; });
  std::sort(order.begin(), order.end());
  const uint64_t per_chunk = std::max<uint64_t>(1, chunk_values / ratio);
  std::vector<T> buf;
  size_t next = 0;
  for (uint64_t e0 = 0; e0 < elements; e0 += per_chunk) {
    const uint64_t e1 = std::min(elements, e0 + per_chunk);
    buf.assign((e1 - e0) * ratio, T{0});
    for (; next < order.size() && order[next].first < e1; ++next) {
      const auto [flat, k] = order[next];
      for (unsigned c = 0; c < ratio; ++c) buf[(flat - e0) * ratio + c] += values[k * ratio + c];
    }
    ZT_TRY(sink(buf));
  }
  return {};
}

}  // namespace

template <typename T>
Result<uint64_t> decode_object_chunked(const Reader& r, size_t object, uint64_t chunk_values,
                                       const ValueSink<T>& sink) {
  const Object& o = r.manifest().objects[object];
  auto n = decoded_value_count(r, object);
  ZT_TRY(n);
  if (*n == 0) return uint64_t{0};
  if (*n <= chunk_values || o.shape.empty()) {  // one chunk (a rank-0 object has one value)
    std::vector<T> all(*n);
    ZT_TRY(decode_object_as(r, object, std::span<T>(all)));
    ZT_TRY(sink(all));
    return *n;
  }
  const uint64_t rows = o.shape[0];  // > 0: there are values
  if (o.format == "dense") {
    ZT_TRY(by_rows<T>(rows, *n / rows, chunk_values, sink, [&](uint64_t r0, uint64_t r1, std::span<T> dst) -> Result<void> {
      auto got = dense_rows_as(r, object, r0, r1, dst);
      ZT_TRY(got);
      return {};
    }));
  } else if (o.format == "sparse_csr") {
    auto v = csr_view(r, object);
    ZT_TRY(v);
    ZT_TRY(csr_chunked(*v, chunk_values, sink));
  } else if (o.format == "sparse_coo") {
    auto v = coo_view(r, object);
    ZT_TRY(v);
    ZT_TRY(coo_chunked(*v, *n / v->values_format.ratio, chunk_values, sink));
  } else {
    auto v = quant_view(r, object);
    ZT_TRY(v);
    ZT_TRY(by_rows<T>(v->layout.n, v->layout.k, chunk_values, sink, [&](uint64_t r0, uint64_t r1, std::span<T> dst) {
      dequantize_rows(*v, r0, r1, dst);
      return Result<void>{};
    }));
  }
  return *n;
}

template Result<uint64_t> decode_object_chunked<float>(const Reader&, size_t, uint64_t, const ValueSink<float>&);
template Result<uint64_t> decode_object_chunked<double>(const Reader&, size_t, uint64_t, const ValueSink<double>&);

}  // namespace zt
