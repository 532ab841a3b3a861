#pragma once
// Real multi-process tests over loopback.
//
// Each rank is a copy of the test process (fork) that calls the worker registered under a name, or,
// where copying is unsafe (the test process has threads) or WorkerOptions::exec asks, the test
// executable started again with DDP_TEST_WORKER=<name>, whose main() then calls that worker instead
// of GoogleTest. Workers read their place from the usual
// environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) and return an exit code.
//
//   DDP_TEST_WORKER(allreduce_sum) {
//     auto pg = ddp::init_process_group();
//     ...
//     return 0;
//   }
//   TEST(Gloo, AllreduceSum) {
//     auto results = ddp::testing::run_workers("allreduce_sum", 3);
//     ddp::testing::expect_all_succeeded(results);
//   }

#include "support/subprocess.h"

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace ddp::testing {

using WorkerFn = int (*)();

struct WorkerRegistrar {
  WorkerRegistrar(const char* name, WorkerFn fn);
};

/// Runs the worker named by $DDP_TEST_WORKER; exceptions become ddp::exit_code_for() codes.
int run_registered_worker(const std::string& name);

struct WorkerOptions {
  /// Extra environment for every rank (overrides the defaults below).
  std::map<std::string, std::string> env;
  /// Extra environment per rank: per_rank_env[rank][name].
  std::map<int, std::map<std::string, std::string>> per_rank_env;
  std::chrono::milliseconds timeout = std::chrono::minutes(3);
  /// 0: a free port is picked.
  int master_port = 0;
  /// true: every rank starts this executable afresh (execve). false: where this process is
  /// single-threaded, each rank is a fork of it that calls the worker (Subprocess::fork_running),
  /// which saves each rank the start of a LibTorch-linked executable.
  bool exec = false;
};

struct WorkerResult {
  int rank;
  int status;  ///< exit code, 128 + signal, or -1 when the harness had to kill it on timeout
  std::string output;
};

/// Starts `world_size` copies of this executable as ranks 0..n-1 and waits for all of them.
std::vector<WorkerResult> run_workers(const std::string& worker, int world_size,
                                      const WorkerOptions& options = {});

/// GoogleTest assertion helper: every rank exited 0 (prints each rank's output otherwise).
void expect_all_succeeded(const std::vector<WorkerResult>& results);

/// A TCP port for a store, outside the ephemeral range and reserved against other test processes
/// until this one exits (support/free_port.cpp).
int free_port();

/// Path of this test executable.
std::string self_exe();

/// Environment helpers for workers.
std::string env_or(const char* name, const std::string& fallback);
int env_int(const char* name, int fallback);

/// A fresh empty directory under $TMPDIR (removed by the caller if it cares).
std::string make_temp_dir(const std::string& prefix = "ddp-test");

}  // namespace ddp::testing

#define DDP_TEST_WORKER(name)                                                   \
  static int ddp_test_worker_##name();                                          \
  static ::ddp::testing::WorkerRegistrar ddp_test_worker_registrar_##name(      \
      #name, &ddp_test_worker_##name);                                          \
  static int ddp_test_worker_##name()
