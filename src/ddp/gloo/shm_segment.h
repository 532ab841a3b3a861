#pragma once
// Memory shared by the ranks of one host, and how it is handed from one rank to the others.
//
// The segment is an anonymous memfd: it has no name in /dev/shm or anywhere else, so no crash can
// leave it behind (the kernel frees it with the last mapping), and a small /dev/shm (64 MiB in a
// Kubernetes pod by default) does not limit it; it counts against the pod's memory instead. Its
// pages are reserved up front (fallocate), so a memory limit is an error when the group is made,
// not a SIGBUS in the middle of a collective. The leader hands the descriptor to the other ranks
// over an abstract unix socket (SCM_RIGHTS) under a random name that only the store tells, and
// checks with SO_PEERCRED that the caller runs as the same user.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ddp::gloo_backend {

/// Why shared memory cannot be used here; the group then falls back to TCP and logs the reason.
struct ShmUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A mapping of a shared segment (move-only; unmapped on destruction).
class SharedMemory {
 public:
  SharedMemory() = default;
  /// A new zero-filled segment of `bytes`, mapped; fd() stays open to be handed to the other ranks.
  static SharedMemory create(size_t bytes);
  /// Maps the segment behind `fd` (taking ownership of the descriptor).
  static SharedMemory attach(int fd);
  ~SharedMemory();
  SharedMemory(SharedMemory&& o) noexcept;
  SharedMemory& operator=(SharedMemory&& o) noexcept;
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  int fd() const { return fd_; }
  /// Closes the descriptor; the mapping stays valid.
  void close_fd();

 private:
  /// Unmaps and closes whatever this holds.
  void release();

  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
};

/// The leader's end: a listening abstract unix socket.
class FdListener {
 public:
  /// Listens on the abstract name `name` (no leading NUL; it is added).
  explicit FdListener(const std::string& name);
  ~FdListener();
  FdListener(const FdListener&) = delete;
  FdListener& operator=(const FdListener&) = delete;

  /// Accepts one caller and reads the rank it announces; -1 when none came within `wait`.
  /// Throws ShmUnavailable when the caller runs as another user or says nothing sensible.
  int accept_rank(std::chrono::milliseconds wait, int* connection);
  /// Sends `fd` over `connection` and closes the connection.
  static void send_fd(int connection, int fd);

 private:
  int fd_ = -1;
};

/// A rank's end: connects to `name`, announces `rank`, receives the descriptor within `timeout`.
int fetch_fd(const std::string& name, int rank, std::chrono::milliseconds timeout);

}  // namespace ddp::gloo_backend
