#pragma once
// The local workers of one attempt: started together, each in its own process group (so a terminal's
// Ctrl-C reaches only ddprun, which forwards it once), stdout/stderr through pipes into the
// OutputPump, and stopped together (signal, grace period, SIGKILL).
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "ddp/launcher/output_pump.h"

namespace ddp::launcher {

struct WorkerSpec {
  int local_rank = 0;
  int rank = 0;
  std::vector<std::string> argv;  ///< argv[0] is an absolute or relative path (already resolved)
  std::vector<std::string> env;   ///< complete environment, "NAME=value"
  bool stdout_to_console = true, stderr_to_console = true;
  std::string stdout_file, stderr_file;  ///< empty: none
  std::string error_file;  ///< its TORCHELASTIC_ERROR_FILE (already in env); empty: none
};

struct WorkerExit {
  int local_rank;
  int rank;
  int code;        ///< exit code, or 128 + signal number
  int signal = 0;  ///< the signal that killed it, 0 when it exited
  pid_t pid = -1;
  std::string error_file;  ///< where it may have recorded why it failed (WorkerSpec::error_file)
  std::string describe() const;  ///< "worker rank 3 (local 1) exited with code 2" / "... was killed by SIGKILL (137)"
};

class WorkerGroup {
 public:
  explicit WorkerGroup(OutputPump& pump) : pump_(pump) {}
  ~WorkerGroup();  // SIGKILLs anything still running, and reaps what is gone without waiting
  WorkerGroup(const WorkerGroup&) = delete;
  WorkerGroup& operator=(const WorkerGroup&) = delete;

  /// Starts every worker. On a failure to start one, those started are killed and Error is thrown.
  void start(const std::vector<WorkerSpec>& specs);

  /// Collects workers that ended since the last call (non-blocking), in the order seen.
  std::vector<WorkerExit> reap();
  bool all_exited() const;
  int running() const;
  /// Exit codes of every worker that ended (by rank order), for the final verdict.
  std::vector<WorkerExit> exits() const;

  /// Sends `sig` to every running worker's process group.
  void signal_all(int sig);
  /// "123, 456": the pids of the workers still running, for a log line.
  std::string running_pids() const;
  /// Stops waiting for the running workers (stuck past SIGKILL): they count as killed by SIGKILL
  /// and are never waited for again, here or in the destructor.
  void abandon();

 private:
  struct Worker {
    WorkerSpec spec;
    pid_t pid = -1;
    std::optional<int> code;
    int signal = 0;
  };
  OutputPump& pump_;
  std::vector<Worker> workers_;
};

/// "SIGKILL", "SIGTERM", ... or "signal 40".
std::string signal_name(int sig);

/// 128 + signal for a signal death, the exit code otherwise.
int decode_wait_status(int status);

}  // namespace ddp::launcher
