#include "ddp/launcher/worker_group.h"

#include <ddp/errors.h>
#include <ddp/logging.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ddp::launcher {
namespace {

// In the child between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_child(char* const* argv, char* const* envp, int out_fd, int err_fd, pid_t parent) {
  ::setpgid(0, 0);
  // The worker dies with the launcher (SIGTERM: it may still checkpoint). Checked against a race
  // where the launcher died before prctl.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(128 + SIGTERM);
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
  // Nothing else of ours leaks into the worker (store sockets, other workers' pipes, log files).
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
#endif
    for (int fd = 3; fd < 65536; ++fd) ::close(fd);
  // Default dispositions and an empty mask: ddprun ignores SIGPIPE and catches others.
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  ::sigemptyset(&sa.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &sa, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(argv[0], argv, envp);
  const char* msg = "ddprun: execve failed: ";
  (void)!::write(STDERR_FILENO, msg, ::strlen(msg));
  const char* why = ::strerror(errno);  // not formally async-signal-safe, but only reads a table
  (void)!::write(STDERR_FILENO, why, ::strlen(why));
  (void)!::write(STDERR_FILENO, "\n", 1);
  ::_exit(127);
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::string signal_name(int sig) {
  switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGSEGV: return "SIGSEGV";
    case SIGPIPE: return "SIGPIPE";
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    default: return "signal " + std::to_string(sig);
  }
}

int decode_wait_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::string WorkerExit::describe() const {
  std::string who = "worker rank " + std::to_string(rank) + " (local " + std::to_string(local_rank) + ")";
  if (signal) return who + " was killed by " + signal_name(signal) + " (exit " + std::to_string(code) + ")";
  return who + " exited with code " + std::to_string(code);
}

WorkerGroup::~WorkerGroup() {
  for (auto& w : workers_) {
    if (w.code) continue;
    ::kill(-w.pid, SIGKILL);
    ::kill(w.pid, SIGKILL);
  }
  // A moment for the kernel to finish them, then reap what is gone; a worker stuck past SIGKILL must
  // not hang ddprun here (whatever is left is reaped by init once ddprun exits).
  for (int i = 0; i < 100 && running() > 0; ++i) {
    reap();
    if (running() > 0) ::usleep(10000);
  }
}

std::string WorkerGroup::running_pids() const {
  std::string out;
  for (const auto& w : workers_)
    if (!w.code) out += (out.empty() ? "" : ", ") + std::to_string(w.pid);
  return out;
}

void WorkerGroup::abandon() {
  for (auto& w : workers_) {
    if (w.code) continue;
    w.code = 128 + SIGKILL;
    w.signal = SIGKILL;
  }
}

void WorkerGroup::start(const std::vector<WorkerSpec>& specs) {
  const pid_t self = ::getpid();
  for (const auto& spec : specs) {
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0) throw Error(std::string("pipe2 failed: ") + std::strerror(errno), kExitInternal);
    if (::pipe2(err, O_CLOEXEC) != 0) {
      int e = errno;
      ::close(out[0]);
      ::close(out[1]);
      throw Error(std::string("pipe2 failed: ") + std::strerror(e), kExitInternal);
    }
    Worker w;
    w.spec = spec;
    std::vector<std::string> argv = spec.argv, env = spec.env;
    std::vector<char*> c_argv = c_strings(argv), c_env = c_strings(env);
    pid_t pid = ::fork();
    if (pid < 0) {
      int e = errno;
      for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
      throw Error(std::string("fork failed: ") + std::strerror(e), kExitInternal);
    }
    if (pid == 0) exec_child(c_argv.data(), c_env.data(), out[1], err[1], self);
    ::setpgid(pid, pid);  // also from here, so signals sent right away reach the group
    ::close(out[1]);
    ::close(err[1]);
    w.pid = pid;
    workers_.push_back(std::move(w));
    pump_.add(out[0], spec.rank, false, spec.stdout_to_console, spec.stdout_file);
    pump_.add(err[0], spec.rank, true, spec.stderr_to_console, spec.stderr_file);
    DDP_LOG(DEBUG) << "started worker rank " << spec.rank << " (local " << spec.local_rank << ") as pid " << pid;
  }
}

std::vector<WorkerExit> WorkerGroup::reap() {
  std::vector<WorkerExit> ended;
  for (auto& w : workers_) {
    if (w.code) continue;
    int status = 0;
    pid_t r = ::waitpid(w.pid, &status, WNOHANG);
    if (r == w.pid) {
      w.code = decode_wait_status(status);
      w.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      ended.push_back({w.spec.local_rank, w.spec.rank, *w.code, w.signal, w.pid, w.spec.error_file});
    }
  }
  return ended;
}

bool WorkerGroup::all_exited() const { return running() == 0; }

int WorkerGroup::running() const {
  int n = 0;
  for (const auto& w : workers_) n += w.code ? 0 : 1;
  return n;
}

std::vector<WorkerExit> WorkerGroup::exits() const {
  std::vector<WorkerExit> out;
  for (const auto& w : workers_)
    if (w.code) out.push_back({w.spec.local_rank, w.spec.rank, *w.code, w.signal, w.pid, w.spec.error_file});
  return out;
}

void WorkerGroup::signal_all(int sig) {
  for (auto& w : workers_) {
    if (w.code) continue;
    if (::kill(-w.pid, sig) != 0) ::kill(w.pid, sig);
  }
}

}  // namespace ddp::launcher
