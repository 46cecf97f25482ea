// zt_verify: digests over stored bytes (xxh3, sha256, crc32c in either
// spelling, unknown algorithms unchecked), malformed digest text refused at
// open, and the content rules that need data bytes (CSR, COO, bool).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "read/index_cursor.h"
#include "test_files.h"

namespace zt::test {
namespace {

struct Counts {
  zt_status status = ZT_ERR_STATE;
  uint64_t checked = 0, unchecked = 0;
  std::string error;
};

Counts verify(const Bytes& file) {
  Counts c;
  const Opened o = open_memory(file);
  if (o.status != ZT_OK) {
    c.status = o.status;
    c.error = "open failed: " + o.error;
    return c;
  }
  c.status = zt_verify(o.get(), &c.checked, &c.unchecked);
  c.error = zt_last_error();
  return c;
}

// A dense u8 object "w" over `data` with the given digest text.
Bytes with_digest(const Bytes& data, const std::string& digest) {
  FileBuilder b;
  b.dense("w", "u8", {data.size()}, data);
  b.component("w", "data")["digest"] = digest;
  return b.build();
}

const Bytes kCheckInput = bytes_of("123456789");  // CRC-32C check value 0xE3069283

TEST(Digest, Xxh3MatchIsChecked) {
  const Bytes data = pattern(1000);
  const Counts c = verify(with_digest(data, xxh3_digest(data)));
  EXPECT_EQ(c.status, ZT_OK) << c.error;
  EXPECT_EQ(c.checked, 1u);
  EXPECT_EQ(c.unchecked, 0u);
}

TEST(Digest, Xxh3MismatchIsDigest) {
  const Bytes data = pattern(1000);
  Bytes other = data;
  other[999] ^= 1;
  const Counts c = verify(with_digest(data, xxh3_digest(other)));
  EXPECT_EQ(c.status, ZT_ERR_DIGEST);
  EXPECT_NE(c.error.find("object \"w\": component \"data\": xxh3 digest mismatch"),
            std::string::npos)
      << c.error;
}

TEST(Digest, Sha256MatchIsCheckedAndMismatchIsDigest) {
  const Bytes data = pattern(5000);
  const Counts ok = verify(with_digest(data, sha256_digest(data)));
  EXPECT_EQ(ok.status, ZT_OK) << ok.error;
  EXPECT_EQ(ok.checked, 1u);
  const Counts bad = verify(with_digest(data, sha256_digest(pattern(5000, 2))));
  EXPECT_EQ(bad.status, ZT_ERR_DIGEST);
  EXPECT_NE(bad.error.find("sha256 digest mismatch"), std::string::npos) << bad.error;
}

TEST(Digest, Crc32cAcceptsPrefixAndEitherCase) {
  for (const char* d :
       {"crc32c:e3069283", "crc32c:E3069283", "crc32c:0xE3069283", "crc32c:0Xe3069283"}) {
    SCOPED_TRACE(d);
    const Counts c = verify(with_digest(kCheckInput, d));
    EXPECT_EQ(c.status, ZT_OK) << c.error;
    EXPECT_EQ(c.checked, 1u);
  }
  const Counts bad = verify(with_digest(kCheckInput, "crc32c:0xE3069284"));
  EXPECT_EQ(bad.status, ZT_ERR_DIGEST);
  EXPECT_NE(bad.error.find("crc32c digest mismatch"), std::string::npos) << bad.error;
}

TEST(Digest, DigestCoversTheStoredCompressedBytes) {
  const Bytes data = pattern(4096);
  const Bytes z = zstd_compress(data);
  FileBuilder b;
  b.object("w", "dense", {4096}, Json{{"data", b.zstd("u8", data)}});
  b.component("w", "data")["digest"] = xxh3_digest(z);
  const Counts ok = verify(b.build());
  EXPECT_EQ(ok.status, ZT_OK) << ok.error;
  EXPECT_EQ(ok.checked, 1u);
  // A digest of the decoded bytes does not match.
  b.component("w", "data")["digest"] = xxh3_digest(data);
  EXPECT_EQ(verify(b.build()).status, ZT_ERR_DIGEST);
}

TEST(Digest, UnknownAlgorithmsAndAbsentDigestsAreUnchecked) {
  FileBuilder b;
  const Bytes x = pattern(10, 1), y = pattern(20, 2), z = pattern(30, 3), w = pattern(40, 4);
  b.object("o", "my_format", {1},
           Json{{"x", b.raw("u8", x)},
                {"y", b.raw("u8", y)},
                {"z", b.raw("u8", z)},
                {"w", b.raw("u8", w)}});
  b.component("o", "x")["digest"] = xxh3_digest(x);
  b.component("o", "y")["digest"] = "blake3:00ff00ff";
  b.component("o", "z")["digest"] = "md5:d41d8cd98f00b204e9800998ecf8427e";
  const Counts c = verify(b.build());
  EXPECT_EQ(c.status, ZT_OK) << c.error;
  EXPECT_EQ(c.checked, 1u);
  EXPECT_EQ(c.unchecked, 3u);
}

TEST(Digest, NullCountersAreAllowed) {
  const Bytes f = with_digest(kCheckInput, "crc32c:e3069283");
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_EQ(zt_verify(o.get(), nullptr, nullptr), ZT_OK);
  EXPECT_EQ(zt_verify(nullptr, nullptr, nullptr), ZT_ERR_ARGUMENT);
}

TEST(Digest, MalformedDigestTextIsInvalidAtOpen) {
  const std::string hex64(64, 'a');
  for (const std::string& d :
       {std::string("nocolon"), std::string("xxh3:123"), std::string("xxh3:0123456789abcdef0"),
        std::string("xxh3:0x0123456789abcdef"), std::string("xxh3:"), "sha256:" + hex64.substr(1),
        "sha256:" + std::string(64, 'g'), std::string("crc32c:0x1234"), std::string("crc32c:0x"),
        std::string(":abcd"), std::string("bad algo:00"), std::string("blake3:not-hex")}) {
    SCOPED_TRACE(d);
    EXPECT_TRUE(OpensWith(with_digest(kCheckInput, d), ZT_ERR_INVALID,
                          {"object \"w\": component \"data\"", "digest"}));
  }
  // xxh3's 16 digits, the writers' digest, are checked on a path of their
  // own: each character just outside the digits' and letters' ranges, at
  // either end, is refused there too; both cases of the letters open.
  for (const char c : {'/', ':', '@', 'G', '`', 'g', ' ', '\x7f'}) {
    for (const std::string& digest : {std::string("xxh3:0123456789abcde") + c,
                                      "xxh3:" + (c + std::string("123456789abcdef"))}) {
      ASSERT_EQ(digest.size(), 21u);
      SCOPED_TRACE(digest);
      EXPECT_TRUE(
          OpensWith(with_digest(kCheckInput, digest), ZT_ERR_INVALID, {"malformed digest"}));
    }
  }
  for (const char* d : {"xxh3:0123456789abcdef", "xxh3:0123456789ABCDEF", "xxh3:FEDCBA9876543210"})
    EXPECT_TRUE(OpensWith(with_digest(kCheckInput, d), ZT_OK)) << d;
}

// --- content rules ----------------------------------------------------------

// A CSR object "m" of shape `shape` with f32 values and T indices.
template <typename T>
Bytes csr(std::vector<uint64_t> shape, size_t nnz, const std::vector<T>& indices,
          const std::vector<T>& indptr, std::string_view dtype) {
  FileBuilder b;
  b.object("m", "sparse_csr", shape,
           Json{{"values", b.raw("f32", Bytes(4 * nnz, 0))},
                {"indices", b.raw(dtype, le(indices))},
                {"indptr", b.raw(dtype, le(indptr))}});
  return b.build();
}

TEST(Content, ValidCsrVerifies) {
  const Counts c = verify(csr<uint64_t>({3, 4}, 4, {0, 3, 1, 2}, {0, 2, 2, 4}, "u64"));
  EXPECT_EQ(c.status, ZT_OK) << c.error;
  EXPECT_EQ(c.unchecked, 3u);
}

TEST(Content, CsrIndptrMustStartAtZero) {
  const Counts c = verify(csr<uint64_t>({2, 3}, 3, {0, 1, 2}, {1, 2, 3}, "u64"));
  EXPECT_EQ(c.status, ZT_ERR_INVALID);
  EXPECT_NE(c.error.find("object \"m\": component \"indptr\": indptr[0] is 1, must be 0"),
            std::string::npos)
      << c.error;
}

TEST(Content, CsrIndptrMustNotDecrease) {
  const Counts c = verify(csr<uint64_t>({3, 3}, 3, {0, 1, 2}, {0, 2, 1, 3}, "u64"));
  EXPECT_EQ(c.status, ZT_ERR_INVALID);
  EXPECT_NE(c.error.find("indptr decreases at row 1 (2 -> 1)"), std::string::npos) << c.error;
}

TEST(Content, CsrIndptrMustEndAtNnz) {
  const Counts c = verify(csr<uint64_t>({2, 3}, 3, {0, 1, 2}, {0, 1, 2}, "u64"));
  EXPECT_EQ(c.status, ZT_ERR_INVALID);
  EXPECT_NE(c.error.find("indptr[rows] is 2, must equal nnz 3"), std::string::npos) << c.error;
}

TEST(Content, CsrIndicesMustBeBelowCols) {
  const Counts c = verify(csr<uint64_t>({2, 3}, 3, {0, 3, 2}, {0, 2, 3}, "u64"));
  EXPECT_EQ(c.status, ZT_ERR_INVALID);
  EXPECT_NE(c.error.find("object \"m\": component \"indices\": column index 3 at position 1 is out "
                         "of range [0, 3)"),
            std::string::npos)
      << c.error;
}

TEST(Content, CsrNegativeSignedIndicesAreInvalid) {
  const Counts idx = verify(csr<int32_t>({2, 3}, 3, {0, -1, 2}, {0, 2, 3}, "i32"));
  EXPECT_EQ(idx.status, ZT_ERR_INVALID);
  EXPECT_NE(idx.error.find("column index -1"), std::string::npos) << idx.error;
  const Counts ptr = verify(csr<int16_t>({2, 3}, 3, {0, 1, 2}, {0, -2, 3}, "i16"));
  EXPECT_EQ(ptr.status, ZT_ERR_INVALID);
  // Narrow signed index dtypes verify when valid.
  EXPECT_EQ(verify(csr<int16_t>({2, 3}, 3, {0, 1, 2}, {0, 2, 3}, "i16")).status, ZT_OK);
}

TEST(Content, CsrRulesApplyToCompressedIndices) {
  FileBuilder b;
  b.object("m", "sparse_csr", {2, 3},
           Json{{"values", b.raw("f32", Bytes(12, 0))},
                {"indices", b.zstd("u64", le<uint64_t>({0, 7, 2}))},
                {"indptr", b.zstd("u64", le<uint64_t>({0, 2, 3}))}});
  const Counts c = verify(b.build());
  EXPECT_EQ(c.status, ZT_ERR_INVALID);
  EXPECT_NE(c.error.find("column index 7"), std::string::npos) << c.error;
}

TEST(Content, CsrRowCountAtUint64MaxIsInvalid) {
  // A 1.1.0 file may leave an index component's size unknown until decoded
  // (zstd without uncompressed_length), so open cannot count indptr; verify
  // must, without rows + 1 wrapping to 0 and letting an empty indptr through.
  FileBuilder b("1.1.0");
  b.object("m", "sparse_csr", {UINT64_MAX, 3},
           Json{{"values", b.raw("f32", Bytes{})},
                {"indices", b.raw("u64", Bytes{})},
                {"indptr", b.zstd("u64", Bytes{}, false)}});
  b.component("m", "indptr").erase("uncompressed_length");
  const Bytes f = b.build();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_TRUE(FailsWith(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_INVALID,
                        {"component \"indptr\"", "indptr has 0 entries"}));
}

template <typename T>
Bytes coo(std::vector<uint64_t> shape, size_t nnz, const std::vector<T>& coords,
          std::string_view dtype) {
  FileBuilder b;
  b.object("m", "sparse_coo", shape,
           Json{{"values", b.raw("f64", Bytes(8 * nnz, 0))}, {"coords", b.raw(dtype, le(coords))}});
  return b.build();
}

TEST(Content, ValidCooVerifies) {
  EXPECT_EQ(verify(coo<uint64_t>({2, 3}, 3, {0, 1, 1, 2, 0, 2}, "u64")).status, ZT_OK);
  EXPECT_EQ(verify(coo<uint32_t>({4, 5, 6}, 2, {3, 0, 4, 0, 5, 5}, "u32")).status, ZT_OK);
}

TEST(Content, CooCoordsMustBeInRange) {
  // Rows (first half) are fine; column 3 of 3 is not.
  const Counts c = verify(coo<uint64_t>({2, 3}, 3, {0, 1, 1, 2, 3, 0}, "u64"));
  EXPECT_EQ(c.status, ZT_ERR_INVALID);
  EXPECT_NE(c.error.find("object \"m\": component \"coords\": coordinate 3 of dimension 1 (entry "
                         "1) is out of range "
                         "[0, 3)"),
            std::string::npos)
      << c.error;
  const Counts row = verify(coo<uint64_t>({2, 3}, 3, {0, 2, 1, 2, 0, 0}, "u64"));
  EXPECT_EQ(row.status, ZT_ERR_INVALID);
  EXPECT_NE(row.error.find("coordinate 2 of dimension 0"), std::string::npos) << row.error;
  const Counts neg = verify(coo<int64_t>({2, 3}, 3, {0, 1, 1, 2, -1, 0}, "i64"));
  EXPECT_EQ(neg.status, ZT_ERR_INVALID);
  EXPECT_NE(neg.error.find("coordinate -1"), std::string::npos) << neg.error;
}

TEST(Content, BoolBytesMustBeZeroOrOne) {
  FileBuilder ok;
  ok.dense("b", "bool", {4}, Bytes{0, 1, 1, 0});
  EXPECT_EQ(verify(ok.build()).status, ZT_OK);
  FileBuilder bad;
  bad.dense("b", "bool", {4}, Bytes{0, 1, 2, 0});
  const Counts c = verify(bad.build());
  EXPECT_EQ(c.status, ZT_ERR_INVALID);
  EXPECT_NE(c.error.find("object \"b\": component \"data\": bool byte 0x02 at element 2"),
            std::string::npos)
      << c.error;
  // In a compressed component and as sparse values too.
  FileBuilder z;
  z.object("b", "dense", {3}, Json{{"data", z.zstd("bool", Bytes{1, 0xFF, 0})}});
  EXPECT_EQ(verify(z.build()).status, ZT_ERR_INVALID);
  FileBuilder s;
  s.object("m", "sparse_csr", {1, 2},
           Json{{"values", s.raw("bool", Bytes{1, 7})},
                {"indices", s.raw("u64", le<uint64_t>({0, 1}))},
                {"indptr", s.raw("u64", le<uint64_t>({0, 2}))}});
  const Counts v = verify(s.build());
  EXPECT_EQ(v.status, ZT_ERR_INVALID);
  EXPECT_NE(v.error.find("component \"values\": bool byte 0x07"), std::string::npos) << v.error;
}

TEST(Content, OpenDoesNotCheckContent) {
  // zt_open reads no data byte: a broken CSR opens, and only verify refuses it.
  const Bytes f = csr<uint64_t>({2, 3}, 3, {0, 9, 2}, {0, 2, 3}, "u64");
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_EQ(zt_verify(o.get(), nullptr, nullptr), ZT_ERR_INVALID);
}

// The content rules read parts through windows of any size (a zstd stream
// hands out what it decoded): an element split across windows is read
// whole, skip passes over windows, and windows that end early are refused.
class Trickle final : public ByteWindows {
 public:
  Trickle(Bytes bytes, size_t step) : bytes_(std::move(bytes)), step_(step) {}
  Result<std::span<const uint8_t>> next() override {
    const size_t n = std::min(step_, bytes_.size() - at_);
    const auto w = std::span<const uint8_t>(bytes_).subspan(at_, n);
    at_ += n;
    return w;
  }

 private:
  Bytes bytes_;
  size_t step_, at_ = 0;
};

TEST(IndexCursor, ReadsElementsSplitAcrossWindows) {
  const std::vector<int64_t> values{0, -1, 1LL << 40, 7, -(1LL << 62), 42, 3};
  for (const size_t step : {size_t{1}, size_t{3}, size_t{5}, size_t{8}, size_t{1000}}) {
    SCOPED_TRACE(step);
    IndexCursor c(std::make_unique<Trickle>(le<int64_t>(values), step), DType::i64, values.size(),
                  "object \"x\": component \"c\"");
    for (const int64_t v : values) {
      auto got = c.next();
      ASSERT_TRUE(got) << got.error().message;
      EXPECT_EQ(static_cast<int64_t>(*got), v);
    }
    EXPECT_EQ(c.taken(), values.size());
    IndexCursor s(std::make_unique<Trickle>(le<int64_t>(values), step), DType::i64, values.size(),
                  "x");
    ASSERT_TRUE(s.skip(5));
    auto got = s.next();
    ASSERT_TRUE(got);
    EXPECT_EQ(static_cast<int64_t>(*got), 42);
    EXPECT_FALSE(s.skip(2));  // one element is left
  }
  const std::vector<uint16_t> small{1, 65535, 2};
  IndexCursor u(std::make_unique<Trickle>(le<uint16_t>(small), 3), DType::u16, 3, "x");
  for (const uint16_t v : small) {
    auto got = u.next();
    ASSERT_TRUE(got);
    EXPECT_EQ(static_cast<uint16_t>(*got), v);
  }
  // The size says 4 elements, the windows hold 3 and a half.
  Bytes short_bytes = le<uint32_t>({1, 2, 3, 4});
  short_bytes.resize(14);
  IndexCursor t(std::make_unique<Trickle>(short_bytes, 4), DType::u32, 4,
                "object \"x\": component \"c\"");
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(t.next());
  auto end = t.next();
  ASSERT_FALSE(end);
  EXPECT_EQ(end.error().status, Status::invalid);
  EXPECT_NE(end.error().message.find("end after 3 of 4 elements"), std::string::npos)
      << end.error().message;
  // expect_end: the windows end with the last element, or the part is
  // longer than its size says.
  for (const size_t extra : {size_t{0}, size_t{1}, size_t{8}}) {
    Bytes bytes = le<uint32_t>({5, 6});
    bytes.resize(bytes.size() + extra);
    IndexCursor e(std::make_unique<Trickle>(bytes, 3), DType::u32, 2, "x");
    ASSERT_TRUE(e.next());
    ASSERT_TRUE(e.next());
    EXPECT_EQ(e.expect_end().ok(), extra == 0) << extra;
  }
}

// Messages name what files gave: control bytes come escaped, and a message
// naming a huge key is cut (on a UTF-8 boundary), saying how much was left.
TEST(Messages, ControlBytesAreEscapedAndLongMessagesCut) {
  const std::string name = std::string("w\0\x1b]0;x\x07", 8);
  const Error e = make_error(Status::invalid, "tensor \"%s\"", name.c_str());
  EXPECT_EQ(e.message, "tensor \"w\"");  // printf stops at the NUL, as before
  const Error f = make_error(Status::invalid, "tensor \"%s\"", name.c_str() + 2);
  EXPECT_EQ(f.message, "tensor \"\\x1b]0;x\\x07\"");  // escapes move no terminal
  std::string big(100000, 'a');
  big[kMaxMessageBytes - 1] = '\xc3';  // an "é" across the cut
  big[kMaxMessageBytes] = '\xa9';
  const Error g = make_error(Status::invalid, "key \"%s\" appears twice", big.c_str());
  EXPECT_LT(g.message.size(), kMaxMessageBytes + 40);
  EXPECT_EQ(g.message.substr(0, 5), "key \"");
  const size_t dots = g.message.find("... (");
  ASSERT_NE(dots, std::string::npos) << g.message.substr(g.message.size() - 60);
  EXPECT_EQ(static_cast<unsigned char>(g.message[dots - 1]), 'a');  // cut before the é
  EXPECT_NE(g.message.find(" bytes more)"), std::string::npos);
}

}  // namespace
}  // namespace zt::test
