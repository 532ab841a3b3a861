#include "ddp/gloo/peer_monitor.h"

#include <gloo/common/error.h>
#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <algorithm>
#include <string>

#include "ddp/gloo/failure.h"

namespace ddp::gloo_backend {
namespace {
// The canaries' slot: the only message sent on it is a leaving rank's goodbye.
constexpr uint8_t kCanarySlotPrefix = 0x4f;
uint64_t canary_slot() { return ::gloo::Slot::build(kCanarySlotPrefix, 0); }
}  // namespace

PeerMonitor::PeerMonitor(std::shared_ptr<::gloo::Context> context, std::chrono::milliseconds interval)
    : context_(std::move(context)), interval_(interval), canaries_(context_->size) {
  for (int peer = 0; peer < context_->size; ++peer) {
    if (peer == context_->rank) continue;
    canaries_[peer] = context_->createUnboundBuffer(nullptr, 0);
    canaries_[peer]->recv(peer, canary_slot(), 0, 0);
  }
  thread_ = std::thread([this] { loop(); });
}

PeerMonitor::~PeerMonitor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  // The canaries' receives are still posted, and Gloo's I/O thread signals a posted buffer when its
  // connection closes through a pointer that does not keep the buffer alive: a peer exiting now
  // raced with freeing the canaries (TSan: pthread_cond_broadcast in signalException against the
  // destructor). Closing the connections from this thread first leaves the I/O thread nothing to
  // signal. Only the group's destructor destroys the monitor, after its last operation, and the
  // context would close the same connections next.
  context_->closeConnections();
}

void PeerMonitor::watch(Abortable* target) {
  std::lock_guard<std::mutex> lock(mu_);
  watched_.push_back(target);
}

void PeerMonitor::unwatch(Abortable* target) {
  std::lock_guard<std::mutex> lock(mu_);
  watched_.erase(std::remove(watched_.begin(), watched_.end(), target), watched_.end());
}

void PeerMonitor::say_goodbye(std::chrono::milliseconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  std::vector<std::unique_ptr<::gloo::transport::UnboundBuffer>> goodbyes;
  for (int peer = 0; peer < context_->size; ++peer) {
    if (peer == context_->rank) continue;
    auto goodbye = context_->createUnboundBuffer(nullptr, 0);
    try {
      goodbye->send(peer, canary_slot(), 0, 0);  // throws when the connection has already failed
      goodbyes.push_back(std::move(goodbye));
    } catch (const std::exception&) {
    }
  }
  // Gloo sends once the peer's canary receive is known here, which it was soon after the group was
  // made; the wait is for the bytes to leave, and the bound for a peer that is stopped or stuck.
  for (auto& goodbye : goodbyes) {
    try {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      goodbye->waitSend(std::max(left, std::chrono::milliseconds(1)));
    } catch (const std::exception&) {
      // A peer that died or did not take it in time sees the connection close, as without a goodbye.
    }
  }
}

int PeerMonitor::find_failed_peer(std::string* cause) {
  for (int peer = 0; peer < context_->size; ++peer) {
    if (!canaries_[peer]) continue;
    try {
      // Aborting first makes the wait return at once; it throws instead when the connection has
      // failed (Gloo checks the buffer's error before the abort flag).
      canaries_[peer]->abortWaitRecv();
      canaries_[peer]->waitRecv(std::chrono::milliseconds(1));
    } catch (const std::exception& e) {
      *cause = strip_gloo_location(e.what());
      return peer;
    }
  }
  return -1;
}

void PeerMonitor::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, interval_);
    if (stopping_ || watched_.empty()) continue;
    std::string cause;
    int peer = find_failed_peer(&cause);
    // Still under the lock: a target cannot go away while it is aborted.
    if (peer >= 0)
      for (Abortable* t : watched_) t->abort(peer, cause);
  }
}

}  // namespace ddp::gloo_backend
