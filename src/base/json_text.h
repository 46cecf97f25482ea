// JSON text (nlohmann-json) and base64: what every stage that shows data
// as text uses (the manifest as JSON, CBOR values for people, the CLI).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace zt {

using Json = nlohmann::ordered_json;

// Standard base64 (RFC 4648 section 4) with padding.
std::string base64_encode(std::string_view bytes);

// One line of JSON; invalid UTF-8 in strings replaced by U+FFFD.
std::string dump_json(const Json& j);

// A key given twice in one JSON object: nlohmann keeps one value and drops
// the other without a word, so readers refuse it.
struct RepeatedKey {
  std::string key;
  int depth = 0;  // of the object holding it: 1 for the outermost
};

// JSON text parsed as J (Json, or nlohmann::json where key order does not
// matter) with the keys of every object checked, at any depth: the first
// key given twice goes to *repeated. Discarded on a syntax error, as
// J::parse(..., nullptr, false) is.
template <typename J>
J parse_json_checking_keys(std::string_view text, std::optional<RepeatedKey>& repeated) {
  std::vector<std::unordered_set<std::string>> open;  // keys of each open object
  const auto watch = [&](int depth, typename J::parse_event_t event, J& parsed) {
    using Event = typename J::parse_event_t;
    if (event == Event::object_start) open.emplace_back();
    if (event == Event::object_end && !open.empty()) open.pop_back();
    if (event == Event::key && !open.empty() && parsed.is_string() &&
        !open.back().insert(parsed.template get<std::string>()).second && !repeated)
      repeated = RepeatedKey{parsed.template get<std::string>(), depth};
    return true;
  };
  return J::parse(text.begin(), text.end(), watch, false);
}

}  // namespace zt
