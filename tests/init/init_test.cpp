// init_process_group() from the environments launchers and operators inject: torchrun (rank 0
// hosts the store), torchrun with an agent-hosted store (keys per restart attempt), PyTorchJob,
// nothing at all; plus bad backends and an unreachable store.
#include <ddp/errors.h>
#include <ddp/init.h>
#include <ddp/process_group_nccl.h>
#include <ddp/store.h>
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "support/multiprocess.h"

using namespace ddp::testing;

namespace {

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("check failed: " + what);
}

// Every rank contributes rank+1; the sum is n(n+1)/2.
void check_allreduce(ddp::ProcessGroup& pg) {
  std::vector<at::Tensor> t = {at::full({5}, pg.rank() + 1.0)};
  pg.allreduce(t)->wait();
  double n = pg.size();
  check(at::equal(t[0], at::full({5}, n * (n + 1) / 2)), "allreduce over the initialized group");
}

const std::map<std::string, std::string> kNoLauncher = {
    {"LOCAL_RANK", kUnset}, {"LOCAL_WORLD_SIZE", kUnset}, {"GROUP_RANK", kUnset}};

}  // namespace

DDP_TEST_WORKER(init_from_env) {
  auto pg = ddp::init_process_group();
  check(pg->backend_name() == "gloo", "auto picks gloo on a CPU build");
  check(pg->rank() == env_int("RANK", 0) && pg->size() == env_int("WORLD_SIZE", 1), "rank and size from env");
  check(ddp::world().rank == pg->rank() && ddp::world().source == env_or("EXPECT_SOURCE", "?"),
        "world() source is " + ddp::world().source);
  check(ddp::store() != nullptr, "store() after init");
  check(ddp::default_device().is_cpu() && !ddp::cpu_fallback_reason().empty(), "cpu device with a reason");
  check_allreduce(*pg);
  return 0;
}

TEST(Init, TorchrunEnv) {
  WorkerOptions o;
  o.env["EXPECT_SOURCE"] = "torchrun";
  expect_all_succeeded(run_workers("init_from_env", 3, o));
}

TEST(Init, PyTorchJobEnv) {
  WorkerOptions o;
  o.env = kNoLauncher;  // PyTorchJob v1 sets only MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK
  o.env["EXPECT_SOURCE"] = "pytorchjob";
  expect_all_succeeded(run_workers("init_from_env", 2, o));
}

TEST(Init, NothingSetIsOneProcess) {
  WorkerOptions o;
  o.env = kNoLauncher;
  for (const char* v : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) o.env[v] = kUnset;
  o.env["EXPECT_SOURCE"] = "single";
  expect_all_succeeded(run_workers("init_from_env", 1, o));
}

// An agent (here: this test) hosts the store; every worker is a client and its keys live under
// "/worker/attempt_<restart count>", so a restarted attempt does not read the stale keys of the
// attempt before it on the same, still running, store.
DDP_TEST_WORKER(init_agent_store) {
  auto pg = ddp::init_process_group();
  check(ddp::world().use_agent_store, "TORCHELASTIC_USE_AGENT_STORE=True is seen");
  check_allreduce(*pg);
  return 0;
}

TEST(Init, AgentStoreKeysPerRestartAttempt) {
  auto server = ddp::TCPStoreServer::start(0, "");
  for (int attempt = 0; attempt < 2; ++attempt) {
    WorkerOptions o;
    o.master_port = server->port();
    o.env["TORCHELASTIC_USE_AGENT_STORE"] = "True";
    o.env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(attempt);
    expect_all_succeeded(run_workers("init_agent_store", 2, o));
  }
  ddp::TCPStore client(ddp::TCPStoreOptions().host("127.0.0.1").port(server->port()).token(""));
  EXPECT_TRUE(client.check({"/worker/attempt_0/gloo/0/0", "/worker/attempt_1/gloo/0/0"}));
  EXPECT_FALSE(client.check({"gloo/0/0"}));
}

// Rank 0 never starts, so nobody hosts the store: rank 1 gives up after store_connect_timeout.
DDP_TEST_WORKER(init_store_unreachable) {
  if (env_int("RANK", 0) == 0) return 0;
  auto t0 = std::chrono::steady_clock::now();
  try {
    ddp::InitOptions o;
    o.store_connect_timeout(std::chrono::seconds(2));
    ddp::init_process_group(o);
  } catch (const ddp::StoreError& e) {
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    check(took > 1.5 && took < 8, "gave up after " + std::to_string(took) + " s");
    return 0;
  }
  check(false, "init succeeded without a store");
  return 1;
}

TEST(Init, StoreUnreachableGivesUpAtDeadline) {
  expect_all_succeeded(run_workers("init_store_unreachable", 2));
}

TEST(Init, UnknownBackendIsConfigError) {
  ddp::InitOptions o;
  o.world(ddp::WorldInfo{});
  o.backend("mpi");
  try {
    ddp::init_process_group(o);
    FAIL() << "backend 'mpi' accepted";
  } catch (const ddp::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'mpi'"), std::string::npos) << e.what();
  }
}

TEST(Init, NcclWithoutNcclIsConfigError) {
  if (ddp::nccl_available()) GTEST_SKIP() << "NCCL is usable here";
  ddp::InitOptions o;
  o.world(ddp::WorldInfo{});
  o.backend("nccl");
  EXPECT_THROW(ddp::init_process_group(o), ddp::ConfigError);
}
