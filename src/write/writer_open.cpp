// Opening a writer: its options checked, the target created (or, to
// append, the existing v2 file taken over as the new file's start).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <utility>

#include "base/path_parts.h"
#include "base/zt_limits.h"
#include "cbor/cbor_encode.h"
#include "cbor/cbor_item.h"
#include "cbor/deterministic.h"
#include "container/container.h"
#include "manifest/object_format.h"
#include "read/reader.h"
#include "source/http_url.h"
#include "write/writer_impl.h"

namespace zt {

using ull = unsigned long long;

namespace {

Result<void> check_options(const WriterOptions& opt) {
  ZT_FAIL_IF(opt.zstd_level < -131072 || opt.zstd_level > 22, argument,
             "zstd level %d is out of range", opt.zstd_level);
  ZT_FAIL_IF(opt.digest == DigestAlgo::crc32c || opt.digest == DigestAlgo::unknown, argument,
             "writers produce xxh3 or sha256 digests, or none");
  ZT_FAIL_IF(opt.frame_size > Limits::frame_size, argument,
             "frame size %llu is above the limit of %llu bytes (ZT_MAX_FRAME_SIZE)",
             static_cast<ull>(opt.frame_size), static_cast<ull>(Limits::frame_size));
  // 0 is honoured (auto never keeps zstd); NaN and negative ratios are not numbers a user meant.
  ZT_FAIL_IF(!(opt.auto_min_ratio >= 0) || opt.auto_min_ratio > 1e6, argument,
             "auto_min_ratio must be a number from 0 to 1e6");
  ZT_FAIL_IF(opt.file_version != 0 && opt.file_version != 2, argument,
             "file_version %u: writers produce 1.2.0 (0) or zTensor v2 (2)", opt.file_version);
  ZT_FAIL_IF(opt.file_version != 2 && opt.alignment != 0, argument,
             "alignment is a v2 option (1.2.0 blobs are 64-byte aligned)");
  ZT_FAIL_IF(opt.alignment % kAlignmentV2 != 0 || opt.alignment > (uint64_t{1} << 30), argument,
             "alignment %llu is not a multiple of 4096 up to 1 GiB",
             static_cast<ull>(opt.alignment));
  ZT_FAIL_IF(opt.canonical && opt.file_version != 2, argument,
             "canonical form is a zTensor v2 form (file_version 2)");
  ZT_FAIL_IF(opt.canonical && opt.alignment != 0 && opt.alignment != 65536, argument,
             "canonical form places blobs at 65536-byte boundaries, not %llu (v2 spec §6.3)",
             static_cast<ull>(opt.alignment));
  ZT_FAIL_IF(opt.canonical && opt.digest != DigestAlgo::xxh3, argument,
             "canonical form gives every part an xxh3 digest (v2 spec §6.3 rule 4)");
  ZT_FAIL_IF(opt.shard_bytes != 0 && opt.file_version != 2, argument,
             "shards are a zTensor v2 feature (file_version 2)");
  ZT_FAIL_IF(opt.shard_bytes != 0 && opt.canonical, argument,
             "canonical form is single-file (v2 spec §6.3 rule 6): no shard_bytes with canonical");
  ZT_FAIL_IF(opt.shard_bytes != 0 && opt.shard_bytes < 2 * (opt.alignment ? opt.alignment : 65536),
             argument, "shard_bytes %llu is below two blob alignments",
             static_cast<ull>(opt.shard_bytes));
  ZT_FAIL_IF(opt.file_version == 2 && opt.frame_size > kSeekableMaxFrameContent, argument,
             "frame size %llu: v2 zstd frames hold at most 16 MiB (zt.zstd-seekable/1)",
             static_cast<ull>(opt.frame_size));
  return {};
}

// A writer that died past the shard descriptor budget left its settled
// shards named beside the model ("<stem>-00002.zt.tmp-<pid>-<n>", up to a
// shard's size each: hundreds of GB for a model of hundreds of shards):
// the next sharded write of the model removes those of dead writers.
void remove_dead_shard_temporaries(const std::string& root) {
  const std::string first = shard_file_path(root, "00001");
  const std::string dir = directory_of(first);
  const size_t slash = first.rfind('/');
  const std::string name = first.substr(slash == std::string::npos ? 0 : slash + 1);
  const std::string_view stem = std::string_view(name).substr(0, name.size() - 8);  // "00001.zt"
  remove_dead_writers_temporaries(dir, [&](std::string_view base) {
    // <stem><5 digits>.zt, the name of a shard before its digest is known.
    if (base.size() != stem.size() + 8 || !base.starts_with(stem) || !base.ends_with(".zt"))
      return false;
    return all_decimal_digits(base.substr(stem.size(), 5));
  });
}

}  // namespace

Result<std::unique_ptr<Writer>> Writer::open(const std::string& path, const WriterOptions& opt) {
  ZT_FAIL_IF(path.empty(), argument, "the target path is empty");
  ZT_TRY(check_options(opt));
  // A sharded model's shards are found beside the name it is opened by,
  // and would be written beside the file a link leads to: a model written
  // through a link could not be read through it.
  struct stat link {};
  ZT_FAIL_IF(opt.shard_bytes && ::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode),
             argument,
             "%s: a symbolic link; a model split into shards (shard_bytes) is written at the "
             "file's own path, beside which its shards are found",
             location_for_messages(path).c_str());
  // A link at the target is followed once, here.
  auto target = output_target(path);
  ZT_TRY(target);
  if (opt.shard_bytes) remove_dead_shard_temporaries(*target);
  std::unique_ptr<Writer> w(new Writer());
  w->impl_->opt = opt;
  w->impl_->path = std::move(*target);
  ZT_TRY(w->impl_->open_file());
  return w;
}

Result<std::unique_ptr<Writer>> Writer::open_append(const std::string& path,
                                                    const WriterOptions& opt) {
  ZT_FAIL_IF(opt.file_version != 0 && opt.file_version != 2, argument,
             "file_version %u: appending keeps the file's container (zTensor v2)",
             opt.file_version);
  ZT_FAIL_IF(opt.canonical, argument,
             "canonical form has no superseded blobs: a file cannot be appended to canonically "
             "(rewrite it with zt convert instead)");
  ZT_FAIL_IF(opt.shard_bytes != 0, argument,
             "appending keeps the file whole: shard_bytes is for new models");
  WriterOptions o = opt;
  o.file_version = 2;
  ZT_FAIL_IF(path.empty(), argument, "the target path is empty");
  ZT_TRY(check_options(o));
  auto target = output_target(path);
  ZT_TRY(target);
  std::unique_ptr<Writer> w(new Writer());
  w->impl_->opt = o;
  w->impl_->path = *target;
  auto f = OutputFile::create(*target);
  ZT_TRY(f);
  w->impl_->file = std::move(*f);
  auto taken = w->impl_->take_over(*target);
  if (!taken) {
    w->impl_->discard();
    return std::move(taken).error();
  }
  return w;
}

Result<void> Writer::Impl::take_over(const std::string& source_path) {
  OpenOptions oo;
  oo.mode = Source::Mode::copy;
  auto r = Reader::open_file(source_path, oo);
  ZT_TRY(r);
  const Manifest& m = (*r)->manifest();
  ZT_FAIL_IF(m.generation != Generation::v2, unsupported,
             "%s: a zTensor %s file: append (v2 spec §2.5) works on v2 files; rewrite 1.x files "
             "with zt merge",
             source_path.c_str(), m.version.c_str());
  // A sharded root keeps its table: the parts it names stay in their shards
  // (indexes into the same table), new blobs go into the root.
  shards = m.shards;
  // The earlier bytes, unchanged: the new generation starts after them.
  const Source& src = (*r)->source();
  constexpr uint64_t kPiece = uint64_t{4} << 20;
  std::vector<uint8_t> scratch;
  for (uint64_t at = 0; at < src.size(); at += kPiece) {
    auto piece = src.bytes(at, std::min(kPiece, src.size() - at), scratch);
    ZT_TRY(piece);
    ZT_TRY(write_all(*piece));
  }
  if (m.attributes.present)
    file_attributes.assign(m.attributes.encoded.begin(), m.attributes.encoded.end());
  objects.reserve(m.objects.size());
  by_name.reserve(m.objects.size());
  for (const Object& old : m.objects) {
    Object o = old;
    if (o.attributes.present) {
      kept_attributes.emplace_back(old.attributes.encoded.begin(), old.attributes.encoded.end());
      o.attributes.encoded = kept_attributes.back();
    }
    objects.push_back(std::move(o));
    by_name.insert(static_cast<uint32_t>(objects.size() - 1), objects);
  }
  replaceable.assign(objects.size(), true);
  return {};
}

}  // namespace zt
