#include "support/multiprocess.h"

#include <ATen/Context.h>
#include <c10/core/GeneratorImpl.h>
#include <ddp/errors.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <thread>

namespace ddp::testing {
namespace {

std::map<std::string, WorkerFn>& registry() {
  static std::map<std::string, WorkerFn> r;
  return r;
}

}  // namespace

WorkerRegistrar::WorkerRegistrar(const char* name, WorkerFn fn) { registry()[name] = fn; }

int run_registered_worker(const std::string& name) {
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::cerr << "no test worker named '" << name << "'\n";
    return 127;
  }
  try {
    return it->second();
  } catch (const std::exception& e) {
    return ddp::report_and_exit_code(e);
  }
}

std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("readlink /proc/self/exe failed");
  return std::string(buf, n);
}

std::vector<WorkerResult> run_workers(const std::string& worker, int world_size,
                                      const WorkerOptions& options) {
  int port = options.master_port ? options.master_port : free_port();
  std::vector<std::unique_ptr<Subprocess>> procs;
  for (int rank = 0; rank < world_size; ++rank) {
    std::map<std::string, std::string> env = {
        {"DDP_TEST_WORKER", worker},
        {"RANK", std::to_string(rank)},
        {"LOCAL_RANK", std::to_string(rank)},
        {"WORLD_SIZE", std::to_string(world_size)},
        {"LOCAL_WORLD_SIZE", std::to_string(world_size)},
        {"GROUP_RANK", "0"},
        {"MASTER_ADDR", "127.0.0.1"},
        {"MASTER_PORT", std::to_string(port)},
        {"OMP_NUM_THREADS", "1"},
    };
    for (auto& [k, v] : options.env) env[k] = v;
    auto it = options.per_rank_env.find(rank);
    if (it != options.per_rank_env.end())
      for (auto& [k, v] : it->second) env[k] = v;
    // A copy of this process runs the worker (no second start of a LibTorch-linked executable);
    // when this process has threads, copying it is unsafe and the executable is started again. So
    // is a worker given its own DDP_LOG_LEVEL: this process may have read (and keeps) its own.
    std::unique_ptr<Subprocess> forked;
    if (!options.exec && !env.count("DDP_LOG_LEVEL")) {
      auto forked_env = env;
      forked_env["DDP_TEST_WORKER"] = kUnset;  // as test_main leaves it for what the worker starts
      forked = Subprocess::fork_running(
          [worker] {
            // A started process's generator: LibTorch seeds its default CPU generator from
            // c10::detail::getNonDeterministicRandom() (ATen/CPUGeneratorImpl.cpp), so each
            // started process draws differently; a copy of ours would instead continue our
            // stream, the same in every rank (tests/util/forked_worker_test.cpp).
            at::manual_seed(c10::detail::getNonDeterministicRandom());
            return run_registered_worker(worker);
          },
          forked_env);
    }
    procs.push_back(forked ? std::move(forked)
                           : std::make_unique<Subprocess>(std::vector<std::string>{self_exe()}, env));
  }
  std::vector<WorkerResult> results;
  auto deadline = std::chrono::steady_clock::now() + options.timeout;
  for (int rank = 0; rank < world_size; ++rank) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    int status = procs[rank]->wait(std::max(left, std::chrono::milliseconds(0)));
    if (status == -1) procs[rank]->kill(SIGKILL);  // harness timeout: a hang is a failure
    results.push_back({rank, status, procs[rank]->output()});
  }
  return results;
}

void expect_all_succeeded(const std::vector<WorkerResult>& results) {
  for (auto& r : results) {
    EXPECT_EQ(r.status, 0) << "rank " << r.rank << " ended with status " << r.status
                           << (r.status == -1 ? " (killed by the harness after its timeout)" : "")
                           << "; its output:\n"
                           << r.output;
  }
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : fallback;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

std::string make_temp_dir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
  std::vector<char> buf(path.begin(), path.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed for " + path);
  return std::string(buf.data());
}

}  // namespace ddp::testing
