// Files a model names beside itself (v2 shard files, a sharded checkpoint
// index's shards, ONNX external data): one rule for every reader. The name
// is resolved, symbolic links included, and must land inside the model's
// folder: the folder of the model file as given, or the folder of the file
// it links to (a Hugging Face cache keeps model and data as links into
// blobs/, where both point). Nothing outside is read because a file names it.
#pragma once

#include <string>

#include "base/error.h"

namespace zt {

// The real path of `relative` (a relative path, already checked for its
// form by the caller) beside the model file `model_path`, or
// Status::invalid naming `what` and the rule when it resolves outside the
// model's folder; Status::io when it does not exist.
Result<std::string> resolve_beside_model(const std::string& model_path, const std::string& relative,
                                         const char* what);

}  // namespace zt
