#include "ddp/launcher/signal_pipe.h"

#include <ddp/errors.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ddp::launcher {
namespace {

int g_write_fd = -1;
constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};

extern "C" void on_signal(int sig) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(sig);
  if (g_write_fd >= 0) (void)!::write(g_write_fd, &byte, 1);  // a full pipe already wakes the loop
  errno = saved;
}

}  // namespace

SignalPipe::SignalPipe() {
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0)
    throw Error(std::string("ddprun: pipe2 failed: ") + std::strerror(errno), kExitInternal);
  read_fd_ = fds[0];
  g_write_fd = fds[1];
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : kStopSignals) ::sigaction(sig, &sa, nullptr);
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  ::sigaction(SIGCHLD, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a closed console must not kill the launcher
}

SignalPipe::~SignalPipe() {
  for (int sig : kStopSignals) ::signal(sig, SIG_DFL);
  ::signal(SIGCHLD, SIG_DFL);
  int w = g_write_fd;
  g_write_fd = -1;
  ::close(w);
  ::close(read_fd_);
}

std::vector<int> SignalPipe::take() {
  std::vector<int> stops;
  unsigned char buf[64];
  while (true) {
    ssize_t n = ::read(read_fd_, buf, sizeof buf);
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i)
      if (buf[i] != SIGCHLD) stops.push_back(buf[i]);
  }
  return stops;
}

}  // namespace ddp::launcher
