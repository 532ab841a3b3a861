// ddprun's flags, PET_* variables and operator conventions, parsed without starting anything.
#include <ddp/errors.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "ddp/launcher/launch_config.h"
#include "util/nproc.h"
#include "support/multiprocess.h"

using ddp::ConfigError;
using ddp::launcher::LaunchConfig;
using ddp::launcher::parse_launch_args;
using Env = std::map<std::string, std::string>;

namespace {

LaunchConfig parse(std::vector<std::string> args, Env env = {}) {
  args.insert(args.begin(), "ddprun");
  env.emplace("PATH", "/usr/bin:/bin");
  return parse_launch_args(args, env);
}

// The ConfigError's message, or a failure when there is none.
std::string config_error(std::vector<std::string> args, Env env = {}) {
  try {
    parse(args, std::move(env));
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    return e.what();
  }
  std::string joined;
  for (auto& a : args) joined += a + " ";
  ADD_FAILURE() << "no ConfigError for: " << joined;
  return "";
}

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

}  // namespace

TEST(LaunchConfig, TorchrunFlagsInBothSpellings) {
  auto c = parse({"--nproc-per-node", "3", "--nnodes=2", "--node_rank", "1", "--master_addr=10.0.0.5",
                  "--master-port", "23456", "--max-restarts", "4", "--monitor-interval", "0.5", "--run-id", "job-7",
                  "--no-python", "--", "true", "--epochs", "3"});
  EXPECT_EQ(c.nproc_per_node, 3);
  EXPECT_EQ(c.nnodes, 2);
  EXPECT_EQ(c.node_rank, 1);
  EXPECT_EQ(c.master_addr, "10.0.0.5");
  EXPECT_EQ(c.master_port, 23456);
  EXPECT_EQ(c.max_restarts, 4);
  EXPECT_EQ(c.monitor_interval, std::chrono::milliseconds(500));
  EXPECT_EQ(c.run_id, "job-7");
  EXPECT_TRUE(c.no_python);
  ASSERT_EQ(c.program.size(), 3u);
  EXPECT_EQ(c.program[0], "/usr/bin/true");  // resolved in PATH
  EXPECT_EQ(c.program[1], "--epochs");       // the program's own flags are left alone
  // Without "--", the first non-option starts the program.
  auto d = parse({"--nproc_per_node=2", "true", "--nproc-per-node", "9"});
  EXPECT_EQ(d.nproc_per_node, 2);
  EXPECT_EQ(d.program, (std::vector<std::string>{"/usr/bin/true", "--nproc-per-node", "9"}));
}

TEST(LaunchConfig, PetVariablesAndTheCommandLineWins) {
  Env env = {{"PET_NPROC_PER_NODE", "2"}, {"PET_NNODES", "3"},        {"PET_NODE_RANK", "2"},
             {"PET_MASTER_ADDR", "job-master-0"}, {"PET_MASTER_PORT", "29400"}, {"PET_MAX_RESTARTS", "5"},
             {"PET_MONITOR_INTERVAL", "1"}, {"PET_RUN_ID", "abc"}};
  auto c = parse({"true"}, env);
  EXPECT_EQ(c.nproc_per_node, 2);
  EXPECT_EQ(c.nnodes, 3);
  EXPECT_EQ(c.node_rank, 2);
  EXPECT_EQ(c.node_rank_source, "PET_NODE_RANK");
  EXPECT_EQ(c.master_addr, "job-master-0");
  EXPECT_EQ(c.master_port, 29400);
  EXPECT_EQ(c.max_restarts, 5);
  EXPECT_EQ(c.monitor_interval, std::chrono::seconds(1));
  EXPECT_EQ(c.run_id, "abc");
  auto d = parse({"--nproc-per-node", "4", "--max-restarts", "0", "--node-rank", "0", "true"}, env);
  EXPECT_EQ(d.nproc_per_node, 4);
  EXPECT_EQ(d.max_restarts, 0);
  EXPECT_EQ(d.node_rank, 0);
  // PET_NNODES "N:N" (the operator's elastic spelling) is fine when fixed.
  EXPECT_EQ(parse({"true"}, {{"PET_NNODES", "2:2"}, {"PET_NODE_RANK", "1"}, {"PET_MASTER_ADDR", "m"}}).nnodes, 2);
}

TEST(LaunchConfig, NodeRankFromJobSetAndPyTorchJob) {
  // Trainer v2 (JobSet): JOB_COMPLETION_INDEX.
  auto c = parse({"true"}, {{"PET_NNODES", "4"}, {"JOB_COMPLETION_INDEX", "3"}, {"PET_MASTER_ADDR", "m"}});
  EXPECT_EQ(c.node_rank, 3);
  EXPECT_EQ(c.node_rank_source, "JOB_COMPLETION_INDEX");
  // PyTorchJob v1 >= 1.7 sets PET_NODE_RANK too (and RANK = pod index, WORLD_SIZE = pods x nproc).
  auto d = parse({"true"}, {{"PET_NNODES", "2"}, {"PET_NPROC_PER_NODE", "2"}, {"PET_NODE_RANK", "1"},
                            {"RANK", "1"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "job-master-0"}, {"MASTER_PORT", "23456"}});
  EXPECT_EQ(d.nnodes, 2);
  EXPECT_EQ(d.node_rank, 1);
  EXPECT_EQ(d.master_addr, "job-master-0");
  EXPECT_EQ(d.master_port, 23456);
  // Older PyTorchJob: only WORLD_SIZE (pods) and RANK (pod index).
  auto e = parse({"--nproc-per-node", "2", "true"},
                 {{"RANK", "2"}, {"WORLD_SIZE", "3"}, {"MASTER_ADDR", "job-master-0"}, {"MASTER_PORT", "23456"}});
  EXPECT_EQ(e.nnodes, 3);
  EXPECT_EQ(e.node_rank, 2);
  EXPECT_EQ(e.node_rank_source, "RANK");
  // Under a launcher (LOCAL_RANK set) RANK is a worker rank, not a pod index.
  EXPECT_EQ(parse({"true"}, {{"RANK", "1"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "2"}}).nnodes, 1);
}

TEST(LaunchConfig, StandaloneAndDefaults) {
  auto c = parse({"--standalone", "true"}, {{"MASTER_PORT", "1234"}});
  EXPECT_TRUE(c.standalone);
  EXPECT_EQ(c.master_port, 0);  // a free one
  EXPECT_EQ(c.master_addr, "127.0.0.1");
  auto d = parse({"true"});
  EXPECT_EQ(d.nproc_per_node, 1);
  EXPECT_EQ(d.nnodes, 1);
  EXPECT_EQ(d.master_port, 29500);
  EXPECT_EQ(d.max_restarts, 0);
  EXPECT_TRUE(d.restart_on_any_failure);  // torchrun's policy
  EXPECT_FALSE(parse({"--restart_on", "retryable", "true"}).restart_on_any_failure);
  EXPECT_FALSE(parse({"true"}, {{"PET_RESTART_ON", "retryable"}}).restart_on_any_failure);
  EXPECT_TRUE(parse({"--restart-on=any", "true"}, {{"PET_RESTART_ON", "retryable"}}).restart_on_any_failure);
  EXPECT_EQ(d.grace_period, std::chrono::seconds(30));
  EXPECT_TRUE(parse({"--standalone=false", "true"}).standalone == false);
  EXPECT_TRUE(parse({"true"}, {{"PET_STANDALONE", "1"}}).standalone);
  auto e = parse({"--rdzv-backend", "c10d", "--rdzv-endpoint", "host-a:4000", "--rdzv-id", "r1", "true"});
  EXPECT_EQ(e.master_addr, "host-a");
  EXPECT_EQ(e.master_port, 4000);
  EXPECT_EQ(e.run_id, "r1");
  EXPECT_TRUE(parse({"-h"}).help);
  EXPECT_TRUE(parse({"--version"}).version);
}

TEST(LaunchConfig, LogDirTeeAndRedirects) {
  auto c = parse({"--log-dir", "/tmp/x", "true"});
  EXPECT_EQ(c.log_dir, "/tmp/x");
  EXPECT_FALSE(c.redirects.any());
  auto d = parse({"--log-dir", "/tmp/x", "--redirects", "3", "--tee", "0:1", "true"});
  EXPECT_TRUE(d.redirects.has_stdout(0) && d.redirects.has_stderr(1));
  EXPECT_TRUE(d.tee.has_stdout(0));
  EXPECT_FALSE(d.tee.has_stdout(1));
  EXPECT_FALSE(d.tee.has_stderr(0));
  // Without --log-dir, --tee and --redirects are still taken: ddprun makes a temporary folder, as torchrun.
  EXPECT_TRUE(parse({"--tee", "3", "true"}).log_dir.empty());
  EXPECT_FALSE(parse({"true"}).local_ranks_filter.has_value());
  EXPECT_EQ(*parse({"--local_ranks_filter", "2,0,2", "true"}).local_ranks_filter, (std::set<int>{0, 2}));
  auto e = parse({"--log-dir", "/tmp/x", "-r", "0:2,1:1", "true"});
  EXPECT_TRUE(e.redirects.has_stderr(0));
  EXPECT_FALSE(e.redirects.has_stdout(0));
  EXPECT_TRUE(e.redirects.has_stdout(1));
  EXPECT_FALSE(e.redirects.has_stdout(2));
}

// --rdzv-conf: what ddprun takes, what it names as having no effect, and what it refuses.
// torchrun runs its script with Python: so does ddprun for a .py script and for -m; any other
// program, and a .py script under --no-python, runs itself.
TEST(LaunchConfig, PythonScriptsAndModulesRunWithPython3LikeTorchrun) {
  const std::string dir = ddp::testing::make_temp_dir("launch-python");
  const std::string script = dir + "/train.py";
  std::ofstream(script) << "print('hi')\n";
  const Env env = {{"PATH", "/usr/bin:/bin"}};
  auto c = parse({"--nproc-per-node", "2", script, "--epochs", "1"}, env);
  EXPECT_EQ(c.program, (std::vector<std::string>{"/usr/bin/python3", "-u", script, "--epochs", "1"}));
  auto m = parse({"-m", "pkg.train", "--lr", "1"}, env);
  EXPECT_EQ(m.program, (std::vector<std::string>{"/usr/bin/python3", "-u", "-m", "pkg.train", "--lr", "1"}));
  EXPECT_EQ(parse({"--module", "pkg.train"}, env).program[2], "-m");
  ::chmod(script.c_str(), 0755);
  EXPECT_EQ(parse({"--no-python", script}, env).program, (std::vector<std::string>{script}));
  EXPECT_EQ(parse({"true"}, env).program, (std::vector<std::string>{"/usr/bin/true"}));
  std::filesystem::remove_all(dir);
}

TEST(LaunchConfig, RdzvConfKeysWorkOrAreNamedNeverDropped) {
  auto c = parse({"--rdzv-conf", "join_timeout=90, read_timeout=7.5,last_call_timeout=30,is_host=false", "true"});
  EXPECT_EQ(c.join_timeout, std::chrono::seconds(90));
  EXPECT_EQ(c.store_timeout, std::chrono::milliseconds(7500));
  ASSERT_EQ(c.notes.size(), 2u);  // the c10d rendezvous's keys, given to a static one
  EXPECT_EQ(c.notes[0], "--rdzv-conf: last_call_timeout has no effect: the static rendezvous waits for all 1 node(s)");
  EXPECT_EQ(c.notes[1], "--rdzv-conf: is_host has no effect: the static rendezvous's store is in node 0's ddprun");
  auto e = parse({"--rdzv-conf", "heartbeat_timeout=9", "true"});
  ASSERT_EQ(e.notes.size(), 1u);
  EXPECT_NE(e.notes[0].find("--rdzv-conf: heartbeat_timeout=9 has no effect"), std::string::npos) << e.notes[0];
  auto d = parse({"--rdzv_conf=timeout=45", "--join-timeout", "60", "true"});  // the flag wins, and says so
  EXPECT_EQ(d.join_timeout, std::chrono::seconds(60));
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_EQ(d.notes[0], "--join-timeout wins over --rdzv-conf join_timeout");
  EXPECT_EQ(parse({"true"}, {{"PET_RDZV_CONF", "read_timeout=3"}}).store_timeout, std::chrono::seconds(3));
  EXPECT_TRUE(parse({"--rdzv-conf", "", "true"}).notes.empty());
  EXPECT_HAS(config_error({"--rdzv-conf", "join_timout=5", "true"}),
             "--rdzv-conf: 'join_timout' is not a c10d rendezvous setting ddprun knows");
  EXPECT_HAS(config_error({"--rdzv-conf", "join_timeout", "true"}), "is not a list of key=value (at 'join_timeout')");
  EXPECT_HAS(config_error({"--rdzv-conf", "join_timeout=5,", "true"}), "ends with a comma");
  EXPECT_HAS(config_error({"--rdzv-conf", "read_timeout=soon", "true"}), "read_timeout='soon' is not a number of seconds");
  EXPECT_HAS(config_error({"true"}, {{"PET_RDZV_CONF", "join_timeout=-1"}}), "PET_RDZV_CONF: join_timeout='-1'");
}

// torchrun's standard multi-node line: no node rank, the c10d rendezvous hands them out.
TEST(LaunchConfig, TheC10dRendezvousHandsOutNodeRanksAndTakesAnElasticRange) {
  auto c = parse({"--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint",
                  "host1:29400", "--rdzv-id", "job7", "true"});
  EXPECT_TRUE(c.dynamic_rendezvous);
  EXPECT_EQ(c.min_nodes, 2);
  EXPECT_EQ(c.nnodes, 2);
  EXPECT_EQ(c.master_addr, "host1");
  EXPECT_EQ(c.master_port, 29400);
  EXPECT_EQ(c.run_id, "job7");
  EXPECT_EQ(c.node_rank_source, "the c10d rendezvous");
  EXPECT_EQ(c.last_call, std::chrono::seconds(30));  // torch's default
  EXPECT_FALSE(c.is_host.has_value());
  // PyTorchJob's elasticPolicy, as the operator hands it over.
  auto e = parse({"true"}, {{"PET_NNODES", "1:3"}, {"PET_RDZV_BACKEND", "c10d"}, {"PET_RDZV_ENDPOINT", "job-worker-0:29400"},
                            {"PET_RDZV_CONF", "last_call_timeout=2.5,is_host=1,keep_alive_interval=2,keep_alive_max_attempt=5"}});
  EXPECT_TRUE(e.dynamic_rendezvous);
  EXPECT_EQ(e.min_nodes, 1);
  EXPECT_EQ(e.nnodes, 3);
  EXPECT_EQ(e.last_call, std::chrono::milliseconds(2500));
  EXPECT_EQ(e.is_host, std::optional<bool>(true));
  EXPECT_EQ(e.keep_alive_interval, std::chrono::seconds(2));
  EXPECT_EQ(e.keep_alive_max_attempt, 5);
  EXPECT_EQ(c.keep_alive_interval, std::chrono::seconds(5));  // torch's defaults
  EXPECT_EQ(c.keep_alive_max_attempt, 3);
  EXPECT_TRUE(e.notes.empty());
  // A node rank with an elastic range is torchrun's too: it has no effect, and ddprun says so.
  auto r = parse({"--nnodes", "1:3", "--node-rank", "2", "--rdzv-backend", "c10d", "--master-addr", "m", "true"});
  EXPECT_TRUE(r.dynamic_rendezvous);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("--node-rank=2 has no effect"), std::string::npos) << r.notes[0];
  // With a fixed count and a node rank, c10d keeps the static table (what ddprun always did).
  auto s = parse({"--nnodes", "2", "--node-rank", "1", "--rdzv-backend", "c10d", "--master-addr", "m", "true"});
  EXPECT_FALSE(s.dynamic_rendezvous);
  EXPECT_EQ(s.node_rank, 1);
  // One node needs no rendezvous at all.
  EXPECT_FALSE(parse({"--rdzv-backend", "c10d", "true"}).dynamic_rendezvous);
}

TEST(LaunchConfig, EveryBadValueIsAConfigErrorNamingItsSource) {
  EXPECT_HAS(config_error({"--nproc-per-node", "0", "true"}), "--nproc-per-node='0' is out of range");
  EXPECT_HAS(config_error({"--nproc-per-node", "two", "true"}), "--nproc-per-node='two' is not an integer");
  EXPECT_HAS(config_error({"true"}, {{"PET_NPROC_PER_NODE", "-3"}}), "PET_NPROC_PER_NODE='-3'");
  EXPECT_HAS(config_error({"true"}, {{"PET_NNODES", "1:4"}}),
             "PET_NNODES=1:4 is an elastic range, which needs --rdzv-backend c10d");
  EXPECT_HAS(config_error({"--nnodes", "3:1", "--rdzv-backend", "c10d", "true"}), "--nnodes='3:1' is not MIN:MAX with MIN <= MAX");
  EXPECT_HAS(config_error({"--rdzv-backend", "etcd-v2", "true"}), "--rdzv-backend='etcd-v2' is not supported");
  EXPECT_HAS(config_error({"--nnodes", "1:2", "--rdzv-backend", "c10d", "--rdzv-conf", "is_host=maybe", "--master-addr", "m", "true"}),
             "--rdzv-conf: is_host='maybe'");
  EXPECT_HAS(config_error({"--rdzv-conf", "keep_alive_max_attempt=0", "true"}),
             "--rdzv-conf: keep_alive_max_attempt='0' is out of range");
  EXPECT_HAS(config_error({"--nnodes", "2", "--rdzv-backend", "c10d", "--node-rank", "x", "--master-addr", "m", "true"}),
             "--node-rank='x' is not an integer");
  EXPECT_HAS(config_error({"--nnodes", "2", "--master-addr", "m", "true"}), "no node rank");
  EXPECT_HAS(config_error({"--nnodes", "2", "--node-rank", "2", "--master-addr", "m", "true"}),
             "--node-rank=2 is not below the node count 2");
  EXPECT_HAS(config_error({"true"}, {{"PET_NNODES", "2"}, {"JOB_COMPLETION_INDEX", "x"}, {"PET_MASTER_ADDR", "m"}}),
             "JOB_COMPLETION_INDEX='x'");
  EXPECT_HAS(config_error({"--nnodes", "2", "--node-rank", "1", "true"}), "needs --master-addr");
  EXPECT_HAS(config_error({"--nnodes", "1:2", "--rdzv-backend", "c10d", "true"}), "--nnodes=1:2 needs --master-addr");
  EXPECT_HAS(config_error({"--master-port", "70000", "true"}), "--master-port='70000' is out of range");
  EXPECT_HAS(config_error({"--nnodes", "2", "--node-rank", "0", "--master-addr", "m", "--master-port", "0", "true"}),
             "--master-port='0'");
  EXPECT_HAS(config_error({"true"}, {{"PET_MASTER_PORT", "http"}}), "PET_MASTER_PORT='http'");
  EXPECT_HAS(config_error({"--max-restarts", "-1", "true"}), "--max-restarts='-1'");
  EXPECT_HAS(config_error({"--restart-on", "always", "true"}), "--restart-on='always' is not any or retryable");
  EXPECT_HAS(config_error({"true"}, {{"PET_RESTART_ON", "never"}}), "PET_RESTART_ON='never' is not any or retryable");
  EXPECT_HAS(config_error({"--monitor-interval", "0", "true"}), "--monitor-interval='0' is out of range");
  EXPECT_HAS(config_error({"--monitor-interval", "fast", "true"}), "--monitor-interval='fast' is not a number");
  EXPECT_HAS(config_error({"--grace-period", "-2", "true"}), "--grace-period='-2'");
  EXPECT_HAS(config_error({"--run-id", "a/b", "true"}), "--run-id='a/b' may only hold");
  EXPECT_HAS(config_error({"--tee", "4", "--log-dir", "/tmp", "true"}), "--tee='4'");
  EXPECT_HAS(config_error({"--tee", "0:1,0:2", "--log-dir", "/tmp", "true"}), "names local rank 0 twice");
  EXPECT_HAS(config_error({"--local-ranks-filter", "0,x", "true"}),
             "--local-ranks-filter='0,x' is not a comma-separated list of local ranks (e.g. 0,1,2)");
  EXPECT_HAS(config_error({"--local-ranks-filter", "", "true"}), "--local-ranks-filter='' is not a comma-separated list");
  EXPECT_HAS(config_error({"--local-ranks-filter", "1,", "true"}), "--local-ranks-filter='1,' is not");
  EXPECT_HAS(config_error({"--local-ranks-filter", "-1", "true"}), "--local-ranks-filter='-1' is not");
  EXPECT_HAS(config_error({"--standalone", "--nnodes", "2", "--node-rank", "0", "true"}), "--standalone runs one node");
  EXPECT_HAS(config_error({"--standalone=maybe", "true"}), "--standalone='maybe' is not a boolean");
  EXPECT_HAS(config_error({"--rdzv-backend", "etcd", "true"}), "--rdzv-backend='etcd' is not supported");
  EXPECT_HAS(config_error({"--frobnicate", "true"}), "unknown option '--frobnicate'");
  // torchrun's flags that ddprun does not take are named with the reason, not called unknown.
  EXPECT_HAS(config_error({"--run_path", "train.py"}), "--run-path is torchrun's, and ddprun does not take it: it runs the script inside");
  EXPECT_HAS(config_error({"--local-addr", "10.0.0.1", "true"}), "--local-addr is torchrun's, and ddprun does not take it");
  EXPECT_HAS(config_error({"--logs-specs=mypkg.Specs", "true"}), "--logs-specs is torchrun's, and ddprun does not take it");
  EXPECT_HAS(config_error({"-m", "--no-python", "mod"}), "-m/--module runs a Python module and --no-python");
  EXPECT_HAS(config_error({"missing_script.py"}), "script 'missing_script.py' cannot be read (ddprun runs it as python3 -u");
  EXPECT_HAS(config_error({"-m", "mod"}, {{"PATH", "/nonexistent"}}),
             "ddprun runs -m modules with python3 -u, as torchrun runs them with Python");
  EXPECT_HAS(config_error({"--nproc-per-node"}), "--nproc-per-node needs a value");
  EXPECT_HAS(config_error({"--nproc-per-node", "2"}), "no program to run");
  EXPECT_HAS(config_error({"no-such-program-xyz"}), "program 'no-such-program-xyz' is not an executable file in PATH");
  std::string plain = ddp::testing::make_temp_dir("plain") + "/data.txt";
  std::ofstream(plain) << "not a program";
  std::filesystem::permissions(plain, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_HAS(config_error({plain}), "not executable");
}

TEST(Nproc, AutoCountsGpusThenCpus) {
  auto c = parse({"--nproc-per-node", "auto", "true"});
  EXPECT_GE(c.nproc_per_node, 1);
  EXPECT_HAS(c.nproc_reason, "--nproc-per-node=auto");
  auto cpu = ddp::util::usable_cpus();
  if (ddp::util::visible_gpus({}).n == 0) EXPECT_EQ(c.nproc_per_node, cpu.n);
  EXPECT_HAS(config_error({"--nproc-per-node", "gpu", "true"}, {{"CUDA_VISIBLE_DEVICES", ""}}),
             ddp::util::visible_gpus({}).n == 0 ? "=gpu but no GPU" : "");
}

TEST(Nproc, GpusFromDeviceFilesAndCudaVisibleDevices) {
  namespace fs = std::filesystem;
  std::string root = ddp::testing::make_temp_dir("nproc-gpu");
  EXPECT_EQ(ddp::util::visible_gpus({}, root).n, 0);
  fs::create_directories(root + "/dev");
  for (const char* f : {"nvidia0", "nvidia1", "nvidia2", "nvidia3", "nvidiactl", "nvidia-uvm"})
    std::ofstream(root + "/dev/" + f) << "";
  EXPECT_EQ(ddp::util::visible_gpus({}, root).n, 4);
  EXPECT_EQ(ddp::util::visible_gpus({{"CUDA_VISIBLE_DEVICES", "1,3"}}, root).n, 2);
  EXPECT_EQ(ddp::util::visible_gpus({{"CUDA_VISIBLE_DEVICES", "GPU-8a1b,GPU-77f0,MIG-1"}}, root).n, 3);
  EXPECT_EQ(ddp::util::visible_gpus({{"CUDA_VISIBLE_DEVICES", "0,x,2"}}, root).n, 1);  // CUDA stops at x
  EXPECT_EQ(ddp::util::visible_gpus({{"CUDA_VISIBLE_DEVICES", ""}}, root).n, 0);
  EXPECT_EQ(ddp::util::visible_gpus({{"CUDA_VISIBLE_DEVICES", "-1"}}, root).n, 0);
  EXPECT_EQ(ddp::util::visible_gpus({{"CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7"}}, root).n, 4);
  fs::remove_all(root);
}

TEST(Nproc, CpusFromCgroupV2AndV1) {
  namespace fs = std::filesystem;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  auto write = [](const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << text;
  };
  // v2, inside a cgroup namespace: the mount root holds our limit.
  std::string v2 = ddp::testing::make_temp_dir("nproc-v2");
  write(v2 + "/proc/self/cgroup", "0::/\n");
  write(v2 + "/sys/fs/cgroup/cpu.max", "max 100000\n");
  EXPECT_EQ(ddp::util::usable_cpus(v2).n, online);
  write(v2 + "/sys/fs/cgroup/cpu.max", "50000 100000\n");  // half a CPU -> 1 worker
  auto half = ddp::util::usable_cpus(v2);
  EXPECT_EQ(half.n, 1);
  EXPECT_HAS(half.how, "cpu.max '50000 100000'");
  // v2 without a namespace: the tightest level on the way up counts.
  write(v2 + "/proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
  write(v2 + "/sys/fs/cgroup/kubepods/pod1/cpu.max", "100000 100000\n");
  write(v2 + "/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "max 100000\n");
  EXPECT_EQ(ddp::util::usable_cpus(v2).n, std::min<long>(online, 1));
  // v1: cfs quota / period; -1 means no limit.
  std::string v1 = ddp::testing::make_temp_dir("nproc-v1");
  write(v1 + "/proc/self/cgroup", "12:memory:/x\n4:cpu,cpuacct:/\n");
  write(v1 + "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  write(v1 + "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(ddp::util::usable_cpus(v1).n, online);
  write(v1 + "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "80000\n");
  EXPECT_EQ(ddp::util::usable_cpus(v1).n, 1);
  fs::remove_all(v1);
  fs::remove_all(v2);
}
