#include "ddp/gloo/peer_monitor.h"

#include <gloo/common/error.h>
#include <gloo/context.h>
#include <gloo/transport/pair.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <algorithm>
#include <string>

#include "ddp/gloo/failure.h"
#include "ddp/gloo/sigpipe_guard.h"

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
  stop();
  // The canaries' receives are still posted, and Gloo's I/O thread signals a posted buffer when its
  // connection closes through a pointer that does not keep the buffer alive: a peer exiting now
  // raced with freeing the canaries (TSan: pthread_cond_broadcast in signalException against the
  // destructor). Once the connections are gone no Gloo thread can reach the buffers.
  close_connections_gracefully();
}

void PeerMonitor::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void PeerMonitor::watch(Abortable* target) {
  std::lock_guard<std::mutex> lock(mu_);
  watched_.push_back(target);
}

void PeerMonitor::unwatch(Abortable* target) {
  std::lock_guard<std::mutex> lock(mu_);
  watched_.erase(std::remove(watched_.begin(), watched_.end(), target), watched_.end());
}

void PeerMonitor::leave(std::chrono::milliseconds within) {
  stop();
  // Gloo writes a goodbye from this (the caller's) thread; to a peer that has closed already, that
  // write raises SIGPIPE, which would end the process.
  ScopedSigpipeBlock sigpipe_blocked;
  const auto deadline = std::chrono::steady_clock::now() + within;
  for (int peer = 0; peer < context_->size; ++peer) {
    if (peer == context_->rank) continue;
    auto goodbye = context_->createUnboundBuffer(nullptr, 0);
    try {
      goodbye->send(peer, canary_slot(), 0, 0);  // throws when the connection has already failed
      goodbyes_.push_back(std::move(goodbye));
    } catch (const std::exception&) {
    }
  }
  wait_for_goodbyes(deadline);
  close_connections_gracefully();
}

void PeerMonitor::wait_for_goodbyes(std::chrono::steady_clock::time_point deadline) {
  // A goodbye goes to the kernel at once unless this rank's socket to that peer is full (the peer
  // has megabytes of ours unread: stopped or starved); then it waits in Gloo's queue, which closing
  // the connection would drop. Gloo's own waitSend timeout is no bound here: on expiry it fails
  // every connection of the context. The waits have none, and a timer aborts them at the deadline.
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread timer([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_until(lock, deadline, [&] { return done; }))
      for (auto& goodbye : goodbyes_) goodbye->abortWaitSend();
  });
  for (auto& goodbye : goodbyes_) {
    try {
      goodbye->waitSend(std::chrono::hours(24));
    } catch (const std::exception&) {
      // The peer died meanwhile: it needs no goodbye.
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  timer.join();
}

void PeerMonitor::close_connections_gracefully() {
  for (int peer = 0; peer < context_->size; ++peer)
    if (peer != context_->rank) context_->getPair(peer).reset();
}

int PeerMonitor::failed_peer(std::string* cause, std::chrono::milliseconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  for (;;) {
    {
      // The monitor's thread checks the canaries under this lock too: two threads must not wait on
      // one canary at once (an abort meant for one would leave the other to Gloo's timeout, which
      // fails every connection).
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return -1;
      const int peer = find_failed_peer(cause);
      if (peer >= 0) return peer;
    }
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
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
