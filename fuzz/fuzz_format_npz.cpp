// libFuzzer target: the library's .npz reader, then the writer
// (fuzz/foreign_walk.h).
//
// Two kinds of input. One that starts with a zip signature ("PK") is the
// .npz file itself: that fuzzes the archive's structure. Any other input
// describes the members of an archive (fuzz/zip_members.h) that libzip
// builds with valid checksums, so that mutations reach the .npy members.
#include "foreign_walk.h"
#include "zip_members.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= 2 && data[0] == 'P' && data[1] == 'K') {
    zt::fuzz::walk_foreign(data, size, ".npz");
    return 0;
  }
  const std::vector<uint8_t> archive = zt::fuzz::build_archive(zt::fuzz::parse_members(data, size));
  if (!archive.empty()) zt::fuzz::walk_foreign(archive.data(), archive.size(), ".npz");
  return 0;
}
