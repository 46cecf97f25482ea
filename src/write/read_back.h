// The writer reading back a component it wrote, for the object rules that
// need its bytes (sparse indices, a group map): decoded a window at a time
// from the file, so end_object's memory stays bounded whatever the part
// decodes to.
#pragma once

#include <memory>
#include <string>

#include "base/byte_windows.h"
#include "base/error.h"
#include "manifest/manifest.h"

namespace zt {

// Component c of the file open at `fd` (raw, zstd or byte planes, as the
// writer stores them), `where` naming it in messages: raw bytes are read
// 1 MiB at a time, encoded ones mapped read-only (read into memory where
// the file system cannot map them) and decoded a zstd window or a
// byte-planes frame at a time. A stream that decodes to another size
// than c says is Status::invalid.
Result<std::unique_ptr<ByteWindows>> read_back_windows(int fd, const Component& c,
                                                       std::string where);

}  // namespace zt
