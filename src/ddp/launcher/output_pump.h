#pragma once
// Workers' stdout and stderr, read through pipes: complete lines go to our console prefixed with the
// rank ("[3]: loss 0.42"; after a leading RFC 3339 timestamp, which stays first:
// "2026-12-01T23:16:11.123Z [3]: epoch=1 ..."), each with one write(2) so lines never interleave; raw bytes go to the
// per-rank log files. A partial last line is flushed (with a newline) when its pipe closes.
// Console lines go through a ConsoleWriter: pump() never waits for whoever reads our stdout.
#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ddp/launcher/console_writer.h"

namespace ddp::launcher {

class OutputPump {
 public:
  OutputPump();
  ~OutputPump();
  OutputPump(const OutputPump&) = delete;
  OutputPump& operator=(const OutputPump&) = delete;

  /// Watches `fd` (a pipe's read end; made non-blocking) for `rank`'s stdout or stderr. Console
  /// output goes to our stdout / stderr when `to_console`; raw output is appended to `file_path`
  /// when non-empty (created, truncated).
  void add(int fd, int rank, bool is_stderr, bool to_console, const std::string& file_path);

  /// Adds a pollfd for every open stream.
  void append_pollfds(std::vector<pollfd>& fds) const;
  /// Reads everything available on every open stream; closes streams at EOF.
  void pump();
  /// True while a stream of `rank` is still open.
  bool rank_open(int rank) const;
  bool any_open() const;
  /// Flushes partial lines and closes every stream of `rank` (its pipes may be held by leftovers).
  void close_rank(int rank);
  void close_all();
  /// Console lines dropped because our stdout / stderr reader did not keep up.
  uint64_t dropped_lines() const;

 private:
  struct Stream {
    int fd = -1;
    int rank = 0;
    bool is_stderr = false;
    bool to_console = true;
    int file_fd = -1;
    std::string partial;
  };
  void emit_line(Stream& s, const char* data, size_t size);
  void close_stream(Stream& s);
  std::vector<Stream> streams_;
  std::unique_ptr<ConsoleWriter> stdout_, stderr_;
};

}  // namespace ddp::launcher
