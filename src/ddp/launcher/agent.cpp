#include "ddp/launcher/agent.h"

#include <ddp/errors.h>
#include <ddp/logging.h>
#include <poll.h>
#include <signal.h>

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include "ddp/launcher/failure_summary.h"
#include "ddp/launcher/node_coordinator.h"
#include "ddp/launcher/output_pump.h"
#include "ddp/launcher/signal_pipe.h"
#include "ddp/launcher/worker_group.h"
#include "util/files.h"
#include "util/host_name.h"

namespace ddp::launcher {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How long a SIGKILLed worker may take to be gone before ddprun stops waiting for it.
constexpr milliseconds kKillWait{10000};

// A fresh folder, as torchrun makes for its logs and error files (tempfile.mkdtemp with the prefix
// "torchelastic_", in $TMPDIR); empty, with `why` set, when it cannot be made.
std::string make_temporary_dir(const std::map<std::string, std::string>& env, std::string* why) {
  auto tmp = env.find("TMPDIR");
  std::string path = (tmp != env.end() && !tmp->second.empty() ? tmp->second : std::string("/tmp")) +
                     "/torchelastic_XXXXXX";
  std::vector<char> buf(path.begin(), path.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) {
    *why = "cannot make a folder " + path + ": " + std::strerror(errno);
    return "";
  }
  return buf.data();
}

// True when `dir` holds a file anywhere below it (a folder of empty folders holds nothing).
bool holds_a_file(const std::string& dir) {
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    if (!it->is_directory(ec)) return true;
  return false;
}

// The name torchrun gives the job in its "<name> FAILED" report: the program's file name, or for a
// Python run (python3 -u script.py / -m module) the script's or module's.
std::string entrypoint_name(const std::vector<std::string>& program) {
  auto base = [](const std::string& p) { return p.substr(p.find_last_of('/') + 1); };
  if (program.empty()) return "ddprun";
  const std::string first = base(program[0]);
  if (first.rfind("python", 0) == 0)
    for (size_t i = 1; i < program.size(); ++i)
      if (!program[i].empty() && program[i][0] != '-') return base(program[i]);
  return first;
}


// A --log-dir that cannot be created is a bad flag (exit 2), not bad data.
void make_log_dirs(const std::string& dir) {
  try {
    util::make_dirs(dir);
  } catch (const DataError& e) {
    throw ConfigError(std::string("--log-dir: ") + e.what());
  }
}

class Agent {
 public:
  Agent(const LaunchConfig& config, const std::map<std::string, std::string>& env)
      : config_(config), env_(env), log_dir_(config.log_dir) {}

  int run() {
    DDP_LOG(INFO) << "ddprun: " << config_.describe();
    for (const auto& note : config_.notes) DDP_LOG(WARN) << note;
    if (log_dir_.empty() && (config_.tee.any() || config_.redirects.any())) {
      std::string why;
      log_dir_ = make_temporary_dir(env_, &why);
      if (log_dir_.empty()) throw ConfigError("--tee / --redirects without --log-dir: " + why);
      DDP_LOG(INFO) << "log directory set to: " << log_dir_ << " (--tee / --redirects without --log-dir)";
    }
    if (config_.nproc_per_node > 1 && !env_.count("OMP_NUM_THREADS"))
      DDP_LOG(WARN) << "setting OMP_NUM_THREADS=1 for every worker so " << config_.nproc_per_node
                    << " workers do not oversubscribe the CPUs (as torchrun does); set it to tune";
    try {
      coord_ = std::make_unique<NodeCoordinator>(config_, [this] { return check_signals(); });
      run_id_ = coord_->start();
    } catch (const Interrupted& i) {
      DDP_LOG(WARN) << "stopped by " << signal_name(i.signal) << " while joining the other nodes";
      return 128 + i.signal;
    }
    // Each worker's TORCHELASTIC_ERROR_FILE lives beside its logs; without --log-dir in a temporary
    // folder, as torchrun's, removed at the end unless a worker wrote a record there.
    error_dir_ = log_dir_;
    if (error_dir_.empty()) {
      std::string why;
      error_dir_ = make_temporary_dir(env_, &why);
      error_dir_temporary_ = !error_dir_.empty();
      if (error_dir_.empty())
        DDP_LOG(WARN) << "the workers get no TORCHELASTIC_ERROR_FILE (" << why
                      << "): a failure is reported by its exit code only";
    }
    int64_t round = -1;  // the job's current one
    while (true) {
      if (stop_signal_) return finish(128 + stop_signal_);
      // Static: the same nodes every attempt. c10d: each attempt is a round of the rendezvous, whose
      // nodes (and so this node's ranks) may differ from the last one's.
      try {
        std::optional<NodeCoordinator::Layout> layout = coord_->join(round);
        if (!layout) return finish(0);
        layout_ = *layout;
      } catch (const Interrupted& i) {
        DDP_LOG(WARN) << "stopped by " << signal_name(i.signal) << " while joining the other nodes";
        return finish(128 + i.signal);
      } catch (const Error& e) {
        // The job was ended meanwhile, the rendezvous timed out or the store failed: no workers run.
        // Reported as main() reports any error (log line, ddprun's own error file), then the leave.
        return finish(report_and_exit_code(e));
      }
      round = layout_.round;
      DDP_LOG(INFO) << "run " << run_id_ << " attempt " << round << ": node " << layout_.node_rank << " of "
                    << layout_.nnodes << " runs ranks " << layout_.rank_offset << ".."
                    << layout_.rank_offset + config_.nproc_per_node - 1 << " of " << layout_.world_size << "; store "
                    << config_.master_addr << ":" << coord_->port();
      std::optional<int> code = run_attempt(round);
      if (code) return finish(*code);
    }
  }

 private:
  enum class Event { kLocalSuccess, kLocalFailure, kRemoteRestart, kRemoteAbort, kStopSignal, kNodesWaiting, kNodeLost };
  struct Outcome {
    Event event;
    int code = 0;
    int64_t round = 0;
    std::string reason;
    FailureReport failures;  ///< kLocalFailure: what failed, and which of it is the cause
  };

  // One attempt: start, watch, stop. Returns the exit code when the job is over, or nullopt with
  // `round` moved on when the workers are to be started again.
  std::optional<int> run_attempt(int64_t& round) {
    WorkerGroup group(pump_);
    try {
      DDP_LOG(INFO) << "attempt " << round << " (restart " << layout_.restarts << " of at most " << config_.max_restarts
                    << "): starting " << config_.nproc_per_node << " worker(s)";
      group.start(make_specs(round));
      Outcome o = monitor(group, round);
      switch (o.event) {
        case Event::kStopSignal: {
          DDP_LOG(WARN) << "received " << signal_name(stop_signal_) << ": passing it to the workers";
          stop_workers(group, stop_signal_);
          auto exits = group.exits();
          bool all_ok = static_cast<int>(exits.size()) == config_.nproc_per_node;
          for (auto& e : exits) all_ok = all_ok && e.code == 0;
          return all_ok ? 0 : 128 + stop_signal_;
        }
        case Event::kLocalFailure: {
          // The exit code keeps its class either way: when the restarts run out, a permanent error
          // still ends the job with its own code, so the operator's ExitCode policy sees it.
          const bool permanent = !is_retryable_exit_code(o.code);
          const char* kind = permanent ? "a permanent error (1-127)" : "retryable";
          const bool exhausted = layout_.restarts >= config_.max_restarts;
          if ((permanent && !config_.restart_on_any_failure) || exhausted) {
            int final_code = coord_->abort(o.code, "node " + std::to_string(layout_.node_rank) + ": " + o.reason);
            DDP_LOG(ERROR) << o.reason << ": " << kind << ", "
                           << (exhausted
                                   ? "but no restarts are left (--max-restarts " + std::to_string(config_.max_restarts) + ")"
                                   : std::string("not restarted (--restart-on retryable)"));
            stop_workers(group, SIGTERM);
            report_failure(o.failures);
            return final_code;
          }
          int64_t next = coord_->request_restart(round, layout_.restarts, /*failure=*/true);
          DDP_LOG(WARN) << o.reason << ": " << kind << "; restarting every node's workers as attempt " << next;
          stop_workers(group, SIGTERM);
          round = next;
          return std::nullopt;
        }
        case Event::kNodesWaiting: {
          // torchrun's membership change: the group re-forms with the new node(s) at once, and it
          // does not count as a restart. The workers resume from their last checkpoint.
          int64_t next = coord_->request_restart(round, layout_.restarts, /*failure=*/false);
          DDP_LOG(WARN) << o.code << " node(s) waiting to join: re-forming the group as attempt " << next
                        << " (a membership change, not counted against --max-restarts)";
          stop_workers(group, SIGTERM);
          round = next;
          return std::nullopt;
        }
        case Event::kNodeLost: {
          stop_workers(group, SIGTERM);  // they may hang in a collective with the lost node's ranks
          return restart_without_lost_node(round, o.reason);
        }
        case Event::kRemoteRestart:
          DDP_LOG(WARN) << "another node moved the job to attempt " << o.round << ": restarting this node's workers";
          stop_workers(group, SIGTERM);
          round = o.round;
          return std::nullopt;
        case Event::kRemoteAbort:
          DDP_LOG(ERROR) << "the job ended on another node with exit code " << o.code << " (" << o.reason
                         << "): stopping this node's workers";
          stop_workers(group, SIGTERM);
          return o.code;
        case Event::kLocalSuccess:
          return wait_for_other_nodes(round);
      }
    } catch (const Interrupted& i) {
      stop_workers(group, i.signal);
      return 128 + i.signal;
    } catch (const Error& e) {
      // The store went away or misbehaved: nothing coordinates the nodes any more.
      DDP_LOG(ERROR) << "ddprun: " << e.what() << "; stopping the workers";
      stop_workers(group, SIGTERM);
      return e.exit_code();
    }
    return kExitInternal;
  }

  Outcome monitor(WorkerGroup& group, int64_t round) {
    auto next_poll = Clock::now();
    while (true) {
      wait_events(config_.monitor_interval);
      if (stop_signal_) return {Event::kStopSignal};
      FailureReport seen;
      for (const auto& e : group.reap()) {
        if (e.code == 0) {
          DDP_LOG(INFO) << e.describe();
          continue;
        }
        // Of failures seen together, the first permanent one is the cause (the others lost their
        // peer), else the first seen.
        seen.failures.push_back(e);
        const WorkerExit& cause = seen.failures[seen.root];
        if (is_retryable_exit_code(cause.code) && !is_retryable_exit_code(e.code)) seen.root = seen.failures.size() - 1;
      }
      if (!seen.failures.empty()) {
        const WorkerExit& cause = seen.failures[seen.root];
        return {Event::kLocalFailure, cause.code, 0, cause.describe(), seen};
      }
      if (group.all_exited()) return {Event::kLocalSuccess};
      if (Clock::now() >= next_poll) {
        auto state = coord_->poll(round);
        if (state.abort_code) return {Event::kRemoteAbort, *state.abort_code, 0, state.abort_reason};
        if (state.round > round) return {Event::kRemoteRestart, 0, state.round};
        if (state.waiting > 0) return {Event::kNodesWaiting, state.waiting, round};
        if (state.lost_node) return {Event::kNodeLost, kExitTimeout, round, lost_node_reason(*state.lost_node)};
        next_poll = Clock::now() + config_.monitor_interval;
      }
    }
  }

  // Our workers all succeeded. The job is over when every node's did; another node may still fail
  // and move the job to a new attempt, which needs our workers again.
  std::optional<int> wait_for_other_nodes(int64_t& round) {
    DDP_LOG(INFO) << "all " << config_.nproc_per_node << " worker(s) of this node succeeded";
    coord_->mark_done(round);
    while (true) {
      auto state = coord_->poll(round);
      if (state.abort_code) {
        DDP_LOG(ERROR) << "the job ended on another node with exit code " << *state.abort_code << " ("
                       << state.abort_reason << ")";
        return *state.abort_code;
      }
      if (state.round > round) {
        DDP_LOG(WARN) << "another node moved the job to attempt " << state.round << " after this node's workers "
                      << "finished: starting them again";
        round = state.round;
        return std::nullopt;
      }
      if (coord_->all_done(round, layout_.nnodes)) return 0;
      // A node lost before it finished: the job cannot end without it, so the round is restarted
      // (this node's workers resume from the last checkpoint, which is at the end).
      if (state.lost_node) return restart_without_lost_node(round, lost_node_reason(*state.lost_node));
      wait_events(config_.monitor_interval);
      if (stop_signal_) return 0;  // nothing left to stop, and every worker here succeeded
    }
  }

  std::string lost_node_reason(int slot) const {
    std::ostringstream s;
    s << "node " << slot << " of attempt " << layout_.round << " sent no heartbeat for "
      << config_.keep_alive_interval.count() * config_.keep_alive_max_attempt / 1000.0
      << " s (--rdzv-conf keep_alive_interval x keep_alive_max_attempt)";
    return s.str();
  }

  // Another node went silent: a failure like a worker's (exit 201, retryable), so it costs a restart,
  // and the next round closes without it; with no restarts left the job ends with 201.
  std::optional<int> restart_without_lost_node(int64_t& round, const std::string& reason) {
    if (layout_.restarts >= config_.max_restarts) {
      DDP_LOG(ERROR) << reason << ", and no restarts are left (--max-restarts " << config_.max_restarts << ")";
      return coord_->abort(kExitTimeout, "node " + std::to_string(layout_.node_rank) + ": " + reason);
    }
    int64_t next = coord_->request_restart(round, layout_.restarts, /*failure=*/true);
    DDP_LOG(WARN) << reason << ": restarting without it as attempt " << next;
    round = next;
    return std::nullopt;
  }

  std::vector<WorkerSpec> make_specs(int64_t round) {
    std::vector<WorkerSpec> specs;
    for (int lr = 0; lr < config_.nproc_per_node; ++lr) {
      int rank = layout_.rank_offset + lr;
      std::map<std::string, std::string> env = env_;
      auto put = [&](const std::string& k, const std::string& v) { env[k] = v; };
      put("RANK", std::to_string(rank));
      put("LOCAL_RANK", std::to_string(lr));
      put("WORLD_SIZE", std::to_string(layout_.world_size));
      put("LOCAL_WORLD_SIZE", std::to_string(config_.nproc_per_node));
      put("GROUP_RANK", std::to_string(layout_.node_rank));
      put("GROUP_WORLD_SIZE", std::to_string(layout_.nnodes));
      put("ROLE_NAME", config_.role);
      put("ROLE_RANK", std::to_string(rank));
      put("ROLE_WORLD_SIZE", std::to_string(layout_.world_size));
      put("MASTER_ADDR", config_.master_addr);
      put("MASTER_PORT", std::to_string(coord_->port()));
      put("TORCHELASTIC_RESTART_COUNT", std::to_string(round));
      put("TORCHELASTIC_MAX_RESTARTS", std::to_string(config_.max_restarts));
      put("TORCHELASTIC_RUN_ID", run_id_);
      put("TORCHELASTIC_USE_AGENT_STORE", "True");
      if (config_.nproc_per_node > 1 && !env_.count("OMP_NUM_THREADS")) put("OMP_NUM_THREADS", "1");
      WorkerSpec spec;
      // Never ddprun's own (which gets the root cause at the end): each worker its own file or none.
      env.erase("TORCHELASTIC_ERROR_FILE");
      if (!error_dir_.empty()) {
        std::string dir = error_dir_ + "/" + run_id_ + "/attempt_" + std::to_string(round) + "/" +
                          std::to_string(rank);
        make_log_dirs(dir);
        spec.error_file = dir + "/error.json";
        ::unlink(spec.error_file.c_str());  // a record from an earlier run with the same folder and run id
        put("TORCHELASTIC_ERROR_FILE", spec.error_file);
      }
      spec.local_rank = lr;
      spec.rank = rank;
      spec.argv = config_.program;
      for (auto& [k, v] : env) spec.env.push_back(k + "=" + v);
      spec.stdout_to_console = !config_.redirects.has_stdout(lr);
      spec.stderr_to_console = !config_.redirects.has_stderr(lr);
      if (config_.local_ranks_filter && !config_.local_ranks_filter->count(lr)) {
        // torchrun's --local-ranks-filter: the other ranks print nothing; their files stay.
        spec.stdout_to_console = false;
        spec.stderr_to_console = false;
      }
      if (!log_dir_.empty()) {
        std::string dir = log_dir_ + "/" + run_id_ + "/attempt_" + std::to_string(round) + "/" +
                          std::to_string(rank);
        make_log_dirs(dir);
        spec.stdout_file = dir + "/stdout.log";
        spec.stderr_file = dir + "/stderr.log";
      }
      specs.push_back(std::move(spec));
    }
    return specs;
  }

  // Waits up to `timeout` for worker output or a signal; pumps the output; records stop signals.
  void wait_events(milliseconds timeout) {
    std::vector<pollfd> fds{pollfd{signals_.fd(), POLLIN, 0}};
    pump_.append_pollfds(fds);
    int rc = ::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
    if (rc > 0) pump_.pump();
    check_signals();
  }

  int check_signals() {
    for (int sig : signals_.take()) {
      ++stop_requests_;
      if (!stop_signal_) stop_signal_ = sig;
    }
    return stop_signal_;
  }

  // Signal, grace period, SIGKILL; output is pumped throughout and drained at the end.
  void stop_workers(WorkerGroup& group, int sig) {
    auto log_exits = [&] {
      for (const auto& e : group.reap()) DDP_LOG(INFO) << e.describe();
    };
    log_exits();
    if (group.running() > 0) {
      DDP_LOG(INFO) << "stopping " << group.running() << " worker(s) with " << signal_name(sig) << " (SIGKILL after "
                    << config_.grace_period.count() / 1000.0 << " s)";
      group.signal_all(sig);
      const int requests_before = stop_requests_;
      auto deadline = Clock::now() + config_.grace_period;
      while (group.running() > 0) {
        wait_events(milliseconds(20));
        log_exits();
        if (group.running() == 0) break;
        bool insisted = stop_requests_ > requests_before;  // another SIGTERM/SIGINT to ddprun: no more waiting
        if (Clock::now() >= deadline || insisted) {
          DDP_LOG(WARN) << group.running() << " worker(s) still running " << (insisted ? "after a second stop request" : "after the grace period") << ": SIGKILL";
          group.signal_all(SIGKILL);
          // SIGKILL ends any process, but not one stuck in the kernel (D state: a dead NFS server,
          // a hung GPU driver). Such a worker is left behind, loudly, rather than freezing ddprun.
          auto kill_deadline = Clock::now() + kKillWait;
          while (group.running() > 0 && Clock::now() < kill_deadline) {
            wait_events(milliseconds(20));
            log_exits();
          }
          if (group.running() > 0) {
            DDP_LOG(ERROR) << group.running() << " worker(s) still there " << kKillWait.count() / 1000
                           << " s after SIGKILL (pid " << group.running_pids()
                           << ", stuck in the kernel?): leaving them behind";
            group.abandon();
          }
        }
      }
    }
    // The last output, unless leftover grandchildren keep the pipes open.
    auto drain_deadline = Clock::now() + milliseconds(2000);
    while (pump_.any_open() && Clock::now() < drain_deadline) wait_events(milliseconds(20));
    pump_.close_all();
  }

  // torchrun's "<program> FAILED" block, and the root cause's record for whoever started ddprun.
  void report_failure(const FailureReport& report) {
    if (report.failures.empty()) return;
    const std::time_t now = std::time(nullptr);
    DDP_LOG(ERROR) << "the job failed:" << format_failure_report(entrypoint_name(config_.program), report,
                                                                 util::host_name().value_or("<unknown host>"), now);
    auto own = env_.find("TORCHELASTIC_ERROR_FILE");
    if (own != env_.end()) record_root_cause(own->second, report, now);
  }

  int finish(int code) {
    pump_.close_all();
    if (error_dir_temporary_) {
      std::error_code ec;
      if (holds_a_file(error_dir_)) DDP_LOG(INFO) << "the workers' error records are kept in " << error_dir_;
      else std::filesystem::remove_all(error_dir_, ec);
    }
    if (uint64_t n = pump_.dropped_lines())
      DDP_LOG(WARN) << n << " line(s) of worker output were dropped: the reader of ddprun's stdout/stderr "
                    << "did not keep up (--log-dir keeps every line)";
    try {
      // Node 0's store must outlive the other nodes' last look at it.
      coord_->leave(std::max(milliseconds(10000), config_.monitor_interval * 20));
    } catch (const std::exception& e) {
      DDP_LOG(DEBUG) << "leaving the store: " << e.what();
    }
    if (code == 0) DDP_LOG(INFO) << "ddprun: done, every worker succeeded";
    else DDP_LOG(ERROR) << "ddprun: exit code " << code << (is_retryable_exit_code(code) ? " (retryable)" : " (permanent)");
    return code;
  }

  const LaunchConfig& config_;
  std::map<std::string, std::string> env_;
  std::string log_dir_;  ///< --log-dir, or the temporary one --tee / --redirects get without it
  std::string error_dir_;  ///< where the workers' error files go: log_dir_, or a temporary folder
  bool error_dir_temporary_ = false;
  SignalPipe signals_;
  OutputPump pump_;
  std::unique_ptr<NodeCoordinator> coord_;
  NodeCoordinator::Layout layout_;
  std::string run_id_;  ///< the job's (the store host's), from NodeCoordinator::start
  int stop_signal_ = 0;
  int stop_requests_ = 0;
};

}  // namespace

int run_launcher(const LaunchConfig& config, const std::map<std::string, std::string>& env) {
  Agent agent(config, env);
  return agent.run();
}

}  // namespace ddp::launcher
