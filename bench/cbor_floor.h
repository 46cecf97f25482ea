// The floor that opening a file is compared with: the manifest bytes read
// with pread and decoded by libcbor's cbor_load into its item tree, then a
// walk of every item — what any reader built on our CBOR library must do at
// least. bench_open times it, bench_memory measures its peak RSS.
#pragma once

#include <cstdint>
#include <string>

namespace ztb {

// Reads the manifest of the 1.2.0 file at `path`, cbor_loads it, walks every
// item and frees the tree. Returns a value that depends on every item (so
// that nothing is optimised away); dies if the manifest does not decode.
uint64_t cbor_load_walk(const std::string& path);

}  // namespace ztb
