// Finishing a writer: the manifest (1.2.0 with its 16-byte trailer, or v2
// as an aligned blob and its 40-byte footer), then publication: one file
// renamed over the target, or a sharded model under fresh shard names whose
// root's rename switches models (old shards removed after it).
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/zt_limits.h"
#include "cbor/cbor_encode.h"
#include "cbor/cbor_item.h"
#include "cbor/deterministic.h"
#include "container/container.h"
#include "manifest/object_format.h"
#include "read/reader.h"
#include "write/writer_impl.h"

namespace zt {

using ull = unsigned long long;

Result<void> Writer::finish() {
  return guarded(*impl_, [&]() -> Result<void> {
    Impl& s = *impl_;
    ZT_TRY(s.usable());
    if (s.state != Impl::State::idle) {
      s.discard();
      s.state = Impl::State::failed;
      return make_error(Status::state, "object \"%s\" is still open: the file was not written",
                        s.current.name.c_str());
    }
    Result<void> r = s.sharded() ? s.finish_sharded() : s.finish_whole();
    s.discard();
    s.state = r ? Impl::State::done : Impl::State::failed;
    return r;
  });
}

Result<void> Writer::Impl::write_manifest() {
  if (gen().aligned_manifest) ZT_TRY(pad_to_alignment());
  const auto bytes = gen().manifest_and_footer(file_attributes, objects, shards, pos);
  // Never publish what zt_open refuses: a manifest over the readers' limit
  // (ZT_MAX_MANIFEST_BYTES; counted with its footer, a few bytes more).
  ZT_FAIL_IF(bytes.size() > Limits::manifest_bytes, limit,
             "the manifest of %zu objects takes %zu bytes, more than the limit of %llu that "
             "readers hold a manifest to (ZT_MAX_MANIFEST_BYTES)",
             objects.size(), bytes.size(), static_cast<unsigned long long>(Limits::manifest_bytes));
  // Nor one of more items than readers decode (ZT_MAX_CBOR_ITEMS): each
  // attribute map is held to it when set, but not their sum. An item takes
  // a byte at least, so only a manifest of more bytes than the limit walks.
  if (bytes.size() > Limits::cbor_items) {
    auto items = cbor::item_count(bytes);
    ZT_TRY(items);
    ZT_FAIL_IF(*items > Limits::cbor_items, limit,
               "the manifest of %zu objects holds %llu CBOR items, more than the limit of %llu "
               "that readers hold a manifest to (ZT_MAX_CBOR_ITEMS)",
               objects.size(), static_cast<unsigned long long>(*items),
               static_cast<unsigned long long>(Limits::cbor_items));
  }
  return write_all(bytes);
}

namespace {

// Whether the file at `path` may be a sharded v2 root: a v2 file whose
// manifest (located and hashed as zt_open does) has a "shards" entry. The
// common case, a 1.x file or an unsharded v2 one rewritten in place, is
// told without decoding its objects: a full open of a file of 20,000
// objects cost a third of writing them again.
bool may_name_shards(const std::string& path) {
  auto src = Source::open_file(path, Source::Mode::copy);
  uint8_t head[sizeof kMagicV2];
  if (!src || src->size() < sizeof head || !src->read_into(0, head) ||
      std::memcmp(head, kMagicV2, sizeof head) != 0)
    return false;
  std::vector<uint8_t> storage;
  auto at = locate_manifest(*src, storage);
  if (!at) return false;
  auto shards = cbor::find_entry(at->manifest, "shards");
  return shards && shards->has_value();
}

// The shard names of the sharded v2 root at `path`, if one is there (else
// none: a missing, foreign or unreadable file names no shards).
std::vector<Shard> shards_named_at(const std::string& path) {
  if (!may_name_shards(path)) return {};
  OpenOptions o;
  o.mode = Source::Mode::copy;
  if (auto r = Reader::open_file(path, o); r) return (*r)->manifest().shards;
  return {};
}

// Whether the old root's shard file for `now` is already in place: named
// in its table with the same size and digest, and the file there holds
// those bytes (hashed: a damaged shard is replaced by the rewrite, as
// before). It then stays as it is rather than be renamed over: a reader of
// the old model in copy mode keeps its shard, a link stays a link, mode
// and owner stay the file's.
bool already_in_place(const std::string& path, const std::vector<Shard>& old, const Shard& now) {
  const bool named = std::any_of(old.begin(), old.end(), [&](const Shard& s) {
    return s.name == now.name && s.size == now.size && s.digest == now.digest;
  });
  if (!named) return false;
  auto file = Source::open_file(shard_file_path(path, now.name), Source::Mode::copy);
  if (!file || file->size() != now.size) return false;
  Hasher h(DigestAlgo::sha256);
  std::vector<uint8_t> piece(size_t{4} << 20);
  for (uint64_t at = 0; at < now.size; at += piece.size()) {
    const auto n = static_cast<size_t>(std::min<uint64_t>(piece.size(), now.size - at));
    if (!file->read_into(at, std::span(piece).first(n))) return false;
    h.update(std::span(piece).first(n));
  }
  return "sha256:" + h.finish_hex() == now.digest;
}

void remove_files(const std::vector<std::string>& paths) {
  for (const std::string& p : paths) ::unlink(p.c_str());
}

// The shard files of the old root at `path` (its table `old`) that the
// model just published there does not name: nothing reads them any more.
void remove_stale_shards(const std::string& path, const std::vector<Shard>& old,
                         const std::vector<Shard>& now) {
  std::vector<std::string> stale;
  for (const Shard& o : old)
    if (std::none_of(now.begin(), now.end(), [&](const Shard& s) { return s.name == o.name; }))
      stale.push_back(shard_file_path(path, o.name));
  remove_files(stale);
}

}  // namespace

// One file renamed over the target. A sharded model there before loses its
// root in that rename, and its shards after it (as finish_sharded removes
// the old model's): none is left behind, unreferenced.
Result<void> Writer::Impl::finish_whole() {
  const std::vector<Shard> old_names = shards_named_at(path);
  ZT_TRY(write_manifest());
  ZT_TRY(publish());
  remove_stale_shards(path, old_names, shards);
  return {};
}

// The manifest is a blob like any other (aligned, written last), then the
// footer that points at it and carries its XXH3-64 (v2 spec §2.3).
//
// Publish last, replace whole: each shard is named after its content
// ("00001-" and 12 hex digits of its sha256), so new shards never land on
// the files an older root at the target names; the root's rename is the
// one step that switches models, and the old model's shards are removed
// only after it. A failure at any point leaves the old model as it was,
// readable and verifiable, and removes the new shards.
Result<void> Writer::Impl::finish_sharded() {
  ZT_TRY(write_all(footer_v2(0, 0, 0)));
  shard_sizes.push_back(pos);
  earlier_shards.push_back(std::move(*file));
  file.reset();
  // Each shard's identity: its size and a sha256 over its bytes, read back
  // (what was written, whatever was cut off again on the way).
  // (Settled shards were hashed as they were settled.)
  std::vector<Shard> table;
  for (size_t k = 0; k < earlier_shards.size(); ++k) {
    std::string hex;
    if (k < settled_hex.size()) {
      hex = settled_hex[k];
    } else {
      auto read = shard_sha256(k);
      ZT_TRY(read);
      hex = std::move(*read);
    }
    char name[48];
    std::snprintf(name, sizeof name, "%05zu-%.12s", k + 1, hex.c_str());
    table.push_back(Shard{name, shard_sizes[k], "sha256:" + hex});
  }
  const std::vector<Shard> old = shards_named_at(path);
  const auto is_old = [&](const std::string& n) {
    return std::any_of(old.begin(), old.end(), [&](const Shard& s) { return s.name == n; });
  };
  // New shard files, removed again unless the root is published: on a
  // failure returned and on an exception (bad_alloc) alike, so that no
  // shard of a model that never was stays behind.
  std::vector<std::string> published;
  struct RemoveUnlessKept {
    std::vector<std::string>& files;
    bool kept = false;
    ~RemoveUnlessKept() {
      if (!kept) remove_files(files);
    }
  } cleanup{published};
  const auto fail = [&](Error e) -> Result<void> {
    state = State::failed;
    return e;
  };
  for (size_t k = 0; k < earlier_shards.size(); ++k) {
    const std::string target = shard_file_path(path, table[k].name);
    if (already_in_place(path, old, table[k])) {
      earlier_shards[k].discard();
      continue;
    }
    earlier_shards[k].retarget(target);
    // New names: each takes the mode of the model it replaces (its root),
    // not the default (a 0600 model's shards were published 0644).
    earlier_shards[k].keep_like(path);
    if (auto r = earlier_shards[k].publish(); !r) return fail(std::move(r).error());
    // A shard the old root names too has the same bytes: it stays either way.
    if (!is_old(table[k].name)) published.push_back(target);
  }
  earlier_shards.clear();
  settled_hex.clear();
  auto f = OutputFile::create(path);
  if (!f) return fail(std::move(f).error());
  file = std::move(*f);
  pos = 0;
  shards = std::move(table);
  Result<void> root = write_all(gen().magic);
  if (root) root = write_manifest();
  if (root) root = publish();
  if (!root) return fail(std::move(root).error());
  cleanup.kept = true;
  remove_stale_shards(path, old, shards);
  return {};
}

}  // namespace zt
