// JSON text laid out for people (nlohmann's dump(indent) layout) without
// building a tree: the compact text is read by nlohmann's SAX parser and
// written again as it is read, so a manifest whose attributes hold
// millions of values is printed in memory proportional to its text.
#pragma once

#include <string>
#include <string_view>

#include "error.h"

namespace zt::cli {

// `compact` must be valid JSON (Status::format otherwise).
Result<std::string> indented_json(std::string_view compact, int indent);

}  // namespace zt::cli
