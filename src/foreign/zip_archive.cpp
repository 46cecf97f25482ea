#include "foreign/zip_archive.h"

#include <zip.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "base/zt_limits.h"
#include "container/io.h"

namespace zt::foreign {

namespace {

using ull = unsigned long long;

// Deflate expands at most ~1032:1; a larger claim is a zip bomb or a lie.
bool deflate_could_make(uint64_t size, uint64_t compressed) {
  return size <= compressed * 1100 + 4096;
}

}  // namespace

Result<ZipArchive> ZipArchive::open(const std::string& path) {
  const char* p = path.c_str();
  // Whether the file itself can be read is settled first: after that, every
  // complaint of libzip (a read past a lying central directory included) is
  // about the archive's bytes.
  uint64_t file_size = 0;
  {
    auto probe = Source::open_file(path, Source::Mode::copy);
    ZT_TRY(probe);
    file_size = probe->size();
  }
  int code = 0;
  zip_t* raw = zip_open(p, ZIP_RDONLY | ZIP_CHECKCONS, &code);
  if (!raw) {
    zip_error_t err;
    zip_error_init_with_code(&err, code);
    const Error e = make_error(code == ZIP_ER_MEMORY ? Status::nomem : Status::format,
                               "%s: cannot open as a zip archive: %s", p, zip_error_strerror(&err));
    zip_error_fini(&err);
    return e;
  }
  ZipArchive a;
  a.archive_ = std::unique_ptr<zip, void (*)(zip*)>(raw, [](zip* z) { zip_discard(z); });
  const zip_int64_t n = zip_get_num_entries(raw, 0);
  ZT_FAIL_IF(n < 0, format, "%s: cannot list the archive", p);
  // Entries that do not overlap cannot together claim more compressed bytes
  // than the file holds.
  uint64_t compressed = 0;
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    ZT_FAIL_IF(zip_stat_index(raw, static_cast<zip_uint64_t>(i), 0, &st) != 0, format,
               "%s: member %lld: %s", p, static_cast<long long>(i), zip_strerror(raw));
    const std::string name = (st.valid & ZIP_STAT_NAME) && st.name ? st.name : "";
    const bool directory = name.empty() || name.back() == '/';
    if (st.valid & ZIP_STAT_COMP_SIZE)
      ZT_FAIL_IF(
          __builtin_add_overflow(compressed, st.comp_size, &compressed) || compressed > file_size,
          invalid,
          "%s: its %lld entries claim more compressed bytes than the %llu bytes of the "
          "file: entries overlap (a zip bomb)",
          p, static_cast<long long>(n), static_cast<ull>(file_size));
    if (directory) continue;
    const std::string where = path + ": member \"" + name + "\"";
    ZT_FAIL_IF(!(st.valid & ZIP_STAT_SIZE) || !(st.valid & ZIP_STAT_COMP_SIZE), format,
               "%s: sizes are unknown", where.c_str());
    const bool stored = (st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method == ZIP_CM_STORE &&
                        (st.valid & ZIP_STAT_ENCRYPTION_METHOD) &&
                        st.encryption_method == ZIP_EM_NONE && (st.valid & ZIP_STAT_CRC) &&
                        st.comp_size == st.size;
    a.members_.push_back({name, static_cast<uint64_t>(i), st.size, st.comp_size, st.crc, stored});
  }
  return a;
}

const ZipMember* ZipArchive::find(const std::string& name) const {
  for (const ZipMember& m : members_)
    if (m.name == name) return &m;
  return nullptr;
}

Result<std::vector<uint8_t>> ZipArchive::read(const ZipMember& m, const std::string& where) const {
  const char* w = where.c_str();
  zip_t* raw = archive_.get();
  zip_stat_t st;
  zip_stat_init(&st);
  ZT_FAIL_IF(zip_stat_index(raw, m.index, 0, &st) != 0, format, "%s: %s", w, zip_strerror(raw));
  ZT_FAIL_IF(st.size > Limits::decoded_bytes, limit, "%s: %llu bytes, more than the limit %llu", w,
             static_cast<ull>(st.size), static_cast<ull>(Limits::decoded_bytes));
  ZT_FAIL_IF(!deflate_could_make(st.size, st.comp_size), invalid,
             "%s: claims %llu bytes from %llu compressed, beyond what deflate can produce", w,
             static_cast<ull>(st.size), static_cast<ull>(st.comp_size));
  zip_file_t* zf = zip_fopen_index(raw, m.index, 0);
  ZT_FAIL_IF(!zf, format, "%s: cannot open: %s", w, zip_strerror(raw));
  const std::unique_ptr<zip_file_t, int (*)(zip_file_t*)> file(zf, zip_fclose);
  std::vector<uint8_t> bytes(st.size);
  uint64_t got = 0;
  while (got < bytes.size()) {
    const zip_int64_t r = zip_fread(zf, bytes.data() + got, bytes.size() - got);
    ZT_FAIL_IF(r < 0, format, "%s: cannot decompress: %s", w, zip_file_strerror(zf));
    ZT_FAIL_IF(r == 0, format, "%s: ends after %llu of %llu bytes", w, static_cast<ull>(got),
               static_cast<ull>(bytes.size()));
    got += static_cast<uint64_t>(r);
  }
  uint8_t extra = 0;
  const zip_int64_t more = zip_fread(zf, &extra, 1);
  ZT_FAIL_IF(more < 0, format, "%s: cannot decompress: %s", w, zip_file_strerror(zf));
  ZT_FAIL_IF(more > 0, format, "%s: holds more than the %llu bytes its entry states", w,
             static_cast<ull>(st.size));
  return bytes;
}

namespace {

constexpr uint8_t kLocalHeader[4] = {'P', 'K', 3, 4};
constexpr uint64_t kLocalHeaderBytes = 30;
// How far past the previous member's data the next local header may start:
// a data descriptor (at most 24 bytes) and slack for writers that pad.
constexpr uint64_t kHeaderSearch = 1 << 16;

uint16_t le16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

// The data of a local header at `at` naming `name`, if it is one.
std::optional<uint64_t> data_after_header(std::span<const uint8_t> file, uint64_t at,
                                          const std::string& name) {
  if (file.size() - at < kLocalHeaderBytes) return std::nullopt;
  const uint8_t* h = file.data() + at;
  const uint64_t name_bytes = le16(h + 26), extra_bytes = le16(h + 28);
  const uint64_t data = at + kLocalHeaderBytes + name_bytes + extra_bytes;
  if (name_bytes != name.size() || data > file.size() ||
      std::memcmp(h + kLocalHeaderBytes, name.data(), name.size()) != 0)
    return std::nullopt;
  return data;
}

bool crc_matches(std::span<const uint8_t> bytes, uint32_t expected) {
  uLong crc = crc32_z(0L, Z_NULL, 0);
  // crc32_z takes a z_size_t: the whole span at once.
  crc = crc32_z(crc, bytes.data(), bytes.size());
  return static_cast<uint32_t>(crc) == expected;
}

}  // namespace

std::vector<std::optional<std::span<const uint8_t>>> ZipArchive::stored_in_place(
    std::span<const uint8_t> file) const {
  std::vector<std::optional<std::span<const uint8_t>>> out(members_.size());
  uint64_t from = 0;
  for (size_t i = 0; i < members_.size(); ++i) {
    const ZipMember& m = members_[i];
    const uint64_t end = std::min<uint64_t>(file.size(), from + kHeaderSearch);
    std::optional<uint64_t> data;
    for (uint64_t at = from; !data && at + sizeof kLocalHeader <= end; ++at) {
      const auto* hit = static_cast<const uint8_t*>(
          memmem(file.data() + at, end - at, kLocalHeader, sizeof kLocalHeader));
      if (!hit) break;
      at = static_cast<uint64_t>(hit - file.data());
      data = data_after_header(file, at, m.name);
    }
    if (!data) continue;  // not where the order says: read through libzip
    if (m.compressed > file.size() - *data) continue;
    if (m.stored) out[i] = file.subspan(*data, m.size);
    from = *data + m.compressed;
  }
  // The CRC-32s are the one pass over the bytes here (~1 GB/s a core with
  // zlib): members are checked on every core, largest first.
  std::vector<size_t> order;
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i]) order.push_back(i);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return out[a]->size() > out[b]->size(); });
  std::atomic<size_t> next{0};
  const auto check = [&] {
    for (size_t k; (k = next.fetch_add(1)) < order.size();) {
      const size_t i = order[k];
      if (!crc_matches(*out[i], members_[i].crc)) out[i].reset();
    }
  };
  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  std::vector<std::jthread> pool;
  for (unsigned t = 1; t < threads && t < order.size(); ++t) pool.emplace_back(check);
  check();
  pool.clear();  // joins
  return out;
}

}  // namespace zt::foreign
