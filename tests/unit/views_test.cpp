// Typed views through the C ABI: element conversion (every FP8, f16 and
// bf16 code against formulas computed here with ldexp), integer / bool /
// complex conversion, dense / CSR / COO / quantized_group views, the
// decode of any object into f32, and row slices of raw and multi-frame zstd
// data. Expected values are computed in this file, never by the library.
#include <gtest/gtest.h>
#include <zstd.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>

#include "read/reader.h"
#include "test_files.h"
#include "views/views.h"

namespace zt::test {
namespace {

// decode_object_chunked hands out what decode_object_as writes, in pieces
// of every size, or fails with the same status: checked on every file a
// test below opens.
template <typename T>
void expect_chunks_match_as(const Reader& r, size_t i, uint64_t n) {
  std::vector<T> whole(n);
  const auto w = decode_object_as<T>(r, i, std::span<T>(whole));
  for (const uint64_t chunk : {uint64_t{1}, uint64_t{3}, uint64_t{7}, uint64_t{64}, uint64_t{1} << 20}) {
    std::vector<T> got;
    size_t pieces = 0;
    const auto c = decode_object_chunked<T>(r, i, chunk, [&](std::span<const T> v) -> Result<void> {
      EXPECT_FALSE(v.empty());
      got.insert(got.end(), v.begin(), v.end());
      ++pieces;
      return {};
    });
    ASSERT_EQ(static_cast<bool>(c), static_cast<bool>(w)) << "object " << i << ", chunks of " << chunk;
    if (!w) {
      EXPECT_EQ(c.error().status, w.error().status);
      continue;
    }
    ASSERT_EQ(got.size(), whole.size()) << "object " << i << ", chunks of " << chunk;
    EXPECT_EQ(std::memcmp(got.data(), whole.data(), got.size() * sizeof(T)), 0)
        << "object " << i << ", chunks of " << chunk;
    if (n > chunk * 64) {
      EXPECT_GT(pieces, 1u);
    }
  }
}

void expect_chunks_match(std::span<const uint8_t> file) {
  auto r = Reader::open_memory(file);
  if (!r) return;
  for (size_t i = 0; i < (*r)->manifest().objects.size(); ++i) {
    const auto n = decoded_value_count(**r, i);
    if (!n || *n > (uint64_t{1} << 22)) continue;
    expect_chunks_match_as<float>(**r, i, *n);
    expect_chunks_match_as<double>(**r, i, *n);
  }
}


// ---- helpers ---------------------------------------------------------------

uint32_t bits_of(float f) {
  return std::bit_cast<uint32_t>(f);
}

std::vector<float> decode_f32(const zt_reader* r, size_t object, zt_status* status = nullptr) {
  uint64_t n = 0;
  if (zt_object_value_count(r, object, &n) != ZT_OK) {
    if (status) *status = ZT_ERR_UNSUPPORTED;
    return {};
  }
  std::vector<float> out(n, -12345.0f);
  uint64_t written = 0;
  const zt_status s = zt_object_decode_f32(r, object, out.data(), n, &written);
  if (status) *status = s;
  if (s != ZT_OK) return {};
  EXPECT_EQ(written, n);
  return out;
}

std::vector<float> read_f32(const zt_reader* r, size_t object) {
  uint64_t n = 0;
  EXPECT_EQ(zt_object_value_count(r, object, &n), ZT_OK) << zt_last_error();
  std::vector<float> out(n);
  uint64_t written = 0;
  EXPECT_EQ(zt_object_read_f32(r, object, out.data(), n, &written), ZT_OK) << zt_last_error();
  EXPECT_EQ(written, n);
  return out;
}

std::vector<double> read_f64(const zt_reader* r, size_t object) {
  uint64_t n = 0;
  EXPECT_EQ(zt_object_value_count(r, object, &n), ZT_OK) << zt_last_error();
  std::vector<double> out(n);
  uint64_t written = 0;
  EXPECT_EQ(zt_object_read_f64(r, object, out.data(), n, &written), ZT_OK) << zt_last_error();
  EXPECT_EQ(written, n);
  return out;
}

// A file with one dense object "x" whose data is `bytes` of dtype/type.
Bytes one_dense(std::string_view dtype, const std::vector<uint64_t>& shape, const Bytes& bytes,
                std::optional<std::string> type = std::nullopt, std::string version = "1.2.0") {
  FileBuilder b(std::move(version));
  Json c = b.raw(dtype, bytes);
  if (type) c["type"] = *type;
  b.object("x", "dense", shape, Json{{"data", c}});
  return b.build();
}

// ---- FP8 -----------------------------------------------------------------

struct Fp8Case {
  const char* type;
  int exp_bits, man_bits, bias;
  float max;
  int nan_codes, inf_codes;
};

// The value of an FP8 code from the definitions (OCP FP8 spec for e4m3fn
// and e5m2; the fnuz variants: 0x80 is the single NaN, no -0, no inf).
// NaN is returned as a quiet NaN, infinities as such.
double fp8_expected(const Fp8Case& t, unsigned code) {
  const std::string type = t.type;
  const bool fnuz = type.ends_with("fnuz");
  const int sign = (code & 0x80) ? -1 : 1;
  const unsigned e = (code >> t.man_bits) & ((1u << t.exp_bits) - 1);
  const unsigned m = code & ((1u << t.man_bits) - 1);
  const unsigned e_all = (1u << t.exp_bits) - 1, m_all = (1u << t.man_bits) - 1;
  if (fnuz && code == 0x80) return std::numeric_limits<double>::quiet_NaN();
  if (type == "f8_e4m3fn" && e == e_all && m == m_all)
    return std::numeric_limits<double>::quiet_NaN();
  if (type == "f8_e5m2" && e == e_all)
    return m == 0 ? sign * std::numeric_limits<double>::infinity()
                  : std::numeric_limits<double>::quiet_NaN();
  const double frac = static_cast<double>(m) / static_cast<double>(1u << t.man_bits);
  if (e == 0) return sign * std::ldexp(frac, 1 - t.bias);  // subnormal (and +-0)
  return sign * std::ldexp(1.0 + frac, static_cast<int>(e) - t.bias);
}

void PrintTo(const Fp8Case& c, std::ostream* os) {
  *os << c.type;
}

class Fp8All : public testing::TestWithParam<Fp8Case> {};

TEST_P(Fp8All, Every256CodesDecodeBitExactly) {
  const Fp8Case& t = GetParam();
  Bytes codes(256);
  for (unsigned c = 0; c < 256; ++c) codes[c] = static_cast<uint8_t>(c);
  const Bytes file = one_dense("u8", {256}, codes, t.type);
  const Opened o = open_memory(file);
  expect_chunks_match(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const std::vector<float> f = read_f32(o.get(), 0);
  const std::vector<double> d = read_f64(o.get(), 0);
  ASSERT_EQ(f.size(), 256u);
  ASSERT_EQ(d.size(), 256u);
  int nans = 0, infs = 0;
  float max = 0;
  for (unsigned c = 0; c < 256; ++c) {
    const double want = fp8_expected(t, c);
    if (std::isnan(want)) {
      ++nans;
      EXPECT_TRUE(std::isnan(f[c])) << t.type << " code 0x" << std::hex << c;
      EXPECT_TRUE(std::isnan(d[c])) << t.type << " code 0x" << std::hex << c;
      continue;
    }
    if (std::isinf(want)) ++infs;
    // Every FP8 value is exactly a float: compare the bits (so -0 is checked).
    EXPECT_EQ(bits_of(f[c]), bits_of(static_cast<float>(want)))
        << t.type << " code 0x" << std::hex << c << ": got " << f[c] << ", want " << want;
    EXPECT_EQ(std::bit_cast<uint64_t>(d[c]), std::bit_cast<uint64_t>(want))
        << t.type << " code 0x" << std::hex << c;
    if (!std::isinf(want)) max = std::max(max, std::fabs(f[c]));
  }
  EXPECT_EQ(nans, t.nan_codes);
  EXPECT_EQ(infs, t.inf_codes);
  EXPECT_EQ(max, t.max);
}

INSTANTIATE_TEST_SUITE_P(Views, Fp8All,
                         testing::Values(Fp8Case{"f8_e4m3fn", 4, 3, 7, 448.0f, 2, 0},
                                         Fp8Case{"f8_e5m2", 5, 2, 15, 57344.0f, 6, 2},
                                         Fp8Case{"f8_e4m3fnuz", 4, 3, 8, 240.0f, 1, 0},
                                         Fp8Case{"f8_e5m2fnuz", 5, 2, 16, 57344.0f, 1, 0}),
                         [](const testing::TestParamInfo<Fp8Case>& i) {
                           return std::string(i.param.type);
                         });

TEST(Views, Fp8SpotValuesFromTheSpecifications) {
  struct Spot {
    const char* type;
    uint8_t code;
    float value;
  };
  // Smallest subnormals, one, largest finite values, negative zero.
  const Spot spots[] = {
      {"f8_e4m3fn", 0x01, 0x1p-9f},     {"f8_e4m3fn", 0x38, 1.0f},
      {"f8_e4m3fn", 0x7e, 448.0f},      {"f8_e4m3fn", 0x80, -0.0f},
      {"f8_e5m2", 0x01, 0x1p-16f},      {"f8_e5m2", 0x3c, 1.0f},
      {"f8_e5m2", 0x7b, 57344.0f},      {"f8_e4m3fnuz", 0x01, 0x1p-10f},
      {"f8_e4m3fnuz", 0x40, 1.0f},      {"f8_e4m3fnuz", 0x7f, 240.0f},
      {"f8_e5m2fnuz", 0x01, 0x1p-17f},  {"f8_e5m2fnuz", 0x40, 1.0f},
      {"f8_e5m2fnuz", 0xff, -57344.0f},
  };
  for (const Spot& s : spots) {
    const Bytes file = one_dense("u8", {1}, Bytes{s.code}, s.type);
    const Opened o = open_memory(file);
    expect_chunks_match(file);
  expect_chunks_match(file);
    ASSERT_EQ(o.status, ZT_OK) << o.error;
    const std::vector<float> f = read_f32(o.get(), 0);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(bits_of(f[0]), bits_of(s.value)) << s.type << " 0x" << std::hex << int{s.code};
  }
}

TEST(Views, V11Fp8DtypesAreDecodedAsTheirUpgradedTypes) {
  // 1.1.0 wrote f8_e4m3 / f8_e5m2 as dtypes; 0x7e is 448 in e4m3fn, 0x7b 57344 in e5m2.
  FileBuilder b("1.1.0");
  b.object("a", "dense", {2}, Json{{"data", b.raw("f8_e4m3", Bytes{0x7e, 0xb8})}});
  b.object("b", "dense", {1}, Json{{"data", b.raw("f8_e5m2", Bytes{0x7b})}});
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  expect_chunks_match(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_EQ(read_f32(o.get(), object_index(o.get(), "a")), (std::vector<float>{448.0f, -1.0f}));
  EXPECT_EQ(read_f32(o.get(), object_index(o.get(), "b")), (std::vector<float>{57344.0f}));
}

// ---- f16 and bf16 --------------------------------------------------------

// IEEE binary16 / bfloat16 from the definition: exponent bits E, mantissa M.
double half_expected(uint16_t h, int exp_bits, int man_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int sign = (h >> (exp_bits + man_bits)) ? -1 : 1;
  const unsigned e = (h >> man_bits) & ((1u << exp_bits) - 1);
  const unsigned m = h & ((1u << man_bits) - 1);
  if (e == (1u << exp_bits) - 1)
    return m == 0 ? sign * std::numeric_limits<double>::infinity()
                  : std::numeric_limits<double>::quiet_NaN();
  const double frac = static_cast<double>(m) / static_cast<double>(1u << man_bits);
  if (e == 0) return sign * std::ldexp(frac, 1 - bias);
  return sign * std::ldexp(1.0 + frac, static_cast<int>(e) - bias);
}

void check_all_halves(const char* dtype, int exp_bits, int man_bits) {
  std::vector<uint16_t> codes(65536);
  for (uint32_t c = 0; c < 65536; ++c) codes[c] = static_cast<uint16_t>(c);
  const Bytes file = one_dense(dtype, {65536}, le(codes));
  const Opened o = open_memory(file);
  expect_chunks_match(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const std::vector<float> f = read_f32(o.get(), 0);
  const std::vector<double> d = read_f64(o.get(), 0);
  ASSERT_EQ(f.size(), 65536u);
  int mismatches = 0;
  for (uint32_t c = 0; c < 65536; ++c) {
    const double want = half_expected(static_cast<uint16_t>(c), exp_bits, man_bits);
    const bool ok = std::isnan(want)
                        ? std::isnan(f[c]) && std::isnan(d[c])
                        : bits_of(f[c]) == bits_of(static_cast<float>(want)) &&
                              std::bit_cast<uint64_t>(d[c]) == std::bit_cast<uint64_t>(want);
    if (!ok && ++mismatches <= 5)
      ADD_FAILURE() << dtype << " code 0x" << std::hex << c << ": got " << f[c] << " / " << d[c]
                    << ", want " << want;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(Views, EveryF16CodeDecodesExactly) {
  check_all_halves("f16", 5, 10);
}
TEST(Views, EveryBf16CodeDecodesExactly) {
  check_all_halves("bf16", 8, 7);
}

TEST(Views, F16AndBf16ClassesHaveTheirValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<uint16_t> f16 = {0x0000, 0x8000, 0x0001, 0x03ff, 0x0400,
                                     0x3c00, 0xc000, 0x7bff, 0x7c00, 0xfc00};
  const std::vector<float> f16_want = {
      0.0f, -0.0f, 0x1p-24f, 1023 * 0x1p-24f, 0x1p-14f, 1.0f, -2.0f, 65504.0f, inf, -inf};
  const std::vector<uint16_t> bf16 = {0x0000, 0x8000, 0x0001, 0x007f, 0x0080,
                                      0x3f80, 0xc000, 0x7f7f, 0x7f80, 0xff80};
  const std::vector<float> bf16_want = {
      0.0f, -0.0f, 0x1p-133f, 127 * 0x1p-133f, 0x1p-126f, 1.0f, -2.0f, 0x1.fep127f, inf, -inf};
  for (const auto& [dtype, codes, want] :
       {std::tuple{"f16", f16, f16_want}, std::tuple{"bf16", bf16, bf16_want}}) {
    const Bytes file = one_dense(dtype, {codes.size()}, le(codes));
    const Opened o = open_memory(file);
    expect_chunks_match(file);
  expect_chunks_match(file);
    ASSERT_EQ(o.status, ZT_OK) << o.error;
    const std::vector<float> got = read_f32(o.get(), 0);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_EQ(bits_of(got[i]), bits_of(want[i])) << dtype << " code 0x" << std::hex << codes[i];
  }
  // NaNs: quiet and signalling, both signs.
  const Bytes nan_file = one_dense("f16", {3}, le(std::vector<uint16_t>{0x7e00, 0x7c01, 0xfe00}));
  const Opened o = open_memory(nan_file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  for (const float v : read_f32(o.get(), 0)) EXPECT_TRUE(std::isnan(v));
}

// ---- integers, bool, f64, complex -----------------------------------------

TEST(Views, IntegersBoolAndF64ConvertByValue) {
  FileBuilder b;
  b.dense("i8", "i8", {3}, le(std::vector<int8_t>{-128, 0, 127}));
  b.dense("u16", "u16", {2}, le(std::vector<uint16_t>{0, 65535}));
  b.dense("i32", "i32", {2},
          le(std::vector<int32_t>{std::numeric_limits<int32_t>::min(), 123456789}));
  b.dense("u64", "u64", {2}, le(std::vector<uint64_t>{0, (uint64_t{1} << 53) + 1}));
  b.dense("i64", "i64", {1}, le(std::vector<int64_t>{-(int64_t{1} << 40)}));
  b.dense("bool", "bool", {3}, Bytes{0, 1, 0});
  b.dense("f64", "f64", {2}, le(std::vector<double>{0.1, -1e300}));
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  expect_chunks_match(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  auto f64 = [&](const char* name) { return read_f64(o.get(), object_index(o.get(), name)); };
  auto f32 = [&](const char* name) { return read_f32(o.get(), object_index(o.get(), name)); };
  EXPECT_EQ(f64("i8"), (std::vector<double>{-128, 0, 127}));
  EXPECT_EQ(f64("u16"), (std::vector<double>{0, 65535}));
  EXPECT_EQ(f64("i32"), (std::vector<double>{-2147483648.0, 123456789}));
  EXPECT_EQ(f32("i32"), (std::vector<float>{-2147483648.0f, 123456792.0f}));  // nearest float
  EXPECT_EQ(f64("u64"), (std::vector<double>{0, 9007199254740992.0}));  // 2^53 + 1 rounds to even
  EXPECT_EQ(f64("i64"), (std::vector<double>{-1099511627776.0}));
  EXPECT_EQ(f32("bool"), (std::vector<float>{0, 1, 0}));
  EXPECT_EQ(f64("f64"), (std::vector<double>{0.1, -1e300}));
  const std::vector<float> narrowed = f32("f64");
  EXPECT_EQ(narrowed[0], 0.1f);
  EXPECT_EQ(narrowed[1], -std::numeric_limits<float>::infinity());
}

TEST(Views, ComplexIsInterleavedPairsAndCountsTwice) {
  FileBuilder b;
  Json c = b.raw("f32", le(std::vector<float>{1, 2, 3, 4, 5, 6}));
  c["type"] = "complex64";
  b.object("z", "dense", {3}, Json{{"data", c}});
  Json d = b.raw("f64", le(std::vector<double>{-1, 0.5}));
  d["type"] = "complex128";
  b.object("w", "dense", {}, Json{{"data", d}});
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  expect_chunks_match(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const size_t z = object_index(o.get(), "z"), w = object_index(o.get(), "w");
  uint64_t elements = 0, values = 0;
  EXPECT_EQ(zt_object_element_count(o.get(), z, &elements), ZT_OK);
  EXPECT_EQ(zt_object_value_count(o.get(), z, &values), ZT_OK);
  EXPECT_EQ(elements, 3u);
  EXPECT_EQ(values, 6u);
  EXPECT_EQ(read_f64(o.get(), z), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(decode_f32(o.get(), w), (std::vector<float>{-1, 0.5f}));
}

TEST(Views, ZstdDataConvertsAndMatchesRaw) {
  std::vector<uint16_t> h(1000);
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(0x3c00 + i % 50);
  FileBuilder b;
  b.dense("raw", "f16", {10, 100}, le(h));
  b.object("packed", "dense", {10, 100}, Json{{"data", b.zstd("f16", le(h))}});
  std::vector<float> f(1000);
  for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(i) * 0.25f;
  b.object("f32", "dense", {1000}, Json{{"data", b.zstd("f32", le(f))}});
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  expect_chunks_match(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const std::vector<float> raw = read_f32(o.get(), object_index(o.get(), "raw"));
  EXPECT_EQ(raw, read_f32(o.get(), object_index(o.get(), "packed")));
  EXPECT_EQ(raw[0], 1.0f);
  EXPECT_EQ(read_f32(o.get(), object_index(o.get(), "f32")),
            f);  // decoded straight into the buffer
}

TEST(Views, BuffersThatAreTooSmallAreRefusedUntouched) {
  const Bytes file = one_dense("i16", {4}, le(std::vector<int16_t>{1, 2, 3, 4}));
  const Opened o = open_memory(file);
  expect_chunks_match(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  std::vector<float> out(3, 7.0f);
  uint64_t written = 99;
  EXPECT_TRUE(FailsWith(zt_object_read_f32(o.get(), 0, out.data(), 3, &written), ZT_ERR_ARGUMENT,
                        {"object \"x\"", "4 values", "buffer of 3"}));
  EXPECT_TRUE(
      FailsWith(zt_object_decode_f32(o.get(), 0, out.data(), 3, &written), ZT_ERR_ARGUMENT));
  EXPECT_EQ(out, std::vector<float>(3, 7.0f));
  EXPECT_EQ(written, 99u);
  EXPECT_TRUE(FailsWith(zt_object_read_f32(o.get(), 0, nullptr, 4, &written), ZT_ERR_ARGUMENT));
  EXPECT_TRUE(FailsWith(zt_object_read_f32(o.get(), 0, out.data(), 3, nullptr), ZT_ERR_ARGUMENT));
  EXPECT_TRUE(FailsWith(zt_object_read_f32(nullptr, 0, out.data(), 3, &written), ZT_ERR_ARGUMENT));
  EXPECT_TRUE(FailsWith(zt_object_read_f32(o.get(), 5, out.data(), 3, &written), ZT_ERR_NOT_FOUND));
}

TEST(Views, DenseViewDescribesTheData) {
  FileBuilder b;
  const Bytes f32 = le(std::vector<float>{1, 2, 3, 4, 5, 6});
  b.dense("raw", "f32", {2, 3}, f32);
  b.object("z", "dense", {6}, Json{{"data", b.zstd("f32", f32)}});
  Json c = b.raw("u8", Bytes{1, 2, 3});
  c["type"] = "f4_e2m1_future";
  b.object("odd", "dense", {3}, Json{{"data", c}});
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  expect_chunks_match(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;

  zt_dense_info v;
  zt_dense_info_init(&v);
  ASSERT_EQ(zt_dense_view(o.get(), object_index(o.get(), "raw"), &v), ZT_OK) << zt_last_error();
  EXPECT_EQ(v.struct_size, sizeof v);
  EXPECT_EQ(v.zero_copy, 1u);
  EXPECT_EQ(v.elements, 6u);
  EXPECT_EQ(v.values, 6u);
  EXPECT_STREQ(v.dtype, "f32");
  EXPECT_EQ(v.type, nullptr);
  EXPECT_EQ(v.nbytes, 24u);
  EXPECT_EQ(static_cast<const uint8_t*>(v.data), file.data() + 64);  // into the caller's buffer

  zt_dense_info_init(&v);
  ASSERT_EQ(zt_dense_view(o.get(), object_index(o.get(), "z"), &v), ZT_OK) << zt_last_error();
  EXPECT_EQ(v.zero_copy, 0u);
  EXPECT_EQ(
      Bytes(static_cast<const uint8_t*>(v.data), static_cast<const uint8_t*>(v.data) + v.nbytes),
      f32);

  // An unknown logical type: the raw elements can be viewed, not converted.
  const size_t odd = object_index(o.get(), "odd");
  zt_dense_info_init(&v);
  ASSERT_EQ(zt_dense_view(o.get(), odd, &v), ZT_OK) << zt_last_error();
  EXPECT_STREQ(v.type, "f4_e2m1_future");
  EXPECT_EQ(v.nbytes, 3u);
  float out[3];
  uint64_t written = 0;
  EXPECT_TRUE(FailsWith(zt_object_read_f32(o.get(), odd, out, 3, &written), ZT_ERR_UNSUPPORTED,
                        {"object \"odd\"", "f4_e2m1_future"}));

  // struct_size guards the layout.
  zt_dense_info_init(&v);
  v.struct_size = 4;
  EXPECT_TRUE(FailsWith(zt_dense_view(o.get(), 0, &v), ZT_ERR_ARGUMENT, {"struct_size"}));
  EXPECT_TRUE(FailsWith(zt_dense_view(o.get(), 0, nullptr), ZT_ERR_ARGUMENT));
}

TEST(Views, ComponentReadConvertsAnyRole) {
  FileBuilder b;
  b.object("s", "sparse_csr", {2, 2},
           Json{{"values", b.raw("bf16", le(std::vector<uint16_t>{0x3f80, 0xc040}))},
                {"indices", b.raw("u64", le(std::vector<uint64_t>{1, 0}))},
                {"indptr", b.raw("u64", le(std::vector<uint64_t>{0, 1, 2}))}});
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  expect_chunks_match(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  float values[2];
  double indptr[3];
  uint64_t written = 0;
  ASSERT_EQ(zt_component_read_f32(o.get(), 0, "values", values, 2, &written), ZT_OK)
      << zt_last_error();
  EXPECT_EQ(written, 2u);
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[1], -3.0f);
  ASSERT_EQ(zt_component_read_f64(o.get(), 0, "indptr", indptr, 3, &written), ZT_OK)
      << zt_last_error();
  EXPECT_EQ(indptr[2], 2.0);
  EXPECT_TRUE(FailsWith(zt_component_read_f32(o.get(), 0, "nope", values, 2, &written),
                        ZT_ERR_NOT_FOUND, {"no component \"nope\""}));
  EXPECT_TRUE(
      FailsWith(zt_component_read_f32(o.get(), 0, "indptr", values, 2, &written), ZT_ERR_ARGUMENT));
  // The sparse object is not dense.
  EXPECT_TRUE(FailsWith(zt_object_read_f32(o.get(), 0, values, 2, &written), ZT_ERR_ARGUMENT,
                        {"sparse_csr", "not \"dense\""}));
}

// ---- CSR and COO ------------------------------------------------------------

// [[1, 0, 2, 0],
//  [0, 0, 0, 0],
//  [0, 3, 0, 4]]
const std::vector<float> kDense3x4 = {1, 0, 2, 0, 0, 0, 0, 0, 0, 3, 0, 4};

Bytes csr_file(const std::vector<uint64_t>& indices, const std::vector<uint64_t>& indptr,
               const std::vector<float>& values = {1, 2, 3, 4}, bool zstd_indices = false) {
  FileBuilder b;
  b.object("m", "sparse_csr", {3, 4},
           Json{{"values", b.raw("f32", le(values))},
                {"indices", zstd_indices ? b.zstd("u64", le(indices)) : b.raw("u64", le(indices))},
                {"indptr", b.raw("u64", le(indptr))}});
  return b.build();
}

TEST(Views, CsrViewPointsIntoTheFileAndMaterialises) {
  const Bytes file = csr_file({0, 2, 1, 3}, {0, 2, 2, 4});
  const Opened o = open_memory(file);
  expect_chunks_match(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  zt_csr_info v;
  zt_csr_info_init(&v);
  ASSERT_EQ(zt_csr_view(o.get(), 0, &v), ZT_OK) << zt_last_error();
  EXPECT_EQ(v.rows, 3u);
  EXPECT_EQ(v.cols, 4u);
  EXPECT_EQ(v.nnz, 4u);
  EXPECT_EQ(v.zero_copy, 1u);
  EXPECT_STREQ(v.values_dtype, "f32");
  EXPECT_EQ(v.values_type, nullptr);
  EXPECT_STREQ(v.indices_dtype, "u64");
  EXPECT_STREQ(v.indptr_dtype, "u64");
  const auto* base = file.data();
  EXPECT_EQ(static_cast<const uint8_t*>(v.values), base + 64);
  EXPECT_EQ(static_cast<const uint8_t*>(v.indices), base + 128);
  EXPECT_EQ(static_cast<const uint8_t*>(v.indptr), base + 192);
  const auto* indptr = static_cast<const uint64_t*>(v.indptr);
  EXPECT_EQ(indptr[3], 4u);
  EXPECT_EQ(decode_f32(o.get(), 0), kDense3x4);
}

TEST(Views, CsrWithCompressedIndicesAndSummedDuplicates) {
  {
    const Bytes file = csr_file({0, 2, 1, 3}, {0, 2, 2, 4}, {1, 2, 3, 4}, /*zstd_indices=*/true);
    const Opened o = open_memory(file);
    expect_chunks_match(file);
  expect_chunks_match(file);
    ASSERT_EQ(o.status, ZT_OK) << o.error;
    zt_csr_info v;
    zt_csr_info_init(&v);
    ASSERT_EQ(zt_csr_view(o.get(), 0, &v), ZT_OK) << zt_last_error();
    EXPECT_EQ(v.zero_copy, 0u);
    EXPECT_EQ(static_cast<const uint64_t*>(v.indices)[3], 3u);
    EXPECT_EQ(decode_f32(o.get(), 0), kDense3x4);
  }
  {
    // Row 0 stores column 1 twice: 5 + 6.
    const Bytes file = csr_file({1, 1, 1, 3}, {0, 2, 2, 4}, {5, 6, 3, 4});
    const Opened o = open_memory(file);
    expect_chunks_match(file);
  expect_chunks_match(file);
    ASSERT_EQ(o.status, ZT_OK) << o.error;
    EXPECT_EQ(decode_f32(o.get(), 0), (std::vector<float>{0, 11, 0, 0, 0, 0, 0, 0, 0, 3, 0, 4}));
  }
}

TEST(Views, CsrOfOlderFilesWithI32IndicesAndComplexValues) {
  // 1.1.0 allowed any integer index dtype; complex64 was a dtype.
  FileBuilder b("1.1.0");
  b.object("m", "sparse_csr", {2, 2},
           Json{{"values", b.raw("complex64", le(std::vector<float>{1, -1, 2, 0.5f}))},
                {"indices", b.raw("i32", le(std::vector<int32_t>{1, 0}))},
                {"indptr", b.raw("i32", le(std::vector<int32_t>{0, 1, 2}))}});
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  expect_chunks_match(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  zt_csr_info v;
  zt_csr_info_init(&v);
  ASSERT_EQ(zt_csr_view(o.get(), 0, &v), ZT_OK) << zt_last_error();
  EXPECT_EQ(v.nnz, 2u);
  EXPECT_STREQ(v.values_dtype, "f32");
  EXPECT_STREQ(v.values_type, "complex64");
  EXPECT_STREQ(v.indices_dtype, "i32");
  // [[0, 1-1i], [2+0.5i, 0]] as interleaved pairs.
  EXPECT_EQ(decode_f32(o.get(), 0), (std::vector<float>{0, 0, 1, -1, 2, 0.5f, 0, 0}));
}

TEST(Views, CooViewOfThreeDimensionsMaterialises) {
  // shape [2, 3, 4]; entries (0,0,1)=1, (1,2,3)=2, (0,1,0)=3, (1,2,3)=4 (a duplicate).
  const std::vector<uint64_t> coords = {0, 1, 0, 1, /*dim 1*/ 0, 2, 1, 2, /*dim 2*/ 1, 3, 0, 3};
  FileBuilder b;
  b.object("t", "sparse_coo", {2, 3, 4},
           Json{{"values", b.raw("f64", le(std::vector<double>{1, 2, 3, 4}))},
                {"coords", b.raw("u64", le(coords))}});
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  expect_chunks_match(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  zt_coo_info v;
  zt_coo_info_init(&v);
  ASSERT_EQ(zt_coo_view(o.get(), 0, &v), ZT_OK) << zt_last_error();
  EXPECT_EQ(v.ndim, 3u);
  EXPECT_EQ(v.shape[2], 4u);
  EXPECT_EQ(v.nnz, 4u);
  EXPECT_EQ(v.zero_copy, 1u);
  EXPECT_STREQ(v.values_dtype, "f64");
  EXPECT_STREQ(v.coords_dtype, "u64");
  EXPECT_EQ(static_cast<const uint64_t*>(v.coords)[4], 0u);
  std::vector<float> want(24, 0);
  want[0 * 12 + 0 * 4 + 1] = 1;
  want[1 * 12 + 2 * 4 + 3] = 2 + 4;
  want[0 * 12 + 1 * 4 + 0] = 3;
  EXPECT_EQ(decode_f32(o.get(), 0), want);
  // Views of one format refuse objects of another.
  zt_csr_info csr;
  zt_csr_info_init(&csr);
  EXPECT_TRUE(FailsWith(zt_csr_view(o.get(), 0, &csr), ZT_ERR_ARGUMENT,
                        {"sparse_coo", "not \"sparse_csr\""}));
}

struct BadSparse {
  const char* name;
  Bytes file;
  const char* message;
};

std::vector<BadSparse> bad_sparse_files() {
  std::vector<BadSparse> out;
  out.push_back({"indptr decreasing", csr_file({0, 2, 1, 3}, {0, 3, 2, 4}), "decreases"});
  out.push_back({"column out of range", csr_file({0, 4, 1, 3}, {0, 2, 2, 4}), "out of range"});
  out.push_back({"indptr[0] not 0", csr_file({0, 2, 1, 3}, {1, 2, 2, 4}), "indptr[0]"});
  out.push_back({"indptr[rows] not nnz", csr_file({0, 2, 1, 3}, {0, 2, 2, 3}), "must equal nnz"});
  FileBuilder b;
  b.object("m", "sparse_coo", {3, 4},
           Json{{"values", b.raw("f32", le(std::vector<float>{1, 2}))},
                {"coords", b.raw("u64", le(std::vector<uint64_t>{0, 3, 1, 1}))}});
  out.push_back({"coo coordinate out of range", b.build(), "out of range"});
  return out;
}

TEST(Views, BrokenSparseStructuresAreRejectedByViewsDecodeAndVerify) {
  for (const BadSparse& bad : bad_sparse_files()) {
    SCOPED_TRACE(bad.name);
    const Opened o = open_memory(bad.file);
    ASSERT_EQ(o.status, ZT_OK) << o.error;
    zt_csr_info csr;
    zt_csr_info_init(&csr);
    zt_coo_info coo;
    zt_coo_info_init(&coo);
    const bool is_csr = std::string(zt_object_format(o.get(), 0)) == "sparse_csr";
    EXPECT_TRUE(FailsWith(is_csr ? zt_csr_view(o.get(), 0, &csr) : zt_coo_view(o.get(), 0, &coo),
                          ZT_ERR_INVALID, {"object \"m\"", bad.message}));
    zt_status s = ZT_OK;
    decode_f32(o.get(), 0, &s);
    EXPECT_EQ(s, ZT_ERR_INVALID);
    EXPECT_TRUE(FailsWith(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_INVALID, {bad.message}));
  }
}

// ---- quantized_group ---------------------------------------------------------

// A quantized_group object built here from q, scales and zeros, packed by
// this test's own reading of the layout, with the expected weights.
struct Quant {
  unsigned bits = 4;
  uint64_t n = 0, k = 0, group = 0;
  std::optional<int64_t> group_size_attr;  // written instead of group (-1: per-channel, group == k)
  std::string packing;  // "<vpe>_per_<dtype>" or "bitstream"
  std::string word = "i32";
  std::string scale_dtype = "f32";
  enum class Zeros { f32, f16, i32_unpacked, u8_unpacked, packed } zeros = Zeros::f32;
  std::vector<uint64_t> shape;     // empty: {n, k}
  std::vector<uint32_t> q;         // [n][k]
  std::vector<float> scale, zero;  // [groups][n]
  uint64_t groups() const { return (k + group - 1) / group; }
};

unsigned word_bits(const std::string& word) {
  return word == "u8" ? 8 : word == "i16" ? 16 : 32;
}

// Quantized values, scales and zeros chosen so that every product is exact
// in float: w = (q - zero) * scale computed in double equals the float result.
Quant make_quant(unsigned bits, uint64_t n, uint64_t k, uint64_t group, std::string packing,
                 uint32_t seed) {
  Quant t;
  t.bits = bits, t.n = n, t.k = k, t.group = group, t.packing = std::move(packing);
  std::mt19937 rng(seed);
  t.q.resize(n * k);
  for (auto& v : t.q) v = static_cast<uint32_t>(rng() & ((1u << bits) - 1));
  t.scale.resize(t.groups() * n);
  t.zero.resize(t.groups() * n);
  for (auto& s : t.scale) s = static_cast<float>(1 + rng() % 64) / 128.0f;
  for (auto& z : t.zero) z = static_cast<float>(rng() % (1u << bits));
  return t;
}

Bytes words_bytes(const std::vector<uint64_t>& words, const std::string& word) {
  Bytes out;
  const unsigned width = word_bits(word) / 8;
  for (const uint64_t w : words)
    for (unsigned b = 0; b < width; ++b) out.push_back(static_cast<uint8_t>(w >> (8 * b)));
  return out;
}

Bytes pack_weights(const Quant& t) {
  const unsigned wb = word_bits(t.word);
  std::vector<uint64_t> words;
  if (t.packing == "bitstream") {
    const uint64_t per_column = (t.k * t.bits + wb - 1) / wb;
    words.assign(per_column * t.n, 0);
    for (uint64_t n = 0; n < t.n; ++n)
      for (uint64_t k = 0; k < t.k; ++k)
        for (unsigned b = 0; b < t.bits; ++b) {
          const uint64_t bit = k * t.bits + b;  // position in column n's bit string
          if ((t.q[n * t.k + k] >> b) & 1u)
            words[(bit / wb) * t.n + n] |= uint64_t{1} << (bit % wb);
        }
    return words_bytes(words, t.word);
  }
  const uint64_t vpe = std::stoull(t.packing.substr(0, t.packing.find('_')));
  const uint64_t rows = (t.k + vpe - 1) / vpe;
  words.assign(rows * t.n, 0);
  for (uint64_t n = 0; n < t.n; ++n)
    for (uint64_t k = 0; k < t.k; ++k)
      words[(k / vpe) * t.n + n] |= uint64_t{t.q[n * t.k + k]} << ((k % vpe) * t.bits);
  return words_bytes(words, t.word);
}

uint16_t to_f16(float f) {  // exact for the small dyadic values used here
  const uint32_t b = std::bit_cast<uint32_t>(f);
  if ((b & 0x7fffffffu) == 0) return static_cast<uint16_t>(b >> 16);
  const int e = static_cast<int>((b >> 23) & 0xff) - 127;
  return static_cast<uint16_t>(((b >> 16) & 0x8000u) | static_cast<uint32_t>(e + 15) << 10 |
                               ((b >> 13) & 0x3ffu));
}

Bytes quant_file(const Quant& t) {
  FileBuilder b;
  Json comps;
  comps["packed_weight"] = b.raw(t.word, pack_weights(t));
  if (t.scale_dtype == "f16") {
    std::vector<uint16_t> h;
    for (const float s : t.scale) h.push_back(to_f16(s));
    comps["scales"] = b.raw("f16", le(h));
  } else {
    comps["scales"] = b.zstd("f32", le(t.scale));
  }
  switch (t.zeros) {
    case Quant::Zeros::f32:
      comps["zeros"] = b.raw("f32", le(t.zero));
      break;
    case Quant::Zeros::f16: {
      std::vector<uint16_t> h;
      for (const float z : t.zero) h.push_back(to_f16(z));
      comps["zeros"] = b.raw("f16", le(h));
      break;
    }
    case Quant::Zeros::i32_unpacked: {
      std::vector<int32_t> z;
      for (const float v : t.zero) z.push_back(static_cast<int32_t>(v));
      comps["zeros"] = b.raw("i32", le(z));
      break;
    }
    case Quant::Zeros::u8_unpacked: {
      std::vector<uint8_t> z;
      for (const float v : t.zero) z.push_back(static_cast<uint8_t>(v));
      comps["zeros"] = b.raw("u8", z);
      break;
    }
    case Quant::Zeros::packed: {
      // GPTQ qzeros: [groups, ceil(n / vpe)] words, zero(g, n) in field n % vpe.
      const uint64_t vpe = std::stoull(t.packing.substr(0, t.packing.find('_')));
      const uint64_t per_group = (t.n + vpe - 1) / vpe;
      std::vector<uint64_t> words(t.groups() * per_group, 0);
      for (uint64_t g = 0; g < t.groups(); ++g)
        for (uint64_t n = 0; n < t.n; ++n)
          words[g * per_group + n / vpe] |= static_cast<uint64_t>(t.zero[g * t.n + n])
                                            << ((n % vpe) * t.bits);
      comps["zeros"] = b.raw(t.word, words_bytes(words, t.word));
      break;
    }
  }
  Json& o = b.object("q", "quantized_group",
                     t.shape.empty() ? std::vector<uint64_t>{t.n, t.k} : t.shape, comps);
  o["attributes"] = Json{{"bits", t.bits}, {"packing", t.packing}};
  o["attributes"]["group_size"] = t.group_size_attr ? Json(*t.group_size_attr) : Json(t.group);
  return b.build();
}

std::vector<float> expected_weights(const Quant& t) {
  std::vector<float> w(t.n * t.k);
  for (uint64_t n = 0; n < t.n; ++n)
    for (uint64_t k = 0; k < t.k; ++k) {
      const uint64_t at = (k / t.group) * t.n + n;
      w[n * t.k + k] =
          static_cast<float>((static_cast<double>(t.q[n * t.k + k]) - t.zero[at]) * t.scale[at]);
    }
  return w;
}

// zt_quant_view of the one object of `file`, for the fields that are not
// pointers (the reader is closed on return).
zt_status quant_view(const Bytes& file, zt_quant_info& v) {
  const Opened o = open_memory(file);
  expect_chunks_match(file);
  if (o.status != ZT_OK) return o.status;
  zt_quant_info_init(&v);
  return zt_quant_view(o.get(), 0, &v);
}

void check_dequantised(const Quant& t) {
  const Bytes file = quant_file(t);
  const Opened o = open_memory(file);
  expect_chunks_match(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  uint64_t checked = 0, unchecked = 0;
  EXPECT_EQ(zt_verify(o.get(), &checked, &unchecked), ZT_OK) << zt_last_error();
  zt_status s = ZT_OK;
  const std::vector<float> got = decode_f32(o.get(), 0, &s);
  ASSERT_EQ(s, ZT_OK) << zt_last_error();
  const std::vector<float> want = expected_weights(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(got[i], want[i]) << "n " << i / t.k << " k " << i % t.k << " (q " << t.q[i] << ")";
}

TEST(Views, Dequantise4BitGptqWithF16ScalesAndZeros) {
  Quant t = make_quant(4, 5, 64, 16, "8_per_i32", 1);
  t.scale_dtype = "f16";
  t.zeros = Quant::Zeros::f16;
  check_dequantised(t);
}

TEST(Views, Dequantise8BitWithAPartialLastGroupAndIntegerZeros) {
  Quant t =
      make_quant(8, 3, 38, 16, "4_per_i32", 2);  // 38 = 9 full words + 2 fields; groups 16, 16, 6
  t.zeros = Quant::Zeros::i32_unpacked;
  check_dequantised(t);
  t.zeros = Quant::Zeros::u8_unpacked;
  check_dequantised(t);
}

TEST(Views, Dequantise2BitWithGptqPackedZeros) {
  Quant t = make_quant(2, 20, 50, 25, "16_per_i32", 3);  // zeros: 2 words of 16 fields per group
  t.zeros = Quant::Zeros::packed;
  check_dequantised(t);
}

TEST(Views, Dequantise3BitBitstreamAndPaddedWords) {
  check_dequantised(make_quant(3, 3, 64, 32, "bitstream", 4));  // 32 values in 3 words per block
  check_dequantised(
      make_quant(3, 4, 37, 8, "bitstream", 5));  // a field across a word boundary at the end
  check_dequantised(make_quant(3, 4, 37, 8, "10_per_i32", 6));  // 2 padding bits per word
  Quant p = make_quant(3, 7, 20, 10, "10_per_i32", 7);
  p.zeros = Quant::Zeros::packed;  // zeros packed 10 per word along n
  check_dequantised(p);
}

TEST(Views, DequantiseNibblesInBytesAndRank3Shapes) {
  Quant t = make_quant(4, 6, 9, 4, "2_per_u8", 8);
  t.word = "u8";
  check_dequantised(t);
  Quant r = make_quant(4, 6, 16, 8, "8_per_i32", 9);
  r.shape = {2, 3, 16};  // N = 2 x 3
  check_dequantised(r);
}

// GPTQ writes group_size -1 for per-channel quantisation: one group over
// all of K, with one scale and zero per output channel.
TEST(Views, PerChannelGroupSizeMinusOneIsOneGroupOverK) {
  Quant t = make_quant(4, 6, 40, 40, "8_per_i32", 12);
  t.group_size_attr = -1;
  check_dequantised(t);
  zt_quant_info v;
  ASSERT_EQ(quant_view(quant_file(t), v), ZT_OK) << zt_last_error();
  EXPECT_EQ(v.group_size, 40u);
  EXPECT_EQ(v.groups, 1u);
  EXPECT_EQ(v.scales_count, 6u);
  // Other negative sizes stay refused.
  t.group_size_attr = -2;
  EXPECT_TRUE(FailsWith(quant_view(quant_file(t), v), ZT_ERR_INVALID, {"object \"q\"", "group_size"}));
}

TEST(Views, PackedZerosMustFitTheirWords) {
  // 8 zero-points of 4 bits packed along N need 32-bit words; u8 words hold 2.
  Quant t = make_quant(4, 16, 8, 8, "8_per_i32", 11);
  FileBuilder b;
  Json comps;
  comps["packed_weight"] = b.raw("i32", pack_weights(t));
  comps["scales"] = b.raw("f32", le(t.scale));
  comps["zeros"] = b.raw("u8", Bytes{0x11, 0x22});  // [1 group, ceil(16 / 8) = 2]
  Json& obj = b.object("q", "quantized_group", {16, 8}, comps);
  obj["attributes"] = Json{{"bits", 4}, {"group_size", 8}, {"packing", "8_per_i32"}};
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  expect_chunks_match(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_TRUE(FailsWith(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_INVALID,
                        {"object \"q\"", "zeros packed 8 per word"}));
  zt_status s = ZT_OK;
  decode_f32(o.get(), 0, &s);
  EXPECT_EQ(s, ZT_ERR_INVALID);
}

TEST(Views, QuantViewExposesTheLayout) {
  Quant t = make_quant(2, 20, 50, 25, "16_per_i32", 3);
  t.zeros = Quant::Zeros::packed;
  const Bytes file = quant_file(t);
  const Opened o = open_memory(file);
  expect_chunks_match(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  zt_quant_info v;
  zt_quant_info_init(&v);
  ASSERT_EQ(zt_quant_view(o.get(), 0, &v), ZT_OK) << zt_last_error();
  EXPECT_EQ(v.bits, 2u);
  EXPECT_EQ(v.group_size, 25u);
  EXPECT_EQ(v.n, 20u);
  EXPECT_EQ(v.k, 50u);
  EXPECT_EQ(v.groups, 2u);
  EXPECT_EQ(v.values_per_word, 16u);
  EXPECT_EQ(v.bitstream, 0u);
  EXPECT_EQ(v.zeros_packed, 1u);
  EXPECT_EQ(v.zero_copy, 0u);  // scales are zstd
  EXPECT_EQ(v.packed_weight_count, 4u * 20u);
  EXPECT_STREQ(v.packed_weight_dtype, "i32");
  EXPECT_EQ(v.scales_count, 40u);
  EXPECT_STREQ(v.scales_dtype, "f32");
  EXPECT_EQ(v.zeros_count, 4u);
  EXPECT_STREQ(v.zeros_dtype, "i32");
  EXPECT_EQ(v.zeros_type, nullptr);
  ASSERT_NE(v.packed_weight, nullptr);
  // Field 1 of word [0, 0] is q(0, 1).
  EXPECT_EQ((static_cast<const uint32_t*>(v.packed_weight)[0] >> 2) & 3u, t.q[1]);
}

TEST(Views, QuantizedObjectsWithBadSizesOrNoParametersAreRefused) {
  Quant t = make_quant(4, 4, 32, 16, "8_per_i32", 10);
  Bytes file = quant_file(t);
  {
    // Drop the attributes: listed, not dequantisable.
    FileBuilder b;
    Json comps;
    comps["packed_weight"] = b.raw("i32", pack_weights(t));
    comps["scales"] = b.raw("f32", le(t.scale));
    comps["zeros"] = b.raw("f32", le(t.zero));
    b.object("q", "quantized_group", {4, 32}, comps);
    const Bytes bare = b.build();
    const Opened o = open_memory(bare);
    ASSERT_EQ(o.status, ZT_OK) << o.error;
    zt_status s = ZT_OK;
    decode_f32(o.get(), 0, &s);
    EXPECT_EQ(s, ZT_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(zt_last_error()).find("\"bits\""), std::string::npos) << zt_last_error();
  }
  {
    // group_size 8 needs 4 x 4 scales, the file has 2 x 4.
    FileBuilder b;
    Json comps;
    comps["packed_weight"] = b.raw("i32", pack_weights(t));
    comps["scales"] = b.raw("f32", le(t.scale));
    comps["zeros"] = b.raw("f32", le(t.zero));
    Json& obj = b.object("q", "quantized_group", {4, 32}, comps);
    obj["attributes"] = Json{{"bits", 4}, {"group_size", 8}, {"packing", "8_per_i32"}};
    const Bytes bad = b.build();
    const Opened o = open_memory(bad);
    ASSERT_EQ(o.status, ZT_OK) << o.error;
    zt_quant_info v;
    zt_quant_info_init(&v);
    EXPECT_TRUE(
        FailsWith(zt_quant_view(o.get(), 0, &v), ZT_ERR_INVALID, {"scales has 8 elements"}));
    EXPECT_TRUE(FailsWith(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_INVALID, {"scales"}));
  }
}

// ---- row slices --------------------------------------------------------------

// Compresses one piece as a frame that records its content size and a
// checksum, so that a corrupted payload fails to decode.
Bytes checked_frame(std::span<const uint8_t> src) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
  Bytes out(ZSTD_compressBound(src.size()));
  const size_t n = ZSTD_compress2(c, out.data(), out.size(), src.data(), src.size());
  ZSTD_freeCCtx(c);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

// f32 [12, 5]: value at (r, c) is r * 100 + c; "data" stored as 4 frames of
// 3 rows each, frame `corrupt` (if any) with a damaged payload.
struct FramedRows {
  std::vector<float> values;
  Bytes file;
  explicit FramedRows(int corrupt = -1, bool content_size = true) {
    for (int r = 0; r < 12; ++r)
      for (int c = 0; c < 5; ++c) values.push_back(static_cast<float>(r * 100 + c));
    const Bytes raw = le(values);
    Bytes stream;
    for (int f = 0; f < 4; ++f) {
      const auto piece = std::span<const uint8_t>(raw).subspan(static_cast<size_t>(f) * 60, 60);
      Bytes frame = content_size ? checked_frame(piece) : zstd_compress(piece, false);
      if (f == corrupt) frame[frame.size() / 2] ^= 0x55;  // inside the payload, headers intact
      stream.insert(stream.end(), frame.begin(), frame.end());
    }
    FileBuilder b;
    const uint64_t off = b.add_blob(stream);
    b.object("x", "dense", {12, 5},
             Json{{"data", Json{{"dtype", "f32"},
                                {"offset", off},
                                {"length", stream.size()},
                                {"encoding", "zstd"},
                                {"uncompressed_length", raw.size()}}}});
    b.dense("raw", "f32", {12, 5}, raw);
    file = b.build();
  }
  std::vector<float> rows(uint64_t a, uint64_t b) const {
    return std::vector<float>(values.begin() + static_cast<long>(a * 5),
                              values.begin() + static_cast<long>(b * 5));
  }
};

std::vector<float> rows_via_bytes(const zt_reader* r, size_t object, uint64_t a, uint64_t b,
                                  zt_status* s) {
  std::vector<float> out((b - a) * 5);
  uint64_t written = 0;
  *s = zt_dense_rows(r, object, a, b, out.data(), out.size() * sizeof(float), &written);
  if (*s == ZT_OK) {
    EXPECT_EQ(written, out.size() * sizeof(float));
  }
  return out;
}

TEST(Views, RawRowsAreZeroCopyAndCopied) {
  const FramedRows t;
  const Opened o = open_memory(t.file);
  expect_chunks_match(t.file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const size_t raw = object_index(o.get(), "raw");
  const void* p = nullptr;
  uint64_t n = 0;
  ASSERT_EQ(zt_dense_rows_map(o.get(), raw, 2, 5, &p, &n), ZT_OK) << zt_last_error();
  EXPECT_EQ(n, 3u * 5 * 4);
  const void* whole = nullptr;
  uint64_t whole_n = 0;
  ASSERT_EQ(zt_component_map(o.get(), raw, "data", &whole, &whole_n), ZT_OK);
  EXPECT_EQ(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(whole) + 2 * 5 * 4);
  zt_status s = ZT_OK;
  EXPECT_EQ(rows_via_bytes(o.get(), raw, 2, 5, &s), t.rows(2, 5));
  EXPECT_EQ(s, ZT_OK) << zt_last_error();
  EXPECT_TRUE(FailsWith(zt_dense_rows_map(o.get(), raw, 5, 13, &p, &n), ZT_ERR_ARGUMENT,
                        {"rows [5, 13) are not within [0, 12)"}));
  EXPECT_TRUE(FailsWith(zt_dense_rows_map(o.get(), raw, 6, 5, &p, &n), ZT_ERR_ARGUMENT));
  ASSERT_EQ(zt_dense_rows_map(o.get(), raw, 7, 7, &p, &n), ZT_OK);
  EXPECT_EQ(n, 0u);
}

TEST(Views, MultiFrameZstdRowsDecodeOnlyTheCoveringFrames) {
  // Frame 0 (rows 0-2) is corrupt: the whole component cannot be decoded,
  // but rows of frames 1-3 can, including ranges that start and end inside
  // a frame.
  const FramedRows t(/*corrupt=*/0);
  const Opened o = open_memory(t.file);
  expect_chunks_match(t.file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const size_t x = object_index(o.get(), "x");
  const Mapped whole = map_component(o.get(), "x", "data");
  EXPECT_EQ(whole.status, ZT_ERR_INVALID);
  for (const auto& [a, b] :
       std::vector<std::pair<uint64_t, uint64_t>>{{3, 6}, {4, 5}, {4, 11}, {5, 12}, {11, 12}}) {
    zt_status s = ZT_OK;
    EXPECT_EQ(rows_via_bytes(o.get(), x, a, b, &s), t.rows(a, b)) << "rows " << a << ".." << b;
    EXPECT_EQ(s, ZT_OK) << zt_last_error();
  }
  zt_status s = ZT_OK;
  rows_via_bytes(o.get(), x, 2, 4, &s);
  EXPECT_EQ(s, ZT_ERR_INVALID) << "rows of the corrupt frame";
}

TEST(Views, ZstdRowsWithoutFrameSizesGoThroughTheCache) {
  const FramedRows t(/*corrupt=*/-1, /*content_size=*/false);
  const Opened o = open_memory(t.file);
  expect_chunks_match(t.file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  const size_t x = object_index(o.get(), "x");
  zt_status s = ZT_OK;
  EXPECT_EQ(rows_via_bytes(o.get(), x, 1, 10, &s), t.rows(1, 10));
  EXPECT_EQ(s, ZT_OK) << zt_last_error();
  const void* p = nullptr;
  uint64_t n = 0;
  ASSERT_EQ(zt_dense_rows_map(o.get(), x, 1, 10, &p, &n), ZT_OK) << zt_last_error();
  const Mapped whole = map_component(o.get(), "x", "data");
  EXPECT_EQ(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(whole.ptr) + 5 * 4)
      << "a view into the cache";
}

TEST(Views, RowsConvertToF32AndRespectCapacity) {
  FileBuilder b;
  std::vector<uint16_t> h;
  for (int i = 0; i < 12; ++i)
    h.push_back(static_cast<uint16_t>(0x3c00 + i * 0x400));  // 1, 2, 4, ...
  b.dense("h", "f16", {4, 3}, le(h));
  b.dense("s", "f32", {}, le(std::vector<float>{1}));
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  expect_chunks_match(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  std::vector<float> out(6, -1);
  uint64_t written = 0;
  ASSERT_EQ(zt_dense_rows_f32(o.get(), 0, 1, 3, out.data(), 6, &written), ZT_OK) << zt_last_error();
  EXPECT_EQ(written, 6u);
  EXPECT_EQ(out, (std::vector<float>{8, 16, 32, 64, 128, 256}));
  double d[3];
  ASSERT_EQ(zt_dense_rows_f64(o.get(), 0, 3, 4, d, 3, &written), ZT_OK) << zt_last_error();
  EXPECT_EQ(d[2], 2048.0);
  EXPECT_TRUE(
      FailsWith(zt_dense_rows_f32(o.get(), 0, 0, 3, out.data(), 6, &written), ZT_ERR_ARGUMENT));
  uint8_t bytes[4];
  EXPECT_TRUE(FailsWith(zt_dense_rows(o.get(), 0, 0, 1, bytes, 4, &written), ZT_ERR_ARGUMENT,
                        {"do not fit"}));
  EXPECT_TRUE(
      FailsWith(zt_dense_rows(o.get(), 1, 0, 0, bytes, 4, &written), ZT_ERR_ARGUMENT, {"scalar"}));
}

TEST(Views, RowsInCopyModeReadOnlyTheRange) {
  const FramedRows t;
  const TempFile f(t.file);
  zt_open_options opt;
  zt_open_options_init(&opt);
  opt.io_mode = ZT_IO_COPY;
  const Opened o = open_file(f, &opt);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  for (const char* name : {"raw", "x"}) {
    zt_status s = ZT_OK;
    EXPECT_EQ(rows_via_bytes(o.get(), object_index(o.get(), name), 4, 9, &s), t.rows(4, 9)) << name;
    EXPECT_EQ(s, ZT_OK) << zt_last_error();
  }
  zt_dense_info v;
  zt_dense_info_init(&v);
  ASSERT_EQ(zt_dense_view(o.get(), object_index(o.get(), "raw"), &v), ZT_OK);
  EXPECT_EQ(v.zero_copy, 0u);
}

TEST(Views, UnknownFormatsAreUnsupported) {
  FileBuilder b;
  b.object("blk", "block_sparse", {4}, Json{{"blocks", b.raw("f32", le(std::vector<float>{1}))}});
  const Bytes file = b.build();
  const Opened o = open_memory(file);
  expect_chunks_match(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  uint64_t n = 0;
  EXPECT_TRUE(FailsWith(zt_object_value_count(o.get(), 0, &n), ZT_ERR_UNSUPPORTED,
                        {"object \"blk\"", "\"block_sparse\""}));
  float out[4];
  EXPECT_TRUE(FailsWith(zt_object_decode_f32(o.get(), 0, out, 4, &n), ZT_ERR_UNSUPPORTED));
  EXPECT_EQ(zt_object_element_count(o.get(), 0, &n), ZT_OK);
  EXPECT_EQ(n, 4u);
  // Its components still convert one by one.
  EXPECT_EQ(zt_component_read_f32(o.get(), 0, "blocks", out, 4, &n), ZT_OK) << zt_last_error();
  EXPECT_EQ(n, 1u);
}

// ---- zt.mx/1 (v2): value(i) = 2^(scales[b] - 127) x element(i) ----

// Object "x": data of `dtype` (and `type` unless empty), f8_e8m0 scales.
FileBuilderV2 mx_file(const std::vector<uint64_t>& shape, std::string_view dtype,
                      std::string_view type, const Bytes& data, const Bytes& scales,
                      std::optional<uint64_t> axis) {
  FileBuilderV2 b;
  Json d = b.raw(dtype, data);
  if (!type.empty()) d["type"] = type;
  Json s = b.raw("u8", scales);
  s["type"] = "f8_e8m0";
  b.object("x", "zt.mx/1", shape, Json{{"data", std::move(d)}, {"scales", std::move(s)}});
  Json& a = b.manifest["objects"]["x"]["attributes"];
  a = Json{{"block_size", 2}, {"scale_form", "e8m0_exponent"}};
  if (axis) a["axis"] = *axis;
  return b;
}

TEST(Views, MxFp4DequantizesBlockByBlock) {
  // Nibbles 1 2 | 3 4 | 7 f | 8 0 = 0.5 1 | 1.5 2 | 6 -6 | -0 0, blocks of
  // 2 along the last axis scaled by 1, 2, 0.5 and NaN (0xff).
  const Bytes file = mx_file({2, 4}, "u8", "f4_e2m1", Bytes{0x21, 0x43, 0xf7, 0x08},
                             Bytes{127, 128, 126, 0xff}, std::nullopt)
                         .build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  float out[8];
  uint64_t written = 0;
  ASSERT_EQ(zt_object_decode_f32(o.get(), 0, out, 8, &written), ZT_OK) << zt_last_error();
  ASSERT_EQ(written, 8u);
  const float want[6] = {0.5f, 1, 3, 4, 3, -3};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[i], want[i]) << i;
  EXPECT_TRUE(std::isnan(out[6]) && std::isnan(out[7]));
  uint64_t count = 0;
  ASSERT_EQ(zt_object_value_count(o.get(), 0, &count), ZT_OK);
  EXPECT_EQ(count, 8u);
  expect_chunks_match(file);
}

TEST(Views, MxInt8AlongAxis0UsesRowMajorScales) {
  // [4, 2], blocks of 2 along axis 0: scales [2, 2] = 1 2 / 4 0.5; MXINT8
  // elements are i8 / 64.
  const Bytes file =
      mx_file({4, 2}, "i8", "", le(std::vector<int8_t>{64, -64, 32, 1, 0, 127, -128, 64}),
              Bytes{127, 128, 129, 126}, 0)
          .build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  double out[8];
  uint64_t written = 0;
  ASSERT_EQ(zt_object_decode_f64(o.get(), 0, out, 8, &written), ZT_OK) << zt_last_error();
  const double want[8] = {1, -2, 0.5, 1.0 / 32, 0, 127.0 / 128, -8, 0.5};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], want[i]) << i;
  expect_chunks_match(file);
}

TEST(Views, MxWithAnUnknownElementTypeIsNotDecoded) {
  const Bytes file =
      mx_file({2, 4}, "u8", "f6_e3m2", Bytes(6, 0), Bytes{127, 127, 127, 127}, std::nullopt)
          .build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  float out[8];
  uint64_t written = 0;
  EXPECT_TRUE(FailsWith(zt_object_decode_f32(o.get(), 0, out, 8, &written), ZT_ERR_UNSUPPORTED,
                        {"f6_e3m2"}));
}

// ---- zt.quant_group/1 (v2): value = (code - zero) x scale ----

// Object "q" with the given attributes and parts (role -> (dtype, type, bytes)).
struct QgPart {
  std::string role, dtype, type;
  Bytes bytes;
};
Bytes qg_file(const std::vector<uint64_t>& shape, const Json& attributes,
              const std::vector<QgPart>& parts) {
  FileBuilderV2 b;
  Json p = Json::object();
  for (const QgPart& q : parts) {
    p[q.role] = b.raw(q.dtype, q.bytes);
    if (!q.type.empty()) p[q.role]["type"] = q.type;
  }
  b.object("q", "zt.quant_group/1", shape, p);
  b.manifest["objects"]["q"]["attributes"] = attributes;
  return b.build();
}

Json qg_attributes(uint64_t bits, uint64_t group_size, uint64_t axis, const char* word,
                   const char* order, const char* scale_form, Json zero_point) {
  return Json{
      {"bits", bits},
      {"group_size", group_size},
      {"axis", axis},
      {"packing",
       {{"word", word}, {"order", order}, {"per_word", 8 * (word[1] == '8' ? 1 : 4) / bits}}},
      {"scale_form", scale_form},
      {"zero_point", std::move(zero_point)}};
}

std::vector<double> qg_decode(const Bytes& file, size_t n) {
  const Opened o = open_memory(file);
  EXPECT_EQ(o.status, ZT_OK) << o.error;
  std::vector<double> out(n);
  uint64_t written = 0;
  EXPECT_EQ(zt_object_decode_f64(o.get(), 0, out.data(), n, &written), ZT_OK) << zt_last_error();
  EXPECT_EQ(written, n);
  expect_chunks_match(file);
  return out;
}

TEST(Views, QuantGroupAwqAndGptqPackingsDequantize) {
  // [4, 4], groups of 2 along axis 0: entries [2, 4] row-major, e = (row / 2) * 4 + col.
  // Codes 0..15 in two u32 words; zero points e + 1 packed like the data.
  const Bytes words = le(std::vector<uint32_t>{0x76543210u, 0xFEDCBA98u});
  const Bytes zeros = le(std::vector<uint32_t>{0x87654321u});
  const std::vector<float> scale{1, 2, 0.5f, 0.25f, 1, 1, 2, 2};
  for (const char* order : {"lsb_first", "msb_first"}) {
    const Json zp{{"form", "tensor"}, {"packing", "same_as_data"}};
    const Bytes file = qg_file({4, 4}, qg_attributes(4, 2, 0, "u32", order, "f32_factors", zp),
                               {{"data", "u32", "", words},
                                {"scales", "f32", "", le(scale)},
                                {"zeros", "u32", "", zeros}});
    const std::vector<double> got = qg_decode(file, 16);
    const bool msb = std::string(order) == "msb_first";
    for (int i = 0; i < 16; ++i) {
      const int slot = i % 8, base = i / 8 * 8;
      const int code = base + (msb ? 7 - slot : slot);
      const int e = (i / 4) / 2 * 4 + i % 4;
      const int zero = msb ? 8 - e : e + 1;  // the zero word read the same way
      EXPECT_EQ(got[i], (code - zero) * double{scale[e]}) << order << " " << i;
    }
  }
}

TEST(Views, QuantGroupCodesAreSignedWhenTheDataIs) {
  // Decision 30: symmetric int8 per channel, [2, 3] along axis 0, one scale
  // per column; i8 data gives signed codes, u8 data unsigned ones.
  const Json attributes =
      qg_attributes(8, 0, 0, "u8", "lsb_first", "f32_factors", {{"form", "none"}});
  const Bytes codes = le(std::vector<int8_t>{-128, -1, 0, 1, 127, 64});
  const Bytes scales = le(std::vector<float>{1, 0.5f, 2});
  const std::vector<double> i8 = qg_decode(
      qg_file({2, 3}, attributes, {{"data", "i8", "", codes}, {"scales", "f32", "", scales}}), 6);
  EXPECT_EQ(i8, (std::vector<double>{-128, -0.5, 0, 1, 63.5, 128}));
  const std::vector<double> u8 = qg_decode(
      qg_file({2, 3}, attributes, {{"data", "u8", "", codes}, {"scales", "f32", "", scales}}), 6);
  EXPECT_EQ(u8, (std::vector<double>{128, 127.5, 0, 1, 63.5, 128}));
}

TEST(Views, QuantGroupImpliedAndPlainZeroPoints) {
  const Bytes word = le(std::vector<uint32_t>{0x76543210u});  // codes 0..7
  // Bias-8: [8, 1], one group along axis 0, zero 8, scale 0.5.
  const std::vector<double> bias8 = qg_decode(
      qg_file({8, 1},
              qg_attributes(4, 8, 0, "u32", "lsb_first", "f32_factors",
                            {{"form", "implied"}, {"value", 8}}),
              {{"data", "u32", "", word}, {"scales", "f32", "", le(std::vector<float>{0.5f})}}),
      8);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(bias8[i], (i - 8) * 0.5) << i;
  // MLX-like: [1, 8], groups of 4 along axis 1, plain f32 zero points, e8m0
  // scales 2 and 0.5.
  const std::vector<double> plain =
      qg_decode(qg_file({1, 8},
                        qg_attributes(4, 4, 1, "u32", "lsb_first", "e8m0_exponent",
                                      {{"form", "tensor"}, {"packing", "plain"}}),
                        {{"data", "u32", "", word},
                         {"scales", "u8", "f8_e8m0", Bytes{128, 126}},
                         {"zeros", "f32", "", le(std::vector<float>{1.5f, -2})}}),
                8);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(plain[i], i < 4 ? (i - 1.5) * 2 : (i + 2) * 0.5) << i;
}

// An f64 zero point is applied at f64 by the float32 calls too, rounded
// once: GGUF's Q4_1 (q x d + m) becomes zero = -m/d, and only that keeps
// ggml's float32 q x d + m (q x d exact: d is an f16). Here d and m are
// 0.1 and 1/3 rounded to f16: in float32, (q - zero) x d is off by an ulp
// for codes 1..6.
TEST(Views, QuantGroupF64ZeroPointsComputeAtF64) {
  const float d = 0.0999755859375f, m = 0.333251953125f;
  const double zero = -double{m} / double{d};
  const Bytes word = le(std::vector<uint32_t>{0x76543210u});  // codes 0..7
  const Bytes file = qg_file({8},
                             qg_attributes(4, 8, 0, "u32", "lsb_first", "f32_factors",
                                           {{"form", "tensor"}, {"packing", "plain"}}),
                             {{"data", "u32", "", word},
                              {"scales", "f32", "", le(std::vector<float>{d})},
                              {"zeros", "f64", "", le(std::vector<double>{zero})}});
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  std::vector<float> got(8);
  uint64_t written = 0;
  ASSERT_EQ(zt_object_decode_f32(o.get(), 0, got.data(), 8, &written), ZT_OK) << zt_last_error();
  int float32_differs = 0;
  for (int q = 0; q < 8; ++q) {
    const float ggml = static_cast<float>(q) * d + m;
    EXPECT_EQ(got[q], static_cast<float>((q - zero) * double{d})) << q;
    EXPECT_EQ(got[q], ggml) << q;
    float32_differs += (static_cast<float>(q) - static_cast<float>(zero)) * d != ggml;
  }
  EXPECT_GT(float32_differs, 0);  // the case the f64 path exists for
}

}  // namespace
}  // namespace zt::test
