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

// An integer wider than 64 bits: nlohmann makes it a double, rounded
// without a word, so readers refuse it.
struct WideInteger {
  std::string text;  // as written
  std::string key;   // of the value (empty in an array at the top)
};

// What parsing JSON text would otherwise lose without a word.
struct JsonTextFaults {
  std::optional<RepeatedKey> repeated;      // the first key given twice
  std::optional<WideInteger> wide_integer;  // the first integer wider than 64 bits
};

// The first integer of `text` (valid JSON) that does not fit 64 bits.
std::optional<WideInteger> first_wide_integer(std::string_view text);

// `"key": the integer N does not fit 64 bits (a double would round it)`,
// key and number cut to a length fit for a message: the one wording every
// reader and writer that refuses one uses.
std::string describe_wide_integer(const WideInteger& w);

// JSON text parsed as J (Json, or nlohmann::json where key order does not
// matter) with the keys of every object checked, at any depth, and every
// number that became a double read again as written: faults go to
// `faults`. Discarded on a syntax error, as J::parse(..., nullptr, false)
// is.
template <typename J>
J parse_json_checking_keys(std::string_view text, JsonTextFaults& faults) {
  std::vector<std::unordered_set<std::string>> open;  // keys of each open object
  bool saw_double = false;
  const auto watch = [&](int depth, typename J::parse_event_t event, J& parsed) {
    using Event = typename J::parse_event_t;
    if (event == Event::object_start) open.emplace_back();
    if (event == Event::object_end && !open.empty()) open.pop_back();
    if (event == Event::key && !open.empty() && parsed.is_string() &&
        !open.back().insert(parsed.template get<std::string>()).second && !faults.repeated)
      faults.repeated = RepeatedKey{parsed.template get<std::string>(), depth};
    saw_double = saw_double || (event == Event::value && parsed.is_number_float());
    return true;
  };
  J j = J::parse(text.begin(), text.end(), watch, false);
  // Doubles are rare in the JSON we read (none in a safetensors header but
  // metadata): the text is read a second time only where one is.
  if (saw_double && !j.is_discarded()) faults.wide_integer = first_wide_integer(text);
  return j;
}

}  // namespace zt
