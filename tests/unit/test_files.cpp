#include "test_files.h"

#include <openssl/evp.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "cbor/cbor_encode.h"
#include "cbor/cbor_item.h"
#include "cbor/deterministic.h"

static_assert(std::endian::native == std::endian::little,
              "the tests build little-endian files in memory");

void PrintTo(zt_status s, std::ostream* os) {
  *os << zt_status_name(s) << " (" << static_cast<int>(s) << ")";
}

namespace zt::test {

namespace {

void encode(const Json& j, CborWriter& w) {
  switch (j.type()) {
    case Json::value_t::null:
      w.null();
      return;
    case Json::value_t::boolean:
      w.boolean(j.get<bool>());
      return;
    case Json::value_t::number_integer:
      w.integer(j.get<int64_t>());
      return;
    case Json::value_t::number_unsigned:
      w.uint(j.get<uint64_t>());
      return;
    case Json::value_t::number_float:
      w.f64(j.get<double>());
      return;
    case Json::value_t::string:
      w.text(j.get_ref<const std::string&>());
      return;
    case Json::value_t::binary: {
      const auto& b = j.get_binary();
      w.bytes(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
      return;
    }
    case Json::value_t::array:
      w.array(j.size());
      for (const auto& x : j) encode(x, w);
      return;
    case Json::value_t::object:
      w.map(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) {
        w.text(it.key());
        encode(it.value(), w);
      }
      return;
    case Json::value_t::discarded:
      break;
  }
  throw std::logic_error("cannot encode a discarded JSON value");
}

constexpr uint8_t kIndefArray = 0x9F, kIndefMap = 0xBF, kIndefText = 0x7F, kIndefBytes = 0x5F,
                  kBreak = 0xFF;

// Splits at a UTF-8 character boundary near the middle: RFC 8949 wants every
// chunk of a text string to be valid UTF-8 on its own.
size_t utf8_middle(std::string_view s) {
  size_t mid = s.size() / 2;
  while (mid > 0 && (static_cast<uint8_t>(s[mid]) & 0xC0) == 0x80) --mid;
  return mid;
}

void encode_chunked_text(std::string_view s, CborWriter& w) {
  w.raw(std::span<const uint8_t>(&kIndefText, 1));
  const size_t mid = utf8_middle(s);
  w.text(s.substr(0, mid));
  w.text(s.substr(mid));
  w.raw(std::span<const uint8_t>(&kBreak, 1));
}

void encode_indefinite(const Json& j, CborWriter& w) {
  switch (j.type()) {
    case Json::value_t::string:
      encode_chunked_text(j.get_ref<const std::string&>(), w);
      return;
    case Json::value_t::binary: {
      const auto& b = j.get_binary();
      const std::string_view s(reinterpret_cast<const char*>(b.data()), b.size());
      w.raw(std::span<const uint8_t>(&kIndefBytes, 1));
      w.bytes(s.substr(0, s.size() / 2));
      w.bytes(s.substr(s.size() / 2));
      w.raw(std::span<const uint8_t>(&kBreak, 1));
      return;
    }
    case Json::value_t::array:
      w.raw(std::span<const uint8_t>(&kIndefArray, 1));
      for (const auto& x : j) encode_indefinite(x, w);
      w.raw(std::span<const uint8_t>(&kBreak, 1));
      return;
    case Json::value_t::object:
      w.raw(std::span<const uint8_t>(&kIndefMap, 1));
      for (auto it = j.begin(); it != j.end(); ++it) {
        encode_chunked_text(it.key(), w);
        encode_indefinite(it.value(), w);
      }
      w.raw(std::span<const uint8_t>(&kBreak, 1));
      return;
    default:
      encode(j, w);
  }
}

std::string to_hex(const uint8_t* p, size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += kHex[p[i] >> 4];
    s += kHex[p[i] & 15];
  }
  return s;
}

uint64_t round_up_64(uint64_t n) {
  return (n + 63) / 64 * 64;
}

void store_u64_le(Bytes& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

}  // namespace

Bytes cbor(const Json& j) {
  CborWriter w;
  encode(j, w);
  return w.take();
}

Bytes cbor_indefinite(const Json& j) {
  CborWriter w;
  encode_indefinite(j, w);
  return w.take();
}

Bytes cbor_text(std::string_view s) {
  CborWriter w;
  w.text(s);
  return w.take();
}

Bytes cbor_v2(const Json& j) {
  const Bytes plain = cbor(j);
  auto canonical = cbor::canonical_encoding(plain, 64);
  if (!canonical) throw std::runtime_error(canonical.error().message);
  return std::move(*canonical);
}

Bytes cat(std::initializer_list<std::span<const uint8_t>> parts) {
  Bytes out;
  for (const auto& p : parts) append(out, p);
  return out;
}

Bytes pattern(size_t n, uint8_t seed) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>((i / 7 + seed) % 13);
  return b;
}

Bytes zstd_compress(std::span<const uint8_t> src, bool content_size) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  if (!c) throw std::bad_alloc();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 3);
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, content_size ? 1 : 0);
  Bytes out(ZSTD_compressBound(src.size()));
  ZSTD_inBuffer in{src.data(), src.size(), 0};
  ZSTD_outBuffer o{out.data(), out.size(), 0};
  size_t left = 0;
  do {
    left = ZSTD_compressStream2(c, &o, &in, ZSTD_e_end);
  } while (left != 0 && !ZSTD_isError(left));
  ZSTD_freeCCtx(c);
  if (ZSTD_isError(left)) throw std::runtime_error(ZSTD_getErrorName(left));
  out.resize(o.pos);
  return out;
}

std::string xxh3_digest(std::span<const uint8_t> bytes) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(bytes.data(), bytes.size())));
  return std::string("xxh3:") + buf;
}

std::string sha256_digest(std::span<const uint8_t> bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md, &n, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("EVP_Digest failed");
  return "sha256:" + to_hex(md, n);
}

FileBuilder::FileBuilder(std::string version)
    : data(bytes_of("ZTEN1000")),
      manifest({{"version", std::move(version)}, {"objects", Json::object()}}) {}

uint64_t FileBuilder::add_blob(std::span<const uint8_t> bytes) {
  const uint64_t offset = round_up_64(data.size());
  data.resize(offset, 0);
  data.insert(data.end(), bytes.begin(), bytes.end());
  return offset;
}

Json FileBuilder::raw(std::string_view dtype, std::span<const uint8_t> bytes) {
  const uint64_t offset = add_blob(bytes);
  return Json{{"dtype", dtype}, {"offset", offset}, {"length", bytes.size()}};
}

Json FileBuilder::zstd(std::string_view dtype, std::span<const uint8_t> bytes, bool content_size) {
  const Bytes z = zstd_compress(bytes, content_size);
  const uint64_t offset = add_blob(z);
  return Json{{"dtype", dtype},
              {"offset", offset},
              {"length", z.size()},
              {"encoding", "zstd"},
              {"uncompressed_length", bytes.size()}};
}

Json& FileBuilder::object(const std::string& name, std::string_view format,
                          const std::vector<uint64_t>& shape, Json components) {
  Json& o = manifest["objects"][name];
  o = Json{{"shape", shape}, {"format", format}, {"components", std::move(components)}};
  return o;
}

Json& FileBuilder::dense(const std::string& name, std::string_view dtype,
                         const std::vector<uint64_t>& shape, std::span<const uint8_t> bytes) {
  return object(name, "dense", shape, Json{{"data", raw(dtype, bytes)}});
}

Json& FileBuilder::component(const std::string& object, const std::string& role) {
  return manifest.at("objects").at(object).at("components").at(role);
}

uint64_t FileBuilder::manifest_offset() const {
  return round_up_64(data.size());
}

namespace {

constexpr uint8_t kMagicV2[8] = {0x89, 'Z', 'T', '2', '\r', '\n', 0x1a, '\n'};

uint64_t round_up_4096(uint64_t n) {
  return (n + 4095) / 4096 * 4096;
}

// Little-endian fields written in place (GCC 12 at -O3 misreads appends
// after short vectors).
void put_le(Bytes& out, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

FileBuilderV2::FileBuilderV2() : data(4096, 0), manifest({{"objects", Json::object()}}) {
  for (size_t i = 0; i < 8; ++i) data[i] = kMagicV2[i];
}

uint64_t FileBuilderV2::add_blob(std::span<const uint8_t> bytes) {
  const uint64_t offset = round_up_4096(data.size());
  data.resize(offset, 0);
  data.insert(data.end(), bytes.begin(), bytes.end());
  return offset;
}

Json FileBuilderV2::raw(std::string_view dtype, std::span<const uint8_t> bytes) {
  const uint64_t offset = add_blob(bytes);
  return Json{{"dtype", dtype}, {"blob", {offset, bytes.size()}}};
}

Json& FileBuilderV2::object(const std::string& name, std::string_view layout,
                            const std::vector<uint64_t>& shape, Json parts) {
  Json& o = manifest["objects"][name];
  o = Json{{"shape", shape}, {"layout", layout}, {"parts", std::move(parts)}};
  return o;
}

Json& FileBuilderV2::dense(const std::string& name, std::string_view dtype,
                           const std::vector<uint64_t>& shape, std::span<const uint8_t> bytes) {
  return object(name, "dense", shape, Json{{"data", raw(dtype, bytes)}});
}

Json& FileBuilderV2::part(const std::string& object, const std::string& role) {
  return manifest.at("objects").at(object).at("parts").at(role);
}

uint64_t FileBuilderV2::manifest_offset() const {
  return round_up_4096(data.size());
}

Bytes FileBuilderV2::build() const {
  return build(cbor_v2(manifest));
}

Bytes FileBuilderV2::build(std::span<const uint8_t> manifest_cbor) const {
  Bytes out = data;
  const uint64_t at = manifest_offset();
  out.resize(at + manifest_cbor.size() + 40, 0);
  std::copy(manifest_cbor.begin(), manifest_cbor.end(), out.begin() + static_cast<ptrdiff_t>(at));
  const size_t footer = out.size() - 40;
  put_le(out, footer, at, 8);
  put_le(out, footer + 8, manifest_cbor.size(), 8);
  put_le(out, footer + 16, XXH3_64bits(manifest_cbor.data(), manifest_cbor.size()), 8);
  put_le(out, footer + 24, 2, 4);
  for (size_t i = 0; i < 8; ++i) out[footer + 32 + i] = kMagicV2[i];
  return out;
}

Bytes FileBuilder::build() const {
  return build(cbor(manifest));
}

Bytes FileBuilder::build(std::span<const uint8_t> manifest_cbor) const {
  Bytes out = data;
  out.resize(round_up_64(out.size()), 0);
  out.insert(out.end(), manifest_cbor.begin(), manifest_cbor.end());
  store_u64_le(out, manifest_cbor.size());
  const Bytes footer = bytes_of("ZTEN1000");
  out.insert(out.end(), footer.begin(), footer.end());
  return out;
}

Bytes assemble(std::span<const uint8_t> body, std::span<const uint8_t> manifest,
               std::optional<uint64_t> size_field) {
  Bytes out = bytes_of("ZTEN1000");
  append(out, body);
  append(out, manifest);
  store_u64_le(out, size_field.value_or(manifest.size()));
  append(out, bytes_of("ZTEN1000"));
  return out;
}

Opened open_memory(const Bytes& file) {
  Opened o;
  zt_reader* r = nullptr;
  // An empty vector may have no storage; the library is given a valid
  // pointer with size 0 then.
  static const uint8_t kNothing = 0;
  o.status = zt_open_memory(file.empty() ? &kNothing : file.data(), file.size(), &r);
  o.error = zt_last_error();
  o.reader.reset(r);
  if (o.status != ZT_OK && r) ADD_FAILURE() << "zt_open_memory set *out although it failed";
  return o;
}

namespace {

// $TMPDIR, or /tmp.
std::string temporary_directory() {
  const char* dir = std::getenv("TMPDIR");
  return dir && *dir ? dir : "/tmp";
}

}  // namespace

TempFile::TempFile(std::span<const uint8_t> contents) {
  std::string tmpl = temporary_directory() + "/zt_unit_XXXXXX";
  const int fd = mkstemp(tmpl.data());
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  path_ = tmpl;
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n <= 0) {
      ::close(fd);
      throw std::runtime_error("write failed");
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
}

TempFile::~TempFile() {
  ::unlink(path_.c_str());
}

TempDir::TempDir(std::string_view prefix) {
  std::string tmpl = temporary_directory() + "/" + std::string(prefix) + "XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed for " + tmpl);
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

Opened open_file(const TempFile& f, const zt_open_options* opt) {
  Opened o;
  zt_reader* r = nullptr;
  o.status = zt_open_ex(f.path().c_str(), opt, &r);
  o.error = zt_last_error();
  o.reader.reset(r);
  return o;
}

namespace {

testing::AssertionResult check_status(zt_status got, const std::string& error, zt_status want,
                                      std::initializer_list<std::string_view> message) {
  if (got != want) {
    return testing::AssertionFailure() << "status " << zt_status_name(got) << ", expected "
                                       << zt_status_name(want) << "; message: \"" << error << "\"";
  }
  for (const auto part : message) {
    if (error.find(part) == std::string::npos)
      return testing::AssertionFailure()
             << "message \"" << error << "\" does not contain \"" << part << "\"";
  }
  return testing::AssertionSuccess() << zt_status_name(got) << ": " << error;
}

}  // namespace

testing::AssertionResult OpensWith(const Bytes& file, zt_status want,
                                   std::initializer_list<std::string_view> message) {
  const Opened o = open_memory(file);
  return check_status(o.status, o.error, want, message);
}

testing::AssertionResult FailsWith(zt_status got, zt_status want,
                                   std::initializer_list<std::string_view> message) {
  return check_status(got, zt_last_error(), want, message);
}

size_t object_index(const zt_reader* r, const char* name) {
  size_t i = SIZE_MAX;
  const zt_status s = zt_object_find(r, name, &i);
  if (s != ZT_OK) {
    ADD_FAILURE() << "no object \"" << name << "\": " << zt_last_error();
    return SIZE_MAX;
  }
  return i;
}

Mapped map_component(const zt_reader* r, const char* object, const char* role) {
  Mapped m;
  uint64_t n = 0;
  m.status = zt_component_map(r, object_index(r, object), role, &m.ptr, &n);
  if (m.status == ZT_OK) {
    const auto* p = static_cast<const uint8_t*>(m.ptr);
    m.bytes.assign(p, p + n);
  }
  return m;
}

zt_decode_request decode_one(const zt_reader* r, size_t object, const char* role,
                             std::span<uint8_t> dst) {
  zt_decode_request q;
  zt_decode_request_init(&q);
  q.object = object;
  q.role = role;
  q.dst = dst.data();
  q.capacity = dst.size();
  zt_decode_many(r, &q, 1, 2);
  return q;
}

bool freed_memory_is_kept() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#endif
#endif
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("vgpreload") != std::string::npos) return true;
  return false;
}

unsigned long long status_kib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field, 0) == 0) return std::stoull(line.substr(std::strlen(field)));
  return 0ull;
}

void expect_child_passes(const std::function<void()>& body) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    body();
    std::_Exit(4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "see the child's message above";
}

}  // namespace zt::test
