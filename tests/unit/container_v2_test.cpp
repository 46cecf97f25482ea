// The zTensor v2 container (L0 of its spec, §2 and §8 steps 1-4): footer,
// version, manifest bounds, the 1 GiB cap before reading, 4096 alignment and
// the manifest's XXH3-64, each rule broken alone. Files are assembled here
// byte by byte; the hash comes from libxxhash directly.
#include <gtest/gtest.h>
#include <xxhash.h>

#include "test_files.h"

namespace zt::test {
namespace {

constexpr uint8_t kMagic[8] = {0x89, 'Z', 'T', '2', '\r', '\n', 0x1a, '\n'};

struct Footer {
  uint64_t offset = 0, length = 0, hash = 0;
  uint32_t version = 2, reserved = 0;
};

// Little-endian fields and the magic written in place: GCC 12 at -O3
// misreads appends after short vectors as out-of-bounds copies.
void put_le(Bytes& out, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

void put_magic(Bytes& out, size_t at) {
  for (size_t i = 0; i < 8; ++i) out[at + i] = kMagic[i];
}

Bytes footer_bytes(const Footer& f) {
  Bytes out(40, 0);
  put_le(out, 0, f.offset, 8);
  put_le(out, 8, f.length, 8);
  put_le(out, 16, f.hash, 8);
  put_le(out, 24, f.version, 4);
  put_le(out, 28, f.reserved, 4);
  put_magic(out, 32);
  return out;
}

// Magic, zeros up to 4096, the manifest blob, the footer.
struct V2File {
  Bytes manifest = cbor(Json{{"objects", Json::object()}});
  Footer footer;
  V2File() {
    footer.offset = 4096;
    footer.length = manifest.size();
    footer.hash = XXH3_64bits(manifest.data(), manifest.size());
  }
  Bytes build() const {
    Bytes out(4096, 0);
    put_magic(out, 0);
    append(out, manifest);
    append(out, footer_bytes(footer));
    return out;
  }
};

TEST(ContainerV2, AWellFormedContainerOpensAsVersion2) {
  const Bytes file = V2File().build();
  const Opened o = open_memory(file);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_file_version(o.get()), "2");
  V2File f;
  f.footer.reserved = 0xdeadbeef;  // readers MUST ignore it
  EXPECT_TRUE(OpensWith(f.build(), ZT_OK));
}

TEST(ContainerV2, ShorterThanMagicAndFooterIsFormat) {
  Bytes f(47, 0);
  put_magic(f, 0);
  EXPECT_TRUE(OpensWith(f, ZT_ERR_FORMAT, {"47 bytes", "48"}));
}

TEST(ContainerV2, BadFooterMagicIsFormat) {
  Bytes f = V2File().build();
  f.back() = 0;
  EXPECT_TRUE(OpensWith(f, ZT_ERR_FORMAT, {"v2 footer magic"}));
  // A v1 footer behind a v2 header is not a v2 file either.
  Bytes g = V2File().build();
  const std::string v1 = "ZTEN1000";
  for (size_t i = 0; i < 8; ++i) g[g.size() - 8 + i] = static_cast<uint8_t>(v1[i]);
  EXPECT_TRUE(OpensWith(g, ZT_ERR_FORMAT, {"v2 footer magic"}));
}

TEST(ContainerV2, OnlyFooterVersion2IsRead) {
  for (const uint32_t v : {0u, 1u, 3u, 0xffffffffu}) {
    V2File f;
    f.footer.version = v;
    EXPECT_TRUE(OpensWith(f.build(), ZT_ERR_UNSUPPORTED,
                          {"footer version " + std::to_string(v), "reads version 2"}));
  }
}

TEST(ContainerV2, ADataShardHasNoManifestToOpen) {
  V2File f;
  f.footer = Footer{};
  EXPECT_TRUE(OpensWith(f.build(), ZT_ERR_UNSUPPORTED, {"data shard"}));
  f.footer.offset = 4096;  // length 0 with an offset: contradictory
  EXPECT_TRUE(OpensWith(f.build(), ZT_ERR_INVALID, {"no manifest", "offset 4096"}));
}

TEST(ContainerV2, AManifestOverOneGiBIsRefusedBeforeReading) {
  V2File f;
  f.footer.length = (uint64_t{1} << 30) + 1;  // the file is 4 KiB: nothing is read
  EXPECT_TRUE(OpensWith(f.build(), ZT_ERR_LIMIT, {"1073741825", "limit"}));
}

TEST(ContainerV2, TheManifestBlobIsAlignedAndAtLeast4096) {
  for (const uint64_t off : {uint64_t{0}, uint64_t{8}, uint64_t{2048}, uint64_t{4097}}) {
    V2File f;
    f.footer.offset = off;
    EXPECT_TRUE(OpensWith(f.build(), ZT_ERR_INVALID,
                          {"offset " + std::to_string(off), "multiple of 4096"}));
  }
}

TEST(ContainerV2, TheManifestBlobEndsBeforeTheFooter) {
  V2File f;
  f.footer.length += 1;  // reaches into the footer
  EXPECT_TRUE(OpensWith(f.build(), ZT_ERR_INVALID, {"past the data region"}));
  f.footer.offset = 8192;  // starts past the end
  EXPECT_TRUE(OpensWith(f.build(), ZT_ERR_INVALID, {"past the data region"}));
  f.footer.offset = uint64_t{1} << 63;  // offset + length would wrap
  f.footer.length = uint64_t{1} << 20;
  EXPECT_TRUE(OpensWith(f.build(), ZT_ERR_INVALID, {"past the data region"}));
}

TEST(ContainerV2, AManifestWhoseHashDiffersIsDigest) {
  V2File f;
  f.manifest.back() ^= 1;  // the footer keeps the old hash
  EXPECT_TRUE(OpensWith(f.build(), ZT_ERR_DIGEST, {"XXH3-64", "footer says"}));
  V2File g;
  g.footer.hash ^= 1;
  EXPECT_TRUE(OpensWith(g.build(), ZT_ERR_DIGEST, {"XXH3-64"}));
}

}  // namespace
}  // namespace zt::test
