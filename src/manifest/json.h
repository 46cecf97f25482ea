// Manifest and attribute values as JSON text (nlohmann-json), and JSON
// attribute text as values for the writer.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"
#include "base/json_text.h"
#include "manifest/manifest.h"

namespace zt {

// The attributes as JSON text, written as the CBOR is read (no tree); "{}"
// when absent.
std::string attributes_json(const Attributes& a);
void append_attributes_json(const Attributes& a, std::string& out);

// The manifest in the 1.2.0 vocabulary, whatever generation the file is.
std::string manifest_to_json(const Manifest& m);

}  // namespace zt
