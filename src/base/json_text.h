// JSON text (nlohmann-json) and base64: what every stage that shows data
// as text uses (the manifest as JSON, CBOR values for people, the CLI).
#pragma once

#include <cstddef>
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

// What parse_json_checking_keys looks for, as nlohmann's SAX interface: it
// builds nothing. (The DOM parser with a callback did this in one pass, but
// after each object inside another it walks the outer one's elements for
// a discarded value: a safetensors header of 4,096 tensors took 90 ms to
// parse that way, quadratic in its tensors.)
template <typename J>
class JsonKeyWatch {
 public:
  explicit JsonKeyWatch(JsonTextFaults& faults) : faults_(faults) {}
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(typename J::number_integer_t) { return true; }
  bool number_unsigned(typename J::number_unsigned_t) { return true; }
  bool number_float(typename J::number_float_t, const typename J::string_t&) {
    saw_double = true;
    return true;
  }
  bool string(typename J::string_t&) { return true; }
  bool binary(typename J::binary_t&) { return true; }
  bool start_object(std::size_t) {
    ++depth_;
    open_.emplace_back();
    return true;
  }
  bool key(typename J::string_t& k) {
    if (!open_.back().insert(k).second && !faults_.repeated)
      faults_.repeated = RepeatedKey{k, depth_};
    return true;
  }
  bool end_object() {
    --depth_;
    open_.pop_back();
    return true;
  }
  bool start_array(std::size_t) {
    ++depth_;
    return true;
  }
  bool end_array() {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }

  bool saw_double = false;  // a number that became a double

 private:
  JsonTextFaults& faults_;
  std::vector<std::unordered_set<std::string>> open_;  // keys of each open object
  int depth_ = 0;                                      // open objects and arrays
};

// JSON text parsed as J (Json, or nlohmann::json where key order does not
// matter) with the keys of every object checked, at any depth, and every
// number that became a double read again as written: faults go to
// `faults`. Discarded on a syntax error, as J::parse(..., nullptr, false)
// is. Two linear passes: the checks (JsonKeyWatch), then the parse.
template <typename J>
J parse_json_checking_keys(std::string_view text, JsonTextFaults& faults) {
  JsonKeyWatch<J> watch(faults);
  if (!J::sax_parse(text.begin(), text.end(), &watch)) return J(J::value_t::discarded);
  J j = J::parse(text.begin(), text.end(), nullptr, false);
  // Doubles are rare in the JSON we read (none in a safetensors header but
  // metadata): the text is read a second time only where one is.
  if (watch.saw_double && !j.is_discarded()) faults.wide_integer = first_wide_integer(text);
  return j;
}

}  // namespace zt
