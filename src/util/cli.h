#pragma once
// The command-line handling every ddp binary shares, so they all behave alike: --version prints
// version_banner(), -h/--help prints the options (and, for the trainers, the environment variables
// and exit codes), and a bad command line is a ConfigError "<program>: ..." (exit 2).
//
//   cxxopts::Options cli("make_cifar10_synthetic", "Write a synthetic CIFAR-10 ...");
//   cli.add_options()("out", "output folder", cxxopts::value<std::string>());
//   auto args = ddp::util::parse_command_line(cli, argc, argv, ddp::util::CommandLineRules().required({"out"}));
//   if (!args) return 0;  // --help or --version was printed
#include <cxxopts.hpp>

#include <optional>
#include <string>
#include <vector>

#include "util/help_epilogue.h"

namespace ddp::util {

class CommandLineRules {
 public:
  /// Flags that must be given: ConfigError "<program>: --<flag> is required" otherwise.
  CommandLineRules& required(std::vector<std::string> flags) {
    required_ = std::move(flags);
    return *this;
  }
  /// --help ends with help_epilogue(program).
  CommandLineRules& epilogue(HelpFor program) {
    epilogue_ = program;
    return *this;
  }
  /// The option groups --help lists, in this order (default: all, in the order they were added).
  CommandLineRules& help_groups(std::vector<std::string> groups) {
    help_groups_ = std::move(groups);
    return *this;
  }
  /// The --help group that lists --version and -h/--help themselves (default: the unnamed one);
  /// with help_groups() it must be one of them, or --help would not mention itself.
  CommandLineRules& help_flags_group(std::string group) {
    help_flags_group_ = std::move(group);
    return *this;
  }
  const std::vector<std::string>& required() const { return required_; }
  const std::optional<HelpFor>& epilogue() const { return epilogue_; }
  const std::vector<std::string>& help_groups() const { return help_groups_; }
  const std::string& help_flags_group() const { return help_flags_group_; }

 private:
  std::vector<std::string> required_;
  std::optional<HelpFor> epilogue_;
  std::vector<std::string> help_groups_;
  std::string help_flags_group_;
};

/// Adds --version and -h/--help to `cli` and parses. Prints the help or the version line to stdout
/// and returns nullopt when either was asked for (the program then exits 0). ConfigError
/// "<program>: <what> (see --help)" for an option cxxopts refuses (unknown, malformed, bad value),
/// "<program>: unexpected argument '<word>'" for a positional word and "<program>: --<flag> is
/// required" for a missing required flag.
std::optional<cxxopts::ParseResult> parse_command_line(cxxopts::Options& cli, int argc, const char* const* argv,
                                                       const CommandLineRules& rules = {});

}  // namespace ddp::util
