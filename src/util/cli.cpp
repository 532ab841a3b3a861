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

// cxxopts writes "DESCRIPTION\nUsage:\n  PROGRAM [OPTION...]\n\n Group options:\n ...". help2man makes
// the man page's SYNOPSIS from a "Usage: PROGRAM ..." line and a subsection from a heading that
// starts its line, so the usage line comes first, on one line, and the headings lose their space
// (ddprun's hand-written --help has the same shape).
std::string man_page_shaped(const std::string& help, const std::string& program) {
  const std::string usage = "\nUsage:\n  " + program;
  const size_t at = help.find(usage);
  const size_t options = at == std::string::npos ? at : help.find("\n\n", at + usage.size());
  if (options == std::string::npos) return help;  // another cxxopts layout: leave it as it is
  std::string out = "Usage: " + help.substr(at + usage.size() - program.size(), options - (at + usage.size() - program.size())) +
                    "\n\n" + help.substr(0, at) + "\n";
  size_t line = options + 1;
  while (line < help.size()) {
    size_t end = help.find('\n', line);
    if (end == std::string::npos) end = help.size();
    std::string text = help.substr(line, end - line);
    const std::string heading_end = " options:";
    if (text.size() > 1 && text[0] == ' ' && text[1] != ' ' && text.size() >= heading_end.size() &&
        text.compare(text.size() - heading_end.size(), heading_end.size(), heading_end) == 0)
      text.erase(0, 1);
    out += text + (end < help.size() ? "\n" : "");
    line = end + 1;
  }
  return out;
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
    std::cout << man_page_shaped(cli.help(rules.help_groups()), program) << "\n";
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
