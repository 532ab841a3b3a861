#pragma once
// The command-line handling every ddp binary shares, so they all behave alike: --version prints
// version_banner(), -h/--help prints the options (and, for the trainers, the environment variables
// and exit codes), and a bad command line is a ConfigError "<program>: ..." (exit 2).
//
//   cxxopts::Options cli("make_cifar10_synthetic", "Write a synthetic CIFAR-10 ...");
//   cli.add_options()("out", "output folder", cxxopts::value<std::string>(), "DIR");
//   auto args = ddp::util::parse_command_line(cli, argc, argv, ddp::util::CommandLineRules().required({"out"}));
//   if (!args) return 0;  // --help or --version was printed
//
// Every option that takes a value names it (cxxopts' 4th argument, else --help shows "arg"), from
// one vocabulary that the man pages show and the bash completion (tools/bash_completion/ddp.bash)
// completes by: N an integer, X a real number, SECONDS a duration, FILE a file, DIR a folder,
// HOST, PORT, HOST:PORT, NAME an identifier, LIST a comma-separated list, {a|b|c} one of these
// words (an upper-case word among them is one of the names above: {auto|none|FILE}; a word may
// take an argument after a colon, named as above: {none|powersgd:N}).
#include <torch/arg.h>
#include <cxxopts.hpp>

#include <optional>
#include <string>
#include <vector>

#include "util/help_epilogue.h"

namespace ddp::util {

struct CommandLineRules {
  /// Flags that must be given: ConfigError "<program>: --<flag> is required" otherwise.
  TORCH_ARG(std::vector<std::string>, required);
  /// --help ends with help_epilogue(program).
  TORCH_ARG(std::optional<HelpFor>, epilogue);
  /// The option groups --help lists, in this order (default: all, in the order they were added).
  TORCH_ARG(std::vector<std::string>, help_groups);
  /// The --help group that lists --version and -h/--help themselves (default: the unnamed one);
  /// with help_groups() it must be one of them, or --help would not mention itself.
  TORCH_ARG(std::string, help_flags_group);
};

/// Adds --version and -h/--help to `cli` and parses. Prints the help or the version line to stdout
/// and returns nullopt when either was asked for (the program then exits 0). ConfigError
/// "<program>: <what> (see --help)" for an option cxxopts refuses (unknown, malformed, bad value),
/// "<program>: unexpected argument '<word>'" for a positional word and "<program>: --<flag> is
/// required" for a missing required flag.
std::optional<cxxopts::ParseResult> parse_command_line(cxxopts::Options& cli, int argc, const char* const* argv,
                                                       const CommandLineRules& rules = {});

}  // namespace ddp::util
