#include "writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>
#include <thread>
#include <unordered_set>
#include <utility>

#include "cbor_encode.h"
#include "cbor_value.h"
#include "container.h"
#include "content.h"
#include "frame_pipeline.h"
#include "manifest.h"
#include "quantized.h"
#include "validate.h"
#include "zstd_codec.h"
#include "zt_limits.h"

namespace zt {

using ull = unsigned long long;

namespace {

enum class Mode { raw, zstd, undecided };  // undecided: "auto" before its first batch

// A component as it goes into the manifest.
struct OutComponent {
  std::string role;
  DType dtype = DType::u8;
  std::optional<std::string> type;
  uint64_t offset = 0, length = 0;
  std::optional<uint64_t> uncompressed_length;
  std::string encoding = "raw";
  std::optional<std::string> digest;
};

struct OutObject {
  std::string name;
  std::string format;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> attributes;  // one encoded CBOR map, or empty
  std::vector<OutComponent> components;
};

// The component being written.
struct Pending {
  OutComponent out;
  Mode mode = Mode::raw;
  uint64_t declared = 0;  // decoded bytes announced
  uint64_t received = 0;
  uint64_t rollback_to = 0;  // file size before this component
  std::optional<Hasher> hasher;
  std::vector<uint8_t> frame;  // zstd input short of a whole frame
  bool check_bool = false;
};

bool valid_name(std::string_view s) {
  return !s.empty() && s.size() <= Limits::name_bytes && s.find('\0') == std::string_view::npos &&
         cbor::is_valid_utf8(s);
}

std::string shown(std::string_view s) { return std::string(s.substr(0, 200)); }

}  // namespace

struct Writer::Impl {
  enum class State { idle, object, component, done, failed };

  WriterOptions opt;
  std::string path, dir;
  int fd = -1;
  bool anonymous = false;  // O_TMPFILE: the file has no name until finish
  std::string tmp_path;    // named temporary file (fallback)
  uint64_t pos = 0;        // bytes written so far
  State state = State::idle;
  std::vector<uint8_t> file_attributes;
  std::vector<OutObject> objects;
  std::unordered_set<std::string> names;
  OutObject current;
  uint64_t object_start = 0;
  Pending pending;
  std::unique_ptr<FramePipeline> frames;  // made at the first zstd frame
  std::string first_failure;              // the message of the call that failed the writer

  unsigned threads() const {
    return opt.threads ? opt.threads : std::max(1u, std::thread::hardware_concurrency());
  }

  Result<void> fail_io(const char* what) {
    const Error e = make_error(Status::io, "%s: %s failed: %s", path.c_str(), what, std::strerror(errno));
    state = State::failed;
    return e;
  }

  Result<void> write_all(std::span<const uint8_t> bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return fail_io("write");
      done += static_cast<size_t>(n);
    }
    pos += bytes.size();
    return {};
  }

  Result<void> pad_to_alignment() {
    static constexpr uint8_t kZeros[kAlignment] = {};
    const uint64_t pad = (kAlignment - pos % kAlignment) % kAlignment;
    return write_all(std::span<const uint8_t>(kZeros, pad));
  }

  // Cuts the file back to `size`, dropping any frames still in flight.
  Result<void> truncate_to(uint64_t size) {
    if (frames) frames->cancel();
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0 || ::lseek(fd, static_cast<off_t>(size), SEEK_SET) < 0)
      return fail_io("truncate");
    pos = size;
    return {};
  }

  Result<void> usable() const {
    ZT_FAIL_IF(state == State::done, state, "the writer has already finished");
    ZT_FAIL_IF(state == State::failed, state, "the writer failed earlier (%s) and cannot continue",
               first_failure.empty() ? "it was aborted" : first_failure.c_str());
    return {};
  }

  // After a failure that cannot be rolled back (an exception half-way
  // through a call, say) every later call is refused, naming this one, and
  // the file is never published. No frame stays in flight, so no worker
  // reads the caller's memory after the call returns.
  Error poison(Error e) {
    if (frames) frames->cancel();
    state = State::failed;
    if (first_failure.empty()) first_failure = e.message;
    return e;
  }

  // Writes stored bytes, hashing them on the way. With a digest, a slice is
  // hashed and then written while it is still in cache (one pass over
  // memory instead of two); slices are 4 MiB because every write(2) costs
  // kernel time of its own: on a 512 MiB write with xxh3, 256 KiB slices ran
  // at 0.68 of a single write(2), 4 MiB ones at 0.83; 16 MiB and one call
  // were as fast at best but far more spread (BENCHMARKS.md). Without a
  // digest there is nothing to keep in cache: the bytes go out in one call.
  Result<void> emit_stored(std::span<const uint8_t> stored) {
    const size_t kSlice = pending.hasher ? size_t{4} << 20 : std::max<size_t>(stored.size(), 1);
    for (size_t at = 0; at < stored.size(); at += kSlice) {
      const auto slice = stored.subspan(at, std::min(kSlice, stored.size() - at));
      if (pending.hasher) pending.hasher->update(slice);
      ZT_TRY(write_all(slice));
    }
    pending.out.length += stored.size();
    return {};
  }

  uint64_t frame_size() const { return std::max<uint64_t>(opt.frame_size, 1024); }

  FramePipeline& pipeline() {
    if (!frames)
      frames = std::make_unique<FramePipeline>(threads() > 1 ? threads() : 0, opt.zstd_level);
    return *frames;
  }

  // Writes the oldest frame in flight once it is compressed. On failure
  // nothing stays in flight, so no worker reads the caller's memory after
  // the call that gave it returns.
  Result<void> write_oldest_frame() {
    auto out = frames->wait_oldest();
    Result<void> r = out ? emit_stored(*out) : Result<void>(std::move(out).error());
    if (!r) {
      frames->cancel();
      return r;
    }
    frames->pop_oldest();
    return {};
  }

  // Queues one frame, first writing frames to make room, then writing any
  // that are already done: the file grows while the workers compress.
  Result<void> submit_frame(std::span<const uint8_t> input, std::vector<uint8_t> owned = {}) {
    FramePipeline& p = pipeline();
    while (p.full()) ZT_TRY(write_oldest_frame());
    p.submit(input, std::move(owned));
    while (p.oldest_done()) ZT_TRY(write_oldest_frame());
    return {};
  }

  Result<void> drain_frames() {
    while (frames && frames->in_flight() > 0) ZT_TRY(write_oldest_frame());
    return {};
  }

  // Compresses `input` (the caller's memory) as frames of frame_size()
  // bytes and writes them all before returning.
  Result<void> emit_frames(std::span<const uint8_t> input) {
    const uint64_t fs = frame_size();
    for (uint64_t at = 0; at < input.size(); at += fs)
      ZT_TRY(submit_frame(input.subspan(at, std::min<uint64_t>(fs, input.size() - at))));
    return drain_frames();
  }

  // Queues pending.frame as an owned frame; the frames stay in flight
  // across write() calls until end_component().
  Result<void> submit_pending_frame() {
    std::vector<uint8_t> owned = std::exchange(pending.frame, pipeline().spare_buffer());
    const std::span<const uint8_t> input(owned);
    return submit_frame(input, std::move(owned));
  }

  // "auto": compress the first batch; keep zstd only if it shrinks enough.
  Result<void> decide_auto(std::span<const uint8_t> input) {
    std::vector<uint8_t> probe;
    const auto sample = input.first(std::min<uint64_t>(input.size(), frame_size()));
    ZT_TRY(zstd_compress_frame(sample, opt.zstd_level, probe));
    pending.mode = static_cast<double>(probe.size()) <= opt.auto_min_ratio * static_cast<double>(sample.size())
                       ? Mode::zstd
                       : Mode::raw;
    pending.out.encoding = pending.mode == Mode::zstd ? "zstd" : "raw";
    return {};
  }

  Result<void> accept(std::span<const uint8_t> data) {
    if (pending.check_bool) {
      const auto bad = std::find_if(data.begin(), data.end(), [](uint8_t b) { return b > 1; });
      ZT_FAIL_IF(bad != data.end(), argument, "object \"%s\": component \"%s\": bool byte 0x%02x at element %llu is neither 0 nor 1",
                 current.name.c_str(), pending.out.role.c_str(), *bad,
                 static_cast<ull>(pending.received + static_cast<uint64_t>(bad - data.begin())));
    }
    ZT_FAIL_IF(data.size() > pending.declared - pending.received, argument,
               "object \"%s\": component \"%s\": more bytes than the %llu announced", current.name.c_str(),
               pending.out.role.c_str(), static_cast<ull>(pending.declared));
    pending.received += data.size();
    if (pending.mode == Mode::undecided) ZT_TRY(decide_auto(data));
    if (pending.mode == Mode::raw) return emit_stored(data);
    // zstd. Frames start every frame_size() bytes of the component, whatever
    // the pieces and threads. A piece that fills the whole pipeline goes out
    // without a copy (and is written before this call returns); smaller
    // pieces are gathered into owned frames, which stay in flight across
    // calls so that the workers are kept busy by pieces of any size.
    const uint64_t fs = frame_size();
    const uint64_t zero_copy_min = fs * pipeline().capacity();
    while (!data.empty()) {
      if (pending.frame.empty() && data.size() >= zero_copy_min) {
        const uint64_t whole = data.size() / fs * fs;
        ZT_TRY(emit_frames(data.first(whole)));
        data = data.subspan(whole);
        continue;
      }
      // Room for this frame, but never more than the component still brings:
      // a 16 KiB component does not reserve a 256 MiB frame.
      const uint64_t coming = data.size() + (pending.declared - pending.received);
      const uint64_t want = std::min<uint64_t>(fs, pending.frame.size() + coming);
      if (pending.frame.capacity() < want) pending.frame.reserve(want);
      const uint64_t take = std::min<uint64_t>(data.size(), fs - pending.frame.size());
      pending.frame.insert(pending.frame.end(), data.begin(), data.begin() + static_cast<ptrdiff_t>(take));
      data = data.subspan(take);
      if (pending.frame.size() == fs) ZT_TRY(submit_pending_frame());
    }
    return {};
  }

  Result<void> check_names(std::string_view what, std::string_view name) const {
    ZT_FAIL_IF(!valid_name(name), argument, "%.*s name \"%s\" is empty, too long, has a NUL byte or is not UTF-8",
               static_cast<int>(what.size()), what.data(), shown(name).c_str());
    return {};
  }

  // The object being ended, as the reader's model, so the reader's rules apply.
  // The attributes view o.attributes (checked when they were set).
  Result<Object> model_of(const OutObject& o) const {
    Object m;
    m.name = o.name;
    m.format = o.format;
    m.shape = o.shape;
    if (!o.attributes.empty()) m.attributes = Attributes{true, o.attributes};
    for (const OutComponent& c : o.components) {
      Component mc;
      mc.role = c.role;
      mc.dtype = c.dtype;
      mc.type = c.type;
      mc.known_type = c.type ? find_logical_type(*c.type) : nullptr;
      mc.offset = c.offset;
      mc.length = c.length;
      mc.uncompressed_length = c.uncompressed_length;
      mc.encoding = c.encoding == "zstd" ? Encoding::zstd : Encoding::raw;
      mc.encoding_text = c.encoding;
      m.components.push_back(std::move(mc));
    }
    return m;
  }

  // Reads back and decodes one written component (sparse checks need indices).
  Result<std::vector<uint8_t>> read_back(const Component& c) const {
    std::vector<uint8_t> stored(c.length);
    size_t done = 0;
    while (done < stored.size()) {
      const ssize_t n = ::pread(fd, stored.data() + done, stored.size() - done, static_cast<off_t>(c.offset + done));
      ZT_FAIL_IF(n <= 0, io, "%s: reading back object data failed: %s", path.c_str(), std::strerror(errno));
      done += static_cast<size_t>(n);
    }
    if (c.encoding == Encoding::raw) return stored;
    std::vector<uint8_t> out(*c.uncompressed_length);
    ZT_TRY(zstd_decode_exact(stored, out, "object component"));
    return out;
  }

  Result<void> check_object_rules(const OutObject& o) const {
    auto m = model_of(o);
    ZT_TRY(m);
    ZT_TRY(validate_object(*m));
    if (o.format == "sparse_csr" || o.format == "sparse_coo") {
      for (const Component& c : m->components)
        ZT_FAIL_IF((c.role == "indices" || c.role == "indptr" || c.role == "coords") && c.dtype != DType::u64, invalid,
                   "object \"%s\": component \"%s\": sparse index components must be u64 (spec 1.2.0), not %s",
                   o.name.c_str(), c.role.c_str(), std::string(dtype_name(c.dtype)).c_str());
      std::vector<std::vector<uint8_t>> owned;
      std::vector<std::span<const uint8_t>> decoded;
      owned.reserve(m->components.size());
      for (const Component& c : m->components) {
        auto b = read_back(c);
        ZT_TRY(b);
        owned.push_back(std::move(*b));
        decoded.emplace_back(owned.back());
      }
      return check_content(false, *m, decoded);
    }
    if (o.format == "quantized_group") {
      // Without one of its parameters the object is stored as the reader
      // lists it: not dequantisable, its sizes unchecked, so that a file
      // that opens and verifies can always be copied.
      auto q = quant_layout(*m);
      if (!q && q.error().status == Status::not_found) return {};
      ZT_TRY(q);
      std::vector<uint64_t> sizes;
      for (const Component& c : m->components) sizes.push_back(*decoded_size(c));
      return check_quantized_sizes(*m, *q, sizes);
    }
    return {};
  }

  Result<void> open_file() {
    const size_t slash = path.rfind('/');
    dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
#ifdef O_TMPFILE
    fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0666);
    anonymous = fd >= 0;
#endif
    if (fd < 0) {
      tmp_path = path + ".tmp-XXXXXX";
      fd = ::mkostemp(tmp_path.data(), O_CLOEXEC);
      if (fd < 0) return fail_io("creating a temporary file beside the target");
      // mkostemp creates 0600; the published file gets the usual 0666 & ~umask.
      const mode_t mask = ::umask(0);
      ::umask(mask);
      ::fchmod(fd, 0666 & ~mask);
    }
    return write_all(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(kMagicV1), 8));
  }

  void discard() {
    if (fd >= 0) ::close(fd);
    fd = -1;
    if (!tmp_path.empty()) ::unlink(tmp_path.c_str());
    tmp_path.clear();
  }

  std::vector<uint8_t> encode_manifest() const {
    CborWriter w;
    w.map(file_attributes.empty() ? 2 : 3);
    w.text("version");
    w.text("1.2.0");
    if (!file_attributes.empty()) {
      w.text("attributes");
      w.raw(file_attributes);
    }
    w.text("objects");
    w.map(objects.size());
    for (const OutObject& o : objects) {
      w.text(o.name);
      w.map(o.attributes.empty() ? 3 : 4);
      w.text("shape");
      w.array(o.shape.size());
      for (const uint64_t d : o.shape) w.uint(d);
      w.text("format");
      w.text(o.format);
      if (!o.attributes.empty()) {
        w.text("attributes");
        w.raw(o.attributes);
      }
      w.text("components");
      w.map(o.components.size());
      for (const OutComponent& c : o.components) {
        w.text(c.role);
        w.map(3 + (c.type ? 1 : 0) + (c.uncompressed_length ? 1 : 0) + (c.encoding != "raw" ? 1 : 0) +
              (c.digest ? 1 : 0));
        w.text("dtype");
        w.text(dtype_name(c.dtype));
        if (c.type) {
          w.text("type");
          w.text(*c.type);
        }
        w.text("offset");
        w.uint(c.offset);
        w.text("length");
        w.uint(c.length);
        if (c.uncompressed_length) {
          w.text("uncompressed_length");
          w.uint(*c.uncompressed_length);
        }
        if (c.encoding != "raw") {
          w.text("encoding");
          w.text(c.encoding);
        }
        if (c.digest) {
          w.text("digest");
          w.text(*c.digest);
        }
      }
    }
    return w.take();
  }

  Result<void> publish() {
    if (::fsync(fd) != 0) return fail_io("fsync");
    if (anonymous) {
      // Give the unnamed file a temporary name, then rename it over the target.
      char proc[64];
      std::snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
      for (int attempt = 0; attempt < 100 && tmp_path.empty(); ++attempt) {
        std::string name = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(attempt);
        if (::linkat(AT_FDCWD, proc, AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) == 0) tmp_path = std::move(name);
        else if (errno != EEXIST) return fail_io("linking the temporary file");
      }
      if (tmp_path.empty()) return fail_io("naming the temporary file");
    }
    if (::rename(tmp_path.c_str(), path.c_str()) != 0) return fail_io("rename onto the target");
    tmp_path.clear();
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
    return {};
  }
};

Writer::Writer() : impl_(std::make_unique<Impl>()) {}

Writer::~Writer() {
  if (impl_) impl_->discard();
}

namespace {

// Every public call runs through here: a call either succeeds, fails and
// leaves the writer as it was (the calls roll their own work back), or
// poisons the writer. An exception (std::bad_alloc from a frame buffer, a
// thread that cannot start) poisons it: the bytes it had counted may not
// have been written, so nothing after it may be published.
template <typename Call>
Result<void> guarded(Writer::Impl& s, Call&& call) noexcept {
  try {
    Result<void> r = call();
    if (!r && s.state == Writer::Impl::State::failed && s.first_failure.empty()) s.first_failure = r.error().message;
    return r;
  } catch (const std::bad_alloc&) {
    return s.poison(make_error(Status::nomem, "%s: out of memory", s.path.c_str()));
  } catch (const std::length_error&) {
    return s.poison(make_error(Status::nomem, "%s: out of memory", s.path.c_str()));
  } catch (const std::exception& e) {
    return s.poison(make_error(Status::io, "%s: %s", s.path.c_str(), e.what()));
  }
}

}  // namespace

Result<std::unique_ptr<Writer>> Writer::open(const std::string& path, const WriterOptions& opt) {
  ZT_FAIL_IF(path.empty(), argument, "the target path is empty");
  ZT_FAIL_IF(opt.zstd_level < -131072 || opt.zstd_level > 22, argument, "zstd level %d is out of range",
             opt.zstd_level);
  ZT_FAIL_IF(opt.digest == DigestAlgo::crc32c || opt.digest == DigestAlgo::unknown, argument,
             "writers produce xxh3 or sha256 digests, or none");
  ZT_FAIL_IF(opt.frame_size > Limits::frame_size, argument,
             "frame size %llu is above the limit of %llu bytes (ZT_MAX_FRAME_SIZE)",
             static_cast<ull>(opt.frame_size), static_cast<ull>(Limits::frame_size));
  // 0 is honoured (auto never keeps zstd); NaN and negative ratios are not numbers a user meant.
  ZT_FAIL_IF(!(opt.auto_min_ratio >= 0) || opt.auto_min_ratio > 1e6, argument,
             "auto_min_ratio must be a number from 0 to 1e6");
  std::unique_ptr<Writer> w(new Writer());
  w->impl_->opt = opt;
  w->impl_->path = path;
  ZT_TRY(w->impl_->open_file());
  return w;
}

Result<void> Writer::set_file_attributes_json(std::string_view json) {
  return guarded(*impl_, [&]() -> Result<void> {
    ZT_TRY(impl_->usable());
    // The manifest root holds file attributes at CBOR depth 2.
    auto cbor = json_object_to_cbor(json, Limits::cbor_depth - 1);
    ZT_TRY(cbor);
    impl_->file_attributes = std::move(*cbor);
    return {};
  });
}

Result<void> Writer::set_file_attributes_cbor(std::span<const uint8_t> cbor) {
  return guarded(*impl_, [&]() -> Result<void> {
    ZT_TRY(impl_->usable());
    ZT_TRY(check_attribute_map(cbor, Limits::cbor_depth - 1));
    impl_->file_attributes.assign(cbor.begin(), cbor.end());
    return {};
  });
}

Result<void> Writer::begin_object(std::string_view name, std::string_view format, std::span<const uint64_t> shape) {
  return guarded(*impl_, [&]() -> Result<void> {
    Impl& s = *impl_;
    ZT_TRY(s.usable());
    ZT_FAIL_IF(s.state != Impl::State::idle, state, "an object is already begun (\"%s\"): end it first",
               s.current.name.c_str());
    ZT_TRY(s.check_names("object", name));
    ZT_FAIL_IF(!valid_name(format), argument, "object \"%s\": format \"%s\" is not valid text", shown(name).c_str(),
               shown(format).c_str());
    ZT_FAIL_IF(shape.size() > Limits::rank, argument, "object \"%s\": %zu dimensions, more than the limit %u",
               shown(name).c_str(), shape.size(), Limits::rank);
    ZT_FAIL_IF(s.names.count(std::string(name)), argument, "duplicate object name \"%s\"", shown(name).c_str());
    ZT_FAIL_IF(s.objects.size() >= Limits::objects, limit, "more than %llu objects",
               static_cast<ull>(Limits::objects));
    s.current = OutObject{std::string(name), std::string(format), {shape.begin(), shape.end()}, {}, {}};
    s.object_start = s.pos;
    s.state = Impl::State::object;
    return {};
  });
}

Result<void> Writer::set_object_attributes_json(std::string_view json) {
  return guarded(*impl_, [&]() -> Result<void> {
    Impl& s = *impl_;
    ZT_TRY(s.usable());
    ZT_FAIL_IF(s.state != Impl::State::object, state, "no object is begun: call zt_writer_begin_object first");
    // root -> objects -> object -> attributes: object attributes sit at depth 4.
    auto cbor = json_object_to_cbor(json, Limits::cbor_depth - 3);
    ZT_TRY(cbor);
    s.current.attributes = std::move(*cbor);
    return {};
  });
}

Result<void> Writer::set_object_attributes_cbor(std::span<const uint8_t> cbor) {
  return guarded(*impl_, [&]() -> Result<void> {
    Impl& s = *impl_;
    ZT_TRY(s.usable());
    ZT_FAIL_IF(s.state != Impl::State::object, state, "no object is begun: call zt_writer_begin_object first");
    ZT_TRY(check_attribute_map(cbor, Limits::cbor_depth - 3));
    s.current.attributes.assign(cbor.begin(), cbor.end());
    return {};
  });
}

Result<void> Writer::begin_component(std::string_view role, std::string_view dtype,
                                     std::optional<std::string_view> type, std::string_view encoding,
                                     uint64_t decoded_size) {
  return guarded(*impl_, [&]() -> Result<void> {
    Impl& s = *impl_;
    ZT_TRY(s.usable());
    ZT_FAIL_IF(s.state == Impl::State::component, state, "component \"%s\" is still open: end it first",
               s.pending.out.role.c_str());
    ZT_FAIL_IF(s.state != Impl::State::object, state, "no object is begun: call zt_writer_begin_object first");
    const std::string& obj = s.current.name;
    ZT_TRY(s.check_names("component", role));
    for (const auto& c : s.current.components)
      ZT_FAIL_IF(c.role == role, argument, "object \"%s\": duplicate component \"%s\"", obj.c_str(), shown(role).c_str());
    ZT_FAIL_IF(s.current.components.size() >= Limits::components, limit, "object \"%s\": too many components",
               obj.c_str());
    const auto dt = dtype_from_name(dtype);
    ZT_FAIL_IF(!dt, argument, "object \"%s\": component \"%s\": unknown dtype \"%s\"", obj.c_str(), shown(role).c_str(),
               shown(dtype).c_str());
    const LogicalType* lt = type ? find_logical_type(*type) : nullptr;
    if (type) {
      ZT_FAIL_IF(!valid_name(*type), argument, "object \"%s\": component \"%s\": type is not valid text", obj.c_str(),
                 shown(role).c_str());
      ZT_FAIL_IF(lt && lt->storage != *dt, argument, "object \"%s\": component \"%s\": type \"%s\" needs dtype \"%s\", not \"%s\"",
                 obj.c_str(), shown(role).c_str(), shown(*type).c_str(), std::string(dtype_name(lt->storage)).c_str(),
                 shown(dtype).c_str());
    }
    Mode mode;
    if (encoding == "raw") mode = Mode::raw;
    else if (encoding == "zstd") mode = Mode::zstd;
    else if (encoding == "auto") mode = Mode::undecided;
    else
      return make_error(Status::argument, "object \"%s\": component \"%s\": unknown encoding \"%s\" (raw, zstd or auto)",
                        obj.c_str(), shown(role).c_str(), shown(encoding).c_str());
    const unsigned unit = dtype_width(*dt) * (lt ? lt->ratio : 1);
    ZT_FAIL_IF(decoded_size % unit != 0, argument,
               "object \"%s\": component \"%s\": %llu bytes is not a whole number of %u-byte elements", obj.c_str(),
               shown(role).c_str(), static_cast<ull>(decoded_size), unit);
    if (s.current.format == "dense" && role == "data" && (!type || lt)) {
      const auto n = shape_product(s.current.shape);
      const auto want = n ? checked_mul(*n, unit) : std::nullopt;
      ZT_FAIL_IF(!want, argument, "object \"%s\": the shape's byte size overflows 64 bits", obj.c_str());
      ZT_FAIL_IF(*want != decoded_size, argument,
                 "object \"%s\": component \"data\": %llu bytes given, shape x %u bytes needs %llu", obj.c_str(),
                 static_cast<ull>(decoded_size), unit, static_cast<ull>(*want));
    }
    Pending p;
    p.out.role = std::string(role);
    p.out.dtype = *dt;
    if (type) p.out.type = std::string(*type);
    p.mode = mode;
    p.out.encoding = mode == Mode::zstd ? "zstd" : "raw";
    p.declared = decoded_size;
    p.rollback_to = s.pos;
    p.check_bool = *dt == DType::boolean;
    if (s.opt.digest != DigestAlgo::none) p.hasher.emplace(s.opt.digest);
    // Zero-length raw components take no bytes; zstd ones hold one empty frame.
    if (decoded_size > 0 || mode == Mode::zstd) ZT_TRY(s.pad_to_alignment());
    p.out.offset = (s.pos + kAlignment - 1) / kAlignment * kAlignment;
    s.pending = std::move(p);
    s.state = Impl::State::component;
    return {};
  });
}

Result<void> Writer::write(std::span<const uint8_t> data) {
  return guarded(*impl_, [&]() -> Result<void> {
    Impl& s = *impl_;
    ZT_TRY(s.usable());
    ZT_FAIL_IF(s.state != Impl::State::component, state, "no component is begun: call zt_writer_begin_component first");
    auto r = s.accept(data);
    if (!r && s.state != Impl::State::failed) {
      // A refused piece drops the whole component: nothing half-written stays.
      ZT_TRY(s.truncate_to(s.pending.rollback_to));
      s.state = Impl::State::object;
    }
    return r;
  });
}

Result<void> Writer::end_component() {
  return guarded(*impl_, [&]() -> Result<void> {
    Impl& s = *impl_;
    ZT_TRY(s.usable());
    ZT_FAIL_IF(s.state != Impl::State::component, state, "no component is begun");
    Pending& p = s.pending;
    if (p.received != p.declared) {
      ZT_TRY(s.truncate_to(p.rollback_to));
      s.state = Impl::State::object;
      return make_error(Status::invalid, "object \"%s\": component \"%s\": %llu bytes written, %llu announced",
                        s.current.name.c_str(), p.out.role.c_str(), static_cast<ull>(p.received),
                        static_cast<ull>(p.declared));
    }
    if (p.mode == Mode::undecided) p.mode = Mode::raw, p.out.encoding = "raw";  // nothing was written
    if (p.mode == Mode::zstd) {
      if (!p.frame.empty()) ZT_TRY(s.submit_pending_frame());
      ZT_TRY(s.drain_frames());
      if (p.declared == 0) {
        std::vector<uint8_t> empty_frame;
        ZT_TRY(zstd_compress_frame(std::span<const uint8_t>(), s.opt.zstd_level, empty_frame));
        ZT_TRY(s.emit_stored(empty_frame));
      }
      p.out.uncompressed_length = p.declared;
    }
    if (p.out.length == 0) p.out.offset = (p.rollback_to + kAlignment - 1) / kAlignment * kAlignment;
    if (p.hasher) p.out.digest = std::string(digest_algo_name(p.hasher->algo())) + ":" + p.hasher->finish_hex();
    s.current.components.push_back(std::move(p.out));
    s.pending = Pending{};
    s.state = Impl::State::object;
    return {};
  });
}

Result<void> Writer::add_component(std::string_view role, std::string_view dtype, std::optional<std::string_view> type,
                                   std::span<const uint8_t> data, std::string_view encoding) {
  return guarded(*impl_, [&]() -> Result<void> {
    ZT_TRY(begin_component(role, dtype, type, encoding, data.size()));
    ZT_TRY(write(data));
    return end_component();
  });
}

Result<void> Writer::end_object() {
  return guarded(*impl_, [&]() -> Result<void> {
    Impl& s = *impl_;
    ZT_TRY(s.usable());
    ZT_FAIL_IF(s.state == Impl::State::component, state, "component \"%s\" is still open: end it first",
               s.pending.out.role.c_str());
    ZT_FAIL_IF(s.state != Impl::State::object, state, "no object is begun");
    auto rules = s.check_object_rules(s.current);
    if (!rules) {
      // The object is dropped whole: its bytes are cut off the file again.
      ZT_TRY(s.truncate_to(s.object_start));
      s.state = Impl::State::idle;
      return rules;
    }
    s.names.insert(s.current.name);
    s.objects.push_back(std::move(s.current));
    s.current = OutObject{};
    s.state = Impl::State::idle;
    return {};
  });
}

Result<void> Writer::cancel_object() {
  return guarded(*impl_, [&]() -> Result<void> {
    Impl& s = *impl_;
    ZT_TRY(s.usable());
    ZT_FAIL_IF(s.state != Impl::State::object && s.state != Impl::State::component, state, "no object is begun");
    ZT_TRY(s.truncate_to(s.object_start));
    s.current = OutObject{};
    s.pending = Pending{};
    s.state = Impl::State::idle;
    return {};
  });
}

Result<void> Writer::add_dense(std::string_view name, std::string_view dtype, std::span<const uint64_t> shape,
                               std::span<const uint8_t> data, std::string_view encoding) {
  return guarded(*impl_, [&]() -> Result<void> {
    ZT_TRY(impl_->usable());
    ZT_FAIL_IF(impl_->state != Impl::State::idle, state, "an object is begun (\"%s\"): end it first",
               impl_->current.name.c_str());
    ZT_TRY(begin_object(name, "dense", shape));
    auto r = add_component("data", dtype, std::nullopt, data, encoding);
    if (!r) {
      if (impl_->state == Impl::State::object) {
        ZT_TRY(impl_->truncate_to(impl_->object_start));
        impl_->state = Impl::State::idle;
      }
      return r;
    }
    return end_object();
  });
}

Result<void> Writer::finish() {
  return guarded(*impl_, [&]() -> Result<void> {
    Impl& s = *impl_;
    ZT_TRY(s.usable());
    if (s.state != Impl::State::idle) {
      s.discard();
      s.state = Impl::State::failed;
      return make_error(Status::state, "object \"%s\" is still open: the file was not written", s.current.name.c_str());
    }
    const std::vector<uint8_t> manifest = s.encode_manifest();
    uint8_t trailer[16];
    uint64_t n = manifest.size();
    for (int i = 0; i < 8; ++i, n >>= 8) trailer[i] = static_cast<uint8_t>(n & 0xFF);
    std::memcpy(trailer + 8, kMagicV1, 8);
    auto r = s.write_all(manifest);
    if (r) r = s.write_all(trailer);
    if (r) r = s.publish();
    s.discard();
    s.state = r ? Impl::State::done : Impl::State::failed;
    return r;
  });
}

void Writer::abort() {
  impl_->discard();
  impl_->state = Impl::State::failed;
}

}  // namespace zt
