#include "read/reader.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <new>
#include <system_error>

#include "base/arithmetic.h"
#include "base/byte_order.h"
#include "base/core_count.h"
#include "base/for_each_index.h"
#include "base/zt_limits.h"
#include "codec/byte_planes.h"
#include "codec/digest.h"
#include "codec/zstd_codec.h"
#include "codec/zstd_seekable.h"
#include "container/container.h"
#include "manifest/json.h"
#include "manifest/object_format.h"
#include "read/content.h"
#include "read/task_sizes.h"
#include "read/validate.h"
#include "source/http_source.h"
#include "source/model_folder.h"

namespace zt {

using ull = unsigned long long;

struct Reader::Slot {
  std::mutex mu;
  bool done = false;
  GrowingBytes bytes;  // the decoded bytes (their own mapping from 1 MiB)
  Error error;
};

// A shard file, opened by the first access that needs it. A failed open is
// not kept: the next access tries again (a 503, a dropped connection or a
// file being copied into place may be gone by then).
struct Reader::ShardFile {
  std::mutex mu;
  std::atomic<bool> ok{false};  // set once, after `source` is
  Source source;
};

Reader::Reader() = default;
Reader::~Reader() {
  for (size_t i = 0; i < slot_count_; ++i)
    std::unique_ptr<Slot>(slots_[i].load(std::memory_order_relaxed)).reset();
  for (size_t i = 0; shard_files_ && i < manifest_.shards.size(); ++i)
    std::unique_ptr<ShardFile>(shard_files_[i].load(std::memory_order_relaxed)).reset();
}

namespace {

// What `p` points to, made by the first thread that asks (the others use
// it and drop theirs): a reader's per-component and per-shard state is made
// when first used, so a table of a million entries costs a pointer each at
// open, not a mutex and a Source each.
template <typename T>
T& made_at_first_use(std::atomic<T*>& p) {
  T* s = p.load(std::memory_order_acquire);
  if (s) return *s;
  auto fresh = std::make_unique<T>();
  if (p.compare_exchange_strong(s, fresh.get(), std::memory_order_acq_rel,
                                std::memory_order_acquire))
    return *fresh.release();
  return *s;
}

}  // namespace

Reader::Slot& Reader::slot(size_t object, size_t component) const {
  return made_at_first_use(slots_[slot_base_[object] + component]);
}

Result<std::unique_ptr<Reader>> Reader::open_file(const std::string& path, const OpenOptions& opt) {
  auto src = Source::open_file(path, opt.mode);
  ZT_TRY(src);
  std::unique_ptr<Reader> r(new Reader());
  r->source_ = std::move(*src);
  // Absolute (links not resolved: the folder as given stays the model's):
  // shards open at first use, and a relative path would then be taken from
  // whatever directory the process has moved to since.
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  r->path_ = ec ? path : absolute.string();
  r->mode_ = opt.mode;
  r->max_decoded_ = opt.max_decoded_bytes ? opt.max_decoded_bytes : Limits::decoded_bytes;
  return finish_open(std::move(r));
}

Result<std::unique_ptr<Reader>> Reader::open_memory(std::span<const uint8_t> bytes,
                                                    const OpenOptions& opt) {
  std::unique_ptr<Reader> r(new Reader());
  r->source_ = Source::from_memory(bytes);
  r->max_decoded_ = opt.max_decoded_bytes ? opt.max_decoded_bytes : Limits::decoded_bytes;
  return finish_open(std::move(r));
}

Result<std::unique_ptr<Reader>> Reader::open_ranges(std::shared_ptr<const RangeSource> src,
                                                    const OpenOptions& opt,
                                                    std::vector<uint8_t> tail) {
  ZT_FAIL_IF(tail.size() > src->size(), argument, "%s: a tail of %zu bytes of a %llu-byte file",
             src->name().c_str(), tail.size(), static_cast<ull>(src->size()));
  auto cache = std::make_shared<const RangeCache>(src, opt.cache_bytes);
  // The offset first: the argument list may move `tail` before it reads it.
  const uint64_t tail_at = src->size() - tail.size();
  if (!tail.empty()) cache->keep(tail_at, std::move(tail));
  std::unique_ptr<Reader> r(new Reader());
  r->source_ = Source::from_ranges(std::move(cache));
  r->path_ = src->name();
  r->mode_ = Source::Mode::copy;
  r->max_decoded_ = opt.max_decoded_bytes ? opt.max_decoded_bytes : Limits::decoded_bytes;
  ZT_TRY(prefetch_for_open(r->source_));
  return finish_open(std::move(r));
}

Result<std::unique_ptr<Reader>> Reader::open_url(const std::string& url, const OpenOptions& opt) {
  auto opened = open_http(url, opt.http, {kOpenTailBytes});
  ZT_TRY(opened);
  return open_ranges(std::move(opened->source), opt, std::move(opened->bytes));
}

Result<std::unique_ptr<Reader>> Reader::finish_open(std::unique_ptr<Reader> r) {
  auto loc = locate_manifest(r->source_, r->manifest_storage_);
  ZT_TRY(loc);
  // 1.0.x files were decoded to tell them apart.
  auto m = loc->doc ? parse_manifest(loc->generation, std::move(*loc->doc))
                    : decode_manifest(loc->generation, loc->manifest);
  ZT_TRY(m);
  r->manifest_ = std::move(*m);
  ZT_TRY(validate(r->manifest_, r->source_.size(), loc->manifest_start, loc->manifest.size()));
  r->make_slots();
  return r;
}

void Reader::make_slots() {
  size_t total = 0;
  slot_base_.reserve(manifest_.objects.size());
  for (const Object& o : manifest_.objects) {
    slot_base_.push_back(total);
    total += o.components.size();
  }
  slots_ = std::make_unique<std::atomic<Slot*>[]>(total);
  slot_count_ = total;
  shard_files_ = std::make_unique<std::atomic<ShardFile*>[]>(manifest_.shards.size());
}

size_t Reader::model_files() const {
  // A foreign model's root may hold no bytes (a sharded checkpoint's index
  // is read at open and not kept): only the files whose bytes count.
  return (source_.size() ? 1 : 0) + manifest_.shards.size() + other_files_.count;
}

uint64_t Reader::model_bytes() const {
  uint64_t total = source_.size() + other_files_.bytes;
  for (const Shard& s : manifest_.shards) total += s.size;  // sizes checked when a shard opens
  return total;
}

Result<std::unique_ptr<Reader>> Reader::open_held(Manifest m, Source root, std::vector<Source> held,
                                                  std::shared_ptr<const void> keep,
                                                  const OpenOptions& opt, OtherFiles files,
                                                  std::vector<std::function<Result<void>()>> checks) {
  ZT_FAIL_IF(!m.shards.empty(), argument, "a held model has no shard files");
  for (const Object& o : m.objects) {
    for (const Component& c : o.components) {
      ZT_FAIL_IF(c.shard || c.encoding != Encoding::raw || c.big_endian, argument,
                 "%s: a held model's components are raw little-endian bytes",
                 component_where(o, c).c_str());
      ZT_FAIL_IF(c.held && *c.held >= held.size(), argument, "%s: no held buffer %u",
                 component_where(o, c).c_str(), *c.held);
      ZT_FAIL_IF(c.crc_check && *c.crc_check >= checks.size(), argument, "%s: no data check %u",
                 component_where(o, c).c_str(), *c.crc_check);
      const Source& src = c.held ? held[*c.held] : root;
      uint64_t end = 0;
      ZT_FAIL_IF(__builtin_add_overflow(c.offset, c.length, &end) || end > src.size(), argument,
                 "%s: [%llu, +%llu) runs past its buffer of %llu bytes",
                 component_where(o, c).c_str(), static_cast<ull>(c.offset),
                 static_cast<ull>(c.length), static_cast<ull>(src.size()));
    }
    ZT_TRY(validate_object(o));
  }
  std::unique_ptr<Reader> r(new Reader());
  r->source_ = std::move(root);
  r->held_ = std::move(held);
  r->keep_ = std::move(keep);
  r->other_files_ = files;
  if (!checks.empty()) {
    r->checks_ = std::make_unique<DataCheck[]>(checks.size());
    r->check_count_ = checks.size();
    for (size_t i = 0; i < checks.size(); ++i) r->checks_[i].run = std::move(checks[i]);
  }
  r->manifest_ = std::move(m);
  r->max_decoded_ = opt.max_decoded_bytes ? opt.max_decoded_bytes : Limits::decoded_bytes;
  r->make_slots();
  return r;
}

std::string Reader::shard_path(size_t index) const {
  if (path_.empty()) return {};
  return shard_file_path(path_, manifest_.shards[index].name);
}

namespace {

// The shard's file: beside a local root by path, beside a remote one
// through its transport (RangeSource::sibling), whose open brings the
// footer the shard check reads.
Result<Source> open_shard_file(const Source& root, const std::string& root_path,
                               const std::string& path, Source::Mode mode) {
  const size_t slash = path.rfind('/');
  if (!root.ranges()) {
    // Beside the root, symbolic links resolved inside the model's folder.
    auto real = resolve_beside_model(
        root_path, slash == std::string::npos ? path : path.substr(slash + 1), "shard file");
    ZT_TRY(real);
    const LinksRefused as_checked;  // no link put in its path since is followed
    return Source::open_file(*real, mode);
  }
  constexpr uint64_t kShardTail = 4096;
  // The name beside a root at a URL: its stem comes from the URL, percent-
  // encoded ("my%20model"), and sibling() encodes the name it is given, so
  // it is decoded first (it asked for "my%2520model-00001-....zt").
  const std::string_view name = slash == std::string::npos
                                    ? std::string_view(path)
                                    : std::string_view(path).substr(slash + 1);
  auto sib = root.ranges()->sibling(percent_decoded_segment(name), {kShardTail});
  ZT_TRY(sib);
  // The shard's cache shares the root's budget: cache_bytes bounds the
  // reader, however many shards it opens.
  return Source::from_ranges(RangeCache::of(std::move(*sib), root.ranges()->budget()));
}

// Rungs 1 and 2 of the shard ladder (v2 spec §7.3); the digest is verify's.
Result<Source> open_shard(const Source& root, const std::string& root_path, const std::string& path,
                          Source::Mode mode, const Shard& shard) {
  std::string where("shard \"");
  where.append(shard.name).append("\" (").append(path).append(")");
  auto src = open_shard_file(root, root_path, path, mode);
  if (!src) {
    Error e = std::move(src).error();
    e.message = where + ": " + e.message;
    return e;
  }
  ZT_FAIL_IF(src->size() != shard.size, invalid,
             "%s: the file has %llu bytes, the shard table says %llu", where.c_str(),
             static_cast<ull>(src->size()), static_cast<ull>(shard.size));
  ZT_TRY(check_shard_container(*src, where));
  return src;
}

}  // namespace

Result<const Source*> Reader::shard_source(size_t index) const {
  const Shard& shard = manifest_.shards[index];
  ZT_FAIL_IF(path_.empty(), unsupported,
             "shard \"%s\": a model opened from memory cannot find its shard files (open the "
             "root file by path)",
             shard.name.c_str());
  ShardFile& f = made_at_first_use(shard_files_[index]);
  if (f.ok.load(std::memory_order_acquire)) return &f.source;
  std::lock_guard<std::mutex> lock(f.mu);  // one open at a time; others wait for it
  if (!f.ok.load(std::memory_order_relaxed)) {
    auto src = open_shard(source_, path_, shard_path(index), mode_, shard);
    ZT_TRY(src);
    // A shard keeps its descriptor (a mapped one for pread, faster than
    // copying from the mapping) while the reader holds few; past the budget
    // (a model of a thousand shards under a limit of 1024 open files) a
    // mapped shard holds only its mapping, and one in copy mode is opened
    // again for each read.
    if (!src->ranges() &&
        shard_descriptors_.fetch_add(1, std::memory_order_relaxed) >= shard_descriptor_budget())
      src->release_descriptor();
    f.source = std::move(*src);
    f.ok.store(true, std::memory_order_release);
  }
  return &f.source;
}

Result<const Source*> Reader::source_of(const Component& c) const {
  if (c.crc_check) ZT_TRY(run_check(*c.crc_check));
  if (c.held) return &held_[*c.held];
  if (!c.shard) return &source_;
  return shard_source(*c.shard);
}

namespace {

// Whether the object's format sizes its components by its shape, so that a
// 1.0.x zstd component without uncompressed_length has a known size.
bool sized_by_shape(const Object& o) {
  const ObjectFormat* f = format_of(o);
  return f && f->sized_by_shape;
}

}  // namespace

Result<bool> Reader::mapped_in_place(const Component& c) const {
  if (c.encoding != Encoding::raw || c.big_endian) return false;
  const auto src = source_of(c);
  ZT_TRY(src);
  return (*src)->base() != nullptr;
}

std::optional<uint64_t> Reader::known_decoded_size(size_t object, size_t component) const {
  const Object& o = manifest_.objects[object];
  const Component& c = o.components[component];
  if (c.encoding == Encoding::raw) return c.length;
  if (c.encoding == Encoding::byte_planes) return c.uncompressed_length;
  if (c.encoding != Encoding::zstd) return std::nullopt;
  if (c.uncompressed_length) return c.uncompressed_length;
  if (sized_by_shape(o)) return dense_bytes(o, c);
  return std::nullopt;
}

// The decoded size, checked against the cap before anything is allocated.
// 0 with Status::ok never happens for unknown sizes: those return not_found
// internally and are decoded with a growing buffer.
Result<uint64_t> Reader::decoded_length_for(const Object& o, const Component& c) const {
  const std::string w = component_where(o, c);
  ZT_FAIL_IF(c.encoding == Encoding::unknown, unsupported, "%s: unsupported encoding \"%s\"",
             w.c_str(), c.encoding_text->c_str());
  if (c.encoding == Encoding::raw) {
    ZT_FAIL_IF(c.big_endian && c.length % c.width() != 0, invalid,
               "%s: big-endian data of %llu bytes is not a whole number of %u-byte elements",
               w.c_str(), static_cast<ull>(c.length), c.width());
    return c.length;
  }
  if (c.uncompressed_length) {
    // Named as the file names it: v2's field is decoded_length.
    ZT_FAIL_IF(*c.uncompressed_length > max_decoded_, limit,
               "%s: %s %llu exceeds the decode limit %llu", w.c_str(),
               manifest_.generation == Generation::v2 ? "decoded_length" : "uncompressed_length",
               static_cast<ull>(*c.uncompressed_length), static_cast<ull>(max_decoded_));
    return *c.uncompressed_length;
  }
  if (sized_by_shape(o) && c.element_size_known()) {
    const auto n = dense_bytes(o, c);
    ZT_FAIL_IF(!n || *n > max_decoded_, limit, "%s: the shape's size exceeds the decode limit %llu",
               w.c_str(), static_cast<ull>(max_decoded_));
    return *n;
  }
  return make_error(Status::not_found, "%s: decoded size unknown", w.c_str());
}

Result<std::span<const uint8_t>> Reader::stored(const Object& o, const Component& c,
                                                std::vector<uint8_t>& scratch,
                                                std::vector<ZstdFrame>* table) const {
  auto src = source_of(c);
  ZT_TRY(src);
  auto bytes = (*src)->bytes(c.offset, c.length, scratch);
  ZT_TRY(bytes);
  // v2's seekable zstd: its rules are checked on the frame headers and the
  // seek table every time the bytes are handed out to be decoded (cheap: one
  // header per frame), so no path decodes a stream that breaks them.
  if (c.encoding == Encoding::zstd && c.encoding_id) {
    auto frames = seekable_frames(*bytes, c.uncompressed_length.value_or(0), component_where(o, c));
    ZT_TRY(frames);
    if (table) *table = std::move(*frames);
  }
  // Byte planes: the index and footer, the same way.
  if (c.encoding == Encoding::byte_planes)
    ZT_TRY(byte_planes_index(*bytes, c.uncompressed_length.value_or(0), component_where(o, c)));
  return bytes;
}

namespace {

// Raw bytes of a file or of memory copied into dst, in slices of
// kMostRawTaskBytes on every core where there are two or more (a pread
// each in copy mode, a memcpy out of a mapping), as zt_decode_many shares
// them out: zt_component_read and the decode cache then fill fresh memory
// on every core, page faults included. A remote source reads its ranges
// in parallel itself.
Result<void> read_raw(const Source& src, uint64_t offset, std::span<uint8_t> dst) {
  const unsigned threads = threads_for_all_cores();
  if (src.ranges() || threads < 2 || dst.size() < 2 * kMostRawTaskBytes)
    return src.read_into(offset, dst);
  const size_t slices = static_cast<size_t>(ceil_div(dst.size(), kMostRawTaskBytes));
  std::vector<Error> errors(slices);
  for_each_index(slices, threads, [&](size_t i) {
    const uint64_t at = i * kMostRawTaskBytes;
    const auto piece = dst.subspan(at, std::min<uint64_t>(kMostRawTaskBytes, dst.size() - at));
    auto r = src.read_into(offset + at, piece);
    if (!r) errors[i] = std::move(r).error();
  });
  for (auto& e : errors)
    if (e.status != Status::ok) return std::move(e);
  return {};
}

}  // namespace

Result<void> Reader::decode_into(const Object& o, const Component& c, std::span<uint8_t> dst,
                                 const PreparedDecode* prepared) const {
  if (c.encoding == Encoding::raw) {
    auto src = source_of(c);
    ZT_TRY(src);
    ZT_TRY(read_raw(**src, c.offset, dst));
  } else {
    std::vector<uint8_t> scratch;
    std::vector<ZstdFrame> own_table;
    const std::vector<ZstdFrame>* table = &own_table;
    std::span<const uint8_t> src;
    if (prepared && prepared->stored) {  // fetched and checked once, by prepare_decode
      src = *prepared->stored;
      table = &prepared->table;
    } else {
      auto s = stored(o, c, scratch, &own_table);
      ZT_TRY(s);
      src = *s;
    }
    // A seekable stream decodes frame by frame as its table lists them;
    // others as their headers say.
    if (c.encoding == Encoding::byte_planes)
      ZT_TRY(byte_planes_decode(src, dst, component_where(o, c)));
    else if (c.encoding_id)
      ZT_TRY(zstd_decode_frames(src, *table, dst, component_where(o, c)));
    else
      ZT_TRY(zstd_decode_parallel(src, dst, component_where(o, c)));
  }
  if (c.big_endian) swap_elements(dst, c.width());
  return {};
}

Result<GrowingBytes> Reader::decode_unknown_size(const Object& o, const Component& c) const {
  std::vector<uint8_t> scratch;
  auto src = stored(o, c, scratch);
  ZT_TRY(src);
  return zstd_decode_bounded(*src, max_decoded_, ZstdLimit::cap, component_where(o, c));
}

Result<std::span<const uint8_t>> Reader::map(size_t object, size_t component) const {
  const Object& o = manifest_.objects[object];
  const Component& c = o.components[component];
  ZT_FAIL_IF(!o.unsupported.empty(), unsupported, "%s", o.unsupported.c_str());
  const auto in_place = mapped_in_place(c);
  ZT_TRY(in_place);
  if (*in_place) return mapped_bytes(**source_of(c), c);
  Slot& s = slot(object, component);
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.done) {
    // A failed decode holds no memory (a corrupt last frame of 512 MiB kept
    // its buffer until the reader closed), whether it returned its error or
    // threw on the way (std::bad_alloc from a helper, turned into
    // ZT_ERR_NOMEM at the C barrier).
    struct SlotEmptiedUnlessFilled {
      Slot& slot;
      bool filled = false;
      ~SlotEmptiedUnlessFilled() {
        if (!filled) slot.bytes = {};
      }
    } emptied{s};
    auto r = fill_slot(o, c, s);
    if (r) emptied.filled = true;
    if (!r) {
      // A failed read (a dropped connection, a server's 5xx) or a lack of
      // memory says nothing about the file: the next call tries again.
      if (r.error().status == Status::io || r.error().status == Status::nomem)
        return std::move(r).error();
      s.error = std::move(r).error();
    }
    s.done = true;
  }
  if (s.error.status != Status::ok) return s.error;
  // No bytes still come with an address, as a mapped empty component's do.
  static constexpr uint8_t kNoBytes = 0;
  return s.bytes.empty() ? std::span<const uint8_t>(&kNoBytes, 0) : s.bytes.bytes();
}

// A zstd component's claimed size n is only a claim: before n bytes are
// allocated, frames that declare their sizes must add up to n. Frames that
// declare none are decoded into a growing buffer bounded by n (p.grown).
// Otherwise the caller allocates n bytes and decode_into decodes the stored
// bytes fetched here (p.stored): a copy-mode or remote source reads them
// once.
Result<void> Reader::prepare_decode(const Object& o, const Component& c, uint64_t n,
                                    PreparedDecode& p) const {
  if (c.encoding != Encoding::zstd && c.encoding != Encoding::byte_planes) return {};
  auto src = stored(o, c, p.scratch, &p.table);
  ZT_TRY(src);
  p.stored = *src;
  // A seekable stream's table gives each frame's size (stored() checked
  // they add up to decoded_length): decode_into decodes it frame by frame.
  if (c.encoding_id) return {};
  const std::string w = component_where(o, c);
  if (const auto declared = zstd_declared_size(*src)) {
    ZT_FAIL_IF(*declared > n, invalid,
               "%s: zstd data decodes to more than %llu bytes: its frames declare %llu", w.c_str(),
               static_cast<ull>(n), static_cast<ull>(*declared));
    ZT_FAIL_IF(*declared < n, invalid, "%s: zstd frames declare %llu bytes, expected %llu",
               w.c_str(), static_cast<ull>(*declared), static_cast<ull>(n));
    return {};
  }
  auto bytes = zstd_decode_bounded(*src, n, ZstdLimit::size, w);
  if (!bytes && bytes.error().status == Status::limit)
    return make_error(Status::invalid, "%s: zstd data decodes to more than %llu bytes", w.c_str(),
                      static_cast<ull>(n));
  ZT_TRY(bytes);
  ZT_FAIL_IF(bytes->size() != n, invalid, "%s: zstd data decodes to %zu bytes, expected %llu",
             w.c_str(), bytes->size(), static_cast<ull>(n));
  if (c.big_endian) swap_elements(std::span(bytes->data(), bytes->size()), c.width());
  p.grown = std::move(*bytes);
  return {};
}

// Decodes straight into the slot's buffer (no zero-fill, no second copy).
Result<void> Reader::fill_slot(const Object& o, const Component& c, Slot& s) const {
  auto bytes = decode(o, c);
  ZT_TRY(bytes);
  s.bytes = std::move(*bytes);
  return {};
}

// The bytes are GrowingBytes whichever way they come: a decode grown in
// place is handed over as it is (a std::vector copied it: twice what it
// decoded at its peak), and a sized one gets fresh pages that the decode
// is the first to write (a vector zero-filled them first).
Result<GrowingBytes> Reader::decode(size_t object, size_t component) const {
  const Object& o = manifest_.objects[object];
  const Component& c = o.components[component];
  ZT_FAIL_IF(!o.unsupported.empty(), unsupported, "%s", o.unsupported.c_str());
  return decode(o, c);
}

Result<GrowingBytes> Reader::decode(const Object& o, const Component& c) const {
  auto n = decoded_length_for(o, c);
  if (!n && n.error().status == Status::not_found) return decode_unknown_size(o, c);
  ZT_TRY(n);
  PreparedDecode p;
  ZT_TRY(prepare_decode(o, c, *n, p));
  if (p.grown) return std::move(*p.grown);
  GrowingBytes out;
  ZT_FAIL_IF(*n > SIZE_MAX || !out.resize(static_cast<size_t>(*n)), nomem,
             "%s: cannot allocate %llu bytes", component_where(o, c).c_str(), static_cast<ull>(*n));
  ZT_TRY(decode_into(o, c, std::span<uint8_t>(out.data(), out.size()), &p));
  return out;
}

Result<uint64_t> Reader::read(size_t object, size_t component, std::span<uint8_t> dst) const {
  const Object& o = manifest_.objects[object];
  const Component& c = o.components[component];
  ZT_FAIL_IF(!o.unsupported.empty(), unsupported, "%s", o.unsupported.c_str());
  auto n = decoded_length_for(o, c);
  if (!n && n.error().status == Status::not_found) {
    auto bytes = decode_unknown_size(o, c);
    ZT_TRY(bytes);
    ZT_FAIL_IF(bytes->size() > dst.size(), argument,
               "%s: %llu decoded bytes do not fit in a buffer of %zu",
               component_where(o, c).c_str(), static_cast<ull>(bytes->size()), dst.size());
    std::copy(bytes->bytes().begin(), bytes->bytes().end(), dst.begin());
    return bytes->size();
  }
  ZT_TRY(n);
  ZT_FAIL_IF(*n > dst.size(), argument, "%s: %llu decoded bytes do not fit in a buffer of %zu",
             component_where(o, c).c_str(), static_cast<ull>(*n), dst.size());
  ZT_TRY(decode_into(o, c, dst.first(*n)));
  return *n;
}

Result<uint64_t> Reader::read_size(size_t object, size_t component) const {
  const Object& o = manifest_.objects[object];
  const Component& c = o.components[component];
  ZT_FAIL_IF(!o.unsupported.empty(), unsupported, "%s", o.unsupported.c_str());
  auto n = decoded_length_for(o, c);
  if (!n && n.error().status == Status::not_found)
    return make_error(Status::unsupported, "%s: the decoded size is not known without decoding",
                      component_where(o, c).c_str());
  return n;
}

const std::string& Reader::manifest_json() const {
  std::call_once(json_once_, [this] { json_ = manifest_to_json(manifest_); });
  return json_;
}

Result<void> Reader::check_digest(const Object& o, const Component& c, const ParsedDigest& d,
                                  const std::string& got, VerifyReport& rep) const {
  ZT_FAIL_IF(got != d.hex, digest, "%s: %s digest mismatch: stored %s, computed %s%s",
             component_where(o, c).c_str(), std::string(digest_algo_name(d.algo)).c_str(),
             d.hex.c_str(), got.c_str(),
             manifest_.digests_cover_decoded ? " (over the decoded bytes)" : "");
  ++rep.checked;
  ++rep.by_algorithm[static_cast<size_t>(d.algo)];
  return {};
}

}  // namespace zt
