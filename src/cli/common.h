// Shared pieces of the `zt` tool: exit codes, error reporting, argument
// parsing, and how numbers and sizes are shown.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "manifest/manifest.h"
#include "source/http_source.h"  // location_for_messages

namespace zt::cli {

// Exit codes (documented in `zt --help` and docs/cli.md).
enum Exit : int {
  kOk = 0,        // success; for diff: no differences; for verify: every check held
  kFailed = 1,    // diff found differences, or verify found a broken file
  kUsage = 2,     // bad command line
  kIo = 3,        // a file could not be opened, read or written
  kBadInput = 4,  // an input is not a valid file of its format, or breaks its rules
  kRefused = 5,   // the operation cannot be done as asked (unknown name, name clash,
                  // sparse object to safetensors without --densify, ...)
};

int exit_code(Status s);

// Prints "zt: FILE: message" to stderr (FILE left out when the message
// already starts with it) and returns the exit code for the error.
int report(const Error& e, std::string_view file = {});

struct OptSpec {
  enum Kind { flag, value, optional_value };
  std::string_view name;  // "--json"
  Kind kind = flag;
  std::string_view alias = {};  // "-o"
};

struct Args {
  std::vector<std::string> pos;
  std::map<std::string, std::string, std::less<>> opts;  // by long name; flags map to ""
  bool help = false;

  bool has(std::string_view name) const { return opts.find(name) != opts.end(); }
  std::optional<std::string> get(std::string_view name) const;
};

// Parses argv (the words after the command name). Status::argument with the
// reason on unknown options or missing values. "--" ends the options.
Result<Args> parse_args(std::span<char* const> argv, std::span<const OptSpec> specs);

// Parses an unsigned integer option; Status::argument naming the option.
Result<uint64_t> parse_uint(std::string_view option, std::string_view text);
Result<int> parse_int(std::string_view option, std::string_view text);

// 1536 -> "1.5 KiB"; under 1024 bytes: "512 B".
std::string human_bytes(uint64_t n);
// "12,345,678"
std::string grouped(uint64_t n);
// A file's text (a name) as a listing shows it: backslashes doubled, then
// control bytes as \xNN (printable), so that no two names print alike (a
// name holding a newline and one holding the four characters \x0a), as
// GNU ls -b prints them.
std::string listed(std::string_view text);

}  // namespace zt::cli
