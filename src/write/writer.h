// The writer: spec 1.2.0 files (or zTensor v2 with WriterOptions::
// file_version = 2: 4096-multiple alignment, seekable zstd, digests over
// the input bytes, a deterministic v2 manifest and the 40-byte footer),
// 64-byte aligned blobs with zero padding,
// digests computed while writing, zstd as independent frames compressed on
// a pool, deterministic output, atomic publication (an unnamed temporary
// file in the target's directory, fsync, link + rename, fsync of the
// directory). Single caller; see ztensor.h for the call contract.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.h"
#include "base/error.h"
#include "codec/digest.h"

namespace zt {

struct WriterOptions {
  int zstd_level = 3;
  unsigned threads = 0;  // 0: all cores
  DigestAlgo digest = DigestAlgo::xxh3;
  uint64_t frame_size = uint64_t{1} << 20;
  double auto_min_ratio = 0.9;
  // The container: 0 for spec 1.2.0 (the default), 2 for zTensor v2.
  unsigned file_version = 0;
  // v2 only: blob alignment, a multiple of 4096; 0 for 65536 (canonical).
  uint64_t alignment = 0;
  // v2 canonical form (v2 spec §6.3): objects given in bytewise name order
  // and each object's parts in bytewise role order, raw parts with xxh3
  // digests at 65536 placement, identical parts sharing one blob, names in
  // NFC. Needs file_version 2, alignment 0 or 65536 and the xxh3 digest.
  bool canonical = false;
  // v2 only: split the model (v2 spec §7). Blobs go to data shards named
  // "00001-<12 hex of the shard's sha256>", ... in files <stem>-<name>.zt
  // beside the target (the spec's Appendix B convention), each at most shard_bytes long unless a
  // single part is larger (it then has a shard of its own; a zstd part is
  // counted by its decoded size). The target is the root: the manifest with
  // a shard table of sizes and sha256 digests. 0: one file.
  uint64_t shard_bytes = 0;
};

class Writer {
 public:
  static Result<std::unique_ptr<Writer>> open(const std::string& path,
                                              const WriterOptions& opt = {});
  // Appends to an existing v2 file (v2 spec §2.5): its bytes are copied
  // unchanged into the temporary file, new blobs, a new manifest and a new
  // footer follow, and finish() renames it over the file, so a crash or a
  // failure leaves the previous generation in place. Its objects stay; an
  // object begun under an existing name replaces that object at
  // end_object. file_version is taken as 2; canonical is refused (an
  // appended file holds superseded blobs). UNSUPPORTED for 1.x files; a
  // sharded model's root keeps its shard table, its shards untouched.
  static Result<std::unique_ptr<Writer>> open_append(const std::string& path,
                                                     const WriterOptions& opt = {});
  ~Writer();  // aborts an unfinished file
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  Result<void> set_file_attributes_json(std::string_view json);
  // Attributes as an encoded CBOR map (text keys), stored as given: what a
  // copy from another .zt file passes, so every value survives exactly.
  Result<void> set_file_attributes_cbor(std::span<const uint8_t> cbor);
  Result<void> add_dense(std::string_view name, std::string_view dtype,
                         std::span<const uint64_t> shape, std::span<const uint8_t> data,
                         std::string_view encoding);
  Result<void> begin_object(std::string_view name, std::string_view format,
                            std::span<const uint64_t> shape);
  Result<void> set_object_attributes_json(std::string_view json);
  Result<void> set_object_attributes_cbor(std::span<const uint8_t> cbor);
  Result<void> add_component(std::string_view role, std::string_view dtype,
                             std::optional<std::string_view> type, std::span<const uint8_t> data,
                             std::string_view encoding);
  Result<void> begin_component(std::string_view role, std::string_view dtype,
                               std::optional<std::string_view> type, std::string_view encoding,
                               uint64_t decoded_size);
  Result<void> write(std::span<const uint8_t> data);
  Result<void> end_component();
  Result<void> end_object();
  // Sharded v2 writers (shard_bytes != 0): the next object's parts start a
  // new data shard, whatever room the current one has left, so that a model
  // can keep another's split. Between objects only; nothing happens while
  // the current shard holds no part yet.
  Result<void> end_shard();
  // Drops the object begun last, with whatever components it has so far.
  Result<void> cancel_object();
  Result<void> finish();
  void abort();
  // Whether the file is zTensor v2 (whose sparse parts may be u32 as well as
  // u64; a 1.2.0 file's must be u64).
  bool writes_v2() const;

  struct Impl;

 private:
  Writer();
  std::unique_ptr<Impl> impl_;
};

}  // namespace zt
