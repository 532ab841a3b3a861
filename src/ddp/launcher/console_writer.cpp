#include "ddp/launcher/console_writer.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace ddp::launcher {

struct ConsoleWriter::State {
  int fd;
  std::string name;
  size_t capacity;
  std::mutex mu;
  std::condition_variable wake;     // the thread: a line was queued, or stop
  std::condition_variable written;  // the destructor: a line went out
  std::deque<std::string> queue;
  size_t queued_bytes = 0;
  uint64_t lines_written = 0;
  uint64_t dropped = 0;          // in all
  uint64_t dropped_unnoted = 0;  // since the last "dropped" note
  bool stop = false;
  bool broken = false;  // the console is gone (EPIPE, EBADF...): nothing more is written
};

namespace {

// Blocking, whole line; false when the descriptor is unusable.
bool write_line(int fd, const std::string& line) {
  const char* data = line.data();
  size_t size = line.size();
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {  // someone made our stdout non-blocking: wait here, not in the control loop
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, 100);
        continue;
      }
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

void run(std::shared_ptr<ConsoleWriter::State> s) {
  // Signals belong to the control loop's thread (its self-pipe handler works from any thread, but a
  // write interrupted here would only be restarted).
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  std::unique_lock<std::mutex> lock(s->mu);
  while (true) {
    s->wake.wait(lock, [&] { return !s->queue.empty() || s->stop; });
    if (s->queue.empty()) return;  // stop, and everything went out
    std::string line = std::move(s->queue.front());
    s->queue.pop_front();
    lock.unlock();
    const bool ok = !s->broken && write_line(s->fd, line);
    lock.lock();
    s->queued_bytes -= line.size();
    ++s->lines_written;
    if (!ok) s->broken = true;
    s->written.notify_all();
  }
}

}  // namespace

ConsoleWriter::ConsoleWriter(int fd, const char* name, size_t capacity) : state_(std::make_shared<State>()) {
  state_->fd = fd;
  state_->name = name;
  state_->capacity = capacity;
  std::thread(run, state_).detach();  // joined by waiting for the queue to empty (see the destructor)
}

ConsoleWriter::~ConsoleWriter() {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->stop = true;
  state_->wake.notify_all();
  // Everything queued goes out while the reader keeps reading; a reader that took nothing for 2 s
  // is not waited for (the thread, blocked in write, ends with the process).
  while (!state_->queue.empty() && !state_->broken) {
    const uint64_t before = state_->lines_written;
    state_->written.wait_for(lock, std::chrono::seconds(2), [&] { return state_->lines_written != before; });
    if (state_->lines_written == before) break;
  }
}

bool ConsoleWriter::write(std::string line) {
  std::lock_guard<std::mutex> lock(state_->mu);
  State& s = *state_;
  if (s.broken) return true;  // nobody reads any more: nothing to count
  if (s.dropped_unnoted > 0) {
    std::string note = "[ddprun]: " + std::to_string(s.dropped_unnoted) +
                       " line(s) of worker output dropped here: the reader of ddprun's " + s.name +
                       " did not keep up\n";
    if (s.queued_bytes + note.size() + line.size() <= s.capacity) {
      s.queued_bytes += note.size();
      s.queue.push_back(std::move(note));
      s.dropped_unnoted = 0;
    }
  }
  if (s.queued_bytes + line.size() > s.capacity) {
    ++s.dropped;
    ++s.dropped_unnoted;
    return false;
  }
  s.queued_bytes += line.size();
  s.queue.push_back(std::move(line));
  s.wake.notify_one();
  return true;
}

uint64_t ConsoleWriter::dropped() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->dropped;
}

}  // namespace ddp::launcher
