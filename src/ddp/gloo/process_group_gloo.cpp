// The Gloo process group: validates tensors on the caller's thread, then runs each operation on
// one worker thread in issue order (tag = the operation's sequence number). The first failure
// closes every connection (so peers fail fast instead of waiting out their timeouts) and marks the
// group unusable.
#include <ddp/errors.h>
#include <ddp/logging.h>
#include <ddp/process_group_gloo.h>

#include <c10/core/GradMode.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/address.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "ddp/gloo/exchange.h"
#include "ddp/gloo/failure.h"
#include "ddp/gloo/op_signature.h"
#include "ddp/gloo/reduce_functions.h"
#include "ddp/gloo/peer_monitor.h"
#include "ddp/gloo/routed_collectives.h"
#include "ddp/gloo/shm_collectives.h"
#include "ddp/gloo/shm_topology.h"
#include "ddp/gloo/sigpipe_guard.h"
#include "ddp/gloo/staging.h"
#include "ddp/gloo/store_adapter.h"
#include "ddp/gloo/tcp_device.h"
#include "ddp/gloo/work.h"
#include "util/numbers.h"

namespace ddp {
namespace gloo_backend {
namespace {

// A contiguous tensor at least this large is reduced in place instead of being fused with others.
constexpr size_t kInPlaceMinBytes = 1 << 20;
// How often the PeerMonitor checks the connections while an operation runs. Over TCP it is the
// fallback (Gloo's I/O thread fails the waits on a dead connection at once); a rank waiting in the
// shared segment has only the monitor to learn of a SIGKILLed peer, so it looks ten times as often
// (each look costs a few microseconds per peer).
constexpr std::chrono::milliseconds kMonitorInterval(200);
constexpr std::chrono::milliseconds kShmMonitorInterval(20);
// How long a leaving rank waits for its goodbyes to reach the kernel: at once, unless a peer has
// megabytes of ours unread (stopped or starved); past this the connection closes without it.
constexpr std::chrono::milliseconds kGoodbyeWithin(2000);
// Slot prefix of the signature check (routed_collectives.cpp has the algorithms').
constexpr uint8_t kSignatureSlots = 0x47;
// Each shared-memory slot buffer: pieces this size stay in the caches while they are copied and
// reduced (measured in docs/PERFORMANCE.md, "Shared memory").
constexpr size_t kShmPieceBytes = 256 << 10;

std::atomic<int> g_group_counter{0};

// ---- validation (caller's thread) ---------------------------------------------------------------

void check_cpu_dense(const at::Tensor& t, const std::string& op, const std::string& which) {
  if (!t.defined()) throw ConfigError(op + ": " + which + " is an undefined tensor");
  if (!t.device().is_cpu())
    throw ConfigError(op + ": " + which + " is on " + t.device().str() +
                      ", but the gloo process group handles CPU tensors only; use the nccl backend "
                      "(init_process_group with backend \"nccl\" or \"auto\") for CUDA tensors, or move "
                      "the tensor to the CPU");
  if (t.layout() != c10::kStrided)
    throw ConfigError(op + ": " + which + " is not a dense (strided) tensor; sparse tensors are not supported");
}

void check_same_kind(const at::Tensor& t, const at::Tensor& ref, const std::string& op, const std::string& which,
                     const std::string& ref_name) {
  if (t.scalar_type() != ref.scalar_type() || t.numel() != ref.numel())
    throw ConfigError(op + ": " + which + " (" + c10::toString(t.scalar_type()) + ", " + std::to_string(t.numel()) +
                      " elements) must match " + ref_name + " (" + c10::toString(ref.scalar_type()) + ", " +
                      std::to_string(ref.numel()) + " elements)");
}

std::string summarize(const std::vector<at::Tensor>& tensors) {
  int64_t elements = 0;
  std::vector<c10::ScalarType> dtypes;
  for (const auto& t : tensors) {
    elements += t.numel();
    if (std::find(dtypes.begin(), dtypes.end(), t.scalar_type()) == dtypes.end()) dtypes.push_back(t.scalar_type());
  }
  std::ostringstream s;
  s << tensors.size() << (tensors.size() == 1 ? " tensor, " : " tensors, ") << elements << " elements";
  for (size_t i = 0; i < dtypes.size(); ++i) s << (i == 0 ? ", " : "+") << c10::toString(dtypes[i]);
  return s.str();
}

// What this rank asks for, as the other ranks must ask for it too.
OpSignature signature_of(OpSignature::Kind kind, const std::vector<FusionGroup>& groups, size_t tensors) {
  OpSignature s;
  s.kind = kind;
  s.tensors = static_cast<uint32_t>(tensors);
  for (const auto& g : groups) s.add_part(g.dtype, g.numel);
  return s;
}
OpSignature signature_of(OpSignature::Kind kind, const at::Tensor& per_rank) {
  OpSignature s;
  s.kind = kind;
  s.tensors = 1;
  s.add_part(per_rank.scalar_type(), per_rank.numel());
  return s;
}

void divide_for_average(at::Tensor& flat, int size) {
  if (c10::isIntegralType(flat.scalar_type(), /*includeBool=*/false)) {
    flat.div_(size, "floor");
  } else {
    flat.div_(size);
  }
}

std::string readable_address(const ::gloo::transport::tcp::Address& a) {
  const auto& ss = a.getSockaddr();
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (ss.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  if (ss.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
    return "[" + std::string(host) + "]:" + std::to_string(port);
  }
  return a.str();
}

// DDP_SHM: "1" (default) or "0"; anything else is a ConfigError naming the variable.
bool shared_memory_from_env(bool option, std::string* reason) {
  const char* v = std::getenv("DDP_SHM");
  if (!option) *reason = "GlooOptions::shared_memory is false";
  if (v == nullptr || *v == '\0') return option;
  std::string s(v);
  if (s == "0") {
    *reason = "DDP_SHM=0";
    return false;
  }
  if (s == "1") return option;
  throw ConfigError("DDP_SHM is '" + s + "'; expected 1 (ranks on one host share memory, the default) or 0 (TCP only)");
}

// Watches `target` for the PeerMonitor while an operation runs.
class WatchGuard {
 public:
  WatchGuard(PeerMonitor* monitor, Abortable* target) : monitor_(target ? monitor : nullptr), target_(target) {
    if (monitor_) monitor_->watch(target_);
  }
  ~WatchGuard() {
    if (monitor_) monitor_->unwatch(target_);
  }

 private:
  PeerMonitor* monitor_;
  Abortable* target_;
};

// ---- the group ----------------------------------------------------------------------------------

class ProcessGroupGloo final : public ProcessGroup {
 public:
  ProcessGroupGloo(std::shared_ptr<Store> store, int rank, int size, const GlooOptions& options);
  ~ProcessGroupGloo() override;

  std::string backend_name() const override { return "gloo"; }
  c10::Device device() const override { return c10::Device(c10::kCPU); }
  WorkPtr allreduce(std::vector<at::Tensor>& tensors, const AllreduceOptions& opts) override;
  WorkPtr broadcast(std::vector<at::Tensor>& tensors, const BroadcastOptions& opts) override;
  WorkPtr allgather(std::vector<at::Tensor>& outputs, const at::Tensor& input, const CollectiveOptions& opts) override;
  WorkPtr reduce_scatter(at::Tensor& output, std::vector<at::Tensor>& inputs, const ReduceScatterOptions& opts) override;
  WorkPtr barrier(const CollectiveOptions& opts) override;

 private:
  // What an operation's body sees while it runs on the worker thread.
  struct OpRun {
    uint32_t tag;
    std::chrono::milliseconds timeout;
    std::chrono::steady_clock::time_point deadline;  // set when the operation starts
    SignatureCheck* gate = nullptr;                  // set when the operation starts
  };
  OpEnv env(const OpRun& run) {
    return {context_, run.tag, run.deadline, run.timeout, &peers_, monitor_.get(), run.gate};
  }
  Route route(const OpRun& run) { return {topology_, env(run), arena_, direct_allreduce_max_bytes_}; }
  using Body = std::function<void(OpRun&)>;

  WorkPtr enqueue(const std::string& kind, const std::string& details, std::chrono::milliseconds timeout,
                  OpSignature signature, Body body);
  void run(const std::string& name, OpRun run, const OpSignature& signature, Body& body, GlooWork& work);
  std::chrono::milliseconds effective(std::chrono::milliseconds t) const { return t.count() > 0 ? t : timeout_; }
  void learn_peer_addresses(GlooStoreAdapter& store);
  std::exception_ptr name_first_lost_peer(std::exception_ptr error, const GroupFailure& failure);

  // Kept alive with the group: when rank 0 hosts the store server, peers may still be using it.
  std::shared_ptr<Store> store_;
  std::string prefix_;  // this group's store keys: "gloo/<n>"
  std::shared_ptr<::gloo::Context> context_;
  PeerDirectory peers_;
  size_t direct_allreduce_max_bytes_;
  Topology topology_;
  ScratchArena arena_;  // worker thread only
  std::mutex mu_;       // guards next_seq_ and failure_
  uint32_t next_seq_ = 0;
  std::optional<GroupFailure> failure_;
  bool connections_reset_ = false;  // a failure reset every connection (run)
  std::unique_ptr<PeerMonitor> monitor_;
  std::unique_ptr<OpQueue> queue_;  // declared last: drained and joined before the monitor and context go
};

ProcessGroupGloo::ProcessGroupGloo(std::shared_ptr<Store> store, int rank, int size, const GlooOptions& options)
    : ProcessGroup(rank, size, options.timeout()),
      store_(store),
      direct_allreduce_max_bytes_(options.direct_allreduce_max_bytes()) {
  if (!store) throw ConfigError("make_gloo_process_group: store is null");
  if (size < 1 || rank < 0 || rank >= size)
    throw ConfigError("make_gloo_process_group: rank " + std::to_string(rank) + " is not in [0, " +
                      std::to_string(size) + ")");
  if (options.timeout().count() <= 0)
    throw ConfigError("make_gloo_process_group: timeout must be positive (got " +
                      std::to_string(options.timeout().count()) + " ms)");

  std::string shm_off;
  const bool shm = shared_memory_from_env(options.shared_memory(), &shm_off);
  // Every thread started from here on (Gloo's I/O loop, the monitor, our operation threads)
  // inherits a mask with SIGPIPE blocked.
  ScopedSigpipeBlock sigpipe_blocked;
  TcpDeviceChoice choice = choose_tcp_device(options.hostname());
  auto device = make_tcp_device(choice);
  const std::string prefix = "gloo/" + std::to_string(g_group_counter.fetch_add(1));
  prefix_ = prefix;
  GlooStoreAdapter adapter(store, prefix, options.timeout());
  auto context = std::make_shared<::gloo::rendezvous::Context>(rank, size);
  // Gloo's tcp::Pair waits 5x its timeout for the initial connect (pair.h, waitUntil), so a peer that
  // published its address and vanished held the others for 5x --timeout (found by the chaos rounds:
  // 115 s with --timeout 20). The pairs are made with a fifth of it; the operations use their own
  // per-call deadlines, and the context gets the whole timeout back once the mesh is up.
  context->setTimeout(std::max(options.timeout() / 5, std::chrono::milliseconds(1)));
  const std::string what = "gloo rendezvous (rank " + std::to_string(rank) + " of " + std::to_string(size) +
                           ", store keys under '" + prefix + "/', bound to " + device->str() + " from " +
                           choice.reason + ")";
  try {
    context->connectFullMesh(adapter, device);
    context->setTimeout(options.timeout());
  } catch (const TimeoutError& e) {
    throw TimeoutError(what + ": " + e.what() + " (a rank did not start, or cannot reach the store)");
  } catch (const ddp::Error&) {
    throw;
  } catch (const std::exception& e) {
    FailureContext ctx{what, rank, size, options.timeout().count(), -1};
    std::rethrow_exception(translate_failure(std::current_exception(), ctx, peers_));
  }
  context_ = context;
  try {
    learn_peer_addresses(adapter);
    topology_ = discover_topology(*store_, prefix, rank, size, shm, shm_off, kShmPieceBytes, options.timeout());
  } catch (const TimeoutError& e) {
    throw TimeoutError(what + ": " + e.what() + " (a rank died during the rendezvous)");
  }
  monitor_ = std::make_unique<PeerMonitor>(context_, topology_.local ? kShmMonitorInterval : kMonitorInterval);
  queue_ = std::make_unique<OpQueue>();
  DDP_LOG(INFO) << "gloo process group ready: rank " << rank << " of " << size << ", bound to " << device->str()
                << " (" << choice.reason << "), timeout " << options.timeout().count()
                << " ms, transport: " << topology_.describe();
}

ProcessGroupGloo::~ProcessGroupGloo() {
  queue_.reset();  // runs what is queued (each op ends within its timeout), then joins
  // Every operation of this rank is done, but peers may still be reading what it sent last, or be
  // busy with an operation that does not need it: the rank leaves in order (PeerMonitor::leave),
  // unless a failure already reset every connection so that nobody waits for it.
  bool reset;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reset = connections_reset_;
  }
  if (topology_.local) topology_.local->leave();
  if (!reset) monitor_->leave(kGoodbyeWithin);
}

void ProcessGroupGloo::learn_peer_addresses(GlooStoreAdapter& store) {
  // Gloo names a failed connection by an address of the peer's end of it: the peer's listening
  // address when we dialled it, its ephemeral port when it dialled us. Both are the peer's own
  // pair->address() once connected, so each rank publishes that (in Gloo's printed form and a
  // readable one) under our own key, and every rank can map the addresses in Gloo's messages back
  // to ranks. Only the public Address interface is used: what Gloo writes into its own rendezvous
  // keys differs between Gloo versions (one listener per pair in 2022, one per device plus a
  // sequence number since 2023) and is not ours to parse.
  std::ostringstream mine;
  for (int j = 0; j < size_; ++j) {
    if (j == rank_) continue;
    const auto& local = context_->getPair(j)->address();
    auto* tcp = dynamic_cast<const ::gloo::transport::tcp::Address*>(&local);
    mine << j << '\t' << local.str() << '\t' << (tcp ? readable_address(*tcp) : local.str()) << '\n';
  }
  const std::string text = mine.str();
  store.set("peer_addr/" + std::to_string(rank_), std::vector<char>(text.begin(), text.end()));
  for (int j = 0; j < size_; ++j) {
    if (j == rank_) continue;
    std::vector<char> theirs = store.get("peer_addr/" + std::to_string(j));
    std::istringstream lines(std::string(theirs.begin(), theirs.end()));
    std::string line;
    while (std::getline(lines, line)) {
      auto t1 = line.find('\t'), t2 = line.rfind('\t');
      if (t1 == std::string::npos || t2 == t1) continue;
      if (line.substr(0, t1) != std::to_string(rank_)) continue;
      peers_.add(j, line.substr(t1 + 1, t2 - t1 - 1), line.substr(t2 + 1));
      DDP_LOG(DEBUG) << "gloo: rank " << j << " is " << line.substr(t2 + 1) << " on our connection (gloo prints "
                     << line.substr(t1 + 1, t2 - t1 - 1) << ")";
    }
  }
}

WorkPtr ProcessGroupGloo::enqueue(const std::string& kind, const std::string& details,
                                  std::chrono::milliseconds timeout, OpSignature signature, Body body) {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t tag = next_seq_++;
  std::string name = kind + " #" + std::to_string(tag) + " (" + details + ")";
  std::string described = name + " on rank " + std::to_string(rank_);
  if (failure_) return GlooWork::failed(described, failure_->later_op_error(name, rank_));
  auto work = std::make_shared<GlooWork>(described);
  OpRun op{tag, timeout, {}};
  // Pushed under the lock so the queue order is the sequence-number order.
  queue_->push([this, name, op, signature = std::move(signature), body = std::move(body), work]() mutable {
    run(name, op, signature, body, *work);
  });
  return work;
}

void ProcessGroupGloo::run(const std::string& name, OpRun op, const OpSignature& signature, Body& body,
                           GlooWork& work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failure_) {
      work.finish(failure_->later_op_error(name, rank_));
      return;
    }
  }
  std::exception_ptr error;
  try {
    c10::NoGradGuard no_grad;  // results are copied into tensors that may require grad
    arena_.reset();
    op.deadline = std::chrono::steady_clock::now() + op.timeout;
    ShmGroup* shm = topology_.local.get();
    if (shm) shm->begin(op.deadline, op.timeout);
    WatchGuard watch(monitor_.get(), shm);
    if (topology_.shared_memory_only()) {  // the monitor still watches TCP
      // The signatures meet in the segment; that sync is the barrier too.
      shm_check_signatures(*shm, signature, name);
      if (body) body(op);
    } else {
      // No data leaves before every rank's call is known to match (the body's first send or wait
      // passes the gate): a mismatched call would crash Gloo's event loop or reduce stale bytes.
      SignatureCheck check(env(op), kSignatureSlots, signature, name);
      op.gate = &check;
      // Hierarchical: shared memory moves data before any TCP send would pass the gate.
      if (shm) check.finish();
      if (body) body(op);
      check.finish();  // an operation with nothing to send (a barrier, zero bytes) checks here
    }
  } catch (...) {
    FailureContext ctx{name, rank_, size_, op.timeout.count(), -1};
    error = translate_failure(std::current_exception(), ctx, peers_);
  }
  if (error) {
    GroupFailure failure = GroupFailure::from(error);
    if (failure.kind == GroupFailure::Kind::kPeer) {
      error = name_first_lost_peer(error, failure);
      failure = GroupFailure::from(error);
    }
    // A lost peer is seen by every rank directly (full mesh, PeerMonitor), and a mismatched call
    // by every rank in the signatures it received (ours left before we compared). Other failures
    // (a timeout, an error of our own) are not: reset every connection so peers blocked on us fail
    // now instead of after their own timeout. A reset throws away what the peers have not read
    // yet, so it is no way to end a mismatch: a slower rank lost our signature and took the reset
    // for a lost peer (exit 200 instead of the mismatch's 2).
    const bool close = failure.kind != GroupFailure::Kind::kPeer && failure.kind != GroupFailure::Kind::kConfig;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!failure_) failure_ = failure;
      if (close) connections_reset_ = true;
    }
    DDP_LOG(WARN) << failure.message << (close ? "; closing every connection of this gloo process group" : "");
    // Ranks of this host waiting in the segment learn it now, whatever the cause.
    if (topology_.local) topology_.local->fail();
    if (close) {
      try {
        context_->closeConnections();
      } catch (const std::exception& e) {
        DDP_LOG(DEBUG) << "gloo: closing connections: " << e.what();
      }
    }
  }
  work.finish(error);
}

// A rank that sees a peer die reports it through the store before its own connections close (a
// lost peer does not close them; the process exits later). A rank that only sees such a survivor
// leave (a leader of a hierarchical collective, a neighbour of the exiting rank) then names the
// rank that died first, not the one that left after it: every report of a death happens before
// the exits it causes. Best effort: when the store is gone too, the local view stands.
std::exception_ptr ProcessGroupGloo::name_first_lost_peer(std::exception_ptr error, const GroupFailure& failure) {
  if (failure.peer < 0 || size_ <= 2) return error;
  try {
    const std::string mine = std::to_string(failure.peer);
    Store::Bytes now = store_->compare_set(prefix_ + "/lost_peer", {}, Store::Bytes(mine.begin(), mine.end()));
    const std::string first(now.begin(), now.end());
    if (first == mine) return error;
    const int rank = static_cast<int>(util::parse_int("store key " + prefix_ + "/lost_peer", first, 0, size_ - 1));
    return std::make_exception_ptr(PeerError(failure.message + "; rank " + std::to_string(rank) +
                                                 " had died first (another rank reported it), rank " +
                                                 std::to_string(failure.peer) + " left after it",
                                             rank_, rank));
  } catch (const std::exception& e) {
    DDP_LOG(DEBUG) << "gloo: could not compare the lost peer through the store: " << e.what();
    return error;
  }
}

// ---- operations ----------------------------------------------------------------------------------

WorkPtr ProcessGroupGloo::allreduce(std::vector<at::Tensor>& tensors, const AllreduceOptions& opts) {
  const std::string op = std::string("allreduce (") + to_string(opts.op()) + ")";
  std::map<c10::ScalarType, ReduceFn> fns;
  for (size_t i = 0; i < tensors.size(); ++i) {
    check_cpu_dense(tensors[i], op, "tensor " + std::to_string(i));
    fns[tensors[i].scalar_type()] = reduce_function(tensors[i].scalar_type(), opts.op(), op.c_str());
  }
  auto groups = plan_fusion(tensors, kInPlaceMinBytes);
  const ReduceOp rop = opts.op();
  OpSignature sig = signature_of(OpSignature::Kind::kAllreduce, groups, tensors.size());
  sig.reduce_op = static_cast<uint8_t>(rop);
  return enqueue("allreduce", std::string(to_string(rop)) + ", " + summarize(tensors), effective(opts.timeout()),
                 std::move(sig), [this, groups = std::move(groups), fns = std::move(fns), rop](OpRun& run) {
                   for (const auto& g : groups) {
                     Staged staged(g, arena_);
                     staged.pack();
                     routed_allreduce(route(run), static_cast<uint8_t*>(staged.data()), staged.bytes(),
                                      c10::elementSize(g.dtype), fns.at(g.dtype));
                     if (rop == ReduceOp::kAvg) divide_for_average(staged.flat(), size_);
                     staged.unpack();
                   }
                 });
}

WorkPtr ProcessGroupGloo::broadcast(std::vector<at::Tensor>& tensors, const BroadcastOptions& opts) {
  const int root = opts.root();
  const std::string op = "broadcast (root " + std::to_string(root) + ")";
  if (root < 0 || root >= size_)
    throw ConfigError(op + ": root " + std::to_string(root) + " is not a rank of this group (size " +
                      std::to_string(size_) + ")");
  for (size_t i = 0; i < tensors.size(); ++i) check_cpu_dense(tensors[i], op, "tensor " + std::to_string(i));
  auto groups = plan_fusion(tensors, kInPlaceMinBytes);
  OpSignature sig = signature_of(OpSignature::Kind::kBroadcast, groups, tensors.size());
  sig.root = root;
  return enqueue("broadcast", "root " + std::to_string(root) + ", " + summarize(tensors), effective(opts.timeout()),
                 std::move(sig), [this, groups = std::move(groups), root](OpRun& run) {
                   for (const auto& g : groups) {
                     Staged staged(g, arena_);
                     if (rank_ == root) staged.pack();
                     routed_broadcast(route(run), static_cast<uint8_t*>(staged.data()), staged.bytes(), root);
                     if (rank_ != root) staged.unpack();
                   }
                 });
}

WorkPtr ProcessGroupGloo::allgather(std::vector<at::Tensor>& outputs, const at::Tensor& input,
                                    const CollectiveOptions& opts) {
  const std::string op = "allgather";
  check_cpu_dense(input, op, "the input");
  if (static_cast<int>(outputs.size()) != size_)
    throw ConfigError(op + ": expected " + std::to_string(size_) + " output tensors (one per rank), got " +
                      std::to_string(outputs.size()));
  for (size_t i = 0; i < outputs.size(); ++i) {
    check_cpu_dense(outputs[i], op, "output " + std::to_string(i));
    check_same_kind(outputs[i], input, op, "output " + std::to_string(i), "the input");
  }
  // Outputs that are consecutive slices of one contiguous buffer receive the data directly.
  bool direct = true;
  const size_t bytes = input.nbytes();
  for (size_t i = 0; i < outputs.size() && direct; ++i)
    direct = outputs[i].is_contiguous() &&
             static_cast<uint8_t*>(outputs[i].data_ptr()) == static_cast<uint8_t*>(outputs[0].data_ptr()) + i * bytes;
  return enqueue("allgather", summarize({input}) + " per rank", effective(opts.timeout()),
                 signature_of(OpSignature::Kind::kAllgather, input), [this, outputs, input, direct, bytes](OpRun& run) {
                   if (bytes == 0) return;
                   const int64_t n = input.numel();
                   at::Tensor gathered = direct ? at::Tensor() : arena_.take(input.scalar_type(), n * size_);
                   at::Tensor mine = direct ? outputs[rank_].view({-1}) : gathered.narrow(0, rank_ * n, n);
                   if (mine.data_ptr() != input.data_ptr()) copy_into_flat(input, mine);
                   routed_allgather(route(run),
                                    static_cast<uint8_t*>(direct ? outputs[0].data_ptr() : gathered.data_ptr()), bytes);
                   if (!direct)
                     for (int i = 0; i < size_; ++i) copy_from_flat(gathered.narrow(0, i * n, n), outputs[i]);
                 });
}

WorkPtr ProcessGroupGloo::reduce_scatter(at::Tensor& output, std::vector<at::Tensor>& inputs,
                                         const ReduceScatterOptions& opts) {
  const std::string op = std::string("reduce_scatter (") + to_string(opts.op()) + ")";
  check_cpu_dense(output, op, "the output");
  ReduceFn fn = reduce_function(output.scalar_type(), opts.op(), op.c_str());
  if (static_cast<int>(inputs.size()) != size_)
    throw ConfigError(op + ": expected " + std::to_string(size_) + " input tensors (one per rank), got " +
                      std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_cpu_dense(inputs[i], op, "input " + std::to_string(i));
    check_same_kind(inputs[i], output, op, "input " + std::to_string(i), "the output");
  }
  const ReduceOp rop = opts.op();
  OpSignature sig = signature_of(OpSignature::Kind::kReduceScatter, output);
  sig.reduce_op = static_cast<uint8_t>(rop);
  return enqueue("reduce_scatter", std::string(to_string(rop)) + ", " + summarize({output}) + " per rank",
                 effective(opts.timeout()), std::move(sig), [this, output, inputs, fn, rop](OpRun& run) {
                   const int64_t n = output.numel();
                   if (n == 0) return;
                   // The ring overwrites other ranks' chunks with partial results: work on a copy.
                   at::Tensor flat = arena_.take(output.scalar_type(), n * size_);
                   for (int i = 0; i < size_; ++i) copy_into_flat(inputs[i], flat.narrow(0, i * n, n));
                   at::Tensor mine = arena_.take(output.scalar_type(), n);
                   routed_reduce_scatter(route(run), static_cast<uint8_t*>(flat.data_ptr()),
                                         static_cast<uint8_t*>(mine.data_ptr()), output.nbytes(),
                                         output.element_size(), fn);
                   if (rop == ReduceOp::kAvg) divide_for_average(mine, size_);
                   copy_from_flat(mine, output);
                 });
}

WorkPtr ProcessGroupGloo::barrier(const CollectiveOptions& opts) {
  // The signature exchange every operation starts with is a full-mesh barrier already: a rank
  // leaves it only after every other rank's signature arrived.
  OpSignature sig;
  sig.kind = OpSignature::Kind::kBarrier;
  return enqueue("barrier", "all ranks", effective(opts.timeout()), std::move(sig), nullptr);
}

}  // namespace
}  // namespace gloo_backend

std::shared_ptr<ProcessGroup> make_gloo_process_group(std::shared_ptr<Store> store, int rank, int size,
                                                      GlooOptions options) {
  return std::make_shared<gloo_backend::ProcessGroupGloo>(std::move(store), rank, size, options);
}

}  // namespace ddp
