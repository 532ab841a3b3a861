#include "util/cli.h"

#include <ddp/errors.h>

#include <cstring>
#include <iostream>
#include <utility>

#include "util/numbers.h"
#include "util/version_banner.h"

namespace ddp::util {
namespace {

// cxxopts matches every argument, and parses numbers, with std::regex, whose matcher recurses once per
// character: an argument of ~32 KiB overflows the stack (a segfault, found by
// tests/hostile/bad_flag_values.py). No real flag value is longer than a path (PATH_MAX, 4096).
constexpr size_t kMaxArgumentBytes = 4096;


// cxxopts' message for a value of the wrong type names the value only: "Argument 'VALUE' failed to
// parse", with typographic quotes in cxxopts 3.1. The flag is the argument before that value, or the
// same argument in --flag=value form. Returns "--flag: 'VALUE'", or cxxopts' message when not found.
std::string name_bad_value(const std::string& message, int argc, const char* const* argv) {
  auto is_message_for = [&](const std::string& value) {
    for (const auto& [open, close] : {std::pair<const char*, const char*>{"\u2018", "\u2019"}, {"'", "'"}})
      if (message == std::string("Argument ") + open + value + close + " failed to parse") return true;
    return false;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos && is_message_for(arg.substr(eq + 1)))
      return arg.substr(0, eq) + ": '" + printable(arg.substr(eq + 1), 32) + "' is not a valid value";
    if (i > 1 && argv[i - 1][0] == '-' && is_message_for(arg))
      return std::string(argv[i - 1]) + ": '" + printable(arg, 32) + "' is not a valid value";
  }
  return message;
}

}  // namespace

std::optional<cxxopts::ParseResult> parse_command_line(cxxopts::Options& cli, int argc, const char* const* argv,
                                                       const CommandLineRules& rules) {
  const std::string program = cli.program();
  cli.add_options(rules.help_flags_group())("version", "print the version and exit")("h,help", "show this help");
  for (int i = 1; i < argc; ++i)
    if (std::strlen(argv[i]) > kMaxArgumentBytes)
      throw ConfigError(program + ": argument " + std::to_string(i) + " ('" + printable(argv[i], 32) + "') is longer than " +
                        std::to_string(kMaxArgumentBytes) + " bytes");
  cxxopts::ParseResult args;
  try {
    args = cli.parse(argc, argv);
  } catch (const cxxopts::exceptions::incorrect_argument_type& e) {
    throw ConfigError(program + ": " + name_bad_value(e.what(), argc, argv) + " (see --help)");
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
