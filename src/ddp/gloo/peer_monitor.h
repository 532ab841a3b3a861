#pragma once
// Watches the connections of a group while an operation runs. Each connection carries one
// "canary": an empty receive that no message ever matches, so it stays pending, and Gloo wakes it
// with the connection's error when the connection fails (a peer died, reset or closed it). Every
// `interval` the monitor checks the canaries without blocking; when one has failed, it aborts the
// running operation's Exchange with that rank and Gloo's reason. Every rank is connected to every
// other one, so each survivor learns directly which rank died, even when its own operation was
// waiting on someone else.

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
