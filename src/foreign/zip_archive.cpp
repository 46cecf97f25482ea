#include "foreign/zip_archive.h"

#include <isa-l/crc.h>
#include <zip.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>
#include <string_view>
#include <utility>
#include <vector>

#include "base/core_count.h"
#include "base/for_each_index.h"
#include "base/zt_limits.h"
#include "source/io.h"

namespace zt::foreign {

namespace {

using ull = unsigned long long;

// Deflate expands at most ~1032:1; a larger claim is a zip bomb or a lie.
bool deflate_could_make(uint64_t size, uint64_t compressed) {
  return size <= compressed * 1100 + 4096;
}

}  // namespace

// The archive's bytes as libzip reads them: pread through our Source, each
// read's offset noted once armed (stored_in_place asks where a member's
// data begins by arming it and reading the member's first byte).
struct ZipArchive::Reads {
  explicit Reads(Source s) : source(std::move(s)) { zip_error_init(&error); }
  ~Reads() { zip_error_fini(&error); }
  Reads(const Reads&) = delete;
  Reads& operator=(const Reads&) = delete;

  static zip_int64_t callback(void* state, void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
    Reads& r = *static_cast<Reads*>(state);
    const uint64_t size = r.source.size();
    switch (cmd) {
      case ZIP_SOURCE_OPEN:
        r.pos = 0;
        return 0;
      case ZIP_SOURCE_READ: {
        const uint64_t n = std::min<uint64_t>(len, size - std::min(r.pos, size));
        if (r.armed && !r.first) r.first = r.pos;
        if (n && !r.read(r.pos, std::span(static_cast<uint8_t*>(data), n))) {
          zip_error_set(&r.error, ZIP_ER_READ, EIO);
          return -1;
        }
        r.pos += n;
        return static_cast<zip_int64_t>(n);
      }
      case ZIP_SOURCE_CLOSE:
      case ZIP_SOURCE_FREE:
        return 0;
      case ZIP_SOURCE_STAT: {
        zip_stat_t* st = ZIP_SOURCE_GET_ARGS(zip_stat_t, data, len, &r.error);
        if (!st) return -1;
        zip_stat_init(st);
        st->size = size;
        st->valid |= ZIP_STAT_SIZE;
        return sizeof(zip_stat_t);
      }
      case ZIP_SOURCE_ERROR:
        return zip_error_to_data(&r.error, data, len);
      case ZIP_SOURCE_SEEK: {
        const zip_int64_t at = zip_source_seek_compute_offset(r.pos, size, data, len, &r.error);
        if (at < 0) return -1;
        r.pos = static_cast<uint64_t>(at);
        return 0;
      }
      case ZIP_SOURCE_TELL:
        return static_cast<zip_int64_t>(r.pos);
      case ZIP_SOURCE_SUPPORTS:
        return zip_source_make_command_bitmap(
            ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE, ZIP_SOURCE_STAT, ZIP_SOURCE_ERROR,
            ZIP_SOURCE_FREE, ZIP_SOURCE_SEEK, ZIP_SOURCE_TELL, ZIP_SOURCE_SUPPORTS, -1);
      default:
        zip_error_set(&r.error, ZIP_ER_OPNOTSUPP, 0);
        return -1;
    }
  }

  // libzip reads a large central directory an entry at a time (the 46-byte
  // header, the name, the extra field), then checks each member's local
  // header (30 bytes, then its name): a checkpoint of 20,000 tensors took
  // 120,000 preads to open. Small reads are served from a window read
  // ahead: a page where they are scattered (a member's local header: at
  // most a page more is read for it, whatever the member's size), 256 KiB
  // once a run of them follows one another (the central directory).
  static constexpr uint64_t kSmallRead = 4096;
  static constexpr uint64_t kPage = 4096;
  static constexpr int kRunBeforeWindow = 6;  // a local header makes at most 4
  static constexpr uint64_t kWindow = 256 << 10;

  bool read(uint64_t at, std::span<uint8_t> out) {
    const bool small = out.size() <= kSmallRead;
    run = small && at == run_end ? run + 1 : small ? 1 : 0;
    run_end = at + out.size();
    if (!small) return static_cast<bool>(source.read_into(at, out));
    if (at < window_at || run_end > window_at + window.size()) {
      const uint64_t ahead = run >= kRunBeforeWindow ? kWindow : kPage;
      try {
        window.resize(std::min<uint64_t>(ahead, source.size() - at));  // >= out.size()
      } catch (const std::bad_alloc&) {
        // libzip's frames lie above: no exception may cross them (its own
        // state would leak). The read goes to the file as it is.
        return static_cast<bool>(source.read_into(at, out));
      }
      if (!source.read_into(at, window)) {
        window.clear();
        return false;
      }
      window_at = at;
    }
    std::memcpy(out.data(), window.data() + (at - window_at), out.size());
    return true;
  }

  Source source;
  std::vector<uint8_t> window;  // bytes from window_at on
  uint64_t window_at = 0;
  uint64_t run_end = UINT64_MAX;  // where the last read ended
  int run = 0;                    // small reads in a row, each where the last ended
  uint64_t pos = 0;
  bool armed = false;
  std::optional<uint64_t> first;  // the first read's offset since armed
  zip_error_t error;
};

ZipArchive::ZipArchive() = default;
ZipArchive::ZipArchive(ZipArchive&&) noexcept = default;
ZipArchive& ZipArchive::operator=(ZipArchive&&) noexcept = default;
ZipArchive::~ZipArchive() = default;

Result<ZipArchive> ZipArchive::open(const std::string& path) {
  const char* p = path.c_str();
  // Whether the file itself can be read is settled first: after that, every
  // complaint of libzip (a read past a lying central directory included) is
  // about the archive's bytes.
  auto file = Source::open_file(path, Source::Mode::copy);
  ZT_TRY(file);
  const uint64_t file_size = file->size();
  auto reads = std::make_unique<Reads>(std::move(*file));
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* src = zip_source_function_create(&Reads::callback, reads.get(), &err);
  zip_t* raw = src ? zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &err) : nullptr;
  if (!raw) {
    if (src) zip_source_free(src);
    const int code = zip_error_code_zip(&err);
    const Error e = make_error(code == ZIP_ER_MEMORY ? Status::nomem : Status::format,
                               "%s: cannot open as a zip archive: %s", p, zip_error_strerror(&err));
    zip_error_fini(&err);
    return e;
  }
  zip_error_fini(&err);
  ZipArchive a;
  a.reads_ = std::move(reads);
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
    const std::string where = member_where(path, name);
    ZT_FAIL_IF(!(st.valid & ZIP_STAT_SIZE) || !(st.valid & ZIP_STAT_COMP_SIZE), format,
               "%s: sizes are unknown", where.c_str());
    const bool plain = (st.valid & ZIP_STAT_COMP_METHOD) &&
                       (st.valid & ZIP_STAT_ENCRYPTION_METHOD) &&
                       st.encryption_method == ZIP_EM_NONE && (st.valid & ZIP_STAT_CRC);
    const bool stored = plain && st.comp_method == ZIP_CM_STORE && st.comp_size == st.size;
    const bool deflated = plain && st.comp_method == ZIP_CM_DEFLATE;
    a.members_.push_back(
        {name, static_cast<uint64_t>(i), st.size, st.comp_size, st.crc, stored, deflated});
  }
  // One name, two members: zipfile and torch take the central directory's
  // last, a search the first; refused rather than guessed. The same table
  // finds members by name: a checkpoint looks up one a storage, and a scan
  // each made 150,000 storages a half-minute open.
  a.by_name_.reserve(a.members_.size());
  for (size_t k = 0; k < a.members_.size(); ++k)
    ZT_FAIL_IF(!a.by_name_.emplace(a.members_[k].name, k).second, invalid,
               "%s: two members are named \"%s\"", p, printable(a.members_[k].name).c_str());
  return a;
}

const ZipMember* ZipArchive::find(const std::string& name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &members_[it->second];
}

struct ZipMemberStream::File {
  std::unique_ptr<zip_file_t, int (*)(zip_file_t*)> zf{nullptr, zip_fclose};
};

ZipMemberStream::ZipMemberStream(ZipMemberStream&&) noexcept = default;
ZipMemberStream& ZipMemberStream::operator=(ZipMemberStream&&) noexcept = default;
ZipMemberStream::~ZipMemberStream() = default;

Result<void> ZipMemberStream::read(std::span<uint8_t> dst) {
  const char* w = where_.c_str();
  zip_file_t* zf = file_->zf.get();
  ZT_FAIL_IF(dst.size() > size_ - pos_, argument, "%s: a read past its %llu bytes", w,
             static_cast<ull>(size_));
  for (size_t got = 0; got < dst.size();) {
    const zip_int64_t r = zip_fread(zf, dst.data() + got, dst.size() - got);
    ZT_FAIL_IF(r < 0, format, "%s: cannot decompress: %s", w, zip_file_strerror(zf));
    ZT_FAIL_IF(r == 0, format, "%s: ends after %llu of %llu bytes", w, static_cast<ull>(pos_ + got),
               static_cast<ull>(size_));
    got += static_cast<size_t>(r);
  }
  pos_ += dst.size();
  if (pos_ < size_) return {};
  uint8_t extra = 0;
  const zip_int64_t more = zip_fread(zf, &extra, 1);  // libzip checks the CRC-32 here
  ZT_FAIL_IF(more < 0, format, "%s: cannot decompress: %s", w, zip_file_strerror(zf));
  ZT_FAIL_IF(more > 0, format, "%s: holds more than the %llu bytes its entry states", w,
             static_cast<ull>(size_));
  return {};
}

Result<void> ZipMemberStream::skip(uint64_t n) {
  std::vector<uint8_t> scratch(static_cast<size_t>(std::min<uint64_t>(n, uint64_t{64} << 10)));
  while (n > 0) {
    const auto piece = std::span<uint8_t>(scratch).first(std::min<uint64_t>(n, scratch.size()));
    ZT_TRY(read(piece));
    n -= piece.size();
  }
  return {};
}

Result<ZipMemberStream> ZipArchive::stream(const ZipMember& m, const std::string& where,
                                           uint64_t limit) const {
  const char* w = where.c_str();
  zip_t* raw = archive_.get();
  zip_stat_t st;
  zip_stat_init(&st);
  ZT_FAIL_IF(zip_stat_index(raw, m.index, 0, &st) != 0, format, "%s: %s", w, zip_strerror(raw));
  ZT_FAIL_IF(st.size > limit, limit, "%s: %llu bytes, more than the limit %llu", w,
             static_cast<ull>(st.size), static_cast<ull>(limit));
  ZT_FAIL_IF(!deflate_could_make(st.size, st.comp_size), invalid,
             "%s: claims %llu bytes from %llu compressed, beyond what deflate can produce", w,
             static_cast<ull>(st.size), static_cast<ull>(st.comp_size));
  // The owner is made first: an allocation failing after zip_fopen_index
  // left its zip_file_t unclosed (tests/hardening/reader_alloc_test).
  ZipMemberStream s;
  s.file_ = std::make_unique<ZipMemberStream::File>();
  s.file_->zf.reset(zip_fopen_index(raw, m.index, 0));
  ZT_FAIL_IF(!s.file_->zf, format, "%s: cannot open: %s", w, zip_strerror(raw));
  s.size_ = st.size;
  s.where_ = where;
  return s;
}

Result<std::vector<uint8_t>> ZipArchive::read(const ZipMember& m, const std::string& where,
                                              uint64_t limit) const {
  auto s = stream(m, where, limit);
  ZT_TRY(s);
  // Reserved at the stated size (address space, no page touched), then
  // filled as the bytes come rather than zero-filled first: a member that
  // states 60 GiB and whose data ends after a kilobyte makes a kilobyte
  // resident, and a whole member is never copied to grow.
  constexpr uint64_t kStep = uint64_t{16} << 20;
  std::vector<uint8_t> bytes;
  bytes.reserve(static_cast<size_t>(s->size()));
  for (uint64_t at = 0; at < s->size();) {
    const uint64_t n = std::min(kStep, s->size() - at);
    bytes.resize(static_cast<size_t>(at + n));
    ZT_TRY(s->read(std::span(bytes).subspan(static_cast<size_t>(at))));
    at += n;
  }
  return bytes;
}

std::optional<uint64_t> ZipArchive::data_offset(const ZipMember& m, bool compressed) const {
  // zip_fopen_index reads the local header; the first read is the data's.
  zip_file_t* zf = zip_fopen_index(archive_.get(), m.index, compressed ? ZIP_FL_COMPRESSED : 0);
  if (!zf) return std::nullopt;
  reads_->armed = true;
  reads_->first.reset();
  uint8_t byte = 0;
  const zip_int64_t got = zip_fread(zf, &byte, 1);
  reads_->armed = false;
  zip_fclose(zf);
  if (got != 1) return std::nullopt;
  return reads_->first;
}

std::optional<std::span<const uint8_t>> ZipArchive::deflated_in_place(std::span<const uint8_t> file,
                                                                      const ZipMember& m) const {
  if (!m.deflated || m.compressed == 0) return std::nullopt;
  const std::optional<uint64_t> data = data_offset(m, true);
  if (!data || *data > file.size() || m.compressed > file.size() - *data) return std::nullopt;
  return file.subspan(*data, m.compressed);
}

namespace {

bool crc_matches(std::span<const uint8_t> bytes, uint32_t expected) {
  // ISA-L's CRC-32 (zip's and gzip's, reflected) folds with carry-less
  // multiplies: ~12 GB/s a core where zlib's tables give ~4.
  return crc32_gzip_refl(0, bytes.data(), bytes.size()) == expected;
}

}  // namespace

Result<void> check_member_crc(std::span<const uint8_t> bytes, uint32_t crc,
                              const std::string& where, Status status) {
  if (crc_matches(bytes, crc)) return {};
  return make_error(status,
                    "%s: CRC-32 mismatch: the archive's central directory says %08x, its %zu "
                    "bytes do not",
                    where.c_str(), crc, bytes.size());
}

std::vector<std::optional<std::span<const uint8_t>>> ZipArchive::stored_in_place(
    std::span<const uint8_t> file, bool check_crcs) const {
  std::vector<std::optional<std::span<const uint8_t>>> out(members_.size());
  for (size_t i = 0; i < members_.size(); ++i) {
    const ZipMember& m = members_[i];
    if (!m.stored || m.size == 0) continue;
    const std::optional<uint64_t> data = data_offset(m, false);
    if (!data || *data > file.size() || m.size > file.size() - *data) continue;
    out[i] = file.subspan(*data, m.size);
  }
  if (!check_crcs) return out;
  // The CRC-32s are the one pass over the bytes here: members are checked
  // on every core, largest first.
  std::vector<size_t> order;
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i]) order.push_back(i);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return out[a]->size() > out[b]->size(); });
  const unsigned threads = std::min(core_count(), 8u);
  for_each_index(order.size(), threads, [&](size_t k) {
    const size_t i = order[k];
    if (!crc_matches(*out[i], members_[i].crc)) out[i].reset();
  });
  return out;
}

}  // namespace zt::foreign
