#include "json_layout.h"

#include <vector>

#include "manifest/json.h"

namespace zt::cli {

namespace {

// Writes each SAX event at once. A container's first item decides whether
// it breaks its line: an empty one prints as {} or [], as dump does.
class JsonPrinter final : public nlohmann::json_sax<Json> {
 public:
  JsonPrinter(int indent, std::FILE* out) : indent_(static_cast<size_t>(indent)), file_(out) {}

  bool null() override { return scalar("null"); }
  bool boolean(bool v) override { return scalar(v ? "true" : "false"); }
  bool number_integer(number_integer_t v) override { return scalar(std::to_string(v)); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(std::to_string(v)); }
  // The text as read: the compact text came from dump, which wrote it.
  bool number_float(number_float_t, const string_t& text) override { return scalar(text); }
  bool string(string_t& v) override { return scalar(dump_json(Json(v))); }
  bool binary(binary_t&) override { return false; }
  bool start_object(std::size_t) override { return open('{'); }
  bool end_object() override { return close('}'); }
  bool start_array(std::size_t) override { return open('['); }
  bool end_array() override { return close(']'); }
  bool key(string_t& k) override {
    item();
    out_ += dump_json(Json(k));
    out_ += ": ";
    after_key_ = true;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

  // Writes what is pending; false if the stream failed (then and ever
  // after: a failed write stops the parse, and is told as such).
  bool flush() {
    failed_ = failed_ || std::fwrite(out_.data(), 1, out_.size(), file_) != out_.size();
    out_.clear();
    return !failed_;
  }

 private:
  // Before a value or key: a separator and a new line inside containers,
  // nothing right after a key.
  void item() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (open_.empty()) return;
    if (!open_.back()) out_ += ',';
    open_.back() = false;
    out_ += '\n';
    out_.append(indent_ * open_.size(), ' ');
  }
  bool scalar(std::string_view text) {
    item();
    out_ += text;
    return out_.size() < kPiece || flush();
  }
  bool open(char c) {
    item();
    out_ += c;
    open_.push_back(true);  // still empty
    return true;
  }
  bool close(char c) {
    const bool empty = open_.back();
    open_.pop_back();
    if (!empty) {
      out_ += '\n';
      out_.append(indent_ * open_.size(), ' ');
    }
    out_ += c;
    return true;
  }

  static constexpr size_t kPiece = size_t{1} << 16;

  size_t indent_;
  std::FILE* file_;
  std::string out_;
  std::vector<bool> open_;  // per open container: no item yet
  bool after_key_ = false;
  bool failed_ = false;
};

}  // namespace

Result<void> write_indented_json(std::string_view compact, int indent, std::FILE* out) {
  JsonPrinter layout(indent < 0 ? 0 : indent, out);
  const bool ok = Json::sax_parse(compact.begin(), compact.end(), &layout, nlohmann::json::input_format_t::json, true);
  const bool written = layout.flush();
  ZT_FAIL_IF(!written, io, "writing the JSON text failed");
  ZT_FAIL_IF(!ok, format, "the manifest's JSON text does not parse");
  return {};
}

}  // namespace zt::cli
