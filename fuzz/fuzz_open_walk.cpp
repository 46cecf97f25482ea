// libFuzzer target: fuzzed bytes as a .zt file of any generation, opened from
// memory and walked entirely (fuzz/walk.h), then the same bytes opened from
// a file in copy mode (pread instead of a mapping, a lower decode cap) and
// walked again; both readers must agree.
#include <cstdint>
#include <string>

#include "container/container.h"
#include "fuzz_support.h"
#include "manifest/json.h"
#include "manifest/manifest.h"
#include "source/io.h"
#include "walk.h"
#include "ztensor.h"

namespace {

using namespace zt::fuzz;

void check_open_failure(zt_status s, bool copy_mode) {
  // ZT_ERR_DIGEST: a v2 manifest whose XXH3-64 differs from the footer's.
  check_failure(s,
                {ZT_ERR_FORMAT, ZT_ERR_INVALID, ZT_ERR_UNSUPPORTED, ZT_ERR_LIMIT, ZT_ERR_NOMEM,
                 ZT_ERR_DIGEST},
                copy_mode, "zt_open");
}

struct Closer {
  void operator()(zt_reader* r) const { zt_close(r); }
};
using ReaderPtr = std::unique_ptr<zt_reader, Closer>;

// The reader parses 1.x objects while the CBOR is decoded and drops their
// nodes (zt::decode_manifest): it must give what decoding the whole tape
// and then parsing it gives, on every input.
void check_streamed_manifest(const uint8_t* data, size_t size) {
  const zt::Source src = zt::Source::from_memory(std::span<const uint8_t>(data, size));
  std::vector<uint8_t> storage;
  const auto loc = zt::locate_manifest(src, storage);
  if (!loc || loc->generation != zt::Generation::v1) return;
  const auto streamed = zt::decode_manifest(zt::Generation::v1, loc->manifest);
  auto doc = zt::cbor::decode(loc->manifest);
  const auto whole = doc ? zt::parse_manifest(zt::Generation::v1, std::move(*doc))
                         : zt::Result<zt::Manifest>(doc.error());
  FUZZ_CHECK(streamed.ok() == whole.ok(), "streamed and whole-tape manifest parses disagree");
  if (!whole) {
    FUZZ_CHECK(streamed.error().status == whole.error().status &&
                   streamed.error().message == whole.error().message,
               "streamed parse: \"" + streamed.error().message + "\", whole tape: \"" +
                   whole.error().message + "\"");
  } else {
    FUZZ_CHECK(zt::manifest_to_json(*streamed) == zt::manifest_to_json(*whole),
               "streamed and whole-tape manifests differ");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const uint8_t kEmpty = 0;
  const WalkOptions mem_opt;
  zt_reader* raw = nullptr;
  check_streamed_manifest(size ? data : &kEmpty, size);
  const zt_status s = zt_open_memory(size ? data : &kEmpty, size, &raw);
  ReaderPtr mem(raw);
  WalkOutcome mem_walk;
  if (s == ZT_OK) {
    FUZZ_CHECK(mem != nullptr, "zt_open_memory: OK without a reader");
    mem_walk = walk_reader(mem.get(), mem_opt);
  } else {
    FUZZ_CHECK(mem == nullptr, "zt_open_memory: a reader on failure");
    check_open_failure(s, false);
  }

  // The same bytes through a file in copy mode: the pread paths, and a
  // decode cap low enough to map everything that it allows.
  const std::string path = scratch_dir() + "/open_walk.zt";
  FUZZ_CHECK(write_file(path, data, size), "cannot write " + path);
  zt_open_options opt;
  zt_open_options_init(&opt);
  opt.io_mode = ZT_IO_COPY;
  opt.max_decoded_bytes = mem_opt.decode_cap;
  raw = nullptr;
  const zt_status s2 = zt_open_ex(path.c_str(), &opt, &raw);
  ReaderPtr copy(raw);
  FUZZ_CHECK(s2 == s, std::string("memory and copy-mode open disagree: ") + zt_status_name(s) +
                          " vs " + zt_status_name(s2) + ": " + zt_last_error());
  if (s2 == ZT_OK) {
    WalkOptions copy_opt;
    copy_opt.copy_mode = true;
    copy_opt.decode_cap = UINT64_MAX;  // the reader's own cap applies
    compare_walks(mem_walk, walk_reader(copy.get(), copy_opt));
  }
  return 0;
}
