// The container: header and footer magic, the manifest size field, files
// too small to hold them.
#include <gtest/gtest.h>

#include "base/zt_limits.h"
#include "source/http_source.h"
#include "test_files.h"

namespace zt::test {
namespace {

// A valid file with one small dense object.
Bytes valid_file() {
  FileBuilder b;
  b.dense("w", "f32", {2}, le<float>({1.5f, -2.0f}));
  return b.build();
}

TEST(Container, ValidFileOpens) {
  const Bytes f = valid_file();
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_STREQ(zt_file_version(o.get()), "1.2.0");
  EXPECT_EQ(zt_object_count(o.get()), 1u);
}

TEST(Container, BadHeaderMagicIsFormat) {
  Bytes f = valid_file();
  f[7] = 'X';  // "ZTEN100X"
  EXPECT_TRUE(OpensWith(f, ZT_ERR_FORMAT, {"header magic"}));
}

TEST(Container, BadFooterMagicIsFormat) {
  Bytes f = valid_file();
  f.back() = 'X';
  EXPECT_TRUE(OpensWith(f, ZT_ERR_FORMAT, {"footer magic"}));
}

TEST(Container, TruncatedFileIsFormat) {
  Bytes f = valid_file();
  f.resize(f.size() - 5);
  EXPECT_TRUE(OpensWith(f, ZT_ERR_FORMAT));
}

TEST(Container, EmptyFileIsFormat) {
  EXPECT_TRUE(OpensWith(Bytes{}, ZT_ERR_FORMAT, {"too short"}));
}

TEST(Container, ShorterThanMagicIsFormat) {
  EXPECT_TRUE(OpensWith(bytes_of("ZTEN100"), ZT_ERR_FORMAT, {"7 bytes"}));
}

TEST(Container, ShorterThanHeaderSizeAndFooterIsFormat) {
  // 8 + 8 + 7: one byte short of the smallest frame of a file.
  const Bytes f = cat({bytes_of("ZTEN1000"), Bytes(8, 0), bytes_of("ZTEN100")});
  EXPECT_TRUE(OpensWith(f, ZT_ERR_FORMAT, {"23 bytes"}));
  // Header, size 0 and footer: 24 bytes, an empty manifest is undecodable CBOR.
  EXPECT_TRUE(OpensWith(assemble({}, {}), ZT_ERR_FORMAT));
}

TEST(Container, FileWithoutBlobsOpens) {
  // The manifest right after the header: {"version": "1.2.0", "objects": {}}.
  const Bytes f = assemble({}, cbor(Json{{"version", "1.2.0"}, {"objects", Json::object()}}));
  const Opened o = open_memory(f);
  ASSERT_EQ(o.status, ZT_OK) << o.error;
  EXPECT_EQ(zt_object_count(o.get()), 0u);
}

TEST(Container, ManifestSizeOverOneGiBIsLimit) {
  const Bytes m = cbor(Json{{"version", "1.2.0"}, {"objects", Json::object()}});
  EXPECT_TRUE(OpensWith(assemble({}, m, Limits::manifest_bytes + 1), ZT_ERR_LIMIT,
                        {"manifest size", std::to_string(Limits::manifest_bytes + 1), "limit"}));
  EXPECT_TRUE(OpensWith(assemble({}, m, UINT64_MAX), ZT_ERR_LIMIT));
}

TEST(Container, ManifestSizeBeyondFileIsFormat) {
  const Bytes m = cbor(Json{{"version", "1.2.0"}, {"objects", Json::object()}});
  const Bytes f = assemble({}, m);
  // One byte more than fits between the header and the trailer.
  EXPECT_TRUE(OpensWith(assemble({}, m, m.size() + 1), ZT_ERR_FORMAT, {"does not fit"}));
  EXPECT_TRUE(OpensWith(assemble({}, m, f.size()), ZT_ERR_FORMAT, {"does not fit"}));
}

TEST(Container, ManifestSizeTooSmallIsRefused) {
  const Bytes m = cbor(Json{{"version", "1.2.0"}, {"objects", Json::object()}});
  // The manifest would be its last byte only, 0xA0: an empty map, no version.
  EXPECT_TRUE(OpensWith(assemble({}, m, 1), ZT_ERR_INVALID, {"no \"version\""}));
  // Without its first byte it reads as the text "version" and trailing bytes.
  EXPECT_TRUE(OpensWith(assemble({}, m, m.size() - 1), ZT_ERR_FORMAT, {"trailing bytes"}));
}

TEST(Container, NullArgumentsAreArgument) {
  zt_reader* r = nullptr;
  EXPECT_TRUE(FailsWith(zt_open_memory(nullptr, 10, &r), ZT_ERR_ARGUMENT));
  const Bytes f = valid_file();
  EXPECT_TRUE(FailsWith(zt_open_memory(f.data(), f.size(), nullptr), ZT_ERR_ARGUMENT));
  EXPECT_TRUE(FailsWith(zt_open(nullptr, &r), ZT_ERR_ARGUMENT));
  EXPECT_EQ(r, nullptr);
  zt_close(nullptr);  // a no-op
}

TEST(Container, MissingFileIsIo) {
  zt_reader* r = nullptr;
  EXPECT_TRUE(
      FailsWith(zt_open("/nonexistent/dir/file.zt", &r), ZT_ERR_IO, {"/nonexistent/dir/file.zt"}));
  EXPECT_EQ(r, nullptr);
}

TEST(Container, OpenFromFileMatchesMemory) {
  const Bytes f = valid_file();
  const TempFile t(f);
  for (const uint32_t mode : {ZT_IO_MAP, ZT_IO_COPY}) {
    zt_open_options opt;
    zt_open_options_init(&opt);
    opt.io_mode = mode;
    const Opened o = open_file(t, &opt);
    ASSERT_EQ(o.status, ZT_OK) << o.error;
    const Mapped m = map_component(o.get(), "w", "data");
    ASSERT_EQ(m.status, ZT_OK);
    EXPECT_EQ(m.bytes, le<float>({1.5f, -2.0f}));
  }
}

TEST(Container, OpenOptionsStructSizeIsChecked) {
  const TempFile t(valid_file());
  zt_open_options opt;
  zt_open_options_init(&opt);
  EXPECT_EQ(opt.struct_size, sizeof opt);
  EXPECT_EQ(opt.io_mode, static_cast<uint32_t>(ZT_IO_MAP));
  EXPECT_EQ(opt.max_decoded_bytes, 0u);
  opt.struct_size = sizeof opt + 8;
  EXPECT_EQ(open_file(t, &opt).status, ZT_ERR_ARGUMENT);
  opt.struct_size = 0;
  EXPECT_EQ(open_file(t, &opt).status, ZT_ERR_ARGUMENT);
  zt_open_options_init(&opt);
  opt.io_mode = 7;
  EXPECT_EQ(open_file(t, &opt).status, ZT_ERR_ARGUMENT);
}

TEST(Container, StatusNamesAndVersion) {
  EXPECT_STREQ(zt_status_name(ZT_OK), "ZT_OK");
  EXPECT_STREQ(zt_status_name(ZT_ERR_LIMIT), "ZT_ERR_LIMIT");
  EXPECT_STREQ(zt_status_name(ZT_ERR_NOMEM), "ZT_ERR_NOMEM");
  EXPECT_STREQ(zt_status_name(static_cast<zt_status>(11)), "ZT_ERR_UNKNOWN");
  EXPECT_EQ(zt_version_number(), static_cast<unsigned>(ZT_VERSION_NUMBER));
  EXPECT_EQ(std::string(zt_version()), std::to_string(ZT_VERSION_MAJOR) + "." +
                                           std::to_string(ZT_VERSION_MINOR) + "." +
                                           std::to_string(ZT_VERSION_PATCH));
}

TEST(CApi, UrlForMessagesDropsUserInfoQueryAndFragmentOnly) {
  char out[64];
  const char* url = "https://me:pw@host:8/a/b.zt?X-Amz-Signature=s#f";
  EXPECT_EQ(zt_url_for_messages(url, out, sizeof out), 21u);
  EXPECT_STREQ(out, "https://host:8/a/b.zt");
  EXPECT_EQ(zt_url_for_messages("/tmp/a?b@c.zt", out, sizeof out), 13u);  // a path: as it is
  EXPECT_STREQ(out, "/tmp/a?b@c.zt");
  EXPECT_EQ(zt_url_for_messages("http://h/p@q.zt", out, sizeof out), 15u);  // '@' after the host
  EXPECT_STREQ(out, "http://h/p@q.zt");
  // Taken apart as libcurl takes it: a third slash, login options.
  zt_url_for_messages("http:///user:PASS@h:3/s.zt?sig", out, sizeof out);
  EXPECT_STREQ(out, "http://h:3/s.zt");
  zt_url_for_messages("HTTPS://user;auth=x:PASS@h/s.zt", out, sizeof out);
  EXPECT_STREQ(out, "https://h/s.zt");
  // A password holding '/', '@', '?' or '#' unencoded: where the secret ends
  // cannot be told, so nothing past the scheme is shown.
  for (const char* odd : {"http://user:PA/SS@h/s.zt", "http://user:PA@SS@h/s.zt",
                          "http://user:PA?SS@h/s.zt", "https://user:PA#SS@h/s.zt"}) {
    zt_url_for_messages(odd, out, sizeof out);
    EXPECT_EQ(std::string(out).find("PA"), std::string::npos) << odd << " -> " << out;
    EXPECT_EQ(std::string(out).find("SS"), std::string::npos) << odd << " -> " << out;
    EXPECT_EQ(std::string(out).find("http"), 0u) << out;
  }
  char small[8];
  EXPECT_EQ(zt_url_for_messages(url, small, sizeof small), 21u);  // cut short, as snprintf
  EXPECT_STREQ(small, "https:/");
  EXPECT_EQ(zt_url_for_messages(url, nullptr, 0), 21u);
  EXPECT_EQ(zt_url_for_messages(nullptr, out, sizeof out), 0u);
  EXPECT_STREQ(out, "");
}

// Issue #42, also noticed: the environment's bearer token went to any
// host, plain http included.
TEST(Http, TheEnvironmentTokenGoesOverHttpsOrToThisMachineOnly) {
  for (const char* url :
       {"https://huggingface.co/m.zt", "HTTPS://host:8443/a.zt", "http://127.0.0.1:8080/m.zt",
        "http://localhost/m.zt", "http://[::1]:80/m.zt", "http://127.2.3.4/m.zt"})
    EXPECT_TRUE(may_send_environment_token(url)) << url;
  for (const char* url : {"http://example.com/m.zt", "http://10.0.0.1/m.zt",
                          "http://127.0.0.1.evil.com/m.zt", "http://localhost.evil.com/m.zt",
                          "http://128.0.0.1/m.zt", "ftp://127.0.0.1/m.zt", "not a url"})
    EXPECT_FALSE(may_send_environment_token(url)) << url;
}

// A redirect is followed to http or https only, and never from https down
// to plain http (the bytes would travel where anyone may change them).
TEST(HttpRedirect, NeverFromHttpsDownToPlainHttp) {
  EXPECT_EQ(redirect_refused("https://hub.example/m.zt", "https://cdn.example/x"), std::nullopt);
  EXPECT_EQ(redirect_refused("http://hub.example/m.zt", "https://cdn.example/x"), std::nullopt);
  EXPECT_EQ(redirect_refused("http://hub.example/m.zt", "http://cdn.example/x"), std::nullopt);
  EXPECT_EQ(redirect_refused("HTTPS://hub.example/m.zt", "HTTP://cdn.example/x"),
            "from https to plain http, refused");
  EXPECT_EQ(redirect_refused("https://hub.example/m.zt", "http://hub.example/m.zt"),
            "from https to plain http, refused");
  EXPECT_EQ(redirect_refused("https://hub.example/m.zt", "ftp://hub.example/m.zt"),
            "to a URL that is not http or https");
}

}  // namespace
}  // namespace zt::test
