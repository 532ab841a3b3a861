#include "ddp/gloo/shm_segment.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace ddp::gloo_backend {
namespace {

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

std::string mib(size_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

sockaddr_un abstract_address(const std::string& name, socklen_t* len) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (name.size() + 1 > sizeof(a.sun_path)) throw ShmUnavailable("socket name too long: " + name);
  a.sun_path[0] = '\0';  // abstract: no file, gone when the socket closes
  std::memcpy(a.sun_path + 1, name.data(), name.size());
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return a;
}

// Waits until `fd` is ready for `events`, at most `ms`; false on timeout.
bool wait_ready(int fd, short events, std::chrono::milliseconds ms) {
  pollfd p{fd, events, 0};
  for (;;) {
    int r = ::poll(&p, 1, static_cast<int>(ms.count()));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) throw ShmUnavailable(errno_text("poll"));
  }
}

// One byte of payload with room for one descriptor (SCM_RIGHTS): what the leader sends, what a
// rank receives.
struct FdMessage {
  char byte = 'm';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  FdMessage() {
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
  }
  FdMessage(const FdMessage&) = delete;
  FdMessage& operator=(const FdMessage&) = delete;
};

}  // namespace

SharedMemory SharedMemory::create(size_t bytes) {
  int fd = static_cast<int>(::syscall(SYS_memfd_create, "ddp-gloo-shm", MFD_CLOEXEC));
  if (fd < 0) throw ShmUnavailable(errno_text("memfd_create"));
  SharedMemory m;
  m.fd_ = fd;
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) throw ShmUnavailable(errno_text("ftruncate to " + mib(bytes)));
  // Reserve every page now: without it, the first touch of a page past the memory limit kills the
  // process (SIGBUS/OOM) in the middle of a collective instead of failing here.
  int err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (err != 0)
    throw ShmUnavailable("could not reserve " + mib(bytes) + " of shared memory (" + std::strerror(err) +
                         "; the segment counts against this container's memory limit)");
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) throw ShmUnavailable(errno_text("mmap of " + mib(bytes)));
  m.data_ = static_cast<uint8_t*>(p);
  m.size_ = bytes;
  return m;
}

SharedMemory SharedMemory::attach(int fd) {
  SharedMemory m;
  m.fd_ = fd;
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw ShmUnavailable(errno_text("fstat of the received segment"));
  if (st.st_size <= 0) throw ShmUnavailable("the received segment is empty");
  void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) throw ShmUnavailable(errno_text("mmap of the received segment"));
  m.data_ = static_cast<uint8_t*>(p);
  m.size_ = static_cast<size_t>(st.st_size);
  return m;
}

SharedMemory::~SharedMemory() { release(); }

void SharedMemory::release() {
  if (data_) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
  close_fd();
}

SharedMemory::SharedMemory(SharedMemory&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), fd_(std::exchange(o.fd_, -1)) {}

SharedMemory& SharedMemory::operator=(SharedMemory&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

void SharedMemory::close_fd() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

FdListener::FdListener(const std::string& name) {
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw ShmUnavailable(errno_text("unix socket"));
  socklen_t len = 0;
  sockaddr_un a = abstract_address(name, &len);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd_, 64) != 0) {
    std::string why = errno_text("binding the abstract unix socket @" + name);
    ::close(fd_);
    fd_ = -1;
    throw ShmUnavailable(why);
  }
}

FdListener::~FdListener() {
  if (fd_ >= 0) ::close(fd_);
}

int FdListener::accept_rank(std::chrono::milliseconds wait, int* connection) {
  if (!wait_ready(fd_, POLLIN, wait)) return -1;
  int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (c < 0) throw ShmUnavailable(errno_text("accept on the unix socket"));
  ucred cred{};
  socklen_t len = sizeof cred;
  int32_t rank = -1;
  bool ok = ::getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == ::getuid() &&
            wait_ready(c, POLLIN, std::chrono::seconds(5)) && ::recv(c, &rank, sizeof rank, MSG_WAITALL) == sizeof rank &&
            rank >= 0;
  if (!ok) {
    ::close(c);
    throw ShmUnavailable("a process that is not one of this job's ranks (uid " + std::to_string(cred.uid) +
                         ") connected to the shared-memory socket");
  }
  *connection = c;
  return rank;
}

void FdListener::send_fd(int connection, int fd) {
  FdMessage m;
  cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  ssize_t r = ::sendmsg(connection, &m.msg, MSG_NOSIGNAL);
  int saved = errno;
  ::close(connection);
  if (r != 1) {
    errno = saved;
    throw ShmUnavailable(errno_text("handing the segment over the unix socket"));
  }
}

int fetch_fd(const std::string& name, int rank, std::chrono::milliseconds timeout) {
  int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) throw ShmUnavailable(errno_text("unix socket"));
  socklen_t len = 0;
  sockaddr_un a = abstract_address(name, &len);
  auto fail = [&](const std::string& why) {
    ::close(s);
    throw ShmUnavailable(why);
  };
  if (::connect(s, reinterpret_cast<sockaddr*>(&a), len) != 0)
    fail(errno_text("connecting to the leader's abstract unix socket @" + name));
  int32_t r = rank;
  if (::send(s, &r, sizeof r, MSG_NOSIGNAL) != sizeof r) fail(errno_text("announcing this rank to the leader"));
  if (!wait_ready(s, POLLIN, timeout)) fail("the leader did not hand over the segment within the timeout");
  FdMessage m;
  if (::recvmsg(s, &m.msg, MSG_CMSG_CLOEXEC) != 1) fail(errno_text("receiving the segment"));
  cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
  if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) fail("the leader sent no descriptor");
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
  ::close(s);
  return fd;
}

}  // namespace ddp::gloo_backend
