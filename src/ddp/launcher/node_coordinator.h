#pragma once
// How the launchers of one job agree, through the store node 0 hosts, on which ranks each node runs
// and which attempt is current, so a failure on any node restarts the workers of every node.
//
// Keys, all under "ddprun/":
//   config          "nnodes=<n> max_restarts=<m>" from node 0; the others must match it
//   run_id          the job's run id (node 0's)
//   node/<k>/nproc  node k's worker count; ranks are handed out in node order
//   node/<k>/joins  how often node k joined (> 1: its launcher was restarted)
//   round           the current attempt = TORCHELASTIC_RESTART_COUNT; moved on with compare_set,
//                   so nodes failing at the same time cost one restart, not several
//   abort           "<exit code>\n<reason>" that ends the job (the first writer wins)
//   done/<round>    how many nodes' workers all succeeded in that attempt
//   left            how many nodes other than 0 saw the end (node 0 keeps the store up until then)
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "ddp/launcher/launch_config.h"

namespace ddp {
class Store;
class TCPStoreServer;
}  // namespace ddp

namespace ddp::launcher {

/// Thrown when a stop signal arrives while waiting for other nodes.
struct Interrupted {
  int signal;
};

class NodeCoordinator {
 public:
  /// Returns a pending stop signal (or 0); polled while waiting so ddprun stays responsive.
  using StopCheck = std::function<int()>;

  /// Node 0 starts the store server; every node connects as a client (retrying until the join
  /// timeout). StoreError when that fails; Interrupted on a stop signal.
  NodeCoordinator(const LaunchConfig& config, StopCheck stop_check);
  ~NodeCoordinator();

  struct Layout {
    int rank_offset = 0;  ///< global rank of this node's local rank 0
    int world_size = 0;
    std::string run_id;
    int64_t round = 0;
    int64_t joins = 1;
  };
  /// Publishes this node and waits for all of them. ConfigError when nodes disagree.
  Layout join();

  struct State {
    int64_t round = 0;
    std::optional<int> abort_code;
    std::string abort_reason;
  };
  State poll();

  /// Moves the job from `round` to `round + 1` unless another node already moved it; returns the
  /// current round afterwards.
  int64_t request_restart(int64_t round);
  /// Ends the job with `code` unless another node ended it first; returns the code that stands.
  int abort(int code, const std::string& reason);
  void mark_done(int64_t round);
  bool all_done(int64_t round);
  /// Nodes > 0: tell node 0 this node saw the end. Node 0: wait up to `wait` for the others.
  void leave(std::chrono::milliseconds wait);

  /// The store's port (the chosen one under --standalone).
  int port() const { return port_; }

 private:
  void wait_keys(const std::vector<std::string>& keys, std::chrono::steady_clock::time_point deadline,
                 const std::string& what);

  const LaunchConfig& config_;
  StopCheck stop_check_;
  std::unique_ptr<TCPStoreServer> server_;
  std::shared_ptr<Store> store_;
  int port_ = 0;
};

}  // namespace ddp::launcher
