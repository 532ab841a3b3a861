#pragma once
// Watches the connections of a group while an operation runs. Each connection carries one
// "canary": an empty receive that no message ever matches, so it stays pending, and Gloo wakes it
// with the connection's error when the connection fails (a peer died, reset or closed it). Every
// `interval` the monitor checks the canaries without blocking; when one has failed, it aborts the
// running operation's Exchange with that rank and Gloo's reason. Every rank is connected to every
// other one, so each survivor learns directly which rank died, even when its own operation was
// waiting on someone else.
//
// A rank that leaves after its last operation is not a failure: a peer may still be busy with an
// operation that does not need it (a broadcast's slower receiver, the other host of a hierarchical
// collective). Before closing, the leaving rank sends each peer the one message the canary slot
// ever carries, a goodbye; it completes that peer's canary, so the closing connection no longer
// wakes it and the monitor there stays quiet. An operation that still needs the rank that left
// fails on its own: Gloo fails its pending transfers on the closed connection, and the shared
// segment says which member left (ShmGroup::leave).

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ddp/gloo/gloo_fwd.h"

namespace ddp::gloo_backend {

/// What the monitor interrupts when a connection fails: an operation's Exchange (TCP) or the
/// shared-memory group it waits in.
class Abortable {
 public:
  /// The connection to `peer` failed with `cause`; every wait in progress or to come throws.
  virtual void abort(int peer, const std::string& cause) = 0;

 protected:
  ~Abortable() = default;
};

class PeerMonitor {
 public:
  PeerMonitor(std::shared_ptr<::gloo::Context> context, std::chrono::milliseconds interval);
  ~PeerMonitor();
  PeerMonitor(const PeerMonitor&) = delete;
  PeerMonitor& operator=(const PeerMonitor&) = delete;

  /// What to abort when a connection fails (the running operation's Exchanges and shared-memory waits).
  void watch(Abortable* target);
  void unwatch(Abortable* target);

  /// Tells every peer that this rank leaves having finished all of its operations (see above).
  /// Waits at most `within` for the goodbyes to go out; a peer that is gone gets none.
  void say_goodbye(std::chrono::milliseconds within);

 private:
  void loop();
  /// The first peer whose connection failed, with Gloo's reason; -1 when all are fine.
  int find_failed_peer(std::string* cause);

  std::shared_ptr<::gloo::Context> context_;
  std::chrono::milliseconds interval_;
  std::vector<std::unique_ptr<::gloo::transport::UnboundBuffer>> canaries_;  // by peer rank
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Abortable*> watched_;  // the signature check's, the running algorithm's, the shm group
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ddp::gloo_backend
