// The C ABI of batch decoding: zt_decode_many over zt::decode_many.
#include <cstring>
#include <string>
#include <vector>

#include "capi_internal.h"
#include "read/batch_decode.h"

using namespace zt::capi;

namespace {

// Resolves a request's object index and role to a core request, or says why not.
zt::Error resolve(const zt_reader* r, const zt_decode_request& q, zt::DecodeRequest& out) {
  zt::Result<size_t> k = find_component(r, q.object, q.role);
  // Argument errors come before lookup failures: a NULL role, then a NULL dst.
  if (!k && k.error().status == zt::Status::argument) return k.error();
  if (!q.dst && q.capacity > 0) return zt::make_error(zt::Status::argument, "dst is NULL");
  if (!k) return k.error();
  static uint8_t empty;
  uint8_t* dst = q.dst ? static_cast<uint8_t*>(q.dst) : &empty;
  out = zt::DecodeRequest{
      q.object, *k, std::span<uint8_t>(dst, static_cast<size_t>(q.capacity)), 0, {}};
  return {};
}

}  // namespace

extern "C" {

void zt_decode_request_init(zt_decode_request* req) {
  if (!req) return;
  std::memset(req, 0, sizeof *req);
  req->struct_size = sizeof *req;
}

zt_status zt_decode_many(const zt_reader* r, zt_decode_request* reqs, size_t count,
                         unsigned threads) {
  if (!r) return fail(ZT_ERR_ARGUMENT, "reader is NULL");
  if (!reqs && count > 0) return fail(ZT_ERR_ARGUMENT, "reqs is NULL");
  return guard([&] {
    for (size_t i = 0; i < count; ++i)
      if (reqs[i].struct_size != sizeof(zt_decode_request))
        return set_error(
            zt::make_error(zt::Status::argument,
                           "zt_decode_request[%zu].struct_size %u is not one this library knows", i,
                           reqs[i].struct_size));
    std::vector<zt::Error> refused(count);
    std::vector<zt::DecodeRequest> core;
    std::vector<size_t> origin;
    core.reserve(count);
    origin.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      zt::DecodeRequest q;
      refused[i] = resolve(r, reqs[i], q);
      if (refused[i].status != zt::Status::ok) continue;
      core.push_back(q);
      origin.push_back(i);
    }
    (void)zt::decode_many(*r->impl, core, threads);  // outcomes are per request
    for (size_t j = 0; j < core.size(); ++j) {
      refused[origin[j]] = std::move(core[j].error);
      reqs[origin[j]].written = core[j].written;
    }
    zt_status first = ZT_OK;
    for (size_t i = 0; i < count; ++i) {
      reqs[i].status = static_cast<uint32_t>(refused[i].status);
      if (refused[i].status == zt::Status::ok) continue;
      reqs[i].written = 0;
      if (first == ZT_OK) first = set_error(refused[i]);
    }
    return first;
  });
}

}  // extern "C"
