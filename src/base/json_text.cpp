#include "base/json_text.h"

#include <cstdint>

#include "base/error.h"

namespace zt {

std::string base64_encode(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (p[i] << 16) | (p[i + 1] << 8) | p[i + 2];
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest) {
    const uint32_t v = (p[i] << 16) | (rest == 2 ? p[i + 1] << 8 : 0);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string dump_json(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

namespace {

// Reads JSON as events, keeping only the first number that nlohmann could
// not hold as a 64-bit integer although it is written as one (no fraction,
// no exponent).
class WideIntegerFinder : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::optional<WideInteger> found;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t& text) override {
    if (text.find_first_of(".eE") != string_t::npos) return true;
    found = WideInteger{text, key_};
    return false;  // the first is enough
  }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  // The key a value is named by: its own, or in an array the key of the
  // array (kept across the containers inside it).
  bool start_object(std::size_t) override { return enter(); }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool end_object() override { return leave(); }
  bool start_array(std::size_t) override { return enter(); }
  bool end_array() override { return leave(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  bool enter() {
    outer_.push_back(key_);
    return true;
  }
  bool leave() {
    if (!outer_.empty()) {
      key_ = std::move(outer_.back());
      outer_.pop_back();
    }
    return true;
  }

  std::string key_;
  std::vector<std::string> outer_;  // the key of each open container
};

}  // namespace

std::optional<WideInteger> first_wide_integer(std::string_view text) {
  WideIntegerFinder finder;
  nlohmann::json::sax_parse(text.begin(), text.end(), &finder);
  return finder.found;
}

std::string describe_wide_integer(const WideInteger& w) {
  std::string out = "\"";
  out += printable(std::string_view(w.key).substr(0, 200));
  out += "\": the integer ";
  out += std::string_view(w.text).substr(0, 100);
  out += " does not fit 64 bits (a double would round it)";
  return out;
}

}  // namespace zt
