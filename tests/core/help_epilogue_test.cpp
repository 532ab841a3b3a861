// The environment variables and exit codes at the end of every program's --help, and that
// docs/ENVIRONMENT.md (the contract) names every variable the help names.
#include <ddp/errors.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "util/help_epilogue.h"

using ddp::util::help_epilogue;
using ddp::util::HelpFor;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Every NAME_WITH_UNDERSCORES in `text`, plus the bare RANK and PATH.
std::set<std::string> variables_in(const std::string& text) {
  std::set<std::string> names;
  const std::regex name(R"(\b[A-Z][A-Z0-9]*(_[A-Z0-9]+)+\b|\bRANK\b|\bPATH\b)");
  for (std::sregex_iterator it(text.begin(), text.end(), name), end; it != end; ++it) names.insert(it->str());
  return names;
}

}  // namespace

TEST(HelpEpilogue, TrainerListsTheRankSourcesAndSwitches) {
  const std::string text = help_epilogue(HelpFor::kTrainer);
  for (const char* v : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT",
                        "PET_NNODES", "JOB_COMPLETION_INDEX", "SM_HOSTS", "SM_CHANNEL_TRAIN", "SM_MODEL_DIR",
                        "OMP_NUM_THREADS", "GLOO_SOCKET_IFNAME", "DDP_NCCL_BLOCKING_WAIT", "TORCH_NCCL_BLOCKING_WAIT",
                        "NCCL_BLOCKING_WAIT", "TORCH_NCCL_AVOID_RECORD_STREAMS", "DDP_LOG_LEVEL", "DDP_STORE_TOKEN"})
    EXPECT_TRUE(has(text, v)) << v << " missing from\n" << text;
}

TEST(HelpEpilogue, LauncherListsItsNodeVariables) {
  const std::string text = help_epilogue(HelpFor::kLauncher);
  for (const char* v : {"PET_NNODES", "PET_NODE_RANK", "JOB_COMPLETION_INDEX", "RANK", "WORLD_SIZE", "MASTER_ADDR",
                        "OMP_NUM_THREADS", "PATH", "DDP_LOG_LEVEL"})
    EXPECT_TRUE(has(text, v)) << v << " missing from\n" << text;
}

TEST(HelpEpilogue, ExitCodesFollowErrorsH) {
  for (HelpFor program : {HelpFor::kTrainer, HelpFor::kLauncher}) {
    const std::string text = help_epilogue(program);
    EXPECT_TRUE(has(text, "exit codes")) << text;
    EXPECT_TRUE(has(text, "1-127 permanent, >= 128 retryable")) << text;
    for (int code : {ddp::kExitConfig, ddp::kExitTerminated, ddp::kExitPeerLost, ddp::kExitTimeout,
                     ddp::kExitStoreUnreachable})
      EXPECT_TRUE(std::regex_search(text, std::regex("\n  " + std::to_string(code) + " +[a-z]"))) << code << "\n" << text;
  }
}

TEST(HelpEpilogue, LinesFitATerminal) {
  for (HelpFor program : {HelpFor::kTrainer, HelpFor::kLauncher}) {
    std::istringstream in(help_epilogue(program));
    for (std::string line; std::getline(in, line);) EXPECT_LE(line.size(), 100u) << line;
  }
}

TEST(HelpEpilogue, DocsNameEveryVariable) {
  std::ifstream in(std::string(DDP_SOURCE_DIR) + "/docs/ENVIRONMENT.md");
  ASSERT_TRUE(in) << "docs/ENVIRONMENT.md";
  std::stringstream docs;
  docs << in.rdbuf();
  const std::set<std::string> documented = variables_in(docs.str());
  for (HelpFor program : {HelpFor::kTrainer, HelpFor::kLauncher})
    for (const auto& v : variables_in(help_epilogue(program)))
      EXPECT_TRUE(documented.count(v)) << v << " is in --help but not in docs/ENVIRONMENT.md";
}
