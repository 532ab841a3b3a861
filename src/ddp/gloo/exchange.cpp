#include "ddp/gloo/exchange.h"

#include <gloo/common/error.h>
#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <algorithm>
#include <utility>

#include "ddp/gloo/failure.h"
#include "ddp/gloo/op_signature.h"
#include "ddp/gloo/peer_monitor.h"

namespace ddp::gloo_backend {

Exchange::Exchange(const OpEnv& env, uint8_t slot_prefix, std::vector<int> members)
    : env_(env), members_(std::move(members)), slot_(::gloo::Slot::build(slot_prefix, env.tag)) {
  if (members_.empty()) {
    rank_ = env_.context->rank;
    size_ = env_.context->size;
  } else {
    auto it = std::find(members_.begin(), members_.end(), env_.context->rank);
    if (it == members_.end()) throw std::logic_error("Exchange: this rank is not among the members");
    rank_ = static_cast<int>(it - members_.begin());
    size_ = static_cast<int>(members_.size());
  }
  if (env_.monitor) env_.monitor->watch(this);
}

Exchange::~Exchange() {
  if (env_.monitor) env_.monitor->unwatch(this);
}

Exchange::Buffer* Exchange::buffer(void* ptr, size_t bytes) {
  auto buf = env_.context->createUnboundBuffer(ptr, bytes);
  std::lock_guard<std::mutex> lock(mu_);
  buffers_.push_back(std::move(buf));
  return buffers_.back().get();
}

void Exchange::pass_gate() {
  if (env_.gate) env_.gate->finish();
}

void Exchange::send(Buffer* buf, int peer, size_t offset, size_t bytes, uint8_t channel) {
  pass_gate();
  if (aborted_) throw_aborted();
  try {
    buf->send(global(peer), slot_ + channel, offset, bytes);
  } catch (const ::gloo::IoException& e) {
    throw TransportFailure(TransportFailure::Kind::kPeerLost, global(peer), strip_gloo_location(e.what()));
  }
}

void Exchange::recv(Buffer* buf, int peer, size_t offset, size_t bytes, uint8_t channel) {
  // Receives are posted before the gate (their ready notices travel with the signatures), so a
  // slow rank may post one on a connection that its peer already closed in order, having seen
  // every signature and thrown the mismatch. The signatures it sent before leaving have arrived:
  // the gate decides first, and a mismatch is reported as one instead of as that peer's loss.
  if (aborted_) {
    pass_gate();
    throw_aborted();
  }
  try {
    buf->recv(global(peer), slot_ + channel, offset, bytes);
  } catch (const ::gloo::IoException& e) {
    pass_gate();
    throw TransportFailure(TransportFailure::Kind::kPeerLost, global(peer), strip_gloo_location(e.what()));
  }
}

void Exchange::wait_send(Buffer* buf, int peer) { wait(buf, peer, true); }
void Exchange::wait_recv(Buffer* buf, int peer) { wait(buf, peer, false); }

std::chrono::milliseconds Exchange::time_left() const {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(env_.deadline - std::chrono::steady_clock::now());
  return std::max(left, std::chrono::milliseconds(1));
}

void Exchange::wait(Buffer* buf, int member, bool send) {
  const int peer = global(member);
  pass_gate();
  if (aborted_) throw_aborted();
  bool completed = false;
  try {
    completed = send ? buf->waitSend(time_left()) : buf->waitRecv(time_left());
  } catch (const ::gloo::IoException& e) {
    std::string msg = strip_gloo_location(e.what());
    if (msg.find("Timed out") != std::string::npos)
      throw TransportFailure(TransportFailure::Kind::kTimeout, peer,
                             "no progress within the " + std::to_string(env_.timeout.count()) + " ms timeout waiting to " +
                                 (send ? "send to" : "receive from") + " rank " + std::to_string(peer));
    // Gloo names the failed connection by address; it may be another peer's than the awaited one
    // (a buffer posted to several peers takes the error of whichever connection failed). An address
    // the directory does not know (a peer's ephemeral port) is found through the canaries instead:
    // taking the awaited peer for it named a survivor as the dead rank.
    int named = env_.peers ? env_.peers->find_in(msg) : -1;
    std::string cause;
    if (named < 0 && env_.monitor) named = env_.monitor->failed_peer(&cause, std::chrono::milliseconds(200));
    throw TransportFailure(TransportFailure::Kind::kPeerLost, named >= 0 ? named : peer, msg);
  }
  if (!completed) throw_aborted();  // abort() interrupted the wait
}

void Exchange::abort(int peer, const std::string& cause) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!aborted_) {
    abort_peer_ = peer;
    abort_cause_ = cause;
    aborted_ = true;
  }
  // Gloo remembers an abort until the next wait, so a wait that starts later is interrupted too.
  for (auto& b : buffers_) {
    b->abortWaitSend();
    b->abortWaitRecv();
  }
}

void Exchange::throw_aborted() {
  std::lock_guard<std::mutex> lock(mu_);
  throw TransportFailure(TransportFailure::Kind::kPeerLost, abort_peer_, abort_cause_);
}

}  // namespace ddp::gloo_backend
