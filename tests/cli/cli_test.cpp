// --version and --help of the built binaries, run as a user would.
#include <ddp/version.h>
#include <gtest/gtest.h>
#include <torch/version.h>

#include <chrono>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/subprocess.h"

using ddp::testing::Subprocess;
using namespace std::chrono_literals;

namespace {

struct Program {
  std::string name;
  std::string path;
  bool lists_environment;  ///< its --help ends with the environment variables and exit codes
};

std::vector<Program> built_programs() {
  std::vector<Program> p;
#ifdef DDP_CLI_DDPRUN
  p.push_back({"ddprun", DDP_CLI_DDPRUN, true});
#endif
#ifdef DDP_CLI_TRAIN_CIFAR10
  p.push_back({"train_cifar10", DDP_CLI_TRAIN_CIFAR10, true});
#endif
#ifdef DDP_CLI_TRAIN_RANZCR
  p.push_back({"train_ranzcr", DDP_CLI_TRAIN_RANZCR, true});
#endif
#ifdef DDP_CLI_MAKE_CIFAR10_SYNTHETIC
  p.push_back({"make_cifar10_synthetic", DDP_CLI_MAKE_CIFAR10_SYNTHETIC, false});
#endif
#ifdef DDP_CLI_MAKE_CIFAR10_FROM_IDX
  p.push_back({"make_cifar10_from_idx", DDP_CLI_MAKE_CIFAR10_FROM_IDX, false});
#endif
#ifdef DDP_CLI_MAKE_RANZCR_SYNTHETIC
  p.push_back({"make_ranzcr_synthetic", DDP_CLI_MAKE_RANZCR_SYNTHETIC, false});
#endif
  return p;
}

struct Outcome {
  int status;
  std::string output;
};

// `flag`'s exit status and what it wrote; `stdout_only` drops stderr.
Outcome run(const Program& p, const std::string& flag, bool stdout_only) {
  std::vector<std::string> argv = {p.path, flag};
  if (stdout_only) argv = {"/bin/sh", "-c", "exec \"$0\" \"$1\" 2>/dev/null", p.path, flag};
  Subprocess s(argv);
  int status = s.wait(60s);
  return {status, s.output()};
}

}  // namespace

TEST(Cli, EveryBinaryPrintsOneVersionLine) {
  const auto programs = built_programs();
  if (programs.empty()) GTEST_SKIP() << "no binaries built (DDP_BUILD_APPS=OFF)";
  for (const auto& p : programs) {
    const std::string expected = p.name + " " + DDP_VERSION_STRING + " (LibTorch " + TORCH_VERSION + ", NCCL " +
                                 (DDP_WITH_NCCL ? "yes" : "no") + ")\n";
    Outcome out = run(p, "--version", /*stdout_only=*/true);
    EXPECT_EQ(out.status, 0) << p.name;
    EXPECT_EQ(out.output, expected) << p.name << ": the line on stdout";
    Outcome all = run(p, "--version", /*stdout_only=*/false);
    EXPECT_EQ(all.output, expected) << p.name << ": nothing else, on stdout or stderr";
  }
}

TEST(Cli, HelpListsEnvironmentAndExitCodes) {
  const auto programs = built_programs();
  if (programs.empty()) GTEST_SKIP() << "no binaries built (DDP_BUILD_APPS=OFF)";
  for (const auto& p : programs) {
    if (!p.lists_environment) continue;
    Outcome help = run(p, "--help", /*stdout_only=*/true);
    EXPECT_EQ(help.status, 0) << p.name;
    for (const char* part : {"--version", "RANK", "WORLD_SIZE", "MASTER_ADDR", "DDP_LOG_LEVEL", "exit codes", "\n  2 ",
                             "\n  143 ", "\n  200 ", "\n  201 ", "\n  202 "})
      EXPECT_NE(help.output.find(part), std::string::npos) << p.name << " --help lacks '" << part << "':\n" << help.output;
  }
}

// Every option that takes a value says what the value is, in the vocabulary of src/util/cli.h that
// the man pages show and the bash completion completes by: cxxopts' "arg" and ddprun's old "V" said
// nothing.
TEST(Cli, EveryValueHasANameFromTheVocabulary) {
  const auto programs = built_programs();
  if (programs.empty()) GTEST_SKIP() << "no binaries built (DDP_BUILD_APPS=OFF)";
  // An option row: "  -n, --images N    ..." or "      --out DIR" (a description starts further right).
  const std::regex row(R"(^(  -[A-Za-z0-9], |      )--([A-Za-z0-9][A-Za-z0-9_-]*)( ([^ ]+))?( {2,}|$))");
  // A choice word may take an argument after a colon ({none|powersgd:N}).
  const std::regex vocabulary(
      R"(N|X|SECONDS|FILE|DIR|HOST|PORT|HOST:PORT|NAME|LIST|N\[:N\]|\{[A-Za-z0-9]+(:(N|X|NAME))?(\|[A-Za-z0-9]+(:(N|X|NAME))?)*\})");
  for (const auto& p : programs) {
    Outcome help = run(p, "--help", /*stdout_only=*/true);
    ASSERT_EQ(help.status, 0) << p.name;
    std::istringstream lines(help.output);
    std::string line;
    int with_value = 0;
    while (std::getline(lines, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, row) || !m[4].matched) continue;
      ++with_value;
      const std::string name = m[4];
      EXPECT_NE(name, "arg") << p.name << " --" << m[2] << ": cxxopts' placeholder, give the option a value name";
      EXPECT_NE(name, "V") << p.name << " --" << m[2] << ": a placeholder, give the option a value name";
      EXPECT_TRUE(std::regex_match(name, vocabulary))
          << p.name << " --" << m[2] << " " << name << ": not a value name of src/util/cli.h";
    }
    EXPECT_GT(with_value, 0) << p.name << " --help lists no option with a value:\n" << help.output;
  }
}

// help2man builds the man page's SYNOPSIS from a "Usage: PROGRAM ..." line at the top.
TEST(Cli, HelpStartsWithAUsageLine) {
  const auto programs = built_programs();
  if (programs.empty()) GTEST_SKIP() << "no binaries built (DDP_BUILD_APPS=OFF)";
  for (const auto& p : programs) {
    Outcome help = run(p, "--help", /*stdout_only=*/true);
    EXPECT_EQ(help.output.rfind("Usage: " + p.name + " [OPTION...]", 0), 0u) << p.name << ":\n" << help.output;
  }
}
