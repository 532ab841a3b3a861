// util::parse_command_line, the one command-line wrapper of the trainers and the tools.
#include "util/cli.h"

#include <ddp/errors.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

using ddp::util::CommandLineRules;

namespace {

std::optional<cxxopts::ParseResult> parse(std::vector<std::string> args, const CommandLineRules& rules = {}) {
  cxxopts::Options cli("prog", "test");
  cli.add_options("Runtime")("count", "a number", cxxopts::value<int>()->default_value("1"));
  cli.add_options("Other")("out", "a path", cxxopts::value<std::string>());
  args.insert(args.begin(), "prog");
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());
  return ddp::util::parse_command_line(cli, static_cast<int>(argv.size()), argv.data(), rules);
}

std::string error_of(std::vector<std::string> args, const CommandLineRules& rules = {}) {
  try {
    parse(std::move(args), rules);
  } catch (const ddp::ConfigError& e) {
    return e.what();
  }
  return "no ConfigError";
}

std::string help_of(const CommandLineRules& rules) {
  testing::internal::CaptureStdout();
  const bool printed = !parse({"--help"}, rules);
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_TRUE(printed);
  return out;
}

}  // namespace

TEST(CommandLine, ParsesAndChecksRequiredFlags) {
  auto args = parse({"--count", "3", "--out", "x"}, CommandLineRules().required({"out"}));
  ASSERT_TRUE(args);
  EXPECT_EQ((*args)["count"].as<int>(), 3);
  EXPECT_EQ(error_of({}, CommandLineRules().required({"out"})), "prog: --out is required");
}

TEST(CommandLine, BadCommandLinesAreConfigErrorsNamingTheProgram) {
  const std::string unknown = error_of({"--nope"});
  EXPECT_EQ(unknown.rfind("prog: ", 0), 0u) << unknown;
  EXPECT_NE(unknown.find("nope"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("(see --help)"), std::string::npos) << unknown;
  EXPECT_NE(error_of({"--count", "two"}).find("(see --help)"), std::string::npos);
  EXPECT_EQ(error_of({"stray"}), "prog: unexpected argument 'stray'");
}

TEST(CommandLine, AValueOfTheWrongTypeNamesItsFlag) {
  EXPECT_EQ(error_of({"--count", "two"}), "prog: --count: 'two' is not a valid value (see --help)");
  EXPECT_EQ(error_of({"--count=2x"}), "prog: --count: '2x' is not a valid value (see --help)");
}

// A 32 KiB argument used to overflow the stack inside cxxopts' std::regex (a segfault): any argument
// longer than a path is refused before cxxopts sees it.
TEST(CommandLine, AnArgumentLongerThanAPathIsRefusedNotACrash) {
  EXPECT_EQ(error_of({"--count", std::string(65536, '9')}),
            "prog: argument 2 ('99999999999999999999999999999999... (65536 bytes)') is longer than 4096 bytes");
  EXPECT_NE(error_of({"--out=" + std::string(65536, 'a')}).find("longer than 4096 bytes"), std::string::npos);
  ASSERT_TRUE(parse({"--out", std::string(4096, 'a')}));
}

TEST(CommandLine, HelpListsTheChosenGroupsWithTheHelpFlagsInTheirGroup) {
  const std::string only_runtime =
      help_of(CommandLineRules().help_groups({"Runtime"}).help_flags_group("Runtime"));
  EXPECT_NE(only_runtime.find("--version"), std::string::npos) << only_runtime;
  EXPECT_NE(only_runtime.find("--count"), std::string::npos) << only_runtime;
  EXPECT_EQ(only_runtime.find("--out"), std::string::npos) << only_runtime;
  // In the default (unnamed) group the help flags are not in a listed group, so --help omits them.
  const std::string elsewhere = help_of(CommandLineRules().help_groups({"Runtime"}));
  EXPECT_EQ(elsewhere.find("--version"), std::string::npos) << elsewhere;
}

TEST(CommandLine, TrainerEpilogueFollowsTheOptions) {
  const std::string help = help_of(CommandLineRules().epilogue(ddp::util::HelpFor::kTrainer));
  EXPECT_NE(help.find("WORLD_SIZE"), std::string::npos) << help;
  EXPECT_LT(help.find("--out"), help.find("WORLD_SIZE")) << help;
  EXPECT_EQ(help_of({}).find("WORLD_SIZE"), std::string::npos);
}

TEST(CommandLine, VersionIsOneLine) {
  testing::internal::CaptureStdout();
  EXPECT_FALSE(parse({"--version"}));
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(out.rfind("prog ", 0), 0u) << out;
  EXPECT_EQ(out.find('\n'), out.size() - 1) << out;
}
