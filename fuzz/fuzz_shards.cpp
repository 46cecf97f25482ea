// libFuzzer target: a sharded zTensor v2 model (v2 spec §7). The input is
// split at "ZTSHARD!" into the root file and up to eight shard files,
// written as model.zt, model-00001.zt, model-00002.zt, ... in a scratch
// directory (the names our writer gives and the reader resolves, App. B).
// The root is opened by path and walked entirely (fuzz/walk.h): every part
// is read from the shard it names, opened on first use, through every view;
// zt_verify adds the whole-file digests. A missing shard (ZT_ERR_IO) or one
// that is not a zTensor file (ZT_ERR_FORMAT) is a possible outcome at any
// data access, as is every status a single file can give.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "walk.h"
#include "ztensor.h"

namespace {

using namespace zt::fuzz;

constexpr std::string_view kSeparator = "ZTSHARD!";
constexpr size_t kMaxShards = 8;

std::vector<std::string_view> split(std::string_view input) {
  std::vector<std::string_view> pieces;
  for (;;) {
    const size_t at = pieces.size() <= kMaxShards ? input.find(kSeparator) : input.npos;
    if (at == input.npos) {
      pieces.push_back(input);
      return pieces;
    }
    pieces.push_back(input.substr(0, at));
    input.remove_prefix(at + kSeparator.size());
  }
}

std::string shard_path(const std::string& dir, size_t n) {
  char name[32];
  std::snprintf(name, sizeof name, "/model-%05zu.zt", n);
  return dir + name;
}

struct Closer {
  void operator()(zt_reader* r) const { zt_close(r); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string_view> pieces = split(input);
  const std::string dir = scratch_dir();
  const std::string root = dir + "/model.zt";
  // Shards of the previous input must not serve this one.
  for (size_t n = 1; n <= kMaxShards; ++n) unlink(shard_path(dir, n).c_str());
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string path = i == 0 ? root : shard_path(dir, i);
    const auto* bytes = reinterpret_cast<const uint8_t*>(pieces[i].data());
    FUZZ_CHECK(write_file(path, bytes, pieces[i].size()), "cannot write " + path);
  }

  zt_reader* raw = nullptr;
  const zt_status s = zt_open(root.c_str(), &raw);
  std::unique_ptr<zt_reader, Closer> r(raw);
  if (s != ZT_OK) {
    FUZZ_CHECK(r == nullptr, "zt_open: a reader on failure");
    check_failure(s,
                  {ZT_ERR_FORMAT, ZT_ERR_INVALID, ZT_ERR_UNSUPPORTED, ZT_ERR_LIMIT, ZT_ERR_NOMEM,
                   ZT_ERR_DIGEST},
                  false, "zt_open");
    return 0;
  }
  FUZZ_CHECK(r != nullptr, "zt_open: OK without a reader");
  WalkOptions opt;
  opt.reads_shards = true;
  walk_reader(r.get(), opt);
  return 0;
}
