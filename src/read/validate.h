// The validation stage: every rule that needs the manifest alone (placement,
// alignment, overlaps, sizes against shapes, required components). Reads no
// data byte.
#pragma once

#include <cstdint>

#include "base/error.h"
#include "manifest/manifest.h"

namespace zt {

// manifest_start/length: where the manifest is (a v2 manifest is a blob
// that parts may not overlap in part).
Result<void> validate(const Manifest& m, uint64_t file_size, uint64_t manifest_start,
                      uint64_t manifest_length);

// The rules of one object's known format (required components, dense size,
// sparse index dtypes and counts); the writer applies them too.
Result<void> validate_object(const Object& o);

// Whole elements of c's dtype (times its known type's ratio) in `decoded`
// bytes, for every format: at open when the size is in the manifest, at
// verify when only decoding tells.
Result<void> check_whole_elements(const Object& o, const Component& c, uint64_t decoded);

}  // namespace zt
