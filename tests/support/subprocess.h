#pragma once
// A child process for tests: argv + extra environment, stdout and stderr captured to a file.
//
//   ddp::testing::Subprocess p({"/bin/echo", "hi"}, {{"RANK", "0"}});
//   int status = p.wait(std::chrono::seconds(30));   // exit code, or 128 + signal
//   EXPECT_EQ(p.output(), "hi\n");

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ddp::testing {

class Subprocess {
 public:
  /// Starts at once. `env` is added to (and overrides) this process's environment; a value of
  /// "\x01unset" removes the variable. `cwd` empty: inherit.
  Subprocess(std::vector<std::string> argv, std::map<std::string, std::string> env = {},
             std::string cwd = "");
  /// A child that runs `body` in a copy of this process instead of executing a program, as a test
  /// worker does (support/multiprocess.h): the same real process, its own pid, group, files and
  /// sockets, without paying for a second start of this executable (a LibTorch-linked process spends
  /// ~0.7 CPU-s in the dynamic linker and LibTorch's operator registration before main). What exec
  /// would reset is reset: the environment is this process's plus `env`, close-on-exec descriptors
  /// are closed; signal handlers are inherited. Only for a single-threaded caller (locks
  /// held by other threads would stay held in the copy); null when this process has other threads,
  /// so the caller falls back to executing the program.
  static std::unique_ptr<Subprocess> fork_running(std::function<int()> body,
                                                  std::map<std::string, std::string> env = {});
  ~Subprocess();  // kills (SIGKILL) a child still running
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  /// Exit code, or 128 + signal number; -1 when `timeout` passed first (the child keeps running).
  int wait(std::chrono::milliseconds timeout = std::chrono::minutes(5));
  /// Non-blocking: the status when finished.
  std::optional<int> poll();
  void kill(int signal);
  bool running();
  /// Everything the child wrote to stdout and stderr so far.
  std::string output() const;
  const std::string& output_path() const { return output_path_; }

 private:
  Subprocess() = default;

  pid_t pid_ = -1;
  std::optional<int> status_;
  std::string output_path_;
};

/// Value that removes a variable from the child's environment.
inline const char* kUnset = "\x01unset";

}  // namespace ddp::testing
