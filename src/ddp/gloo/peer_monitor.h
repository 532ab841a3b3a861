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
// collective), or still be reading what this rank sent in its last operation. So leaving is
// orderly (leave()): the leaving rank sends each peer the one message the canary slot ever
// carries, a goodbye, which completes that peer's canary so the closing connection no longer wakes
// it; then it closes each connection with a plain close(), after which the kernel still delivers
// every byte already sent, the goodbye last. Gloo's own Context::closeConnections() is a reset
// (SO_LINGER 0) that throws away whatever the peer has not yet taken: a slow peer lost the end of
// the last operation's data and the goodbye with it, and failed with "Connection reset by peer".
// That reset stays for failures, where peers should stop waiting at once (ProcessGroupGloo::run).
// An operation that still needs the rank that left fails on its own: Gloo fails its pending
// transfers on the closed connection, and the shared segment says which member left
// (ShmGroup::leave).

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
  /// Stops watching and closes every connection still open (plainly, as leave() does).
  ~PeerMonitor();
  PeerMonitor(const PeerMonitor&) = delete;
  PeerMonitor& operator=(const PeerMonitor&) = delete;

  /// What to abort when a connection fails (the running operation's Exchanges and shared-memory waits).
  void watch(Abortable* target);
  void unwatch(Abortable* target);

  /// The rank whose connection failed, with Gloo's reason in `cause`; -1 when none has. Gloo marks
  /// a failed connection's transfers one after another, so a transfer of that connection may throw
  /// before its canary does: this waits up to `within` for one. For an error whose address Gloo
  /// gives as a peer's ephemeral port (unknown to the PeerDirectory), and for a transfer buffer
  /// posted on several connections, which takes the error of whichever failed, whatever peer it
  /// was waiting on.
  int failed_peer(std::string* cause, std::chrono::milliseconds within);

  /// This rank leaves, having finished all of its operations (see above): stops watching, says
  /// goodbye on every connection still open, waits at most `within` for the goodbyes to reach the
  /// kernel (they wait in Gloo's own queue only while a peer has not read megabytes this rank
  /// sent), and closes every connection gracefully. The group is unusable afterwards.
  void leave(std::chrono::milliseconds within);

 private:
  void loop();
  void stop();
  /// The first peer whose connection failed, with Gloo's reason; -1 when all are fine.
  int find_failed_peer(std::string* cause);
  /// Waits for each goodbye's send to complete, until `deadline` at most.
  void wait_for_goodbyes(std::chrono::steady_clock::time_point deadline);
  /// Destroys every connection: Gloo's pair destructor unregisters it from the I/O loop, then
  /// closes the socket plainly. Afterwards no Gloo thread touches the canaries or goodbyes.
  void close_connections_gracefully();

  std::shared_ptr<::gloo::Context> context_;
  std::chrono::milliseconds interval_;
  // Declared after context_ and destroyed before it, but only after their connections are gone.
  std::vector<std::unique_ptr<::gloo::transport::UnboundBuffer>> canaries_;  // by peer rank
  std::vector<std::unique_ptr<::gloo::transport::UnboundBuffer>> goodbyes_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Abortable*> watched_;  // the signature check's, the running algorithm's, the shm group
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ddp::gloo_backend
