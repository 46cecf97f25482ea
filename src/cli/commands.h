// The subcommands of `zt`. Each gets the words after its name and returns
// an exit code (common.h).
#pragma once

#include <span>
#include <string_view>

#include "common.h"

namespace zt::cli {

struct Command {
  std::string_view name;
  std::string_view summary;  // one line for `zt --help`
  std::string_view usage;    // the full `zt NAME --help` text
  std::span<const OptSpec> options;
  int (*run)(const Args& args);
};

std::span<const Command> commands();

// The whole command line (argv[0] is the program): finds the command,
// parses its options, runs it; returns the exit code. May throw
// std::bad_alloc (main() reports it).
int run_zt(int argc, char** argv);

// Prints "zt NAME: message" and a pointer to --help; returns kUsage.
int usage_error(std::string_view command, std::string_view message);

int run_info(const Args& a);
int run_ls(const Args& a);
int run_dump(const Args& a);
int run_verify(const Args& a);
int run_id(const Args& a);
int run_cat(const Args& a);
int run_export(const Args& a);
int run_convert(const Args& a);
int run_compress(const Args& a);
int run_decompress(const Args& a);
int run_merge(const Args& a);
int run_rm(const Args& a);
int run_append(const Args& a);
int run_diff(const Args& a);
int run_demo_checkpoint(const Args& a);

}  // namespace zt::cli
