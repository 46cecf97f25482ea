// A zip archive of untrusted bytes, read with libzip (.npz files and
// PyTorch's zip checkpoints). Opening lists the members and refuses, before
// anything is inflated, entries whose compressed bytes together exceed the
// file (overlapping entries: a non-recursive zip bomb that libzip's own
// consistency check accepts). Reading a member checks its stated size
// against the limit and what deflate can produce, then believes it only as
// the stream proves it: a member that ends early or holds more is refused.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"

struct zip;

namespace zt::foreign {

struct ZipMember {
  std::string name;
  uint64_t index = 0;
  uint64_t size = 0;  // stated uncompressed size
};

class ZipArchive {
 public:
  static Result<ZipArchive> open(const std::string& path);

  // Files in the archive (directories left out), in central-directory order.
  const std::vector<ZipMember>& members() const { return members_; }
  const ZipMember* find(const std::string& name) const;

  // The member's bytes; `where` names it in messages.
  Result<std::vector<uint8_t>> read(const ZipMember& m, const std::string& where) const;

 private:
  std::unique_ptr<zip, void (*)(zip*)> archive_{nullptr, nullptr};
  std::vector<ZipMember> members_;
};

}  // namespace zt::foreign
