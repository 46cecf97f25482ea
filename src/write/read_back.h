// The writer reading back a component it wrote, for the object rules that
// need its bytes (sparse indices, a group map): decoded a window at a time
// from the file, so end_object's memory stays bounded whatever the part
// decodes to.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
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
// Bytes [offset, offset + dst.size()) of the file open at `fd`, read back
// whole (EINTR retried); Status::io naming `where` and the cause.
Result<void> read_back_bytes(int fd, uint64_t offset, std::span<uint8_t> dst,
                             const std::string& where);

Result<std::unique_ptr<ByteWindows>> read_back_windows(int fd, const Component& c,
                                                       std::string where);

}  // namespace zt
