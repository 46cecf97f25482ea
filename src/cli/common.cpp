#include "common.h"

#include <charconv>
#include <cstdio>

namespace zt::cli {

int exit_code(Status s) {
  switch (s) {
    case Status::ok:
      return kOk;
    case Status::io:
    case Status::nomem:
      return kIo;
    case Status::format:
    case Status::invalid:
    case Status::unsupported:
    case Status::digest:
    case Status::limit:
      return kBadInput;
    case Status::not_found:
    case Status::argument:
    case Status::state:
      return kRefused;
  }
  return kRefused;
}

int report(const Error& e, std::string_view location) {
  // A URL is named without its user info and query (passwords, signatures).
  const std::string shown = location_for_messages(location);
  const std::string_view file = shown;
  const bool named = file.empty() || std::string_view(e.message).starts_with(file);
  if (named)
    std::fprintf(stderr, "zt: %s\n", e.message.c_str());
  else
    std::fprintf(stderr, "zt: %.*s: %s\n", static_cast<int>(file.size()), file.data(),
                 e.message.c_str());
  return exit_code(e.status);
}

std::optional<std::string> Args::get(std::string_view name) const {
  const auto it = opts.find(name);
  if (it == opts.end()) return std::nullopt;
  return it->second;
}

Result<Args> parse_args(std::span<char* const> argv, std::span<const OptSpec> specs) {
  Args a;
  bool options_done = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string_view w = argv[i];
    if (options_done || w.size() < 2 || w[0] != '-') {
      a.pos.emplace_back(w);
      continue;
    }
    if (w == "--") {
      options_done = true;
      continue;
    }
    if (w == "--help" || w == "-h") {
      a.help = true;
      continue;
    }
    const size_t eq = w.find('=');
    const std::string_view key = w.substr(0, eq);
    const OptSpec* spec = nullptr;
    for (const OptSpec& s : specs)
      if (s.name == key || (!s.alias.empty() && s.alias == key)) spec = &s;
    ZT_FAIL_IF(!spec, argument, "unknown option '%.*s'", static_cast<int>(key.size()), key.data());
    const std::string name(spec->name);
    if (spec->kind == OptSpec::flag) {
      ZT_FAIL_IF(eq != std::string_view::npos, argument, "option '%s' takes no value",
                 name.c_str());
      a.opts[name] = "";
    } else if (eq != std::string_view::npos) {
      a.opts[name] = std::string(w.substr(eq + 1));
    } else if (spec->kind == OptSpec::optional_value) {
      a.opts[name] = "";
    } else {
      ZT_FAIL_IF(i + 1 >= argv.size(), argument, "option '%s' needs a value", name.c_str());
      a.opts[name] = argv[++i];
    }
  }
  return a;
}

Result<uint64_t> parse_uint(std::string_view option, std::string_view text) {
  uint64_t v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  ZT_FAIL_IF(ec != std::errc() || p != text.data() + text.size() || text.empty(), argument,
             "option '%.*s': '%.*s' is not a non-negative integer", static_cast<int>(option.size()),
             option.data(), static_cast<int>(text.size()), text.data());
  return v;
}

Result<int> parse_int(std::string_view option, std::string_view text) {
  int v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  ZT_FAIL_IF(ec != std::errc() || p != text.data() + text.size() || text.empty(), argument,
             "option '%.*s': '%.*s' is not an integer", static_cast<int>(option.size()),
             option.data(), static_cast<int>(text.size()), text.data());
  return v;
}

std::string human_bytes(uint64_t n) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (n < 1024) return std::to_string(n) + " B";
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 6) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf,
                v < 10    ? "%.2f %s"
                : v < 100 ? "%.1f %s"
                          : "%.0f %s",
                v, kUnits[u]);
  return buf;
}

std::string listed(std::string_view text) {
  std::string doubled;
  doubled.reserve(text.size());
  for (const char ch : text) {
    if (ch == '\\') doubled += '\\';
    doubled += ch;
  }
  return printable(doubled);
}

std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace zt::cli
