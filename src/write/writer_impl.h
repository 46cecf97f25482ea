// The writer's state, shared by its two source files: writer.cpp (the
// public calls, the object rules, publishing) and component_stream.cpp (a
// component's bytes on their way to the file: hashing, zstd frames on the
// pool, the "auto" policy). Internal to src/write.
#pragma once

#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "codec/byte_planes.h"
#include "codec/digest.h"
#include "codec/zstd_seekable.h"
#include "manifest/manifest.h"
#include "write/frame_pipeline.h"
#include "write/output_file.h"
#include "write/writer.h"
#include "write/written_generation.h"

namespace zt {

// Decoded bytes a byte-planes frame holds (a multiple of every element width).
inline constexpr uint32_t kPlanesFrameBytes = 1u << 20;
// "auto" takes byte planes over zstd only when they store at most this
// share of zstd's bytes: a file other v2 readers can decode is worth a few
// percent.
inline constexpr double kAutoPlanesMargin = 0.95;

// How byte planes cut a component of this dtype: elements of the storage
// width (packed types by the byte); IEEE floats (f16, bf16, f32, f64) with
// the sign moved beside the mantissa, so that one plane holds exponent bits
// only. `float_planes` says whether it is such a float: where "auto" may
// choose planes.
struct PlanesChoice {
  PlanesLayout layout;
  bool float_planes = false;
};
PlanesChoice planes_choice(DType dt, const LogicalType* lt);

// undecided: "auto" before its first batch; planes: v2's libztensor.byte_planes/1
enum class Mode { raw, zstd, undecided, planes };

// The component being written; `out` is what the manifest will say.
struct Pending {
  Component out;
  Mode mode = Mode::raw;
  uint64_t declared = 0;  // decoded bytes announced
  uint64_t received = 0;
  uint64_t rollback_to = 0;   // file size before this component
  bool opened_shard = false;  // it began a new shard file (sharded writers)
  std::optional<Hasher> hasher;
  std::vector<uint8_t> frame;  // zstd input short of a whole frame
  bool check_bool = false;
  uint8_t last = 0;                     // the last byte received (f4_e2m1's odd-count rule)
  std::vector<SeekEntry> seek;          // v2: the frames written, for the seek table
  std::optional<PlanesEncoder> planes;  // Mode::planes: frames of `frame` as they fill
  // "auto": the component's first frame (at most frame_size bytes),
  // gathered from pieces until the encoding is decided on all of it.
  std::vector<uint8_t> auto_sample;
};

struct Writer::Impl {
  enum class State { idle, object, component, done, failed };

  WriterOptions opt;
  std::string path;
  std::optional<OutputFile> file;  // the file being written (with shards: the current shard)
  uint64_t pos = 0;                // bytes written to it so far
  // Sharded output (opt.shard_bytes): the shards before the current one,
  // each ended with its footer, and where the object being written began.
  std::vector<OutputFile> earlier_shards;
  std::vector<uint64_t> shard_sizes;  // of earlier_shards
  // The sha256 (hex) of earlier_shards' first settled_hex.size(), which are
  // settled (OutputFile::settle: named, their descriptors closed): shards
  // before the object being written, past the descriptor budget.
  std::vector<std::string> settled_hex;
  std::vector<Shard> shards;  // the root's shard table: made at finish, or an appended root's
  size_t object_shard = 0;
  State state = State::idle;
  std::vector<uint8_t> file_attributes;  // one encoded CBOR map, or empty
  // The objects written, in the reader's model; their attributes view
  // kept_attributes (a deque: growing it never moves what they view).
  std::vector<Object> objects;
  std::deque<std::vector<uint8_t>> kept_attributes;
  // The objects by name: an index into `objects`, not a copy of each name
  // (a set of names cost two allocations an object, and a string made for
  // each lookup: a tenth of writing many small tensors).
  NameIndex by_name;
  // Append: objects[i] for i < replaceable.size() is one of the file's own,
  // which a new object of its name may replace (once: true until then).
  std::vector<bool> replaceable;
  Object current;
  std::optional<size_t> replaces;           // append: the file's own object `current` replaces
  std::vector<uint8_t> current_attributes;  // of `current`, or empty
  uint64_t object_start = 0;
  Pending pending;
  std::unique_ptr<FramePipeline> frames;  // made at the first zstd frame
  std::string first_failure;              // the message of the call that failed the writer
  // Canonical form: every blob written, by "<digest>/<length>" (candidates
  // to share, confirmed on the bytes), and those of the current object
  // (forgotten again if the object is dropped).
  std::unordered_multimap<std::string, uint64_t> blobs;
  std::vector<std::pair<std::string, uint64_t>> object_blobs;

  // ---- state (writer.cpp) ----
  Result<void> usable() const;
  Error poison(Error e);
  Result<void> open_file();
  void discard();
  Result<void> publish();
  Result<void> check_object_rules();
  Result<void> read_at(int fd, uint64_t offset, std::span<uint8_t> out) const;
  bool sharded() const { return opt.shard_bytes != 0; }
  // Append: whether a new object may take objects[i]'s name.
  bool may_replace(size_t i) const { return i < replaceable.size() && replaceable[i]; }
  size_t current_shard() const { return earlier_shards.size(); }
  // The descriptor of the file holding a written component.
  Result<int> fd_of(const Component& c);
  // Ends the current shard with its footer and starts the next one.
  Result<void> next_shard();
  // The sha256 (hex) of earlier shard k, read back.
  Result<std::string> shard_sha256(size_t k);
  // Settles the oldest shards before the object being written while more
  // than shard_descriptor_budget() hold descriptors: a model of thousands
  // of shards would otherwise hold one each until finish.
  Result<void> settle_final_shards();
  // Drops the component begun (a refused piece or end): its bytes, and the
  // shard it began, so that what was written is what the same calls without
  // it would have written. The object stays open.
  Result<void> drop_component();
  // With shards: the root's table (sizes and sha256 of the files), the
  // shards published, then the root.
  Result<void> finish_sharded();
  // Without: the manifest, then the one file published (an old sharded
  // model's shards removed after it).
  Result<void> finish_whole();
  // Cuts the current object's bytes off the file again (and forgets its blobs).
  Result<void> drop_object();
  // Canonical form: whether [a, a+n) and [b, b+n) of the file hold the same bytes.
  Result<bool> same_bytes(uint64_t a, uint64_t b, uint64_t n);
  // Canonical form: the ended part `c` references an earlier blob of the
  // same bytes, if there is one, and its own copy is cut off the file.
  Result<void> share_identical_blob(Component& c);
  // The manifest and the footer (v2: at a blob boundary).
  Result<void> write_manifest();
  // Append: copies the file's bytes and takes over its objects and attributes.
  Result<void> take_over(const std::string& source_path);

  // What differs between the generations: the one place the writer asks.
  const WrittenGeneration& gen() const { return written_generation(opt.file_version); }
  uint64_t alignment() const { return gen().alignment(opt); }

  // ---- bytes (component_stream.cpp) ----
  unsigned threads() const;
  Result<void> write_all(std::span<const uint8_t> bytes);
  Result<void> pad_to_alignment();
  // Cuts the file back to `size`, dropping any frames still in flight.
  Result<void> truncate_to(uint64_t size);
  Result<void> emit_stored(std::span<const uint8_t> stored);
  // Stored bytes from this size on are hashed on a helper thread while
  // written (where there is more than one core): a smaller piece's hash
  // costs less than handing it over.
  static constexpr size_t kHashBesideFrom = size_t{8} << 20;
  bool hashes_beside(size_t bytes) const;
  Result<void> write_hashing_beside(std::span<const uint8_t> stored);
  Result<void> accept_planes(std::span<const uint8_t> data);
  uint64_t frame_size() const;
  FramePipeline& pipeline();
  Result<void> write_oldest_frame();
  Result<void> submit_frame(std::span<const uint8_t> input, std::vector<uint8_t> owned = {});
  Result<void> drain_frames();
  Result<void> emit_frames(std::span<const uint8_t> input);
  Result<void> submit_pending_frame();
  // The pending component's last frames and its stream's tail (zstd's seek
  // table, byte planes' index), written.
  Result<void> end_stream();
  Result<void> decide_auto(std::span<const uint8_t> input);
  // Checks and writes one piece of the pending component.
  Result<void> accept(std::span<const uint8_t> data);
  // Writes a piece in the pending component's decided encoding.
  Result<void> emit_piece(std::span<const uint8_t> data);
};

// A caller's text as messages show it: its first 200 bytes.
inline std::string shown(std::string_view s) {
  return std::string(s.substr(0, 200));
}

// A name (of an object, component or attribute) as a writer takes it:
// valid UTF-8 text without NUL, within the limits (v2: 1024 bytes), and in
// NFC for canonical form (writer.cpp).
Result<void> check_name(std::string_view what, std::string_view name, bool v2,
                        bool canonical = false);

// Every public call runs through here: a call either succeeds, fails and
// leaves the writer as it was (the calls roll their own work back), or
// poisons the writer. An exception (std::bad_alloc from a frame buffer, a
// thread that cannot start) poisons it: the bytes it had counted may not
// have been written, so nothing after it may be published.
// A call that threw: the writer poisoned, the failure named when memory
// allows (the message allocates, and a second bad_alloc in a handler of
// guarded() would end the process: then the error goes without its text).
inline Result<void> failed_by_exception(Writer::Impl& s, Status status, const char* what) noexcept {
  try {
    return s.poison(make_error(status, "%s: %s", s.path.c_str(), what));
  } catch (...) {
    return s.poison(Error{status, {}});
  }
}

template <typename Call>
Result<void> guarded(Writer::Impl& s, Call&& call) noexcept {
  try {
    Result<void> r = call();
    if (!r && s.state == Writer::Impl::State::failed && s.first_failure.empty())
      s.first_failure = r.error().message;
    return r;
  } catch (const std::bad_alloc&) {
    return failed_by_exception(s, Status::nomem, "out of memory");
  } catch (const std::length_error&) {
    return failed_by_exception(s, Status::nomem, "out of memory");
  } catch (const std::exception& e) {
    return failed_by_exception(s, Status::io, e.what());
  }
}

}  // namespace zt
