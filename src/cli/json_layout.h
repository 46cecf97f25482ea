// JSON text laid out for people (nlohmann's dump(indent) layout) without
// building a tree: the compact text is read by nlohmann's SAX parser and
// written again as it is read, so a manifest whose attributes hold
// millions of values is printed in memory proportional to its text.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "base/error.h"

namespace zt::cli {

// Writes `compact` laid out to `out` as it is read, in pieces of about
// 64 KiB: what it holds is one piece, whatever the text's length. `compact`
// must be valid JSON (Status::format otherwise, after what came before the
// error was written).
Result<void> write_indented_json(std::string_view compact, int indent, std::FILE* out);

}  // namespace zt::cli
