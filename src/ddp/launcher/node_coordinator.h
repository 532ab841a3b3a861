#pragma once
// How the launchers of one job agree, through one store, on which ranks each node runs and which
// attempt is current, so a failure on any node restarts the workers of every node.
//
// Two rendezvous, as torchrun's:
//   static  node ranks from --node-rank; node 0's ddprun hosts the store; the node set is fixed and
//           joined once.
//   c10d    (dynamic) the ddprun on the endpoint's machine hosts the store (the first to bind its
//           port, as torch decides); every attempt is a round that nodes join, handed node ranks in
//           join order; a round closes with MAX nodes at once, or with MIN..MAX once it has had
//           MIN for last_call. A node that comes while a round runs waits for the next one, and
//           the running nodes start one for it (a membership change, not a failure: it does not
//           count against --max-restarts). A node lost mid-run fails its peers' collectives; the
//           survivors restart and the next round closes without it, as long as MIN remain.
//
// Keys, all under "ddprun/":
//   config            "nnodes=<n or min:max> max_restarts=<m> restart_on=<..> rendezvous=<..>" from
//                     the store's host; the others must match it
//   run_id            the job's run id (the host's)
//   node/<k>/nproc    static: node k's worker count; ranks are handed out in node order
//   node/<k>/joins    static: how often node k joined (> 1: its launcher was restarted)
//   round             the current attempt = TORCHELASTIC_RESTART_COUNT; moved on with compare_set,
//                     so nodes failing at the same time cost one restart, not several
//   restarts/<r>      failure restarts used before attempt r (written before `round` moves to r;
//                     absent for 0); what --max-restarts is checked against
//   rdzv/<r>/joined   c10d: how many nodes joined round r; a node's slot = the count it got - 1
//   rdzv/<r>/slot/<j> c10d: the worker count of the node in slot j
//   rdzv/<r>/closed   c10d: the round's node count N; slots 0..N-1 are its nodes, node rank = slot
//   rdzv/<r>/beat/<j> c10d: slot j's heartbeat counter (heartbeats.h)
//   abort             "<exit code>\n<reason>" that ends the job (the first writer wins)
//   done/<round>      how many nodes' workers all succeeded in that attempt
//   finished          set when every node of an attempt succeeded: nodes still waiting to join go
//   left              how many nodes other than the host saw the end (the host keeps the store up)
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ddp/launcher/heartbeats.h"
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

  /// The store's host starts the server; every node connects as a client (retrying until the join
  /// timeout). StoreError when that fails; Interrupted on a stop signal.
  NodeCoordinator(const LaunchConfig& config, StopCheck stop_check);
  ~NodeCoordinator();

  struct Layout {
    int node_rank = 0;    ///< this node's rank in the attempt (GROUP_RANK)
    int nnodes = 0;       ///< the attempt's node count (GROUP_WORLD_SIZE)
    int rank_offset = 0;  ///< global rank of this node's local rank 0
    int world_size = 0;
    int64_t round = 0;     ///< the attempt
    int64_t restarts = 0;  ///< failure restarts used before it
    int64_t joins = 1;
  };
  /// Checks this node's settings against the job's and returns the job's run id. ConfigError when
  /// they differ (after telling the other nodes through `abort`).
  std::string start();
  /// The attempt this node is to take part in: static, the layout of every attempt (the node set is
  /// fixed; waits for all nodes the first time). c10d, joins round `round` — or a later one, when
  /// that one ran without this node — and waits until it closes. nullopt: the job finished while
  /// this node waited for a round to take it. Error when the job was ended meanwhile.
  std::optional<Layout> join(int64_t round);

  struct State {
    int64_t round = 0;
    std::optional<int> abort_code;
    std::string abort_reason;
    int waiting = 0;  ///< c10d: nodes waiting for a round while `round` runs without them
    std::optional<int> lost_node;  ///< c10d: a node of `round` that sent no heartbeat for the keep-alive timeout
  };
  State poll(int64_t round);

  /// Moves the job from `round` to `round + 1` unless another node already moved it; a `failure`
  /// counts against --max-restarts (restarts + 1), a membership change does not. Returns the
  /// current round afterwards.
  int64_t request_restart(int64_t round, int64_t restarts, bool failure);
  /// Ends the job with `code` unless another node ended it first; returns the code that stands.
  int abort(int code, const std::string& reason);
  void mark_done(int64_t round);
  /// True when all `nnodes` nodes of `round` succeeded; then the job is marked finished.
  bool all_done(int64_t round, int nnodes);
  /// Nodes other than the host: tell the host this node saw the end. The host: wait up to `wait`
  /// for the others to (so its store outlives their last look at it).
  void leave(std::chrono::milliseconds wait);

  /// The store's port (the chosen one under --standalone).
  int port() const { return port_; }
  bool hosts_store() const { return server_ != nullptr; }

 private:
  void wait_keys(const std::vector<std::string>& keys, std::chrono::steady_clock::time_point deadline,
                 const std::string& what);
  void throw_if_ended(const std::string& what);
  int64_t current_round();
  int64_t restarts_before(int64_t round);
  void add_worker_counts(const std::vector<std::string>& keys, int me, Layout& layout);
  int64_t closed_count(const std::string& round_base);  ///< rdzv/<r>/closed of a closed round
  Layout join_static();
  std::optional<Layout> join_round(int64_t round);

  const LaunchConfig& config_;
  StopCheck stop_check_;
  std::unique_ptr<TCPStoreServer> server_;
  std::shared_ptr<Store> store_;
  int port_ = 0;
  std::string run_id_;
  std::optional<Layout> static_layout_;
  std::optional<Heartbeats> beats_;  ///< c10d: the current round's keep-alive
  std::string who_;  ///< "node 1" (static) or "this node" (c10d, before a round gave it a rank)
};

}  // namespace ddp::launcher
