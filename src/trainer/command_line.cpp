#include "trainer/command_line.h"

#include <ddp/errors.h>

#include <iostream>

#include "util/help_epilogue.h"
#include "util/version_banner.h"

namespace ddp::trainer {

void add_help_flags(cxxopts::Options& cli) {
  cli.add_options("Runtime")("version", "print the version and exit")("h,help", "show this help");
}

std::optional<cxxopts::ParseResult> parse_command_line(cxxopts::Options& cli, int argc, char** argv,
                                                       const std::vector<std::string>& groups) {
  const std::string program = cli.program();
  cxxopts::ParseResult args;
  try {
    args = cli.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    throw ddp::ConfigError(program + ": " + e.what() + " (see --help)");
  }
  if (args.count("help")) {
    std::cout << cli.help(groups) << "\n"
              << ddp::util::help_epilogue(ddp::util::HelpFor::kTrainer) << std::flush;
    return std::nullopt;
  }
  if (args.count("version")) {
    std::cout << ddp::util::version_banner(program) << std::endl;
    return std::nullopt;
  }
  if (!args.unmatched().empty()) throw ddp::ConfigError(program + ": unexpected argument '" + args.unmatched()[0] + "'");
  return args;
}

}  // namespace ddp::trainer
