#pragma once
// ddprun's configuration: torchrun's flags, each also readable from PET_<FLAG> (how Kubeflow's
// operators hand them over), with the node rank also from JOB_COMPLETION_INDEX (Trainer v2) or
// RANK (PyTorchJob v1, where it is the pod index). A flag on the command line wins.
//
//   auto config = ddp::launcher::parse_launch_args(argc, argv, ddp::util::process_env());
//
// Every value is validated; a bad one is a ConfigError naming the flag or variable (exit 2).

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ddp::launcher {

/// Which of a worker's streams go where, as torchrun's --tee / --redirects: 0 none, 1 stdout,
/// 2 stderr, 3 both; either one value for every local rank or "local_rank:value,...".
class StreamSpec {
 public:
  StreamSpec() = default;
  /// ConfigError naming `flag` when `text` is malformed.
  static StreamSpec parse(const std::string& flag, const std::string& text);
  static StreamSpec all() { return StreamSpec(3); }
  bool has_stdout(int local_rank) const { return value(local_rank) & 1; }
  bool has_stderr(int local_rank) const { return value(local_rank) & 2; }
  bool any() const;

 private:
  explicit StreamSpec(int all) : default_(all) {}
  int value(int local_rank) const;
  int default_ = 0;
  std::map<int, int> per_rank_;
};

struct LaunchConfig {
  bool help = false;     ///< -h / --help: print launch_usage() and exit 0
  bool version = false;  ///< --version: print the version line and exit 0
  int nproc_per_node = 1;
  std::string nproc_reason;  ///< how nproc was chosen ("--nproc-per-node", "auto: 2 GPUs", ...)
  /// Static rendezvous: the node count. c10d rendezvous: the most nodes a round takes (MAX of
  /// --nnodes MIN:MAX).
  int nnodes = 1;
  /// The fewest nodes a c10d rendezvous round closes with (MIN of MIN:MAX); = nnodes when static.
  int min_nodes = 1;
  /// Node ranks are handed out by the c10d rendezvous (in join order, each round anew) rather than
  /// taken from --node-rank: --rdzv-backend c10d with no node rank given, or with MIN < MAX.
  bool dynamic_rendezvous = false;
  /// c10d rendezvous: once MIN nodes joined a round, how long it waits for more before closing
  /// (--rdzv-conf last_call_timeout; torch's default 30 s).
  std::chrono::milliseconds last_call{std::chrono::seconds(30)};
  /// c10d rendezvous: whether this node hosts the store (--rdzv-conf is_host); unset: it does when
  /// the endpoint's host is this machine and the port is free, as torch decides.
  std::optional<bool> is_host;
  /// c10d rendezvous keep-alive: each node beats every keep_alive_interval; one silent for
  /// keep_alive_interval x keep_alive_max_attempt is lost (--rdzv-conf; torch's defaults 5 s, 3).
  std::chrono::milliseconds keep_alive_interval{std::chrono::seconds(5)};
  int keep_alive_max_attempt = 3;
  int node_rank = 0;  ///< static rendezvous only; a c10d round hands out its own (NodeCoordinator::Layout)
  std::string node_rank_source = "default";
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;  ///< 0 (standalone): a free port picked by node 0
  bool standalone = false;
  int max_restarts = 0;
  /// Which worker failures restart the group (while restarts are left): any, as torchrun; or only
  /// retryable ones (exit >= 128), a permanent one (1-127) ending the job at once (--restart-on).
  bool restart_on_any_failure = true;
  std::chrono::milliseconds monitor_interval{100};
  /// SIGTERM -> SIGKILL grace when stopping workers.
  std::chrono::milliseconds grace_period{30000};
  /// How long a node waits for the others (connecting to the store, rendezvous).
  std::chrono::milliseconds join_timeout{std::chrono::minutes(15)};
  /// How long one store request may take once the nodes joined (the monitor loop polls the store
  /// every monitor_interval; a store that stops answering must not freeze ddprun for join_timeout).
  std::chrono::milliseconds store_timeout{std::chrono::seconds(30)};
  std::string run_id;  ///< empty: node 0 makes one up and shares it through the store
  std::string role = "default";
  /// Every stream of every worker is written to <log-dir>/<run-id>/attempt_<n>/<rank>/{stdout,stderr}.log;
  /// empty: no files.
  std::string log_dir;
  /// -m / --module: PROGRAM is a Python module, run as python3 -u -m PROGRAM.
  bool module = false;
  /// --local-ranks-filter: only these local ranks' output reaches ddprun's console (files are
  /// unaffected); unset: every rank's.
  std::optional<std::set<int>> local_ranks_filter;
  /// Settings that were accepted but have no effect, or lost to another: ddprun logs each at start.
  std::vector<std::string> notes;
  StreamSpec tee;        ///< torchrun's --tee, validated; with log_dir every stream is teed anyway
  StreamSpec redirects;  ///< streams kept off the console (they still go to their file)
  bool no_python = false;  ///< --no-python: run PROGRAM itself even when it ends in .py
  std::vector<std::string> program;  ///< program and its arguments; program[0] resolved to a path

  /// One line for the log.
  std::string describe() const;
};

/// Parses argv (argv[0] is ddprun itself) with `env` for PET_* and friends.
LaunchConfig parse_launch_args(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);

/// The usage text (--help), ending with the environment variables ddprun reads and its exit codes.
std::string launch_usage();

}  // namespace ddp::launcher
