#include "foreign/zip_archive.h"

#include <zip.h>

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
    a.members_.push_back({name, static_cast<uint64_t>(i), st.size});
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

}  // namespace zt::foreign
