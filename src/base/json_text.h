// JSON text (nlohmann-json) and base64: what every stage that shows data
// as text uses (the manifest as JSON, CBOR values for people, the CLI).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace zt {

using Json = nlohmann::ordered_json;

// Standard base64 (RFC 4648 section 4) with padding.
std::string base64_encode(std::string_view bytes);

// One line of JSON; invalid UTF-8 in strings replaced by U+FFFD.
std::string dump_json(const Json& j);

}  // namespace zt
