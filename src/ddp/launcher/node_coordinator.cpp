#include "ddp/launcher/node_coordinator.h"

#include <ddp/errors.h>
#include <ddp/logging.h>
#include <ddp/store.h>

#include <limits>
#include <random>
#include <sstream>
#include <thread>

#include "util/host_name.h"
#include "util/numbers.h"

namespace ddp::launcher {
namespace {

using Clock = std::chrono::steady_clock;
const std::string kPrefix = "ddprun/";

std::string make_run_id() {
  std::random_device rd;
  std::ostringstream s;
  s << "ddprun-" << std::hex << (static_cast<uint64_t>(rd()) << 32 | rd());
  return s.str();
}

std::string config_line(const LaunchConfig& c) {
  std::string nodes = c.min_nodes < c.nnodes ? std::to_string(c.min_nodes) + ":" + std::to_string(c.nnodes)
                                             : std::to_string(c.nnodes);
  return "nnodes=" + nodes + " max_restarts=" + std::to_string(c.max_restarts) +
         " restart_on=" + (c.restart_on_any_failure ? "any" : "retryable") +
         " rendezvous=" + (c.dynamic_rendezvous ? "c10d" : "static");
}

Store::Bytes bytes(const std::string& s) { return Store::Bytes(s.begin(), s.end()); }

std::string to_str(const Store::Bytes& b) { return std::string(b.begin(), b.end()); }

struct AbortValue {
  int code;
  std::string reason;
};

// "<exit code 1-255>\n<reason>". Whatever else is there (a 0, which would end every node as a
// success, a non-number, a stray NUL) still ends the job, as a permanent error: the store is shared,
// and a value nobody of ours wrote means something is wrong.
AbortValue parse_abort(const std::string& value) {
  const size_t nl = value.find('\n');
  const std::string reason = nl == std::string::npos ? std::string() : value.substr(nl + 1);
  if (auto code = util::to_int(value.substr(0, nl), 1, 255)) return {static_cast<int>(*code), reason};
  std::string why = "store key " + kPrefix + "abort holds '" + util::printable(value) +
                    "', not '<exit code 1-255>\\n<reason>': ending the job as a permanent error (exit " +
                    std::to_string(kExitConfig) + ")";
  DDP_LOG(ERROR) << why;
  return {kExitConfig, why};
}

}  // namespace

NodeCoordinator::NodeCoordinator(const LaunchConfig& config, StopCheck stop_check)
    : config_(config), stop_check_(std::move(stop_check)),
      who_(config.dynamic_rendezvous ? "this node" : "node " + std::to_string(config.node_rank)) {
  std::string host = config.master_addr;
  port_ = config.master_port;
  // Static: node 0 hosts. c10d: the node on the endpoint's machine (or is_host=1) tries to, and when
  // the port is taken there — another node of the job on the same machine got it first — it joins
  // as a client, as torch's c10d backend does; with is_host=1 it must host.
  const bool try_host = config.dynamic_rendezvous ? config.is_host.value_or(util::names_this_machine(config.master_addr))
                                                  : config.node_rank == 0;
  if (try_host) {
    try {
      server_ = TCPStoreServer::start(config.master_port);
      port_ = server_->port();
      host = "127.0.0.1";  // our own server, whatever name the others use for it
      DDP_LOG(INFO) << "store listening on port " << port_ << " (workers and other nodes use "
                    << config.master_addr << ":" << port_ << ")";
    } catch (const StoreError& e) {
      if (!config.dynamic_rendezvous || config.is_host) throw;
      DDP_LOG(INFO) << "not hosting the store (" << e.what() << "): another node on this machine does; joining it";
    }
  }
  // Short connection attempts in a loop, so a stop signal is noticed while the host is not up yet.
  auto deadline = Clock::now() + config.join_timeout;
  while (true) {
    if (int sig = stop_check_()) throw Interrupted{sig};
    try {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      auto attempt = std::max(std::chrono::milliseconds(1), std::min(left, std::chrono::milliseconds(2000)));
      store_ = std::make_shared<TCPStore>(
          TCPStoreOptions().host(host).port(port_).connect_timeout(attempt).timeout(config.store_timeout));
      break;
    } catch (const StoreError& e) {
      if (Clock::now() >= deadline)
        throw StoreError(who_ + " could not reach the store at " + host + ":" + std::to_string(port_) +
                         " within --join-timeout: " + e.what());
    }
  }
}

NodeCoordinator::~NodeCoordinator() {
  store_.reset();
  if (server_) server_->stop();
}

void NodeCoordinator::throw_if_ended(const std::string& what) {
  if (int sig = stop_check_()) throw Interrupted{sig};
  // A torchrun (TorchElastic) agent in the same c10d rendezvous keeps the round's state under this
  // key (torch 1.13 and 2.6: c10d_rendezvous_backend.py), as a pickled Python object no one else can
  // read: the two launchers cannot meet, so say so instead of waiting out --join-timeout.
  const std::string torch_key = "torch.rendezvous." + (config_.run_id.empty() ? std::string("none") : config_.run_id);
  if (store_->check({torch_key})) {
    ConfigError mixed("the store at " + config_.master_addr + ":" + std::to_string(port_) + " holds '" + torch_key +
                      "', a torchrun agent's c10d rendezvous: ddprun and torchrun agents cannot share one (torch "
                      "keeps the round as a pickled Python object); start every node with the same launcher");
    abort(mixed.exit_code(), mixed.what());
    throw mixed;
  }
  // Another node may have given up on the job already (e.g. it was started with other settings).
  if (store_->check({kPrefix + "abort"})) {
    AbortValue a = parse_abort(store_->get_string(kPrefix + "abort"));
    throw Error("the job was ended by another node while waiting for " + what + ": " + a.reason, a.code);
  }
}

void NodeCoordinator::wait_keys(const std::vector<std::string>& keys, Clock::time_point deadline,
                                const std::string& what) {
  while (!store_->check(keys)) {
    throw_if_ended(what);
    if (Clock::now() >= deadline) throw TimeoutError(who_ + " waited --join-timeout for " + what);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string NodeCoordinator::start() {
  // The host writes the job's settings (a restarted host hosts a fresh store, so they are always
  // new); a node started with other ones ends the job, so the other nodes stop too, with its code.
  const std::string mine = config_line(config_);
  if (server_) {
    store_->set(kPrefix + "run_id", config_.run_id.empty() ? make_run_id() : config_.run_id);
    store_->set(kPrefix + "config", mine);
  } else {
    wait_keys({kPrefix + "config", kPrefix + "run_id"}, Clock::now() + config_.join_timeout,
              "the store's host to publish the job's configuration");
    const std::string theirs = store_->get_string(kPrefix + "config");
    if (theirs != mine) {
      ConfigError mismatch(who_ + " was started with '" + mine + "' but the store's host with '" + theirs +
                           "': every node needs the same --nnodes, --max-restarts, --restart-on and --rdzv-backend");
      abort(mismatch.exit_code(), mismatch.what());
      throw mismatch;
    }
  }
  run_id_ = store_->get_string(kPrefix + "run_id");
  if (!config_.run_id.empty() && run_id_ != config_.run_id)
    DDP_LOG(WARN) << "--run-id " << config_.run_id << " differs from the job's " << run_id_ << "; using the job's";
  return run_id_;
}

int64_t NodeCoordinator::current_round() { return store_->add(kPrefix + "round", 0); }

int64_t NodeCoordinator::restarts_before(int64_t round) {
  const std::string key = kPrefix + "restarts/" + std::to_string(round);
  if (round == 0 || !store_->check({key})) return 0;
  return util::parse_int("store key " + key, store_->get_string(key), 0, std::numeric_limits<int64_t>::max());
}

// Every node's worker count, in node order: this node's first global rank and the world size.
void NodeCoordinator::add_worker_counts(const std::vector<std::string>& keys, int me, Layout& layout) {
  for (int k = 0; k < static_cast<int>(keys.size()); ++k) {
    const int n = static_cast<int>(util::parse_int("store key " + keys[k], store_->get_string(keys[k]), 1, 4096));
    if (k < me) layout.rank_offset += n;
    layout.world_size += n;
  }
}

int64_t NodeCoordinator::closed_count(const std::string& base) {
  return util::parse_int("store key " + base + "closed", store_->get_string(base + "closed"), 1, config_.nnodes);
}

std::optional<NodeCoordinator::Layout> NodeCoordinator::join(int64_t round) {
  if (config_.dynamic_rendezvous) return join_round(round);
  if (!static_layout_) static_layout_ = join_static();
  Layout layout = *static_layout_;
  layout.round = round < 0 ? current_round() : round;
  layout.restarts = restarts_before(layout.round);
  return layout;
}

NodeCoordinator::Layout NodeCoordinator::join_static() {
  Layout layout;
  const int me = config_.node_rank;
  auto deadline = Clock::now() + config_.join_timeout;
  layout.node_rank = me;
  layout.nnodes = config_.nnodes;
  const std::string node = kPrefix + "node/" + std::to_string(me);
  layout.joins = store_->add(node + "/joins", 1);
  store_->set(node + "/nproc", std::to_string(config_.nproc_per_node));
  std::vector<std::string> keys;
  for (int k = 0; k < config_.nnodes; ++k) keys.push_back(kPrefix + "node/" + std::to_string(k) + "/nproc");
  wait_keys(keys, deadline, "all " + std::to_string(config_.nnodes) + " nodes to join");
  add_worker_counts(keys, me, layout);
  if (layout.joins > 1)
    DDP_LOG(WARN) << "node " << me << " joined again (" << layout.joins
                  << " times): its launcher was restarted; joining attempt " << current_round();
  return layout;
}

std::optional<NodeCoordinator::Layout> NodeCoordinator::join_round(int64_t round) {
  if (round < 0) round = current_round();
  while (true) {
    // Each round gets the whole --join-timeout: a node that waited long for a full round to end
    // must not find its time used up in the next one.
    const auto deadline = Clock::now() + config_.join_timeout;
    const std::string base = kPrefix + "rdzv/" + std::to_string(round) + "/";
    const int64_t slot = store_->add(base + "joined", 1) - 1;
    store_->set(base + "slot/" + std::to_string(slot), std::to_string(config_.nproc_per_node));
    DDP_LOG(INFO) << "joined round " << round << " of the c10d rendezvous (slot " << slot << ")";
    std::optional<Clock::time_point> quorum_since;  // when this node first saw MIN nodes in the round
    bool said_waiting = false;
    while (true) {
      throw_if_ended("round " + std::to_string(round) + " of the rendezvous");
      if (store_->check({kPrefix + "finished"})) {
        DDP_LOG(INFO) << "the job finished while this node waited for a round to take it";
        return std::nullopt;
      }
      const int64_t now_round = current_round();
      if (now_round > round) {  // the job moved on: join the new round (a slot in this one is void)
        round = now_round;
        break;
      }
      if (store_->check({base + "closed"})) {
        const int64_t n = closed_count(base);
        if (slot < n) {
          Layout layout;
          layout.node_rank = static_cast<int>(slot);
          layout.nnodes = static_cast<int>(n);
                  layout.round = round;
          layout.restarts = restarts_before(round);
          std::vector<std::string> keys;
          for (int64_t k = 0; k < n; ++k) keys.push_back(base + "slot/" + std::to_string(k));
          wait_keys(keys, deadline, "the nodes of round " + std::to_string(round) + " to say their worker counts");
          add_worker_counts(keys, static_cast<int>(slot), layout);
          who_ = "node " + std::to_string(slot);
          beats_.emplace(base, static_cast<int>(slot), static_cast<int>(n), config_.keep_alive_interval,
                         config_.keep_alive_max_attempt, Clock::now());
          return layout;
        }
        // The round runs without this node: its nodes start the next one for it (or, when the round
        // is full, the next restart takes it). Waiting for that has no deadline when the round is full,
        // as torch's redundancy list; otherwise the running nodes restart within a monitor interval.
        if (!said_waiting) {
          DDP_LOG(INFO) << "round " << round << " closed with " << n << " node(s) before this node joined: "
                        << (n < config_.nnodes ? "waiting for the next round, which its nodes start for this one"
                                               : "it is full (--nnodes max); waiting for a later round");
          said_waiting = true;
        }
        if (n < config_.nnodes && Clock::now() >= deadline)
          throw TimeoutError(who_ + " waited --join-timeout for a round of the rendezvous to take it");
      } else {
        const int64_t count = store_->add(base + "joined", 0);
        std::optional<int64_t> close_with;
        if (count >= config_.nnodes) {
          close_with = config_.nnodes;
        } else if (count >= config_.min_nodes) {
          if (!quorum_since) quorum_since = Clock::now();
          if (Clock::now() - *quorum_since >= config_.last_call) close_with = count;
        } else {
          quorum_since.reset();
        }
        // Whoever closes first sets the count; a node that joined after it waits for the next round.
        if (close_with) store_->compare_set(base + "closed", {}, bytes(std::to_string(*close_with)));
        if (Clock::now() >= deadline)
          throw TimeoutError(who_ + " waited --join-timeout for round " + std::to_string(round) + " to have " +
                             std::to_string(config_.min_nodes) + " node(s) (it has " + std::to_string(count) + ")");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

NodeCoordinator::State NodeCoordinator::poll(int64_t round) {
  State s;
  s.round = current_round();
  if (store_->check({kPrefix + "abort"})) {
    AbortValue a = parse_abort(store_->get_string(kPrefix + "abort"));
    s.abort_code = a.code;
    s.abort_reason = a.reason;
  }
  if (config_.dynamic_rendezvous && s.round == round) {
    const std::string base = kPrefix + "rdzv/" + std::to_string(round) + "/";
    const int64_t joined = store_->add(base + "joined", 0);
    const int64_t n = closed_count(base);
    // Nodes past a full round wait for a restart; they do not trigger one (torch's redundancy list).
    if (n < config_.nnodes && joined > n) s.waiting = static_cast<int>(joined - n);
    if (beats_) s.lost_node = beats_->beat_and_check(*store_, Clock::now());
  }
  return s;
}

int64_t NodeCoordinator::request_restart(int64_t round, int64_t restarts, bool failure) {
  // The restart count of the next round first, so whoever sees the round move can read it. When a
  // failure and a membership change race, the first writer's count stands.
  const std::string next = std::to_string(round + 1);
  store_->compare_set(kPrefix + "restarts/" + next, {}, bytes(std::to_string(restarts + (failure ? 1 : 0))));
  auto now = store_->compare_set(kPrefix + "round", bytes(std::to_string(round)), bytes(next));
  return util::parse_int("store key " + kPrefix + "round", to_str(now), 0, std::numeric_limits<int64_t>::max());
}

int NodeCoordinator::abort(int code, const std::string& reason) {
  // "<code>\n<reason>" in one value, so the code and its reason always belong together.
  std::string mine = std::to_string(code) + "\n" + reason;
  auto now = to_str(store_->compare_set(kPrefix + "abort", {}, bytes(mine)));
  return parse_abort(now).code;
}

void NodeCoordinator::mark_done(int64_t round) { store_->add(kPrefix + "done/" + std::to_string(round), 1); }

bool NodeCoordinator::all_done(int64_t round, int nnodes) {
  if (store_->add(kPrefix + "done/" + std::to_string(round), 0) < nnodes) return false;
  store_->set(kPrefix + "finished", std::to_string(round));
  return true;
}

void NodeCoordinator::leave(std::chrono::milliseconds wait) {
  if (!server_) {
    store_->add(kPrefix + "left", 1);
    return;
  }
  // Static: every other node. c10d: every other node that joined the last round, the ones it ran
  // without included (they read `finished` before they go); nodes lost earlier never come.
  const int64_t others =
      config_.dynamic_rendezvous
          ? store_->add(kPrefix + "rdzv/" + std::to_string(current_round()) + "/joined", 0) - 1
          : config_.nnodes - 1;
  auto deadline = Clock::now() + wait;
  while (store_->add(kPrefix + "left", 0) < others && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

}  // namespace ddp::launcher
