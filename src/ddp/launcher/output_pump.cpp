#include "ddp/launcher/output_pump.h"

#include <ddp/errors.h>
#include <ddp/logging.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/rfc3339.h"

namespace ddp::launcher {
namespace {

// A line longer than this is emitted in pieces (a worker printing megabytes without a newline must
// not grow our memory without bound).
constexpr size_t kMaxLine = 64 * 1024;

// How much console output may wait for a slow reader, per stream, before lines are dropped.
constexpr size_t kConsoleBuffer = 4u << 20;

// Log files are regular files: a write there does not wait for a reader.
void write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // file gone (ENOSPC, EIO): drop, the workers must not stall on it
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

}  // namespace

OutputPump::OutputPump()
    : stdout_(std::make_unique<ConsoleWriter>(STDOUT_FILENO, "stdout", kConsoleBuffer)),
      stderr_(std::make_unique<ConsoleWriter>(STDERR_FILENO, "stderr", kConsoleBuffer)) {}

OutputPump::~OutputPump() { close_all(); }

uint64_t OutputPump::dropped_lines() const { return stdout_->dropped() + stderr_->dropped(); }

void OutputPump::add(int fd, int rank, bool is_stderr, bool to_console, const std::string& file_path) {
  Stream s;
  s.fd = fd;
  s.rank = rank;
  s.is_stderr = is_stderr;
  s.to_console = to_console;
  int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  if (!file_path.empty()) {
    s.file_fd = ::open(file_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (s.file_fd < 0) {
      int err = errno;
      ::close(fd);
      throw ConfigError("--log-dir: cannot create " + file_path + ": " + std::strerror(err));
    }
  }
  streams_.push_back(std::move(s));
}

void OutputPump::append_pollfds(std::vector<pollfd>& fds) const {
  for (const auto& s : streams_)
    if (s.fd >= 0) fds.push_back(pollfd{s.fd, POLLIN, 0});
}

void OutputPump::emit_line(Stream& s, const char* data, size_t size) {
  if (!s.to_console) return;
  // A line that starts with an RFC 3339 timestamp keeps it first ("<ts> [3]: rest"): Katib's
  // collector takes a line's time from its first word, and our log and metric lines carry one.
  const size_t stamp = util::leading_rfc3339(data, size);
  std::string line(data, stamp);
  line += "[" + std::to_string(s.rank) + "]: ";
  line.append(data + stamp, size - stamp);
  line += '\n';
  (s.is_stderr ? stderr_ : stdout_)->write(std::move(line));
}

void OutputPump::pump() {
  char buf[1 << 16];
  for (auto& s : streams_) {
    while (s.fd >= 0) {
      ssize_t n = ::read(s.fd, buf, sizeof buf);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN) close_stream(s);
        break;
      }
      if (n == 0) {
        close_stream(s);
        break;
      }
      if (s.file_fd >= 0) write_all(s.file_fd, buf, static_cast<size_t>(n));
      // Split into lines; keep the unfinished tail for the next read.
      const char* begin = buf;
      const char* end = buf + n;
      while (begin < end) {
        const char* nl = static_cast<const char*>(std::memchr(begin, '\n', static_cast<size_t>(end - begin)));
        if (!nl) {
          s.partial.append(begin, end);
          if (s.partial.size() >= kMaxLine) {
            emit_line(s, s.partial.data(), s.partial.size());
            s.partial.clear();
          }
          break;
        }
        if (s.partial.empty()) {
          emit_line(s, begin, static_cast<size_t>(nl - begin));
        } else {
          s.partial.append(begin, nl);
          emit_line(s, s.partial.data(), s.partial.size());
          s.partial.clear();
        }
        begin = nl + 1;
      }
    }
  }
}

void OutputPump::close_stream(Stream& s) {
  if (!s.partial.empty()) {
    emit_line(s, s.partial.data(), s.partial.size());
    s.partial.clear();
  }
  if (s.fd >= 0) ::close(s.fd);
  if (s.file_fd >= 0) ::close(s.file_fd);
  s.fd = s.file_fd = -1;
}

bool OutputPump::rank_open(int rank) const {
  for (const auto& s : streams_)
    if (s.rank == rank && s.fd >= 0) return true;
  return false;
}

bool OutputPump::any_open() const {
  for (const auto& s : streams_)
    if (s.fd >= 0) return true;
  return false;
}

void OutputPump::close_rank(int rank) {
  pump();
  for (auto& s : streams_)
    if (s.rank == rank) close_stream(s);
}

void OutputPump::close_all() {
  for (auto& s : streams_) close_stream(s);
  streams_.clear();
}

}  // namespace ddp::launcher
