// The C ABI of batch decoding: zt_decode_many and zt_decode_ranges over
// zt::decode_many, and zt_cpu_count (what their threads = 0 means).
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "base/core_count.h"
#include "capi_internal.h"
#include "read/batch_decode.h"

using namespace zt::capi;

namespace {

// What differs between the two request structs: the buffer's size field,
// and where in the decoded bytes the buffer starts (a range's offset; a
// whole-component request has none).
uint64_t buffer_size(const zt_decode_request& q) {
  return q.capacity;
}
uint64_t buffer_size(const zt_decode_range& q) {
  return q.length;
}
std::optional<uint64_t> first_byte(const zt_decode_request&) {
  return std::nullopt;
}
std::optional<uint64_t> first_byte(const zt_decode_range& q) {
  return q.offset;
}
const char* struct_name(const zt_decode_request*) {
  return "zt_decode_request";
}
const char* struct_name(const zt_decode_range*) {
  return "zt_decode_range";
}

// Resolves a request's object index and role to a core request, or says why not.
template <class Request>
zt::Error resolve(const zt_reader* r, const Request& q, zt::DecodeRequest& out) {
  zt::Result<size_t> k = find_component(r, q.object, q.role);
  // Argument errors come before lookup failures: a NULL role, then a NULL dst.
  if (!k && k.error().status == zt::Status::argument) return k.error();
  if (!q.dst && buffer_size(q) > 0) return zt::make_error(zt::Status::argument, "dst is NULL");
  if (!k) return k.error();
  static uint8_t empty;
  uint8_t* dst = q.dst ? static_cast<uint8_t*>(q.dst) : &empty;
  out =
      zt::DecodeRequest{q.object, *k, std::span<uint8_t>(dst, static_cast<size_t>(buffer_size(q))),
                        0,        {}, first_byte(q)};
  return {};
}

// Both calls: check the structs, resolve each request, decode those that
// resolved, report every request's outcome (through `done` as well, when set).
template <class Request>
zt_status decode_all(const zt_reader* r, Request* reqs, size_t count, unsigned threads,
                     zt_decode_done_fn done, void* ctx) {
  if (!r) return fail(ZT_ERR_ARGUMENT, "reader is NULL");
  if (!reqs && count > 0) return fail(ZT_ERR_ARGUMENT, "the request array is NULL");
  return guard([&] {
    if (zt_status s = check_struct_sizes(reqs, count, struct_name(reqs))) return s;
    std::vector<zt::Error> refused(count);
    std::vector<zt::DecodeRequest> core;
    std::vector<size_t> origin;
    core.reserve(count);
    origin.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      zt::DecodeRequest q;
      refused[i] = resolve(r, reqs[i], q);
      if (refused[i].status != zt::Status::ok) {
        if (done) done(ctx, i, static_cast<zt_status>(refused[i].status));
        continue;
      }
      core.push_back(q);
      origin.push_back(i);
    }
    zt::DecodeDone tell;
    if (done)
      tell = [&](size_t k, zt::Status s) { done(ctx, origin[k], static_cast<zt_status>(s)); };
    (void)zt::decode_many(*r->impl, core, threads, tell);  // outcomes are per request
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

}  // namespace

extern "C" {

void zt_decode_request_init(zt_decode_request* req) {
  if (!req) return;
  std::memset(req, 0, sizeof *req);
  req->struct_size = sizeof *req;
}

void zt_decode_range_init(zt_decode_range* range) {
  if (!range) return;
  std::memset(range, 0, sizeof *range);
  range->struct_size = sizeof *range;
}

zt_status zt_decode_many(const zt_reader* r, zt_decode_request* reqs, size_t count,
                         unsigned threads) {
  return decode_all(r, reqs, count, threads, nullptr, nullptr);
}

zt_status zt_decode_ranges(const zt_reader* r, zt_decode_range* ranges, size_t count,
                           unsigned threads, zt_decode_done_fn done, void* ctx) {
  return decode_all(r, ranges, count, threads, done, ctx);
}

unsigned zt_cpu_count(void) {
  return guard_value(1u, [] { return zt::core_count(); });
}

}  // extern "C"
