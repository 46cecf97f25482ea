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

Result<void> Writer::set_file_attributes_json(std::string_view json) {
  return guarded(*impl_, [&]() -> Result<void> {
    ZT_TRY(impl_->usable());
    // The manifest root holds file attributes at CBOR depth 2.
    auto cbor = json_object_to_cbor(json, Limits::cbor_depth - 1);
    ZT_TRY(cbor);
    auto stored = impl_->gen().attributes(std::move(*cbor), 1, impl_->opt.canonical);
    ZT_TRY(stored);
    impl_->file_attributes = std::move(*stored);
    return {};
  });
}

Result<void> Writer::set_file_attributes_cbor(std::span<const uint8_t> cbor) {
  return guarded(*impl_, [&]() -> Result<void> {
    ZT_TRY(impl_->usable());
    ZT_TRY(check_attribute_map(cbor, Limits::cbor_depth - 1));
    auto stored = impl_->gen().attributes(std::vector<uint8_t>(cbor.begin(), cbor.end()), 1,
                                          impl_->opt.canonical);
    ZT_TRY(stored);
    impl_->file_attributes = std::move(*stored);
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
    auto stored = s.gen().attributes(std::move(*cbor), 3, s.opt.canonical);
    ZT_TRY(stored);
    s.current_attributes = std::move(*stored);
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
    auto stored =
        s.gen().attributes(std::vector<uint8_t>(cbor.begin(), cbor.end()), 3, s.opt.canonical);
    ZT_TRY(stored);
    s.current_attributes = std::move(*stored);
    return {};
  });
}

}  // namespace zt
