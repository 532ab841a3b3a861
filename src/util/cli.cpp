#include "util/cli.h"

#include <ddp/errors.h>

#include <iostream>

#include "util/version_banner.h"

namespace ddp::util {

std::optional<cxxopts::ParseResult> parse_command_line(cxxopts::Options& cli, int argc, const char* const* argv,
                                                       const CommandLineRules& rules) {
  const std::string program = cli.program();
  cli.add_options(rules.help_flags_group())("version", "print the version and exit")("h,help", "show this help");
  cxxopts::ParseResult args;
  try {
    args = cli.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    throw ConfigError(program + ": " + e.what() + " (see --help)");
  }
  if (args.count("help")) {
    std::cout << cli.help(rules.help_groups()) << "\n";
    if (rules.epilogue()) std::cout << help_epilogue(*rules.epilogue());
    std::cout << std::flush;
    return std::nullopt;
  }
  if (args.count("version")) {
    std::cout << version_banner(program) << std::endl;
    return std::nullopt;
  }
  if (!args.unmatched().empty()) throw ConfigError(program + ": unexpected argument '" + args.unmatched()[0] + "'");
  for (const auto& flag : rules.required())
    if (!args.count(flag)) throw ConfigError(program + ": --" + flag + " is required");
  return args;
}

}  // namespace ddp::util
