#include "ddp/launcher/node_coordinator.h"

#include <ddp/errors.h>
#include <ddp/logging.h>
#include <ddp/store.h>

#include <limits>
#include <random>
#include <sstream>
#include <thread>

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
  return "nnodes=" + std::to_string(c.nnodes) + " max_restarts=" + std::to_string(c.max_restarts) +
         " restart_on=" + (c.restart_on_any_failure ? "any" : "retryable");
}

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
    : config_(config), stop_check_(std::move(stop_check)) {
  std::string host = config.master_addr;
  port_ = config.master_port;
  if (config.node_rank == 0) {
    server_ = TCPStoreServer::start(config.master_port);
    port_ = server_->port();
    host = "127.0.0.1";  // our own server, whatever name the others use for it
    DDP_LOG(INFO) << "store listening on port " << port_ << " (workers and other nodes use "
                  << config.master_addr << ":" << port_ << ")";
  }
  // Short connection attempts in a loop, so a stop signal is noticed while node 0 is not up yet.
  auto deadline = Clock::now() + config.join_timeout;
  while (true) {
    if (int sig = stop_check_()) throw Interrupted{sig};
    try {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      auto attempt = std::max(std::chrono::milliseconds(1), std::min(left, std::chrono::milliseconds(2000)));
      store_ = std::make_shared<TCPStore>(
          TCPStoreOptions().host(host).port(port_).connect_timeout(attempt).timeout(config.join_timeout));
      break;
    } catch (const StoreError& e) {
      if (Clock::now() >= deadline)
        throw StoreError("node " + std::to_string(config.node_rank) + " could not reach the store at " + host + ":" +
                         std::to_string(port_) + " within --join-timeout: " + e.what());
    }
  }
}

NodeCoordinator::~NodeCoordinator() {
  store_.reset();
  if (server_) server_->stop();
}

void NodeCoordinator::wait_keys(const std::vector<std::string>& keys, Clock::time_point deadline,
                                const std::string& what) {
  while (!store_->check(keys)) {
    if (int sig = stop_check_()) throw Interrupted{sig};
    // Another node may have given up on the job already (e.g. it was started with other settings).
    State state = poll();
    if (state.abort_code)
      throw Error("the job was ended by another node while waiting for " + what + ": " + state.abort_reason,
                  *state.abort_code);
    if (Clock::now() >= deadline)
      throw TimeoutError("node " + std::to_string(config_.node_rank) + " waited --join-timeout for " + what);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

NodeCoordinator::Layout NodeCoordinator::join() {
  Layout layout;
  const int me = config_.node_rank;
  auto deadline = Clock::now() + config_.join_timeout;
  if (me == 0) {
    std::string run_id = config_.run_id.empty() ? make_run_id() : config_.run_id;
    // A restarted node 0 hosts a fresh store, so these are always new.
    store_->set(kPrefix + "run_id", run_id);
    store_->set(kPrefix + "config", config_line(config_));
  } else {
    wait_keys({kPrefix + "config"}, deadline, "node 0 to publish the job's configuration");
    std::string theirs = store_->get_string(kPrefix + "config");
    if (theirs != config_line(config_)) {
      ConfigError mismatch("node " + std::to_string(me) + " was started with '" + config_line(config_) +
                           "' but node 0 with '" + theirs + "': every node needs the same --nnodes, --max-restarts and --restart-on");
      abort(mismatch.exit_code(), mismatch.what());  // so the other nodes stop too, with the same code
      throw mismatch;
    }
  }
  layout.run_id = store_->get_string(kPrefix + "run_id");
  if (!config_.run_id.empty() && layout.run_id != config_.run_id)
    DDP_LOG(WARN) << "--run-id " << config_.run_id << " differs from node 0's " << layout.run_id << "; using node 0's";
  const std::string node = kPrefix + "node/" + std::to_string(me);
  layout.joins = store_->add(node + "/joins", 1);
  store_->set(node + "/nproc", std::to_string(config_.nproc_per_node));
  std::vector<std::string> keys;
  for (int k = 0; k < config_.nnodes; ++k) keys.push_back(kPrefix + "node/" + std::to_string(k) + "/nproc");
  wait_keys(keys, deadline, "all " + std::to_string(config_.nnodes) + " nodes to join");
  for (int k = 0; k < config_.nnodes; ++k) {
    const int n = static_cast<int>(util::parse_int("store key " + keys[k], store_->get_string(keys[k]), 1, 4096));
    if (k < me) layout.rank_offset += n;
    layout.world_size += n;
  }
  layout.round = store_->add(kPrefix + "round", 0);
  // From here on the store is polled from the monitor loop: a request that does not come back within
  // --store-timeout is a TimeoutError (exit 201, retryable), not a launcher frozen for --join-timeout.
  store_->set_timeout(config_.store_timeout);
  if (layout.joins > 1)
    DDP_LOG(WARN) << "node " << me << " joined again (" << layout.joins
                  << " times): its launcher was restarted; joining attempt " << layout.round;
  return layout;
}

NodeCoordinator::State NodeCoordinator::poll() {
  State s;
  s.round = store_->add(kPrefix + "round", 0);
  if (store_->check({kPrefix + "abort"})) {
    AbortValue a = parse_abort(store_->get_string(kPrefix + "abort"));
    s.abort_code = a.code;
    s.abort_reason = a.reason;
  }
  return s;
}

int64_t NodeCoordinator::request_restart(int64_t round) {
  std::string from = std::to_string(round), to = std::to_string(round + 1);
  auto now = store_->compare_set(kPrefix + "round", Store::Bytes(from.begin(), from.end()),
                                 Store::Bytes(to.begin(), to.end()));
  return util::parse_int("store key " + kPrefix + "round", to_str(now), 0, std::numeric_limits<int64_t>::max());
}

int NodeCoordinator::abort(int code, const std::string& reason) {
  // "<code>\n<reason>" in one value, so the code and its reason always belong together.
  std::string mine = std::to_string(code) + "\n" + reason;
  auto now = to_str(store_->compare_set(kPrefix + "abort", {}, Store::Bytes(mine.begin(), mine.end())));
  return parse_abort(now).code;
}

void NodeCoordinator::mark_done(int64_t round) { store_->add(kPrefix + "done/" + std::to_string(round), 1); }

bool NodeCoordinator::all_done(int64_t round) {
  return store_->add(kPrefix + "done/" + std::to_string(round), 0) >= config_.nnodes;
}

void NodeCoordinator::leave(std::chrono::milliseconds wait) {
  if (config_.node_rank != 0) {
    store_->add(kPrefix + "left", 1);
    return;
  }
  auto deadline = Clock::now() + wait;
  while (store_->add(kPrefix + "left", 0) < config_.nnodes - 1 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

}  // namespace ddp::launcher
