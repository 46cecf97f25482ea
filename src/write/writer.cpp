// The writer: the public calls as a state machine (every call runs through
// one guard), the object rules at end_object, publication at finish. The
// bytes of a component go out through component_stream.cpp.
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>

#include "base/nfc.h"
#include "base/zt_limits.h"
#include "cbor/cbor_encode.h"
#include "cbor/cbor_item.h"
#include "cbor/cbor_value.h"
#include "cbor/deterministic.h"
#include "codec/zstd_codec.h"
#include "container/container.h"
#include "manifest/object_format.h"
#include "read/content.h"
#include "read/reader.h"
#include "read/validate.h"
#include "source/io.h"  // shard_descriptor_budget
#include "write/read_back.h"
#include "write/writer_impl.h"

namespace zt {

using ull = unsigned long long;

Result<void> Writer::Impl::usable() const {
  ZT_FAIL_IF(state == State::done, state, "the writer has already finished");
  ZT_FAIL_IF(state == State::failed, state, "the writer failed earlier (%s) and cannot continue",
             first_failure.empty() ? "it was aborted" : first_failure.c_str());
  return {};
}

// After a failure that cannot be rolled back (an exception half-way
// through a call, say) every later call is refused, naming this one, and
// the file is never published. No frame stays in flight, so no worker
// reads the caller's memory after the call returns.
Error Writer::Impl::poison(Error e) {
  if (frames) frames->cancel();
  state = State::failed;
  if (first_failure.empty()) first_failure = e.message;
  return e;
}

Result<void> Writer::Impl::open_file() {
  // A shard is renamed after its digest at finish: its temporary goes
  // beside the root whatever a link at "<stem>-00001.zt" names.
  auto f = sharded() ? OutputFile::create_here(shard_file_path(path, "00001"))
                     : OutputFile::create(path);
  if (!f) {
    state = State::failed;
    return std::move(f).error();
  }
  file = std::move(*f);
  return write_all(gen().magic);
}

void Writer::Impl::discard() {
  if (file) file->discard();
  for (OutputFile& f : earlier_shards) f.discard();
}

Result<void> Writer::Impl::publish() {
  auto r = file->publish();
  if (!r) state = State::failed;
  return r;
}

namespace {

bool valid_name(std::string_view s) {
  return name_fault(s) == NameFault::none;
}

}  // namespace

Result<void> check_name(std::string_view what, std::string_view name, bool v2, bool canonical) {
  ZT_FAIL_IF(!valid_name(name), argument,
             "%.*s name \"%s\" is empty, too long, has a NUL byte or is not UTF-8",
             static_cast<int>(what.size()), what.data(), shown(name).c_str());
  ZT_FAIL_IF(v2 && name.size() > kMaxNameBytesV2, argument,
             "%.*s name of %zu bytes: v2 names are at most 1024 bytes",
             static_cast<int>(what.size()), what.data(), name.size());
  // Refused rather than normalised: the file would hold another name than
  // the caller's, and nothing may change silently.
  ZT_FAIL_IF(canonical && !is_nfc(name), argument,
             "%.*s name \"%s\" is not in Unicode NFC, which canonical form requires (v2 spec "
             "§6.3 rule 5): normalise it first",
             static_cast<int>(what.size()), what.data(), shown(name).c_str());
  return {};
}

// The file that holds a written component (sparse checks read indices back).
Result<int> Writer::Impl::fd_of(const Component& c) {
  if (c.shard && *c.shard < earlier_shards.size()) return earlier_shards[*c.shard].fd();
  return file->fd();
}

Result<void> Writer::Impl::read_at(int fd, uint64_t offset, std::span<uint8_t> out) const {
  return read_back_bytes(fd, offset, out, path);
}

Result<void> Writer::Impl::drop_object() {
  for (const auto& [key, offset] : object_blobs) {
    auto [lo, hi] = blobs.equal_range(key);
    for (auto it = lo; it != hi; ++it)
      if (it->second == offset) {
        blobs.erase(it);
        break;
      }
  }
  object_blobs.clear();
  // An object that ran over into later shards takes them with it.
  while (earlier_shards.size() > object_shard) {
    file->discard();
    file = std::move(earlier_shards.back());
    earlier_shards.pop_back();
    shard_sizes.pop_back();
  }
  return truncate_to(object_start);
}

Result<void> Writer::Impl::drop_component() {
  ZT_TRY(truncate_to(pending.rollback_to));
  if (pending.opened_shard && !earlier_shards.empty()) {
    // The shard it began holds nothing else: back to the one before, its
    // footer cut off again.
    file->discard();
    file = std::move(earlier_shards.back());
    earlier_shards.pop_back();
    const uint64_t before_footer = shard_sizes.back() - kFooterBytesV2;
    shard_sizes.pop_back();
    ZT_TRY(truncate_to(before_footer));
  }
  state = State::object;
  return {};
}

Result<std::string> Writer::Impl::shard_sha256(size_t k) {
  auto fd = earlier_shards[k].fd();
  ZT_TRY(fd);
  Hasher h(DigestAlgo::sha256);
  std::vector<uint8_t> piece(size_t{4} << 20);
  for (uint64_t at = 0; at < shard_sizes[k]; at += piece.size()) {
    const auto n = static_cast<size_t>(std::min<uint64_t>(piece.size(), shard_sizes[k] - at));
    ZT_TRY(read_at(*fd, at, std::span(piece).first(n)));
    h.update(std::span(piece).first(n));
  }
  return h.finish_hex();
}

// Shards before object_shard are final: no later call reads or cuts them
// (drop_object and drop_component go back to object_shard at most).
Result<void> Writer::Impl::settle_final_shards() {
  const size_t budget = shard_descriptor_budget();
  while (earlier_shards.size() - settled_hex.size() > budget && settled_hex.size() < object_shard) {
    const size_t k = settled_hex.size();
    auto hex = shard_sha256(k);
    ZT_TRY(hex);
    ZT_TRY(earlier_shards[k].settle());
    settled_hex.push_back(std::move(*hex));
  }
  return {};
}

Result<void> Writer::Impl::next_shard() {
  ZT_TRY(write_all(footer_v2(0, 0, 0)));  // a data shard: no manifest (§7.2)
  shard_sizes.push_back(pos);
  earlier_shards.push_back(std::move(*file));
  file.reset();
  if (auto settled = settle_final_shards(); !settled) {
    state = State::failed;
    return settled;
  }
  char name[24];
  std::snprintf(name, sizeof name, "%05zu", earlier_shards.size() + 1);
  auto f = OutputFile::create_here(shard_file_path(path, name));
  if (!f) {
    state = State::failed;
    return std::move(f).error();
  }
  file = std::move(*f);
  pos = 0;
  return write_all(std::span<const uint8_t>(kMagicV2, 8));
}

Result<bool> Writer::Impl::same_bytes(uint64_t a, uint64_t b, uint64_t n) {
  auto fd = file->fd();
  ZT_TRY(fd);
  constexpr uint64_t kChunk = uint64_t{1} << 20;
  std::vector<uint8_t> x(static_cast<size_t>(std::min(n, kChunk))), y(x.size());
  for (uint64_t at = 0; at < n; at += kChunk) {
    const auto len = static_cast<size_t>(std::min(kChunk, n - at));
    ZT_TRY(read_at(*fd, a + at, std::span(x).first(len)));
    ZT_TRY(read_at(*fd, b + at, std::span(y).first(len)));
    if (std::memcmp(x.data(), y.data(), len) != 0) return false;
  }
  return true;
}

// Canonical form (v2 spec §6.3 rule 3): parts of identical bytes share one
// blob, placed at the first of them in (object, part) order, which is the
// order they arrive in. Candidates come by digest and length; a hash
// collision must never alias two tensors, so equality is confirmed on the
// bytes. Empty parts share one blob too (all empty contents are equal).
Result<void> Writer::Impl::share_identical_blob(Component& c) {
  std::string key = *c.digest;
  key += '/';
  key += std::to_string(c.length);
  auto [lo, hi] = blobs.equal_range(key);
  for (auto it = lo; it != hi; ++it) {
    auto same = same_bytes(it->second, c.offset, c.length);
    ZT_TRY(same);
    if (!*same) continue;
    ZT_TRY(truncate_to(pending.rollback_to));
    c.offset = it->second;
    return {};
  }
  blobs.emplace(key, c.offset);
  object_blobs.emplace_back(std::move(key), c.offset);
  return {};
}

// The object being ended, checked by the reader's own rules (its
// attributes were checked when they were set), then by what its format
// asks of written objects.
Result<void> Writer::Impl::check_object_rules() {
  current.attributes =
      current_attributes.empty() ? Attributes{} : Attributes{true, current_attributes};
  ZT_TRY(gen().check_object(current));
  ZT_TRY(validate_object(current));
  const ObjectFormat* f = format_of(current);
  if (!f || !f->check_written) return {};
  return f->check_written(current, [this](size_t k) -> Result<std::unique_ptr<ByteWindows>> {
    const Component& c = current.components[k];
    auto fd = fd_of(c);
    ZT_TRY(fd);
    return read_back_windows(*fd, c, component_where(current, c));
  });
}

Writer::Writer() : impl_(std::make_unique<Impl>()) {}

Writer::~Writer() {
  if (impl_) impl_->discard();
}

Result<void> Writer::begin_object(std::string_view name, std::string_view format,
                                  std::span<const uint64_t> shape) {
  return guarded(*impl_, [&]() -> Result<void> {
    Impl& s = *impl_;
    ZT_TRY(s.usable());
    ZT_FAIL_IF(s.state != Impl::State::idle, state,
               "an object is already begun (\"%s\"): end it first", s.current.name.c_str());
    ZT_TRY(check_name("object", name, s.gen().v2_vocabulary, s.opt.canonical));
    // Canonical blobs follow the (object, part) byte order, and a stream
    // cannot go back: objects must come in that order.
    ZT_FAIL_IF(s.opt.canonical && !s.objects.empty() && !(s.objects.back().name < name), argument,
               "object \"%s\" after \"%s\": canonical form takes objects in bytewise name order",
               shown(name).c_str(), shown(s.objects.back().name).c_str());
    ZT_FAIL_IF(!valid_name(format), argument, "object \"%s\": format \"%s\" is not valid text",
               shown(name).c_str(), shown(format).c_str());
    ZT_FAIL_IF(shape.size() > Limits::rank, argument,
               "object \"%s\": %zu dimensions, more than the limit %u", shown(name).c_str(),
               shape.size(), Limits::rank);
    const auto same_name = s.by_name.find(name, s.objects);
    ZT_FAIL_IF(same_name && !s.may_replace(*same_name), argument, "duplicate object name \"%s\"",
               shown(name).c_str());
    // An append's replacement takes its object's place: the count stays.
    ZT_FAIL_IF(!same_name && s.objects.size() >= Limits::objects, limit, "more than %llu objects",
               static_cast<ull>(Limits::objects));
    s.current = Object{};
    s.current.name = std::string(name);
    s.current.format = std::string(format);
    s.current.shape.assign(shape.begin(), shape.end());
    ZT_TRY(s.gen().begin_object(s.current, format));
    s.replaces = same_name;
    s.current_attributes.clear();
    s.object_start = s.pos;
    s.object_shard = s.current_shard();
    s.object_blobs.clear();
    s.state = Impl::State::object;
    return {};
  });
}

Result<void> Writer::begin_component(std::string_view role, std::string_view dtype,
                                     std::optional<std::string_view> type,
                                     std::string_view encoding, uint64_t decoded_size) {
  return guarded(*impl_, [&]() -> Result<void> {
    Impl& s = *impl_;
    ZT_TRY(s.usable());
    ZT_FAIL_IF(s.state == Impl::State::component, state,
               "component \"%s\" is still open: end it first", s.pending.out.role.c_str());
    ZT_FAIL_IF(s.state != Impl::State::object, state,
               "no object is begun: call zt_writer_begin_object first");
    const std::string& obj = s.current.name;
    ZT_TRY(check_name("component", role, s.gen().v2_vocabulary, s.opt.canonical));
    ZT_FAIL_IF(s.opt.canonical && !s.current.components.empty() &&
                   !(s.current.components.back().role < role),
               argument,
               "object \"%s\": part \"%s\" after \"%s\": canonical form takes parts in bytewise "
               "name order",
               obj.c_str(), shown(role).c_str(), s.current.components.back().role.c_str());
    for (const auto& c : s.current.components)
      ZT_FAIL_IF(c.role == role, argument, "object \"%s\": duplicate component \"%s\"", obj.c_str(),
                 shown(role).c_str());
    ZT_FAIL_IF(s.current.components.size() >= Limits::components, limit,
               "object \"%s\": too many components", obj.c_str());
    auto dt = dtype_from_name(dtype);
    ZT_FAIL_IF(!dt, argument, "object \"%s\": component \"%s\": unknown dtype \"%s\"", obj.c_str(),
               shown(role).c_str(), shown(dtype).c_str());
    ZT_TRY(s.gen().storage(s.current, role, *dt, type));
    const LogicalType* lt = type ? find_logical_type(*type, s.gen().v2_vocabulary) : nullptr;
    if (type) {
      ZT_FAIL_IF(!valid_name(*type), argument,
                 "object \"%s\": component \"%s\": type is not valid text", obj.c_str(),
                 shown(role).c_str());
      ZT_FAIL_IF(lt && lt->storage != *dt, argument,
                 "object \"%s\": component \"%s\": type \"%s\" needs dtype \"%s\", not \"%s\"",
                 obj.c_str(), shown(role).c_str(), shown(*type).c_str(),
                 std::string(dtype_name(lt->storage)).c_str(), shown(dtype).c_str());
    }
    const bool planes = encoding == "planes" || encoding == kBytePlanesEncodingId;
    ZT_FAIL_IF(s.opt.canonical && (encoding == "zstd" || planes), argument,
               "object \"%s\": component \"%s\": canonical form stores every part raw (v2 spec "
               "§6.3 rule 4)",
               obj.c_str(), shown(role).c_str());
    Mode mode;
    if (encoding == "raw" || (s.opt.canonical && encoding == "auto"))
      mode = Mode::raw;
    else if (encoding == "zstd")
      mode = Mode::zstd;
    else if (encoding == "auto")
      mode = Mode::undecided;
    else if (planes)
      mode = Mode::planes;
    else
      return make_error(
          Status::argument,
          "object \"%s\": component \"%s\": unknown encoding \"%s\" (raw, zstd, auto or "
          "planes)",
          obj.c_str(), shown(role).c_str(), shown(encoding).c_str());
    ZT_FAIL_IF(planes && !s.gen().v2_vocabulary, argument,
               "object \"%s\": component \"%s\": byte planes (%s) are a v2 encoding; this is "
               "a %s file",
               obj.c_str(), shown(role).c_str(), std::string(kBytePlanesEncodingId).c_str(),
               std::string(s.gen().name).c_str());
    const unsigned unit = dtype_width(*dt) * (lt ? lt->ratio : 1);
    ZT_FAIL_IF(
        decoded_size % unit != 0, argument,
        "object \"%s\": component \"%s\": %llu bytes is not a whole number of %u-byte elements",
        obj.c_str(), shown(role).c_str(), static_cast<ull>(decoded_size), unit);
    const ObjectFormat* format = format_of(s.current);
    if (format && format->sized_by_shape && role == format->value_role && (!type || lt)) {
      const auto n = shape_product(s.current.shape);
      const auto want = !n                   ? std::nullopt
                        : lt && lt->per_byte ? std::optional(ceil_div(*n, lt->per_byte))
                                             : checked_mul(*n, unit);
      ZT_FAIL_IF(!want, argument, "object \"%s\": the shape's byte size overflows 64 bits",
                 obj.c_str());
      ZT_FAIL_IF(*want != decoded_size, argument,
                 "object \"%s\": component \"data\": %llu bytes given, shape x %u bytes needs %llu",
                 obj.c_str(), static_cast<ull>(decoded_size), unit, static_cast<ull>(*want));
    }
    // A part that would take the shard past its size starts the next one
    // (a part larger than a whole shard gets one of its own).
    bool opened_shard = false;
    if (s.sharded() && (decoded_size > 0 || mode == Mode::zstd) && s.pos > sizeof kMagicV2) {
      const uint64_t start = (s.pos + s.alignment() - 1) / s.alignment() * s.alignment();
      if (start + decoded_size + kFooterBytesV2 > s.opt.shard_bytes) {
        ZT_TRY(s.next_shard());
        opened_shard = true;
      }
    }
    Pending p;
    p.opened_shard = opened_shard;
    p.out.role = std::string(role);
    if (s.sharded()) p.out.shard = static_cast<uint32_t>(s.current_shard());
    p.out.dtype = *dt;
    if (type) p.out.type = std::string(*type);
    p.out.known_type = lt;
    p.mode = mode;
    p.out.encoding = mode == Mode::zstd     ? Encoding::zstd
                     : mode == Mode::planes ? Encoding::byte_planes
                                            : Encoding::raw;
    if (mode == Mode::planes) p.planes.emplace(planes_choice(*dt, lt).layout, s.opt.zstd_level);
    p.declared = decoded_size;
    p.rollback_to = s.pos;
    p.check_bool = *dt == DType::boolean || (lt && lt->name == "bool");
    if (s.opt.digest != DigestAlgo::none) p.hasher.emplace(s.opt.digest);
    // Zero-length raw components take no bytes; zstd ones hold one empty
    // frame, byte planes their footer.
    if (decoded_size > 0 || mode == Mode::zstd || mode == Mode::planes)
      ZT_TRY(s.pad_to_alignment());
    p.out.offset = (s.pos + s.alignment() - 1) / s.alignment() * s.alignment();
    s.pending = std::move(p);
    s.state = Impl::State::component;
    return {};
  });
}

Result<void> Writer::write(std::span<const uint8_t> data) {
  return guarded(*impl_, [&]() -> Result<void> {
    Impl& s = *impl_;
    ZT_TRY(s.usable());
    ZT_FAIL_IF(s.state != Impl::State::component, state,
               "no component is begun: call zt_writer_begin_component first");
    auto r = s.accept(data);
    if (!r && s.state != Impl::State::failed) {
      // A refused piece drops the whole component: nothing half-written stays.
      ZT_TRY(s.drop_component());
    }
    return r;
  });
}

Result<void> Writer::Impl::end_stream() {
  Pending& p = pending;
  if (p.mode == Mode::planes) {
    if (!p.frame.empty()) ZT_TRY(submit_pending_frame());
    ZT_TRY(drain_frames());
    std::vector<uint8_t> tail;
    p.planes->finish(tail);
    ZT_TRY(emit_stored(tail));
    p.frame.clear();
    p.out.encoding_id = std::string(kBytePlanesEncodingId);
    p.out.encoding_text = std::string(kBytePlanesEncodingId);
    p.out.uncompressed_length = p.declared;
  }
  if (p.mode == Mode::zstd) {
    if (!p.frame.empty()) ZT_TRY(submit_pending_frame());
    ZT_TRY(drain_frames());
    auto tail = gen().zstd_end(p.out, p.seek, p.declared, opt.zstd_level);
    ZT_TRY(tail);
    ZT_TRY(emit_stored(*tail));
    p.out.uncompressed_length = p.declared;
  }
  return {};
}

Result<void> Writer::end_component() {
  return guarded(*impl_, [&]() -> Result<void> {
    Impl& s = *impl_;
    ZT_TRY(s.usable());
    ZT_FAIL_IF(s.state != Impl::State::component, state, "no component is begun");
    Pending& p = s.pending;
    if (p.received != p.declared) {
      ZT_TRY(s.drop_component());
      return make_error(Status::invalid,
                        "object \"%s\": component \"%s\": %llu bytes written, %llu announced",
                        s.current.name.c_str(), p.out.role.c_str(), static_cast<ull>(p.received),
                        static_cast<ull>(p.declared));
    }
    if (p.mode == Mode::undecided)
      p.mode = Mode::raw, p.out.encoding = Encoding::raw;  // nothing was written
    // The stream's last frames and tail. A failure there (zstd out of
    // memory, say) drops the component as a refused write does: a retried
    // end_component must not keep frames that never all came.
    if (auto ended = s.end_stream(); !ended) {
      if (s.state != Impl::State::failed) ZT_TRY(s.drop_component());
      return ended;
    }
    // After the frames are drained: nothing is in flight when it rolls back.
    if (const auto n = packed_value_count(s.current, p.out); n && p.declared > 0) {
      if (auto tail = check_f4_tail(s.current, p.out, *n, p.last); !tail) {
        ZT_TRY(s.drop_component());
        return make_error(Status::argument, "%s", tail.error().message.c_str());
      }
    }
    if (p.out.length == 0)
      p.out.offset = (p.rollback_to + s.alignment() - 1) / s.alignment() * s.alignment();
    if (p.out.length == 0 && s.sharded()) {
      // No bytes, no shard: an empty blob in the root, at its manifest.
      p.out.shard.reset();
      p.out.offset = s.alignment();
    }
    if (p.hasher)
      p.out.digest = std::string(digest_algo_name(p.hasher->algo())) + ":" + p.hasher->finish_hex();
    if (s.opt.canonical)
      if (auto shared = s.share_identical_blob(p.out); !shared)
        return s.poison(std::move(shared).error());
    s.current.components.push_back(std::move(p.out));
    s.pending = Pending{};
    s.state = Impl::State::object;
    return {};
  });
}

Result<void> Writer::add_component(std::string_view role, std::string_view dtype,
                                   std::optional<std::string_view> type,
                                   std::span<const uint8_t> data, std::string_view encoding) {
  return guarded(*impl_, [&]() -> Result<void> {
    ZT_TRY(begin_component(role, dtype, type, encoding, data.size()));
    ZT_TRY(write(data));
    return end_component();
  });
}

Result<void> Writer::end_shard() {
  return guarded(*impl_, [&]() -> Result<void> {
    Impl& s = *impl_;
    ZT_TRY(s.usable());
    ZT_FAIL_IF(!s.sharded(), argument, "end_shard: the writer is not sharded (shard_bytes 0)");
    ZT_FAIL_IF(s.state != Impl::State::idle, state,
               "end_shard: between objects only (object \"%s\" is open)", s.current.name.c_str());
    if (s.pos > sizeof kMagicV2) ZT_TRY(s.next_shard());
    return {};
  });
}

Result<void> Writer::end_object() {
  return guarded(*impl_, [&]() -> Result<void> {
    Impl& s = *impl_;
    ZT_TRY(s.usable());
    ZT_FAIL_IF(s.state == Impl::State::component, state,
               "component \"%s\" is still open: end it first", s.pending.out.role.c_str());
    ZT_FAIL_IF(s.state != Impl::State::object, state, "no object is begun");
    auto rules = s.check_object_rules();
    if (!rules) {
      // The object is dropped whole: its bytes are cut off the file again.
      ZT_TRY(s.drop_object());
      s.state = Impl::State::idle;
      return rules;
    }
    if (s.current.attributes.present) {
      s.kept_attributes.push_back(std::move(s.current_attributes));
      s.current.attributes.encoded = s.kept_attributes.back();
    }
    if (const auto old = s.replaces) {
      // Append: the new object supersedes the file's own of that name, in
      // its place (a v2 manifest lists objects by name, not by position);
      // the old blobs stay in the file, unreferenced (v2 spec §2.5).
      s.replaceable[*old] = false;
      s.objects[*old] = std::move(s.current);
    } else {
      s.objects.push_back(std::move(s.current));
      s.by_name.insert(static_cast<uint32_t>(s.objects.size() - 1), s.objects);
    }
    s.object_blobs.clear();
    s.current = Object{};
    s.current_attributes.clear();
    s.state = Impl::State::idle;
    return {};
  });
}

Result<void> Writer::cancel_object() {
  return guarded(*impl_, [&]() -> Result<void> {
    Impl& s = *impl_;
    ZT_TRY(s.usable());
    ZT_FAIL_IF(s.state != Impl::State::object && s.state != Impl::State::component, state,
               "no object is begun");
    ZT_TRY(s.drop_object());
    s.current = Object{};
    s.current_attributes.clear();
    s.pending = Pending{};
    s.state = Impl::State::idle;
    return {};
  });
}

Result<void> Writer::add_dense(std::string_view name, std::string_view dtype,
                               std::span<const uint64_t> shape, std::span<const uint8_t> data,
                               std::string_view encoding) {
  return guarded(*impl_, [&]() -> Result<void> {
    ZT_TRY(impl_->usable());
    ZT_FAIL_IF(impl_->state != Impl::State::idle, state,
               "an object is begun (\"%s\"): end it first", impl_->current.name.c_str());
    ZT_TRY(begin_object(name, kDenseFormat.name, shape));
    auto r = add_component("data", dtype, std::nullopt, data, encoding);
    if (!r) {
      if (impl_->state == Impl::State::object) {
        ZT_TRY(impl_->drop_object());
        impl_->state = Impl::State::idle;
      }
      return r;
    }
    return end_object();
  });
}

bool Writer::writes_v2() const {
  return impl_->gen().v2_vocabulary;
}

void Writer::abort() {
  impl_->discard();
  impl_->state = Impl::State::failed;
}

}  // namespace zt
