#pragma once
// What ddprun says when its workers failed the job, as torchrun's agent says it (ChildFailedError:
// the "<program> FAILED" block with every failure seen and the root cause apart), reading each
// failed worker's TORCHELASTIC_ERROR_FILE for its message; and the root cause's record copied into
// ddprun's own TORCHELASTIC_ERROR_FILE, as torchrun's @record does, for whatever started ddprun.
#include <ctime>
#include <string>
#include <vector>

#include "ddp/launcher/worker_group.h"

namespace ddp::launcher {

struct FailureReport {
  std::vector<WorkerExit> failures;  ///< the failures seen together when the job was given up
  size_t root = 0;                   ///< index of the root cause in `failures`
};

/// The report as torchrun prints it (the template of torch 1.13/2.6's ChildFailedError.format_msg):
///
///   ============================================================
///   train_cifar10 FAILED
///   ------------------------------------------------------------
///   Failures:
///     <NO_OTHER_FAILURES>
///   ------------------------------------------------------------
///   Root Cause (first observed failure):
///   [0]:
///     time      : 2026-12-06_20:44:01
///     host      : node-0
///     rank      : 1 (local_rank: 1)
///     exitcode  : 2 (pid: 4242)
///     error_file: /tmp/torchelastic_x/run/attempt_0/1/error.json
///     traceback : ddp::ConfigError: --lr: 'x' is not a number
///   ============================================================
///
/// A worker without a record shows error_file "<N/A>" and its exit (or signal) as the traceback; a
/// record that cannot be read is named with the reason. `now` stands for the time of those.
std::string format_failure_report(const std::string& program, const FailureReport& report,
                                  const std::string& host, std::time_t now);

/// Writes the root cause into `own_error_file` (ddprun's TORCHELASTIC_ERROR_FILE, when it has one):
/// the worker's record with "errorCode" set to its exit code, or, when it wrote none (or an
/// unreadable one), a record made from its exit. Logs and carries on when the file cannot be written.
void record_root_cause(const std::string& own_error_file, const FailureReport& report, std::time_t now);

}  // namespace ddp::launcher
