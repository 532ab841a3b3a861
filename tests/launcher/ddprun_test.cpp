// ddprun end to end: real ddprun processes starting real workers (this test executable, in worker
// mode through DDP_TEST_WORKER, which ddprun passes on like any other variable).
#include <ddp/errors.h>
#include <ddp/signals.h>
#include <ddp/store.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "launcher_binaries.h"
#include "support/multiprocess.h"
#include "util/error_file.h"

namespace fs = std::filesystem;
using ddp::testing::env_int;
using ddp::testing::env_or;
using ddp::testing::Subprocess;
using namespace std::chrono_literals;

namespace {

// Appends "<rank> <attempt>" to $STARTS_FILE (one write: lines from several workers never mix).
void record_start() {
  std::string path = env_or("STARTS_FILE", "");
  if (path.empty()) return;
  std::string line = env_or("RANK", "?") + " " + env_or("TORCHELASTIC_RESTART_COUNT", "?") + "\n";
  std::ofstream(path, std::ios::app) << line << std::flush;
}

// Waits (up to 30 s) until every rank recorded its start of `attempt`, so a failure never races
// other workers' startup.
void wait_for_all_starts(int attempt) {
  std::string path = env_or("STARTS_FILE", "");
  int world = env_int("WORLD_SIZE", 1);
  for (int i = 0; i < 1500; ++i) {
    std::ifstream in(path);
    int n = 0;
    for (std::string line; std::getline(in, line);)
      n += line.substr(line.find(' ') + 1) == std::to_string(attempt);
    if (n >= world) return;
    std::this_thread::sleep_for(20ms);
  }
}

std::set<std::string> starts(const std::string& path) {
  std::ifstream in(path);
  std::set<std::string> out;
  for (std::string line; std::getline(in, line);) out.insert(line);
  return out;
}

bool wait_for_output(Subprocess& p, const std::string& text, int count = 1, std::chrono::seconds limit = 30s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    std::string out = p.output();
    int found = 0;
    for (size_t at = out.find(text); at != std::string::npos; at = out.find(text, at + 1)) ++found;
    if (found >= count) return true;
    if (!p.running()) return false;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

std::vector<std::string> ddprun_args(std::vector<std::string> flags) {
  std::vector<std::string> argv = {kDdprun, "--monitor-interval", "0.05"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back(ddp::testing::self_exe());
  return argv;
}

int count_of(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

class Ddprun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = ddp::testing::make_temp_dir("ddprun");
    starts_file = dir + "/starts";
  }
  void TearDown() override { fs::remove_all(dir); }
  std::map<std::string, std::string> env(std::map<std::string, std::string> extra) {
    extra["STARTS_FILE"] = starts_file;
    extra.emplace("OMP_NUM_THREADS", ddp::testing::kUnset);
    return extra;
  }
  std::string dir, starts_file;
};

}  // namespace

// ---- workers ------------------------------------------------------------------------------------

// Prints what the launcher told it, talks to the launcher's store, ends with a partial line.
DDP_TEST_WORKER(env_report) {
  record_start();
  std::ostringstream s;
  for (const char* v : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK",
                        "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT",
                        "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE",
                        "OMP_NUM_THREADS"})
    s << v << "=" << env_or(v, "<unset>") << " ";
  std::cout << s.str() << std::endl;
  std::cerr << "to stderr from " << env_or("RANK", "?") << std::endl;
  // The launcher hosts the store, so every rank (rank 0 too) is a client of it.
  ddp::TCPStore store(ddp::TCPStoreOptions().host(env_or("MASTER_ADDR", "")).port(env_int("MASTER_PORT", 0)));
  int64_t joined = store.add("test/joined", 1);
  (void)joined;
  store.wait({"test/go"}, 20s);
  std::cout << "store ok" << std::endl;
  std::cout << "tail-" << env_or("RANK", "?");  // no newline: flushed by ddprun at EOF
  return 0;
}

// Fails on $FAIL_RANK while the attempt is below $FAIL_ATTEMPTS (default 1): with $FAIL_CODE, or by
// raising $FAIL_SIGNAL. The other ranks wait to be stopped; in the last attempt all succeed.
DDP_TEST_WORKER(fail_sometimes) {
  record_start();
  int rank = env_int("RANK", -1), attempt = env_int("TORCHELASTIC_RESTART_COUNT", -1);
  bool failing_attempt = attempt < env_int("FAIL_ATTEMPTS", 1);
  std::cout << "rank " << rank << " attempt " << attempt << " started" << std::endl;
  if (!failing_attempt) {
    std::this_thread::sleep_for(200ms);
    return 0;
  }
  if (rank == env_int("FAIL_RANK", -1)) {
    wait_for_all_starts(attempt);
    if (int sig = env_int("FAIL_SIGNAL", 0)) raise(sig);
    return env_int("FAIL_CODE", 1);
  }
  std::this_thread::sleep_for(60s);  // until ddprun stops us
  return 0;
}

// $FAIL_RANK ends as a trainer's main() does on a bad flag: a ConfigError through
// report_and_exit_code (exit 2, and its TORCHELASTIC_ERROR_FILE record), or by $FAIL_SIGNAL. The
// other ranks wait to be stopped.
DDP_TEST_WORKER(fail_with_record) {
  record_start();
  if (env_int("RANK", -1) != env_int("FAIL_RANK", -1)) {
    std::this_thread::sleep_for(60s);
    return 0;
  }
  wait_for_all_starts(env_int("TORCHELASTIC_RESTART_COUNT", -1));
  if (int sig = env_int("FAIL_SIGNAL", 0)) raise(sig);
  try {
    throw ddp::ConfigError("--lr: 'fast' is not a number");
  } catch (const std::exception& e) {
    return ddp::report_and_exit_code(e);
  }
}

// Trains "forever"; on SIGTERM finishes the step, "checkpoints" and exits with the stop code.
// STUBBORN=1 ignores SIGTERM altogether.
DDP_TEST_WORKER(graceful) {
  record_start();
  if (env_int("STUBBORN", 0)) signal(SIGTERM, SIG_IGN);
  else ddp::install_stop_handlers();
  std::cout << "ready" << std::endl;
  for (int step = 0; step < 6000 && !ddp::stop_requested(); ++step) std::this_thread::sleep_for(10ms);
  if (!ddp::stop_requested()) return 99;
  std::cout << "checkpoint written after signal " << ddp::stop_signal() << std::endl;
  return ddp::stop_exit_code();
}

// Appends "<RANK> <GROUP_RANK> <GROUP_WORLD_SIZE> <WORLD_SIZE> <LOCAL_RANK>" to $STARTS_FILE.
DDP_TEST_WORKER(group_report) {
  std::string line;
  for (const char* v : {"RANK", "GROUP_RANK", "GROUP_WORLD_SIZE", "WORLD_SIZE", "LOCAL_RANK"})
    line += env_or(v, "?") + (std::string(v) == "LOCAL_RANK" ? "\n" : " ");
  std::ofstream(env_or("STARTS_FILE", ""), std::ios::app) << line << std::flush;
  std::this_thread::sleep_for(300ms);
  return 0;
}

// ---- tests --------------------------------------------------------------------------------------

TEST_F(Ddprun, GivesEveryWorkerTorchrunsEnvironmentAndPrefixesItsOutput) {
  Subprocess p(ddprun_args({"--standalone", "--nproc-per-node", "3", "--run-id", "r42", "--max-restarts", "2"}),
               env({{"DDP_TEST_WORKER", "env_report"}}));
  // Let the workers meet in the store first: the store is ddprun's and outlives them.
  ASSERT_TRUE(wait_for_output(p, "to stderr from", 3)) << p.output();
  {
    std::string out = p.output();
    size_t at = out.find("MASTER_PORT=");
    ASSERT_NE(at, std::string::npos) << out;
    int port = std::stoi(out.substr(at + 12));
    ddp::TCPStore store(ddp::TCPStoreOptions().host("127.0.0.1").port(port));
    for (int i = 0; i < 500 && store.add("test/joined", 0) < 3; ++i) std::this_thread::sleep_for(10ms);
    EXPECT_EQ(store.add("test/joined", 0), 3);
    store.set("test/go", "1");
  }
  ASSERT_EQ(p.wait(60s), 0) << p.output();
  std::string out = p.output();
  std::string port = out.substr(out.find("MASTER_PORT=") + 12);
  port = port.substr(0, port.find(' '));
  EXPECT_NE(port, "0");
  for (int r = 0; r < 3; ++r) {
    std::string rs = std::to_string(r);
    std::string expected = "[" + rs + "]: RANK=" + rs + " LOCAL_RANK=" + rs + " WORLD_SIZE=3 LOCAL_WORLD_SIZE=3 GROUP_RANK=0 ROLE_RANK=" +
                           rs + " ROLE_WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port +
                           " TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_MAX_RESTARTS=2 TORCHELASTIC_RUN_ID=r42"
                           " TORCHELASTIC_USE_AGENT_STORE=True OMP_NUM_THREADS=1 \n";
    EXPECT_NE(out.find(expected), std::string::npos) << expected << "\nin:\n" << out;
    EXPECT_NE(out.find("[" + rs + "]: to stderr from " + rs + "\n"), std::string::npos) << out;
    EXPECT_NE(out.find("[" + rs + "]: store ok\n"), std::string::npos) << out;
    EXPECT_NE(out.find("[" + rs + "]: tail-" + rs + "\n"), std::string::npos) << out;  // partial line flushed
  }
  EXPECT_NE(out.find("OMP_NUM_THREADS=1 for every worker"), std::string::npos) << out;
}

// --restart-on retryable: a permanent error (1-127) ends the job at once, with its code.
TEST_F(Ddprun, APermanentFailureIsNotRestartedWhenOnlyRetryableOnesRestartAndItsCodeIsKept) {
  Subprocess p(ddprun_args({"--standalone", "--nproc-per-node", "2", "--max-restarts", "3", "--restart-on", "retryable"}),
               env({{"DDP_TEST_WORKER", "fail_sometimes"}, {"FAIL_RANK", "1"}, {"FAIL_CODE", "2"}, {"FAIL_ATTEMPTS", "9"}}));
  EXPECT_EQ(p.wait(60s), 2) << p.output();
  EXPECT_EQ(starts(starts_file), (std::set<std::string>{"0 0", "1 0"}));
  EXPECT_NE(p.output().find("worker rank 1 (local 1) exited with code 2: a permanent error"), std::string::npos)
      << p.output();
  EXPECT_NE(p.output().find("not restarted (--restart-on retryable)"), std::string::npos) << p.output();
}

// The default, as torchrun's: any failure restarts the group while restarts are left. A worker that
// fails with exit 2 once and then succeeds ends the job with 0; one that keeps failing ends it,
// after every restart, with its own (permanent) code.
TEST_F(Ddprun, AnyFailureRestartsByDefaultLikeTorchrunAndThePermanentCodeIsKeptAtTheEnd) {
  {
    Subprocess p(ddprun_args({"--standalone", "--nproc-per-node", "2", "--max-restarts", "2"}),
                 env({{"DDP_TEST_WORKER", "fail_sometimes"}, {"FAIL_RANK", "1"}, {"FAIL_CODE", "2"}, {"FAIL_ATTEMPTS", "1"}}));
    EXPECT_EQ(p.wait(60s), 0) << p.output();
    EXPECT_EQ(starts(starts_file), (std::set<std::string>{"0 0", "1 0", "0 1", "1 1"}));
    EXPECT_NE(p.output().find("a permanent error (1-127); restarting every node's workers as attempt 1"),
              std::string::npos)
        << p.output();
  }
  std::filesystem::remove(starts_file);
  Subprocess p(ddprun_args({"--standalone", "--nproc-per-node", "2", "--max-restarts", "2"}),
               env({{"DDP_TEST_WORKER", "fail_sometimes"}, {"FAIL_RANK", "1"}, {"FAIL_CODE", "2"}, {"FAIL_ATTEMPTS", "9"}}));
  EXPECT_EQ(p.wait(60s), 2) << p.output();
  EXPECT_EQ(starts(starts_file), (std::set<std::string>{"0 0", "1 0", "0 1", "1 1", "0 2", "1 2"}));
  EXPECT_NE(p.output().find("a permanent error (1-127), but no restarts are left (--max-restarts 2)"), std::string::npos)
      << p.output();
}

TEST_F(Ddprun, AWorkerKilledBySignalIsRestartedWithEveryOther) {
  Subprocess p(ddprun_args({"--standalone", "--nproc-per-node", "2", "--max-restarts", "2"}),
               env({{"DDP_TEST_WORKER", "fail_sometimes"}, {"FAIL_RANK", "1"}, {"FAIL_SIGNAL", "9"}}));
  EXPECT_EQ(p.wait(60s), 0) << p.output();
  EXPECT_EQ(starts(starts_file), (std::set<std::string>{"0 0", "1 0", "0 1", "1 1"}));
  EXPECT_NE(p.output().find("worker rank 1 (local 1) was killed by SIGKILL (exit 137): retryable"), std::string::npos)
      << p.output();
}

TEST_F(Ddprun, RetryableFailuresStopWhenRestartsRunOut) {
  Subprocess p(ddprun_args({"--standalone", "--nproc-per-node", "2", "--max-restarts", "1"}),
               env({{"DDP_TEST_WORKER", "fail_sometimes"}, {"FAIL_RANK", "0"}, {"FAIL_CODE", "200"}, {"FAIL_ATTEMPTS", "9"}}));
  EXPECT_EQ(p.wait(60s), 200) << p.output();
  EXPECT_EQ(starts(starts_file), (std::set<std::string>{"0 0", "1 0", "0 1", "1 1"}));
  EXPECT_NE(p.output().find("no restarts are left"), std::string::npos) << p.output();
}

TEST_F(Ddprun, SigtermReachesTheWorkersWhichCheckpointAndExit143) {
  Subprocess p(ddprun_args({"--standalone", "--nproc-per-node", "2"}), env({{"DDP_TEST_WORKER", "graceful"}}));
  ASSERT_TRUE(wait_for_output(p, "]: ready", 2)) << p.output();
  p.kill(SIGTERM);
  EXPECT_EQ(p.wait(30s), 143) << p.output();
  EXPECT_EQ(count_of(p.output(), "checkpoint written after signal 15"), 2) << p.output();
}

TEST_F(Ddprun, SigintExits130) {
  Subprocess p(ddprun_args({"--standalone", "--nproc-per-node", "2"}), env({{"DDP_TEST_WORKER", "graceful"}}));
  ASSERT_TRUE(wait_for_output(p, "]: ready", 2)) << p.output();
  p.kill(SIGINT);
  EXPECT_EQ(p.wait(30s), 130) << p.output();
  EXPECT_EQ(count_of(p.output(), "checkpoint written after signal 2"), 2) << p.output();
}

TEST_F(Ddprun, AWorkerIgnoringSigtermIsKilledAfterTheGracePeriod) {
  Subprocess p(ddprun_args({"--standalone", "--nproc-per-node", "1", "--grace-period", "0.5"}),
               env({{"DDP_TEST_WORKER", "graceful"}, {"STUBBORN", "1"}}));
  ASSERT_TRUE(wait_for_output(p, "]: ready")) << p.output();
  auto start = std::chrono::steady_clock::now();
  p.kill(SIGTERM);
  EXPECT_EQ(p.wait(30s), 143) << p.output();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_NE(p.output().find("after the grace period: SIGKILL"), std::string::npos) << p.output();
}

TEST_F(Ddprun, WritesPerRankLogFiles) {
  std::string logs = dir + "/logs";
  Subprocess p(ddprun_args({"--standalone", "--nproc-per-node", "2", "--log-dir", logs, "--run-id", "job1",
                            "--redirects", "0:1", "--max-restarts", "1"}),
               env({{"DDP_TEST_WORKER", "fail_sometimes"}, {"FAIL_RANK", "1"}, {"FAIL_CODE", "201"}}));
  EXPECT_EQ(p.wait(60s), 0) << p.output();
  for (int attempt : {0, 1})
    for (int rank : {0, 1}) {
      std::string base = logs + "/job1/attempt_" + std::to_string(attempt) + "/" + std::to_string(rank);
      std::ifstream out(base + "/stdout.log");
      std::string text((std::istreambuf_iterator<char>(out)), {});
      EXPECT_EQ(text.rfind("rank " + std::to_string(rank) + " attempt " + std::to_string(attempt) + " started\n", 0), 0u)
          << base << ": " << text;
      EXPECT_TRUE(fs::exists(base + "/stderr.log")) << base;
    }
  // Rank 0's stdout went to its file only; rank 1's to both.
  EXPECT_EQ(p.output().find("[0]: rank 0"), std::string::npos) << p.output();
  EXPECT_NE(p.output().find("[1]: rank 1 attempt 0 started"), std::string::npos) << p.output();
}

// As torchrun's agent: each worker gets its own TORCHELASTIC_ERROR_FILE (without --log-dir in a
// temporary folder), and when the job fails ddprun prints torchrun's "<program> FAILED" block with
// the root cause's record, and copies that record, with "errorCode", into its own error file.
TEST_F(Ddprun, ReportsTheRootCauseFromTheWorkersErrorFileAsTorchrunDoes) {
  const std::string tmp = dir + "/tmp", own = dir + "/ddprun-error.json";
  fs::create_directories(tmp);
  auto e = env({{"DDP_TEST_WORKER", "fail_with_record"}, {"FAIL_RANK", "1"}});
  e["TMPDIR"] = tmp;
  e["TORCHELASTIC_ERROR_FILE"] = own;
  Subprocess p(ddprun_args({"--standalone", "--nproc-per-node", "2", "--run-id", "job3", "--max-restarts", "0"}), e);
  EXPECT_EQ(p.wait(60s), 2) << p.output();
  const std::string out = p.output();
  std::vector<fs::path> made;
  for (const auto& entry : fs::directory_iterator(tmp)) made.push_back(entry.path());
  ASSERT_EQ(made.size(), 1u) << "the folder holding a record is kept:\n" << out;
  const std::string record = made[0].string() + "/job3/attempt_0/1/error.json";
  auto worker = ddp::util::read_error_file(record);
  ASSERT_TRUE(worker) << record << "\n" << out;
  EXPECT_EQ(worker->message, "ddp::ConfigError: --lr: 'fast' is not a number");
  EXPECT_FALSE(fs::exists(made[0].string() + "/job3/attempt_0/0/error.json"));  // rank 0 did not fail
  for (const std::string line :
       {std::string(" FAILED\n"), std::string("Root Cause (first observed failure):\n[0]:\n"),
        std::string("  rank      : 1 (local_rank: 1)\n"), std::string("  exitcode  : 2 (pid: "),
        "  error_file: " + record + "\n",
        std::string("  traceback : ddp::ConfigError: --lr: 'fast' is not a number\n  (exit 2, permanent")})
    EXPECT_NE(out.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << out;
  auto mine = ddp::util::read_error_file(own);
  ASSERT_TRUE(mine) << out;
  EXPECT_EQ(mine->message, worker->message);
  EXPECT_EQ(mine->timestamp, worker->timestamp);
  EXPECT_EQ(mine->error_code, 2);
}

// A worker killed by a signal wrote no record: torch's words for it, "<N/A>" as the file, a record
// made from the exit for ddprun's own error file, and the temporary folder (empty) removed.
TEST_F(Ddprun, AWorkerWithoutARecordIsReportedByItsSignalAndLeavesNoFolder) {
  const std::string tmp = dir + "/tmp", own = dir + "/ddprun-error.json";
  fs::create_directories(tmp);
  auto e = env({{"DDP_TEST_WORKER", "fail_with_record"}, {"FAIL_RANK", "0"}, {"FAIL_SIGNAL", "9"}});
  e["TMPDIR"] = tmp;
  e["TORCHELASTIC_ERROR_FILE"] = own;
  Subprocess p(ddprun_args({"--standalone", "--nproc-per-node", "2", "--max-restarts", "0"}), e);
  EXPECT_EQ(p.wait(60s), 137) << p.output();
  const std::string out = p.output();
  for (const char* line : {"  rank      : 0 (local_rank: 0)\n", "  exitcode  : 137 (pid: ", "  error_file: <N/A>\n",
                           "  traceback : Signal 9 (SIGKILL) received by PID "})
    EXPECT_NE(out.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << out;
  EXPECT_TRUE(fs::is_empty(tmp)) << out;
  auto mine = ddp::util::read_error_file(own);
  ASSERT_TRUE(mine) << out;
  EXPECT_EQ(mine->error_code, 137);
  EXPECT_EQ(mine->message.rfind("worker rank 0: Signal 9 (SIGKILL) received by PID ", 0), 0u) << mine->message;
}

// torchrun's manners: --tee without --log-dir writes to a new $TMPDIR/torchelastic_* folder (named
// in ddprun's log), and --local-ranks-filter 1 keeps rank 0 off the console but not out of its files.
TEST_F(Ddprun, TeeWithoutALogDirMakesOneAndTheRanksFilterOnlyTouchesTheConsole) {
  const std::string tmp = dir + "/tmp";
  fs::create_directories(tmp);
  auto e = env({{"DDP_TEST_WORKER", "fail_sometimes"}, {"FAIL_ATTEMPTS", "0"}});
  e["TMPDIR"] = tmp;
  Subprocess p(ddprun_args({"--standalone", "--nproc-per-node", "2", "--run-id", "job2", "--tee", "3",
                            "--local-ranks-filter", "1"}),
               e);
  EXPECT_EQ(p.wait(60s), 0) << p.output();
  std::vector<fs::path> made;
  for (const auto& entry : fs::directory_iterator(tmp)) made.push_back(entry.path());
  ASSERT_EQ(made.size(), 1u) << p.output();
  EXPECT_EQ(made[0].filename().string().rfind("torchelastic_", 0), 0u) << made[0];
  EXPECT_NE(p.output().find("log directory set to: " + made[0].string()), std::string::npos) << p.output();
  for (int rank : {0, 1}) {
    std::ifstream out(made[0].string() + "/job2/attempt_0/" + std::to_string(rank) + "/stdout.log");
    std::string text((std::istreambuf_iterator<char>(out)), {});
    EXPECT_EQ(text, "rank " + std::to_string(rank) + " attempt 0 started\n") << "rank " << rank;
  }
  EXPECT_EQ(p.output().find("[0]: rank 0"), std::string::npos) << p.output();
  EXPECT_NE(p.output().find("[1]: rank 1 attempt 0 started"), std::string::npos) << p.output();
}

// As torchrun: `ddprun script.py` and `ddprun -m module` run under python3 -u, with the same
// environment as any worker; `--no-python script.py` runs the script itself.
TEST_F(Ddprun, RunsPythonScriptsAndModulesLikeTorchrun) {
  const std::string script = dir + "/show_rank.py";
  std::ofstream(script) << "import os, sys\nprint('python', os.environ['RANK'], 'of', os.environ['WORLD_SIZE'], sys.argv[1:])\n";
  fs::create_directories(dir + "/mods");
  std::ofstream(dir + "/mods/show_module.py") << "import os\nprint('module', os.environ['LOCAL_RANK'])\n";
  auto e = env({});
  e["PATH"] = "/usr/bin:/bin";
  Subprocess p({kDdprun, "--standalone", "--nproc-per-node", "2", script, "--lr", "1"}, e);
  EXPECT_EQ(p.wait(60s), 0) << p.output();
  for (const char* line : {"[0]: python 0 of 2 ['--lr', '1']", "[1]: python 1 of 2 ['--lr', '1']"})
    EXPECT_NE(p.output().find(line), std::string::npos) << line << "\nin:\n" << p.output();
  e["PYTHONPATH"] = dir + "/mods";
  Subprocess m({kDdprun, "--standalone", "--nproc-per-node", "2", "-m", "show_module"}, e);
  EXPECT_EQ(m.wait(60s), 0) << m.output();
  EXPECT_NE(m.output().find("[1]: module 1"), std::string::npos) << m.output();
  const std::string shell_script = dir + "/not_python.py";
  std::ofstream(shell_script) << "#!/bin/sh\necho shell \"$RANK\"\n";
  fs::permissions(shell_script, fs::perms::owner_all);
  Subprocess n({kDdprun, "--standalone", "--no-python", shell_script}, e);
  EXPECT_EQ(n.wait(60s), 0) << n.output();
  EXPECT_NE(n.output().find("[0]: shell 0"), std::string::npos) << n.output();
}

TEST_F(Ddprun, BadFlagsAreConfigErrorsWithExit2) {
  Subprocess p({kDdprun, "--nproc-per-node", "many", "/bin/true"});
  EXPECT_EQ(p.wait(30s), 2);
  EXPECT_NE(p.output().find("--nproc-per-node='many' is not an integer"), std::string::npos) << p.output();
  Subprocess q({kDdprun, "--standalone"}, {{"PET_MAX_RESTARTS", "lots"}});
  EXPECT_EQ(q.wait(30s), 2);
  EXPECT_NE(q.output().find("PET_MAX_RESTARTS='lots'"), std::string::npos) << q.output();
  Subprocess h({kDdprun, "--help"});
  EXPECT_EQ(h.wait(30s), 0);
  EXPECT_NE(h.output().find("--nproc-per-node"), std::string::npos) << h.output();
}

TEST_F(Ddprun, TwoNodesRestartTogetherWhenAWorkerOnNode1Dies) {
  int port = ddp::testing::free_port();
  auto node = [&](int rank) {
    return std::make_unique<Subprocess>(
        ddprun_args({"--nnodes", "2", "--node-rank", std::to_string(rank), "--master-addr", "127.0.0.1",
                     "--master-port", std::to_string(port), "--nproc-per-node", "2", "--max-restarts", "2",
                     "--join-timeout", "30"}),
        env({{"DDP_TEST_WORKER", "fail_sometimes"}, {"FAIL_RANK", "3"}, {"FAIL_SIGNAL", "9"}}));
  };
  auto node1 = node(1);  // may start first: it waits for node 0's store
  auto node0 = node(0);
  EXPECT_EQ(node0->wait(60s), 0) << node0->output();
  EXPECT_EQ(node1->wait(60s), 0) << node1->output();
  EXPECT_EQ(starts(starts_file),
            (std::set<std::string>{"0 0", "1 0", "2 0", "3 0", "0 1", "1 1", "2 1", "3 1"}));
  EXPECT_NE(node0->output().find("another node moved the job to attempt 1"), std::string::npos) << node0->output();
}

TEST_F(Ddprun, TwoNodesBothEndWithAPermanentErrorOnEither) {
  int port = ddp::testing::free_port();
  auto node = [&](int rank) {
    return std::make_unique<Subprocess>(
        ddprun_args({"--nnodes", "2", "--node-rank", std::to_string(rank), "--master-addr", "127.0.0.1",
                     "--master-port", std::to_string(port), "--nproc-per-node", "1", "--max-restarts", "3",
                     "--restart-on", "retryable", "--join-timeout", "30"}),
        env({{"DDP_TEST_WORKER", "fail_sometimes"}, {"FAIL_RANK", "1"}, {"FAIL_CODE", "3"}, {"FAIL_ATTEMPTS", "9"}}));
  };
  auto node0 = node(0);
  auto node1 = node(1);
  EXPECT_EQ(node1->wait(60s), 3) << node1->output();
  EXPECT_EQ(node0->wait(60s), 3) << node0->output();
  EXPECT_EQ(starts(starts_file), (std::set<std::string>{"0 0", "1 0"}));
  EXPECT_NE(node0->output().find("the job ended on another node with exit code 3"), std::string::npos)
      << node0->output();
}

TEST_F(Ddprun, NodesStartedWithDifferentSettingsAllExit2) {
  int port = ddp::testing::free_port();
  auto node = [&](int rank, const char* restarts) {
    return std::make_unique<Subprocess>(
        std::vector<std::string>{kDdprun, "--nnodes", "2", "--node-rank", std::to_string(rank), "--master-addr",
                                 "127.0.0.1", "--master-port", std::to_string(port), "--max-restarts", restarts,
                                 "--join-timeout", "30", "/bin/true"});
  };
  auto node0 = node(0, "1");
  auto node1 = node(1, "3");
  EXPECT_EQ(node1->wait(60s), 2) << node1->output();
  EXPECT_EQ(node0->wait(60s), 2) << node0->output();
  EXPECT_NE(node1->output().find("every node needs the same --nnodes, --max-restarts, --restart-on and --rdzv-backend"), std::string::npos)
      << node1->output();
  EXPECT_NE(node0->output().find("the job was ended by another node"), std::string::npos) << node0->output();
}

TEST_F(Ddprun, ANodeThatCannotReachTheStoreExits202) {
  int port = ddp::testing::free_port();
  Subprocess p({kDdprun, "--nnodes", "2", "--node-rank", "1", "--master-addr", "127.0.0.1", "--master-port",
                std::to_string(port), "--join-timeout", "1", "/bin/true"});
  EXPECT_EQ(p.wait(60s), 202) << p.output();
  EXPECT_NE(p.output().find("could not reach the store at 127.0.0.1:" + std::to_string(port)), std::string::npos)
      << p.output();
}

// torchrun's standard multi-node command line, the same on every node: no node rank; the c10d
// rendezvous hands them out, and the nodes on the endpoint's machine (all of them, on loopback)
// settle which one hosts the store. A fourth node finds the round full, waits, and leaves when the
// job is over (torch's redundancy list).
TEST_F(Ddprun, TorchrunsMultiNodeLineGetsNodeRanksFromTheC10dRendezvous) {
  int port = ddp::testing::free_port();
  std::vector<std::unique_ptr<Subprocess>> nodes;
  for (int i = 0; i < 4; ++i) {
    nodes.push_back(std::make_unique<Subprocess>(
        ddprun_args({"--nnodes", "3", "--nproc-per-node", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint",
                     "127.0.0.1:" + std::to_string(port), "--rdzv-id", "job1", "--join-timeout", "60"}),
        env({{"DDP_TEST_WORKER", "group_report"}})));
    if (i == 2) std::this_thread::sleep_for(100ms);  // most often the fourth is the late one; any may be
  }
  int hosts = 0, waited = 0;
  for (auto& n : nodes) {
    EXPECT_EQ(n->wait(90s), 0) << n->output();
    hosts += count_of(n->output(), "store listening on port");
    waited += count_of(n->output(), "the job finished while this node waited for a round to take it");
  }
  EXPECT_EQ(hosts, 1);
  EXPECT_EQ(waited, 1);
  std::set<std::string> lines = starts(starts_file);
  std::set<std::string> expected;
  for (int rank = 0; rank < 6; ++rank)  // node k runs ranks 2k, 2k+1: the same rank never twice
    expected.insert(std::to_string(rank) + " " + std::to_string(rank / 2) + " 3 6 " + std::to_string(rank % 2));
  EXPECT_EQ(lines, expected);
}

// --nnodes 1:2 with one node: the round closes with it after last_call_timeout, not at once (a
// second node had that long to come) and not never.
TEST_F(Ddprun, AnElasticRoundClosesWithMinNodesAfterTheLastCall) {
  int port = ddp::testing::free_port();
  auto t0 = std::chrono::steady_clock::now();
  Subprocess p(ddprun_args({"--nnodes", "1:2", "--rdzv-backend", "c10d", "--rdzv-endpoint",
                            "127.0.0.1:" + std::to_string(port), "--rdzv-conf", "last_call_timeout=1.5"}),
               env({{"DDP_TEST_WORKER", "group_report"}}));
  ASSERT_EQ(p.wait(60s), 0) << p.output();
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 1500ms);
  EXPECT_EQ(starts(starts_file), (std::set<std::string>{"0 0 1 1 0"}));
  EXPECT_NE(p.output().find("attempt 0: node 0 of 1 runs ranks 0..0 of 1"), std::string::npos) << p.output();
}

// Fewer than MIN nodes: the round never closes, and the node gives up at --join-timeout with a
// TimeoutError (201, retryable: the operator may try the pod again), saying how many it had.
TEST_F(Ddprun, AnElasticRoundWithoutItsMinimumEndsAtTheJoinTimeout) {
  int port = ddp::testing::free_port();
  Subprocess p(ddprun_args({"--nnodes", "2:3", "--rdzv-backend", "c10d", "--rdzv-endpoint",
                            "127.0.0.1:" + std::to_string(port), "--join-timeout", "2"}),
               env({{"DDP_TEST_WORKER", "group_report"}}));
  EXPECT_EQ(p.wait(60s), 201) << p.output();
  EXPECT_NE(p.output().find("waited --join-timeout for round 0 to have 2 node(s) (it has 1)"), std::string::npos)
      << p.output();
  EXPECT_TRUE(starts(starts_file).empty());
}

// A node that goes silent mid-run (frozen here with SIGSTOP: its connections stay open, no reset
// reaches anyone, as in a partition) is lost after keep_alive_interval x keep_alive_max_attempt
// (0.5 s x 4), not when its peers' collectives time out: the two others restart without it as
// attempt 1, a failure counted against --max-restarts, and finish. The workers here never talk to
// each other, so without the keep-alive attempt 0 would never end (the silent node never finishes).
TEST_F(Ddprun, ASilentNodeIsLostAfterTheKeepAliveTimeoutAndTheOthersGoOnWithoutIt) {
  int port = ddp::testing::free_port();
  std::vector<std::unique_ptr<Subprocess>> nodes;
  for (int i = 0; i < 3; ++i)
    nodes.push_back(std::make_unique<Subprocess>(
        ddprun_args({"--nnodes", "2:3", "--rdzv-backend", "c10d", "--rdzv-endpoint", "127.0.0.1:" + std::to_string(port),
                     "--rdzv-conf", "last_call_timeout=1,keep_alive_interval=0.5,keep_alive_max_attempt=4",
                     "--max-restarts", "1", "--join-timeout", "60"}),
        env({{"DDP_TEST_WORKER", "fail_sometimes"}, {"FAIL_RANK", "-1"}, {"FAIL_ATTEMPTS", "1"}})));
  auto started = [&](const std::string& attempt) {
    int n = 0;
    for (const auto& line : starts(starts_file)) n += line.substr(line.find(' ') + 1) == attempt;
    return n;
  };
  for (int i = 0; i < 3000 && started("0") < 3; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(started("0"), 3) << nodes[0]->output();
  size_t silent = 0;
  while (nodes[silent]->output().find("store listening on port") != std::string::npos) ++silent;
  ASSERT_EQ(::kill(nodes[silent]->pid(), SIGSTOP), 0);
  const auto frozen_at = std::chrono::steady_clock::now();
  for (size_t i = 0; i < nodes.size(); ++i)
    if (i != silent) EXPECT_EQ(nodes[i]->wait(60s), 0) << nodes[i]->output();
  EXPECT_LT(std::chrono::steady_clock::now() - frozen_at, 30s);
  ::kill(nodes[silent]->pid(), SIGKILL);
  EXPECT_EQ(started("1"), 2);
  std::string survivors;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (i != silent) survivors += nodes[i]->output();
  EXPECT_NE(survivors.find("sent no heartbeat for 2 s (--rdzv-conf keep_alive_interval x keep_alive_max_attempt): "
                           "restarting without it as attempt 1"),
            std::string::npos)
      << survivors;
  EXPECT_NE(survivors.find("attempt 1: node 1 of 2"), std::string::npos) << survivors;
}
