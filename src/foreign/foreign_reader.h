// A foreign file (safetensors, GGUF, npy, npz, PyTorch, a sharded Hugging
// Face checkpoint) as an ordinary read-only Reader: the model its reader
// gives (read_foreign: the format's own checks, then check_writable), over
// the bytes the ForeignFile holds. Components whose bytes are in the mapped
// file are served from the mapping (zero-copy, offsets are file offsets);
// bytes a reader made (unzipped, byte-swapped, transposed, a shard's) are
// held buffers of the Reader (Component::held, offsets within the buffer).
// What zt_open_ex does for allow_foreign.
#pragma once

#include <memory>
#include <string>

#include "base/error.h"
#include "foreign/foreign.h"
#include "read/reader.h"

namespace zt::foreign {

// Reads `path` by its extension (kind_from_path) and opens the result as a
// Reader. Foreign files are always mapped: opt.mode is not consulted.
Result<std::unique_ptr<Reader>> open_foreign(const std::string& path, const OpenOptions& opt,
                                             const ReadOptions& read_options = {});

// A foreign file over HTTP(S) (zt_open_url with allow_foreign): .safetensors,
// its header fetched at open and each tensor when read, and a sharded
// checkpoint's .index.json with safetensors shards beside it (the index in
// the open's request, each shard's header at open). The other formats'
// readers need the whole file (Status::unsupported says so).
Result<std::unique_ptr<Reader>> open_foreign_url(const std::string& url, const OpenOptions& opt);

// The Reader over a ForeignFile that a reader returned (it takes the file
// and keeps it alive).
Result<std::unique_ptr<Reader>> reader_of(ForeignFile file, const OpenOptions& opt);

}  // namespace zt::foreign
