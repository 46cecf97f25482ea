// zt_open_source: a caller's callbacks as a RangeSource.
#include <algorithm>
#include <mutex>
#include <optional>

#include "capi_internal.h"
#include "source/http_source.h"
#include "source/range_source.h"

using namespace zt::capi;

namespace {

using ull = unsigned long long;

// A callback's failure becomes the reader's status; one this library does
// not know (or ZT_OK where a failure was meant) reads as ZT_ERR_IO.
zt::Status as_status(zt_status s) {
  return s > ZT_OK && s <= ZT_ERR_NOMEM ? static_cast<zt::Status>(s) : zt::Status::io;
}

// Owns the caller's ctx from the open on: `close` runs once, when the last
// Reader (and cache) holding it goes away.
class CallbackSource final : public zt::RangeSource {
 public:
  explicit CallbackSource(const zt_source& s)
      : src_(s),
        // A name that is a URL is shown as every URL is: without the user
        // info and query where credentials travel.
        name_(s.name ? zt::location_for_messages(s.name) : "source"),
        serial_(!(s.flags & ZT_SOURCE_CONCURRENT)) {}
  ~CallbackSource() override {
    if (src_.close) src_.close(src_.ctx);
  }
  CallbackSource(const CallbackSource&) = delete;
  CallbackSource& operator=(const CallbackSource&) = delete;

  zt::Result<void> query_size() {
    uint64_t n = 0;
    const zt_status st = src_.size(src_.ctx, &n);
    if (st != ZT_OK)
      return zt::Error{as_status(st), name_ + ": the size callback returned " + zt_status_name(st)};
    size_ = n;
    return {};
  }

  uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }

  zt::Result<void> read(uint64_t off, std::span<uint8_t> dst) const override {
    std::optional<std::lock_guard<std::mutex>> lock;
    if (serial_) lock.emplace(mu_);
    size_t done = 0;
    while (done < dst.size()) {
      size_t got = 0;
      const zt_status st =
          src_.read_at(src_.ctx, off + done, dst.size() - done, dst.data() + done, &got);
      if (st != ZT_OK)
        return zt::make_error(as_status(st), "%s: read_at(%llu, %zu) returned %s", name_.c_str(),
                              static_cast<ull>(off + done), dst.size() - done, zt_status_name(st));
      ZT_FAIL_IF(got > dst.size() - done, io, "%s: read_at(%llu, %zu) says it read %zu bytes",
                 name_.c_str(), static_cast<ull>(off + done), dst.size() - done, got);
      ZT_FAIL_IF(got == 0, io,
                 "%s: the data ended at %llu, before the %llu bytes the size callback gave",
                 name_.c_str(), static_cast<ull>(off + done), static_cast<ull>(size_));
      done += got;
    }
    return {};
  }

 private:
  zt_source src_;
  std::string name_;
  bool serial_;
  uint64_t size_ = 0;
  mutable std::mutex mu_;
};

}  // namespace

extern "C" {

void zt_source_init_sized(zt_source* src, size_t size) {
  init_sized(src, size, zt_source{});
}

zt_status zt_open_source(const zt_source* src, const zt_open_options* opt, zt_reader** out) {
  return guard([&]() -> zt_status {
    if (!src) return fail(ZT_ERR_ARGUMENT, "src is NULL");
    // From here on `close` runs exactly once, whatever happens: the
    // CallbackSource owns ctx.
    zt_source copy{};
    std::memcpy(&copy, src, std::min<size_t>(sizeof copy, src->struct_size));
    const bool sized = src->struct_size >= sizeof(uint32_t) && src->struct_size <= sizeof copy &&
                       ZT_HAS_FIELD(src, close);
    if (!sized)
      return fail(ZT_ERR_ARGUMENT,
                  "zt_source.struct_size is not one this library knows (use zt_source_init)");
    if (!ZT_HAS_FIELD(src, name)) copy.name = nullptr;
    auto cb = std::make_shared<CallbackSource>(copy);
    if (!out) return fail(ZT_ERR_ARGUMENT, "out is NULL");
    if (!copy.read_at || !copy.size)
      return fail(ZT_ERR_ARGUMENT, "zt_source.read_at and .size are required");
    auto o = open_options_from(opt);
    if (!o) return set_error(o.error());
    if (auto sz = cb->query_size(); !sz) return set_error(sz.error());
    return hand_out(zt::Reader::open_ranges(std::move(cb), *o), out);
  });
}

}  // extern "C"
