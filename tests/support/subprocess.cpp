#include "support/subprocess.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>  // environ (g++ defines _GNU_SOURCE)

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace ddp::testing {
namespace {

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::string make_output_path() {
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/ddp-test-out-XXXXXX";
  std::vector<char> buf(path.begin(), path.end());
  buf.push_back('\0');
  int fd = mkstemp(buf.data());
  if (fd < 0) throw std::runtime_error("mkstemp failed: " + std::string(strerror(errno)));
  close(fd);
  return std::string(buf.data());
}

}  // namespace

Subprocess::Subprocess(std::vector<std::string> argv, std::map<std::string, std::string> env,
                       std::string cwd)
    : output_path_(make_output_path()) {
  if (argv.empty()) throw std::invalid_argument("Subprocess: empty argv");
  // Build everything the child needs before fork(): only async-signal-safe calls after it.
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) merged[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  for (auto& [k, v] : env) {
    if (v == kUnset) merged.erase(k);
    else merged[k] = v;
  }
  std::vector<std::string> env_strings;
  for (auto& [k, v] : merged) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (auto& s : argv) args.push_back(s.data());
  args.push_back(nullptr);

  int out = open(output_path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (out < 0) throw std::runtime_error("cannot open " + output_path_);
  pid_ = fork();
  if (pid_ < 0) {
    close(out);
    throw std::runtime_error("fork failed: " + std::string(strerror(errno)));
  }
  if (pid_ == 0) {
    setpgid(0, 0);  // own process group: a test can signal the child and its children together
    dup2(out, 1);
    dup2(out, 2);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(127);
    execve(args[0], args.data(), envp.data());
    const char msg[] = "execve failed\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(127);
  }
  close(out);
}

namespace {

bool single_threaded() {
  DIR* d = opendir("/proc/self/task");
  if (!d) return false;
  int threads = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++threads;
  closedir(d);
  return threads == 1;
}

// In the forked child: the descriptors execve would have closed. Signal handlers stay as they are:
// the test process installs none of its own (the workers do), and the sanitizers' stay, so a
// worker's crash is still reported.
void close_cloexec_descriptors() {
  std::vector<int> cloexec;
  if (DIR* d = opendir("/proc/self/fd")) {
    const int own = dirfd(d);
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      int fd = std::atoi(e->d_name);
      if (fd > 2 && fd != own && (fcntl(fd, F_GETFD) & FD_CLOEXEC)) cloexec.push_back(fd);
    }
    closedir(d);
  }
  for (int fd : cloexec) close(fd);
}

}  // namespace

std::unique_ptr<Subprocess> Subprocess::fork_running(std::function<int()> body,
                                                     std::map<std::string, std::string> env) {
  if (!single_threaded()) return nullptr;
  std::unique_ptr<Subprocess> p(new Subprocess());
  p->output_path_ = make_output_path();
  int out = open(p->output_path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (out < 0) throw std::runtime_error("cannot open " + p->output_path_);
  // Nothing buffered here may be written a second time by the copy.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  p->pid_ = fork();
  if (p->pid_ < 0) {
    close(out);
    throw std::runtime_error("fork failed: " + std::string(strerror(errno)));
  }
  if (p->pid_ == 0) {
    // A single-threaded parent: the copy may call anything.
    setpgid(0, 0);
    dup2(out, 1);
    dup2(out, 2);
    close_cloexec_descriptors();
    for (auto& [k, v] : env) {
      if (v == kUnset) unsetenv(k.c_str());
      else setenv(k.c_str(), v.c_str(), 1);
    }
    int code = 1;  // an exception the body let out: "unexpected internal error", as main would say
    try {
      code = body();
    } catch (...) {
    }
    std::exit(code);  // static destructors and stdio flushed, as when a worker's main returns
  }
  close(out);
  return p;
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !status_) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    int st;
    waitpid(pid_, &st, 0);
  }
  if (!std::getenv("DDP_TEST_KEEP_OUTPUT")) unlink(output_path_.c_str());
}

std::optional<int> Subprocess::poll() {
  if (status_) return status_;
  int st;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == pid_) status_ = decode_status(st);
  return status_;
}

int Subprocess::wait(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto sleep = std::chrono::milliseconds(1);
  while (!poll()) {
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::milliseconds(50));
  }
  return *status_;
}

void Subprocess::kill(int signal) {
  if (pid_ > 0 && !poll()) ::kill(pid_, signal);
}

bool Subprocess::running() { return !poll().has_value(); }

std::string Subprocess::output() const {
  std::ifstream in(output_path_, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ddp::testing
