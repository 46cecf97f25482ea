// File and object attributes as a writer takes them: JSON or CBOR maps,
// checked; v2 stores them in deterministic encoding (v2 spec §3.1).
#include <unistd.h>

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

namespace {

// v2 attributes are stored in deterministic encoding, without tags or
// undefined (v2 spec §3.1), and `depth` levels below the manifest root.
Result<std::vector<uint8_t>> v2_attributes(std::span<const uint8_t> cbor, unsigned depth,
                                           bool canonical_form) {
  auto canonical = cbor::canonical_encoding(cbor, kMaxDepthV2 - depth);
  if (!canonical) {
    Error e = std::move(canonical).error();
    if (e.status != Status::nomem) e.status = Status::argument;
    return e;
  }
  ZT_TRY(cbor::for_each_entry(*canonical, [&](std::string_view key, auto) -> Result<void> {
    return check_name("attribute", key, true, canonical_form);
  }));
  return canonical;
}

}  // namespace

Result<void> Writer::set_file_attributes_json(std::string_view json) {
  return guarded(*impl_, [&]() -> Result<void> {
    ZT_TRY(impl_->usable());
    // The manifest root holds file attributes at CBOR depth 2.
    auto cbor = json_object_to_cbor(json, Limits::cbor_depth - 1);
    ZT_TRY(cbor);
    if (impl_->v2()) {
      cbor = v2_attributes(*cbor, 1, impl_->opt.canonical);
      ZT_TRY(cbor);
    }
    impl_->file_attributes = std::move(*cbor);
    return {};
  });
}

Result<void> Writer::set_file_attributes_cbor(std::span<const uint8_t> cbor) {
  return guarded(*impl_, [&]() -> Result<void> {
    ZT_TRY(impl_->usable());
    ZT_TRY(check_attribute_map(cbor, Limits::cbor_depth - 1));
    if (impl_->v2()) {
      auto canonical = v2_attributes(cbor, 1, impl_->opt.canonical);
      ZT_TRY(canonical);
      impl_->file_attributes = std::move(*canonical);
      return {};
    }
    impl_->file_attributes.assign(cbor.begin(), cbor.end());
    return {};
  });
}

Result<void> Writer::set_object_attributes_json(std::string_view json) {
  return guarded(*impl_, [&]() -> Result<void> {
    Impl& s = *impl_;
    ZT_TRY(s.usable());
    ZT_FAIL_IF(s.state != Impl::State::object, state,
               "no object is begun: call zt_writer_begin_object first");
    // root -> objects -> object -> attributes: object attributes sit at depth 4.
    auto cbor = json_object_to_cbor(json, Limits::cbor_depth - 3);
    ZT_TRY(cbor);
    if (s.v2()) {
      cbor = v2_attributes(*cbor, 3, s.opt.canonical);
      ZT_TRY(cbor);
    }
    s.current_attributes = std::move(*cbor);
    return {};
  });
}

Result<void> Writer::set_object_attributes_cbor(std::span<const uint8_t> cbor) {
  return guarded(*impl_, [&]() -> Result<void> {
    Impl& s = *impl_;
    ZT_TRY(s.usable());
    ZT_FAIL_IF(s.state != Impl::State::object, state,
               "no object is begun: call zt_writer_begin_object first");
    ZT_TRY(check_attribute_map(cbor, Limits::cbor_depth - 3));
    if (s.v2()) {
      auto canonical = v2_attributes(cbor, 3, s.opt.canonical);
      ZT_TRY(canonical);
      s.current_attributes = std::move(*canonical);
      return {};
    }
    s.current_attributes.assign(cbor.begin(), cbor.end());
    return {};
  });
}

}  // namespace zt
