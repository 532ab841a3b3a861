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
// A slot nobody sends on: the canaries' receives never match a message.
constexpr uint8_t kCanarySlotPrefix = 0x4f;
}  // namespace

PeerMonitor::PeerMonitor(std::shared_ptr<::gloo::Context> context, std::chrono::milliseconds interval)
    : context_(std::move(context)), interval_(interval), canaries_(context_->size) {
  const uint64_t slot = ::gloo::Slot::build(kCanarySlotPrefix, 0);
  for (int peer = 0; peer < context_->size; ++peer) {
    if (peer == context_->rank) continue;
    canaries_[peer] = context_->createUnboundBuffer(nullptr, 0);
    canaries_[peer]->recv(peer, slot, 0, 0);
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
