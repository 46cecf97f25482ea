// libFuzzer target: a .zt file of any generation read through zt_open_source
// by a callback that answers in short reads and fails where told to.
//
// Input: 6 control bytes, then the file.
//   [0]    the most bytes one read_at call gives (0: all it is asked for)
//   [1..4] little-endian offset whose reads fail with ZT_ERR_IO
//          (0xffffffff: none)
//   [5]    bit 0: fail only the first time (a transient fault); bit 1: a
//          cache of 4 KiB instead of the default
// Without a fault the source reader must agree with zt_open_memory on the
// open's status and on the whole walk; with one, ZT_ERR_IO is a possible
// outcome of every call, and nothing else may go wrong.
#include <cstdint>
#include <memory>
#include <string>

#include "fuzz_support.h"
#include "walk.h"
#include "ztensor.h"

namespace {

using namespace zt::fuzz;

struct Closer {
  void operator()(zt_reader* r) const { zt_close(r); }
};
using ReaderPtr = std::unique_ptr<zt_reader, Closer>;

struct Faulty {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  size_t chunk = 0;
  uint64_t fail_at = UINT64_MAX;
  bool once = false;
  bool failed = false;
  int closed = 0;

  static zt_status read_at(void* ctx, uint64_t off, size_t len, void* buf, size_t* done) {
    auto& f = *static_cast<Faulty*>(ctx);
    FUZZ_CHECK(off <= f.size && len <= f.size - off,
               "read_at(" + std::to_string(off) + ", " + std::to_string(len) +
                   ") outside a file of " + std::to_string(f.size) + " bytes");
    if (f.fail_at >= off && f.fail_at < off + len && !(f.once && f.failed)) {
      f.failed = true;
      return ZT_ERR_IO;
    }
    const size_t n = f.chunk && f.chunk < len ? f.chunk : len;
    std::memcpy(buf, f.data + off, n);
    *done = n;
    return ZT_OK;
  }
  static zt_status size_of(void* ctx, uint64_t* out) {
    *out = static_cast<Faulty*>(ctx)->size;
    return ZT_OK;
  }
  static void close(void* ctx) { ++static_cast<Faulty*>(ctx)->closed; }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteReader in(data, size);
  Faulty f;
  f.chunk = in.u8();
  const uint32_t fail = static_cast<uint32_t>(in.u16() | (static_cast<uint32_t>(in.u16()) << 16));
  const uint8_t flags = in.u8();
  f.fail_at = fail == UINT32_MAX ? UINT64_MAX : fail;
  f.once = flags & 1;
  static const uint8_t kEmpty = 0;
  const size_t head = size < 6 ? size : 6;
  f.data = size > head ? data + head : &kEmpty;
  f.size = size - head;

  zt_source src;
  zt_source_init(&src);
  src.ctx = &f;
  src.read_at = Faulty::read_at;
  src.size = Faulty::size_of;
  src.close = Faulty::close;
  src.name = "fuzz";
  zt_open_options opt;
  zt_open_options_init(&opt);
  if (flags & 2) opt.cache_bytes = 4096;
  const WalkOptions walk_opt;
  opt.max_decoded_bytes = walk_opt.decode_cap;
  zt_reader* raw = nullptr;
  const zt_status s = zt_open_source(&src, &opt, &raw);
  ReaderPtr remote(raw);
  FUZZ_CHECK((s == ZT_OK) == (remote != nullptr), "zt_open_source: reader and status disagree");
  if (s != ZT_OK) FUZZ_CHECK(f.closed == 1, "zt_open_source failed without closing the source");

  raw = nullptr;
  const zt_status ms = zt_open_memory(f.data, f.size, &raw);
  ReaderPtr mem(raw);
  const bool faulted = f.fail_at < f.size;
  if (!faulted) {
    FUZZ_CHECK(s == ms, std::string("source and memory open disagree: ") + zt_status_name(s) +
                            " vs " + zt_status_name(ms));
  } else {
    FUZZ_CHECK(s == ms || s == ZT_ERR_IO, std::string("a faulty source's open: ") +
                                              zt_status_name(s) + ": " + zt_last_error());
  }
  if (s != ZT_OK) return 0;
  WalkOptions copy_opt;
  copy_opt.copy_mode = true;  // ZT_ERR_IO may come from the source
  copy_opt.decode_cap = UINT64_MAX;
  const WalkOutcome got = walk_reader(remote.get(), copy_opt);
  if (!faulted && ms == ZT_OK) compare_walks(walk_reader(mem.get(), walk_opt), got);
  remote.reset();
  FUZZ_CHECK(f.closed == 1, "zt_close did not close the source once");
  return 0;
}
