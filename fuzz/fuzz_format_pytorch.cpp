// libFuzzer target: the library's PyTorch checkpoint reader (the
// restricted pickle machine of src/foreign/pickle.cpp above all), then the
// writer (fuzz/foreign_walk.h).
//
// Three kinds of input. One that starts with a zip signature ("PK") is the
// torch.save archive itself. One that starts with a pickle's PROTO opcode
// (0x80) is a legacy checkpoint: five pickles, then the storages, so the
// mutations go straight into the pickle machine. Any other input describes
// the members of an archive (fuzz/zip_members.h: archive/data.pkl,
// archive/data/0, ...) that libzip builds with valid checksums, so that
// mutations of the pickle and the storages get past the CRC check.
#include "foreign_walk.h"
#include "zip_members.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= 2 && ((data[0] == 'P' && data[1] == 'K') || data[0] == 0x80)) {
    zt::fuzz::walk_foreign(data, size, ".pt");
    return 0;
  }
  const std::vector<uint8_t> archive = zt::fuzz::build_archive(zt::fuzz::parse_members(data, size));
  if (!archive.empty()) zt::fuzz::walk_foreign(archive.data(), archive.size(), ".pt");
  return 0;
}
