// Reader = source + validated manifest + a decode cache. Immutable after
// open except the cache, which is guarded per component (decoded once,
// concurrent callers wait), so one Reader serves many threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/byte_windows.h"
#include "base/error.h"
#include "codec/digest.h"
#include "codec/zstd_codec.h"
#include "manifest/manifest.h"
#include "source/http_source.h"
#include "source/io.h"

namespace zt {

struct OpenOptions {
  Source::Mode mode = Source::Mode::map;
  uint64_t max_decoded_bytes = 0;                       // 0: the build's ZT_MAX_DECODED_BYTES
  uint64_t cache_bytes = RangeCache::kDefaultCapacity;  // remote sources' cache
  HttpOptions http;                                     // open_url
};

// Files a held model reads beyond its root, and their bytes (Reader::open_held).
struct OtherFiles {
  size_t count = 0;
  uint64_t bytes = 0;
};

struct VerifyReport {
  uint64_t checked = 0;            // components whose digest was computed and matched
  uint64_t unchecked = 0;          // components without a digest, or of an unknown algorithm
  uint64_t unknown_algorithm = 0;  // of the unchecked: a digest of an algorithm not known here
  uint64_t by_algorithm[5] = {};   // checked digests, indexed by DigestAlgo
  uint64_t shards = 0;             // v2 shard files whose whole-file digest matched
  uint64_t components = 0;         // components checked (decoded) in full
  uint64_t decoded_bytes = 0;      // their decoded size
};

// A component's decoded little-endian bytes pulled a window at a time, in
// memory bounded whatever the component decodes to: mapped raw data as one
// view of the mapping, other raw data read 1 MiB at a time, zstd data
// through a ZstdWindows (128 KiB windows). The decoded size is checked
// against what the manifest implies: more or fewer bytes is
// Status::invalid, when the end is reached. From Reader::windows; must not
// outlive the Reader.
class DecodedWindows final : public ByteWindows {
 public:
  DecodedWindows() = default;  // empty; Reader::windows makes useful ones
  ~DecodedWindows() override;
  // The next window (valid until the following call); empty at the end.
  Result<std::span<const uint8_t>> next() override;

 private:
  friend class Reader;
  const Source* source_ = nullptr;
  const Component* c_ = nullptr;
  std::string where_;
  std::span<const uint8_t> mapped_;  // mapped raw data, handed out once
  bool mapped_done_ = false;
  uint64_t raw_at_ = 0;          // raw data read so far (not mapped)
  std::vector<uint8_t> buffer_;  // raw pieces; encoded stored bytes in copy mode
  // zstd or byte planes (codec/decoded_windows.h) over the stored bytes
  // (the mapping, or buffer_)
  std::unique_ptr<ByteWindows> decoded_;
};

class Reader {
 public:
  static Result<std::unique_ptr<Reader>> open_file(const std::string& path,
                                                   const OpenOptions& opt = {});
  // The caller keeps `bytes` alive as long as the Reader.
  static Result<std::unique_ptr<Reader>> open_memory(std::span<const uint8_t> bytes,
                                                     const OpenOptions& opt = {});
  // A file read by range (callbacks, HTTP) through a RangeCache of
  // opt.cache_bytes. `tail` is the file's last tail.size() bytes when the
  // transport fetched them with the size (an HTTP open does), kept in the
  // cache. The open fetches the tail and then the magic with the manifest:
  // two reads of the source, one when the tail holds the whole file.
  // v2 shards are opened through RangeSource::sibling.
  static Result<std::unique_ptr<Reader>> open_ranges(std::shared_ptr<const RangeSource> src,
                                                     const OpenOptions& opt = {},
                                                     std::vector<uint8_t> tail = {});
  // An http(s) URL (source/http_source.h): the open's first request
  // fetches the last kOpenTailBytes with the size, the second the magic
  // with the rest of the manifest.
  static Result<std::unique_ptr<Reader>> open_url(const std::string& url,
                                                  const OpenOptions& opt = {});
  // A model made elsewhere (a foreign file read by foreign/foreign_reader.h)
  // over bytes already in memory: `root` holds the components without
  // Component::held, held[i] those with held == i. Each object's format
  // rules are checked (validate_object); every component must lie inside
  // its buffer. `keep` owns whatever the buffers view and lives as long as
  // the Reader.
  // `files` is what the model occupies on disk beyond `root` (a sharded
  // checkpoint's shard files): model_files / model_bytes report it.
  // `checks` are the data checks its components name (Component::
  // crc_check: a zip member's CRC-32), run once each, at the first read
  // of such a component's bytes (source_of) or by run_checks.
  static Result<std::unique_ptr<Reader>> open_held(
      Manifest m, Source root, std::vector<Source> held, std::shared_ptr<const void> keep,
      const OpenOptions& opt = {}, OtherFiles files = {},
      std::vector<std::function<Result<void>()>> checks = {});
  ~Reader();

  const Manifest& manifest() const { return manifest_; }
  const Source& source() const { return source_; }
  uint64_t file_size() const { return source_.size(); }
  // The files the model occupies (this one, its v2 shards by their table's
  // sizes, a sharded checkpoint's shards) and their bytes together.
  size_t model_files() const;
  uint64_t model_bytes() const;

  // Decoded little-endian bytes of a component: a view into the mapping for
  // raw little-endian data, otherwise decoded once and cached. Valid for the
  // Reader's lifetime.
  Result<std::span<const uint8_t>> map(size_t object, size_t component) const;
  // Decoded size if it is known without decoding.
  std::optional<uint64_t> known_decoded_size(size_t object, size_t component) const;
  // Decodes into dst (no cache). Errors with Status::argument if dst is too
  // small; returns the byte count.
  Result<uint64_t> read(size_t object, size_t component, std::span<uint8_t> dst) const;
  // The byte count read() writes, refused as read() refuses it before it
  // decodes anything (an unsupported object, the decode cap); a size not
  // known without decoding is unsupported here.
  Result<uint64_t> read_size(size_t object, size_t component) const;
  // Decodes into a fresh buffer (no cache).
  Result<GrowingBytes> decode(size_t object, size_t component) const;
  // The decoded bytes a window at a time (no cache, bounded memory).
  Result<std::unique_ptr<DecodedWindows>> windows(size_t object, size_t component) const;
  // The stored (possibly compressed) bytes; for v2 seekable zstd, checked
  // against the profile's rules first, its frames as the seek table lists
  // them put in *table (each must decode to its entry's size: decode with
  // zstd_decode_frames or ZstdWindows::expect_frames).
  Result<std::span<const uint8_t>> stored(const Object& o, const Component& c,
                                          std::vector<uint8_t>& scratch,
                                          std::vector<ZstdFrame>* table = nullptr) const;

  // Deep check: shard files, digests, decoding, content rules. Thread-safe.
  Result<VerifyReport> verify() const;
  // The deep rung of the shard ladder (v2 spec §7.3): every shard file of
  // the table opened and hashed whole against its digest (counted in
  // rep.shards). verify() runs it first.
  Result<void> verify_shards(VerifyReport& rep) const;
  // The same check of one object, adding its digest counts to `report`.
  // Every path that copies an object into another file calls it first.
  Result<void> verify_object(size_t object, VerifyReport& report) const;

  // zt_manifest_json: built on first use, then cached.
  const std::string& manifest_json() const;

  uint64_t max_decoded_bytes() const { return max_decoded_; }

  // Whether c's bytes are served straight from the mapping of the file
  // holding them (raw, little-endian, and that file is mapped): no decode,
  // no copy. Opens c's shard if it is not open yet, and fails as that open
  // does (a failure is the caller's answer, never a reason to try another
  // way, which would ask the shard again within one call).
  Result<bool> mapped_in_place(const Component& c) const;
  // Whether c's bytes are a view of the mapped file itself: mapped in
  // place, and not a buffer a foreign reader made (open_held). What views
  // report, after a read has opened c's file.
  bool maps_file(const Component& c) const {
    const auto m = mapped_in_place(c);
    return !c.held && m && *m;
  }
  // The mapped bytes of c, for which mapped_in_place() holds (its file,
  // from source_of, already open).
  static std::span<const uint8_t> mapped_bytes(const Source& src, const Component& c) {
    return std::span<const uint8_t>(src.base() + c.offset, c.length);
  }
  // The file holding c's stored bytes: this one, or the shard that the
  // part names (v2 spec §7), opened on first use. Thread-safe.
  Result<const Source*> source_of(const Component& c) const;
  // The file holding c's stored bytes as it was opened (source_of: a
  // shard is opened now if need be, and fails as that open does), or
  // nullopt where they are in no file: memory a foreign reader made, a
  // reader of memory or of a URL.
  Result<std::optional<FileIdentity>> file_of(const Component& c) const {
    const auto src = source_of(c);
    ZT_TRY(src);
    return (*src)->file();
  }
  // Runs the pending data checks of these components (Component::
  // crc_check; those run before are not run again) on up to `threads`
  // threads; a component whose check fails is refused by source_of.
  void run_checks(std::span<const Component* const> components, unsigned threads) const;
  // Whether any component has a data check (a foreign model's zip members).
  bool has_data_checks() const { return check_count_ > 0; }
  // c's pending data check, run now if it has not run: its failure, if it
  // failed (what source_of answers for c).
  Result<void> check_data(const Component& c) const {
    if (!c.crc_check) return {};
    return run_check(*c.crc_check);
  }
  // Shard `index` of the manifest's table, resolved by the positional
  // convention of the spec's Appendix B (<dir>/<stem>-<name>.zt beside a
  // root <stem>.zt) and checked by the first two rungs of §7.3 (v2 magic,
  // footer version, size equal to the table's) the first time it is used.
  Result<const Source*> shard_source(size_t index) const;
  // Where shard `index` is looked for (empty when opened from memory).
  std::string shard_path(size_t index) const;

 private:
  // Decodes a component a window at a time (checking bool bytes), feeding
  // each window to `hash` when not null; returns the decoded size.
  Result<uint64_t> verify_streamed(size_t object, size_t component, Hasher* hash) const;
  // Counts a matching digest; Status::digest naming the component if not.
  Result<void> check_digest(const Object& o, const Component& c, const ParsedDigest& d,
                            const std::string& got, VerifyReport& rep) const;
  struct Slot;
  Reader();
  static Result<std::unique_ptr<Reader>> finish_open(std::unique_ptr<Reader> r);
  void make_slots();
  Result<uint64_t> decoded_length_for(const Object& o, const Component& c) const;
  struct PreparedDecode {
    std::vector<uint8_t> scratch;
    std::optional<std::span<const uint8_t>> stored;  // a zstd component's, fetched once
    std::vector<ZstdFrame> table;                    // a seekable stream's frames (stored())
    std::optional<GrowingBytes> grown;               // decoded already (no declared sizes)
  };
  // Decodes into dst, from the stored bytes `prepared` fetched already (a
  // zstd component's, with a seekable stream's table) or from the source.
  Result<void> decode_into(const Object& o, const Component& c, std::span<uint8_t> dst,
                           const PreparedDecode* prepared = nullptr) const;
  Result<GrowingBytes> decode_unknown_size(const Object& o, const Component& c) const;
  Result<void> fill_slot(const Object& o, const Component& c, Slot& s) const;
  Result<GrowingBytes> decode(const Object& o, const Component& c) const;
  Slot& slot(size_t object, size_t component) const;
  Result<void> prepare_decode(const Object& o, const Component& c, uint64_t n,
                              PreparedDecode& p) const;

  Source source_;
  std::string path_;  // the root file's path (absolute) or URL; empty for memory
  Source::Mode mode_ = Source::Mode::map;
  mutable std::atomic<size_t> shard_descriptors_{0};  // shards mapped with their descriptor
  struct ShardFile;
  std::unique_ptr<std::atomic<ShardFile*>[]>
      shard_files_;                        // one per shard entry, made at first use
  std::vector<uint8_t> manifest_storage_;  // copy mode: the manifest bytes
  std::vector<Source> held_;               // open_held: the buffers of Component::held
  struct DataCheck {                       // data_checks.cpp
    std::function<Result<void>()> run;
    std::once_flag once;
    std::optional<Error> failed;
  };
  std::unique_ptr<DataCheck[]> checks_;  // open_held: Component::crc_check's, run once each
  size_t check_count_ = 0;
  Result<void> run_check(uint32_t index) const;
  std::shared_ptr<const void> keep_;  // open_held: what they view
  OtherFiles other_files_;            // open_held: files beyond the root
  Manifest manifest_;
  uint64_t max_decoded_ = 0;
  std::vector<size_t> slot_base_;  // first slot of each object
  // One pointer per component, set on its first decode: most components
  // (raw, mapped) never need a slot, and a file may have millions.
  std::unique_ptr<std::atomic<Slot*>[]> slots_;
  size_t slot_count_ = 0;
  mutable std::once_flag json_once_;
  mutable std::string json_;
};

}  // namespace zt
