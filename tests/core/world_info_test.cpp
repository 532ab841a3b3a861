// Table tests of the environment contract (docs/ENVIRONMENT.md).
#include <ddp/errors.h>
#include <ddp/world_info.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

using Env = std::map<std::string, std::string>;

namespace {

ddp::WorldInfo parse(const Env& env) { return ddp::WorldInfo::from_env(env); }

// Expects a ConfigError whose message mentions every fragment.
void expect_config_error(const Env& env, std::vector<std::string> fragments) {
  try {
    parse(env);
    FAIL() << "expected ConfigError";
  } catch (const ddp::ConfigError& e) {
    for (auto& f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what() << " lacks " << f;
    EXPECT_EQ(e.exit_code(), 2);
  }
}

Env torchrun_env() {
  return {{"RANK", "3"},           {"LOCAL_RANK", "1"},   {"WORLD_SIZE", "4"},
          {"LOCAL_WORLD_SIZE", "2"}, {"GROUP_RANK", "1"},   {"MASTER_ADDR", "node0"},
          {"MASTER_PORT", "29400"},  {"TORCHELASTIC_RESTART_COUNT", "2"},
          {"TORCHELASTIC_MAX_RESTARTS", "3"}, {"TORCHELASTIC_RUN_ID", "abc"},
          {"TORCHELASTIC_USE_AGENT_STORE", "True"}};
}

}  // namespace

TEST(WorldInfo, NothingSetIsSingleProcess) {
  auto w = parse({});
  EXPECT_EQ(w.rank, 0);
  EXPECT_EQ(w.world_size, 1);
  EXPECT_EQ(w.source, "single");
  EXPECT_FALSE(w.use_agent_store);
}

TEST(WorldInfo, Torchrun) {
  auto w = parse(torchrun_env());
  EXPECT_EQ(w.source, "torchrun");
  EXPECT_EQ(w.rank, 3);
  EXPECT_EQ(w.local_rank, 1);
  EXPECT_EQ(w.world_size, 4);
  EXPECT_EQ(w.local_world_size, 2);
  EXPECT_EQ(w.group_rank, 1);
  EXPECT_EQ(w.master_addr, "node0");
  EXPECT_EQ(w.master_port, 29400);
  EXPECT_EQ(w.restart_count, 2);
  EXPECT_EQ(w.max_restarts, 3);
  EXPECT_EQ(w.run_id, "abc");
  EXPECT_TRUE(w.use_agent_store);
}

TEST(WorldInfo, TorchrunWinsOverEverythingElse) {
  Env env = torchrun_env();
  env["PET_NNODES"] = "7";
  env["SM_HOSTS"] = "[\"a\"]";
  EXPECT_EQ(parse(env).source, "torchrun");
}

TEST(WorldInfo, PyTorchJobV1) {
  auto w = parse({{"MASTER_ADDR", "job-master-0"}, {"MASTER_PORT", "23456"}, {"WORLD_SIZE", "3"}, {"RANK", "2"}});
  EXPECT_EQ(w.source, "pytorchjob");
  EXPECT_EQ(w.rank, 2);
  EXPECT_EQ(w.world_size, 3);
  EXPECT_EQ(w.local_rank, 0);
  EXPECT_EQ(w.master_addr, "job-master-0");
  EXPECT_EQ(w.master_port, 23456);
  EXPECT_FALSE(w.use_agent_store);
}

TEST(WorldInfo, KubeflowPetOneProcessPerNode) {
  auto w = parse({{"PET_NNODES", "3"}, {"PET_NPROC_PER_NODE", "1"}, {"PET_NODE_RANK", "2"},
                  {"PET_MASTER_ADDR", "tj-node-0-0.tj"}, {"PET_MASTER_PORT", "29400"}});
  EXPECT_EQ(w.source, "kubeflow-pet");
  EXPECT_EQ(w.rank, 2);
  EXPECT_EQ(w.world_size, 3);
  EXPECT_EQ(w.master_addr, "tj-node-0-0.tj");
  EXPECT_EQ(w.master_port, 29400);
}

TEST(WorldInfo, KubeflowPetJobCompletionIndex) {
  auto w = parse({{"PET_NNODES", "2"}, {"JOB_COMPLETION_INDEX", "1"}, {"PET_MASTER_ADDR", "m"},
                  {"PET_MASTER_PORT", "29400"}});
  EXPECT_EQ(w.rank, 1);
}

TEST(WorldInfo, KubeflowPetWinsOverV1) {
  // Operator >= 1.7 sets both; PET_* describes nodes, RANK the pod index.
  auto w = parse({{"PET_NNODES", "2"}, {"PET_NODE_RANK", "1"}, {"PET_NPROC_PER_NODE", "1"},
                  {"PET_MASTER_ADDR", "m"}, {"PET_MASTER_PORT", "23456"}, {"MASTER_ADDR", "m"},
                  {"MASTER_PORT", "23456"}, {"WORLD_SIZE", "2"}, {"RANK", "1"}});
  EXPECT_EQ(w.source, "kubeflow-pet");
  EXPECT_EQ(w.rank, 1);
}

TEST(WorldInfo, SageMaker) {
  auto w = parse({{"SM_HOSTS", "[\"algo-1\", \"algo-2\",\"algo-3\"]"}, {"SM_CURRENT_HOST", "algo-2"},
                  {"SM_NUM_GPUS", "0"}});
  EXPECT_EQ(w.source, "sagemaker");
  EXPECT_EQ(w.rank, 1);
  EXPECT_EQ(w.world_size, 3);
  EXPECT_EQ(w.master_addr, "algo-1");
  EXPECT_EQ(w.master_port, 7777);
}

struct BadCase {
  const char* what;
  Env env;
  std::vector<std::string> fragments;
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.what; }

class WorldInfoBad : public ::testing::TestWithParam<BadCase> {};

TEST_P(WorldInfoBad, IsConfigErrorNamingTheVariable) { expect_config_error(GetParam().env, GetParam().fragments); }

INSTANTIATE_TEST_SUITE_P(
    Table, WorldInfoBad,
    ::testing::Values(
        BadCase{"rank_not_number", {{"RANK", "abc"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "1"}}, {"RANK", "abc"}},
        BadCase{"rank_negative", {{"RANK", "-1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "1"}}, {"RANK", "-1"}},
        BadCase{"rank_trailing_junk", {{"RANK", "1x"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "1"}}, {"RANK", "1x"}},
        BadCase{"rank_ge_world", {{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "1"}}, {"RANK=2", "WORLD_SIZE=2"}},
        BadCase{"world_zero", {{"RANK", "0"}, {"WORLD_SIZE", "0"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "1"}}, {"WORLD_SIZE", "0"}},
        BadCase{"port_zero", {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "0"}}, {"MASTER_PORT", "0"}},
        BadCase{"port_too_big", {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "65536"}}, {"MASTER_PORT", "65536"}},
        BadCase{"port_not_number", {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "http"}}, {"MASTER_PORT", "http"}},
        BadCase{"v1_missing_master", {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}}, {"MASTER_ADDR"}},
        BadCase{"v1_missing_rank", {{"WORLD_SIZE", "2"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "1"}}, {"RANK"}},
        BadCase{"torchrun_local_rank_ge", {{"RANK", "0"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "1"}}, {"LOCAL_RANK=2", "LOCAL_WORLD_SIZE=2"}},
        BadCase{"torchrun_bad_agent_store", {{"RANK", "0"}, {"LOCAL_RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "1"}, {"TORCHELASTIC_USE_AGENT_STORE", "maybe"}}, {"TORCHELASTIC_USE_AGENT_STORE", "maybe"}},
        BadCase{"torchrun_bad_restart", {{"RANK", "0"}, {"LOCAL_RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "1"}, {"TORCHELASTIC_RESTART_COUNT", "-3"}}, {"TORCHELASTIC_RESTART_COUNT", "-3"}},
        BadCase{"pet_nnodes_bad", {{"PET_NNODES", "two"}}, {"PET_NNODES", "two"}},
        BadCase{"pet_elastic", {{"PET_NNODES", "1:4"}}, {"PET_NNODES", "1:4"}},
        BadCase{"pet_nproc_many", {{"PET_NNODES", "1"}, {"PET_NPROC_PER_NODE", "4"}}, {"PET_NPROC_PER_NODE=4", "ddprun"}},
        BadCase{"pet_nproc_bad", {{"PET_NNODES", "1"}, {"PET_NPROC_PER_NODE", "lots"}}, {"PET_NPROC_PER_NODE", "lots"}},
        BadCase{"pet_node_rank_ge", {{"PET_NNODES", "2"}, {"PET_NODE_RANK", "2"}, {"PET_MASTER_ADDR", "m"}, {"PET_MASTER_PORT", "1"}}, {"PET_NODE_RANK=2", "PET_NNODES=2"}},
        BadCase{"pet_no_node_rank", {{"PET_NNODES", "2"}, {"PET_MASTER_ADDR", "m"}, {"PET_MASTER_PORT", "1"}}, {"PET_NODE_RANK"}},
        BadCase{"pet_bad_port", {{"PET_NNODES", "2"}, {"PET_NODE_RANK", "0"}, {"PET_MASTER_ADDR", "m"}, {"PET_MASTER_PORT", "99999"}}, {"PET_MASTER_PORT", "99999"}},
        BadCase{"sm_hosts_malformed", {{"SM_HOSTS", "[\"algo-1\","}, {"SM_CURRENT_HOST", "algo-1"}}, {"SM_HOSTS", "JSON"}},
        BadCase{"sm_hosts_not_list", {{"SM_HOSTS", "algo-1"}, {"SM_CURRENT_HOST", "algo-1"}}, {"SM_HOSTS", "algo-1"}},
        BadCase{"sm_hosts_numbers", {{"SM_HOSTS", "[1,2]"}, {"SM_CURRENT_HOST", "algo-1"}}, {"SM_HOSTS"}},
        BadCase{"sm_current_unknown", {{"SM_HOSTS", "[\"algo-1\"]"}, {"SM_CURRENT_HOST", "algo-9"}}, {"SM_CURRENT_HOST", "algo-9"}},
        BadCase{"sm_current_missing", {{"SM_HOSTS", "[\"algo-1\"]"}}, {"SM_CURRENT_HOST"}},
        BadCase{"sm_num_gpus_bad", {{"SM_HOSTS", "[\"algo-1\"]"}, {"SM_CURRENT_HOST", "algo-1"}, {"SM_NUM_GPUS", "x"}}, {"SM_NUM_GPUS", "x"}}),
    [](const auto& info) { return std::string(info.param.what); });
