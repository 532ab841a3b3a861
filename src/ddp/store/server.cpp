// The store server: one thread running an epoll loop over non-blocking sockets. Requests are
// handled in server_request.cpp against StoreState; a WAIT never blocks the loop (the reply is
// queued when a later mutation completes it).
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include <ddp/errors.h>
#include <ddp/logging.h>
#include <ddp/store.h>

#include "ddp/store/server_connection.h"
#include "ddp/store/socket.h"

namespace ddp {
namespace store {
namespace {

constexpr uint64_t kListenId = 0;
constexpr uint64_t kWakeId = 1;
constexpr size_t kReadChunk = 64 * 1024;
/// Bytes read from one connection per wakeup, so one fast sender cannot starve the others.
constexpr size_t kReadBudget = 4 * 1024 * 1024;

/// Logs at most one line per second for a repeated event (a flood must not flood the log too).
class RateLimitedLog {
 public:
  /// True when a line should be written now; *suppressed is how many were skipped since the last.
  bool allow(uint64_t* suppressed) {
    auto now = Clock::now();
    if (now < next_) {
      ++skipped_;
      return false;
    }
    next_ = now + std::chrono::seconds(1);
    *suppressed = skipped_;
    skipped_ = 0;
    return true;
  }

 private:
  Clock::time_point next_{};
  uint64_t skipped_ = 0;
};

class Server final : public TCPStoreServer {
 public:
  explicit Server(const TCPStoreOptions& o)
      : token_(o.token()),
        max_connections_(static_cast<size_t>(std::max(1, o.max_connections()))),
        max_input_(o.max_connection_input_bytes()),
        hello_timeout_(std::max(o.hello_timeout(), std::chrono::milliseconds(1))) {
    limits_.max_stored_bytes = o.max_stored_bytes();
    limits_.max_output_bytes = o.max_connection_output_bytes();
    listen_ = listen_on(o.bind_address(), o.port(), 4096);
    port_ = bound_port(listen_.get());
    epoll_ = Fd(::epoll_create1(EPOLL_CLOEXEC));
    wake_ = Fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!epoll_.valid() || !wake_.valid())
      throw StoreError(std::string("store server: epoll/eventfd: ") + std::strerror(errno));
    add_fd(listen_.get(), kListenId, EPOLLIN);
    add_fd(wake_.get(), kWakeId, EPOLLIN);
    thread_ = std::thread([this] { run(); });
    DDP_LOG(DEBUG) << "store server listening on "
                   << (o.bind_address().empty() ? std::string("all interfaces") : o.bind_address())
                   << " port " << port_ << (token_.empty() ? "" : " (token required)");
  }

  ~Server() override { stop(); }

  int port() const override { return port_; }

  void stop() override {
    std::lock_guard<std::mutex> lock(stop_mu_);
    if (!thread_.joinable()) return;
    stopping_ = true;
    uint64_t one = 1;
    ssize_t n;
    do {
      n = ::write(wake_.get(), &one, sizeof one);
    } while (n < 0 && errno == EINTR);
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();  // stop() from the loop itself cannot join; run() returns right after
      return;
    }
    thread_.join();
    conns_.clear();  // closes every client socket
    listen_.reset();
  }

 private:
  void add_fd(int fd, uint64_t id, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = id;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0)
      throw StoreError(std::string("store server: epoll_ctl: ") + std::strerror(errno));
  }

  void run() {
    std::vector<epoll_event> events(256);
    while (!stopping_) {
      int n = ::epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), next_timeout_ms());
      if (n < 0) {
        if (errno == EINTR) continue;
        DDP_LOG(ERROR) << "store server: epoll_wait: " << std::strerror(errno);
        break;
      }
      for (int i = 0; i < n && !stopping_; ++i) {
        uint64_t id = events[i].data.u64;
        uint32_t ev = events[i].events;
        if (id == kListenId) {
          accept_all();
        } else if (id == kWakeId) {
          uint64_t v;
          while (::read(wake_.get(), &v, sizeof v) > 0) {
          }
        } else {
          auto it = conns_.find(id);
          if (it == conns_.end()) continue;
          Connection& c = *it->second;
          if (c.closing) continue;
          if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_readable(c);
          if ((ev & EPOLLOUT) && !c.closing) flush(c);
        }
      }
      expire_hellos();
      close_pending();
      if (accept_paused_ && Clock::now() >= accept_resume_at_) resume_accept();
    }
  }

  /// epoll_wait's timeout: until the next hello deadline or accept resumption; -1 only when
  /// nothing is pending (no connection before its first request and accepting is on).
  int next_timeout_ms() const {
    std::optional<Clock::time_point> next;
    if (!hello_deadlines_.empty()) next = hello_deadlines_.front().first;
    if (accept_paused_) next = next ? std::min(*next, accept_resume_at_) : accept_resume_at_;
    if (!next) return -1;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*next - Clock::now()).count() + 1;
    return static_cast<int>(std::clamp<long long>(ms, 0, 60 * 60 * 1000));
  }

  /// Closes connections that have not said hello by their deadline: with a token, the token hello
  /// and the first request; without one, a first request begun hello_timeout ago and not finished. A silent
  /// connection without a token is kept (re-armed): c10d 1.x clients connect and stay silent until
  /// their first operation, and their watch-key callback socket never speaks at all.
  /// Deadlines are queued in order, all now + the same timeout, so the front is the oldest.
  void expire_hellos() {
    auto now = Clock::now();
    while (!hello_deadlines_.empty() && hello_deadlines_.front().first <= now) {
      ConnId id = hello_deadlines_.front().second;
      hello_deadlines_.pop_front();
      auto it = conns_.find(id);
      if (it == conns_.end() || it->second->closing || it->second->stage == Connection::Stage::kReady) continue;
      // Re-armed: silent, or its first request began less than hello_timeout ago (the deadline
      // may fall between two of a client's send() calls for one request).
      if (token_.empty() &&
          (it->second->unparsed() == 0 || now - it->second->request_started < hello_timeout_)) {
        hello_deadlines_.emplace_back(now + hello_timeout_, id);
        continue;
      }
      close_with(*it->second, std::string(it->second->stage == Connection::Stage::kHello
                                               ? "did not present the store token"
                                               : "sent no request") +
                                  " within " + std::to_string(hello_timeout_.count()) + " ms (hello_timeout)");
    }
  }

  void accept_all() {
    for (;;) {
      int fd = ::accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        // Out of fds or memory: stop accepting for a moment instead of spinning on the listener.
        DDP_LOG(WARN) << "store server: accept: " << std::strerror(errno) << " ("
                      << conns_.size() << " clients); pausing accepts for 100 ms";
        pause_accept();
        return;
      }
      if (conns_.size() >= max_connections_) {
        uint64_t suppressed = 0;
        if (cap_log_.allow(&suppressed)) {
          DDP_LOG(WARN) << "store server: refusing connection from " << peer_name(fd) << ": "
                        << conns_.size() << " connections open, the limit (max_connections)"
                        << (suppressed ? " (" + std::to_string(suppressed) + " more refused)" : "");
        }
        ::close(fd);
        continue;
      }
      auto c = std::make_unique<Connection>();
      c->id = next_id_++;
      c->fd = Fd(fd);
      c->peer = peer_name(fd);
      c->stage = token_.empty() ? Connection::Stage::kDialect : Connection::Stage::kHello;
      set_nodelay(fd);
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = c->id;
      if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
        DDP_LOG(WARN) << "store server: epoll_ctl for " << c->peer << ": " << std::strerror(errno);
        continue;  // c closes the fd
      }
      hello_deadlines_.emplace_back(Clock::now() + hello_timeout_, c->id);
      conns_.emplace(c->id, std::move(c));
    }
  }

  void pause_accept() {
    if (accept_paused_) return;
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, listen_.get(), nullptr);
    accept_paused_ = true;
    accept_resume_at_ = Clock::now() + std::chrono::milliseconds(100);
  }

  void resume_accept() {
    accept_paused_ = false;
    add_fd(listen_.get(), kListenId, EPOLLIN);
  }

  void on_readable(Connection& c) {
    bool eof = false;
    size_t budget = kReadBudget;
    while (budget > 0) {
      size_t old = c.in.size();
      c.in.resize(old + kReadChunk);
      ssize_t n = ::recv(c.fd.get(), c.in.data() + old, kReadChunk, 0);
      c.in.resize(old + (n > 0 ? static_cast<size_t>(n) : 0));
      if (n > 0) {
        if (old == c.in_pos) c.request_started = Clock::now();
        budget -= std::min(budget, static_cast<size_t>(n));
        if (c.unparsed() > max_input_) {
          close_with(c, "request larger than " + std::to_string(max_input_) +
                            " bytes (max_connection_input_bytes)");
          return;
        }
        continue;
      }
      if (n == 0) {
        eof = true;
        break;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      eof = true;  // ECONNRESET and friends: treat as a close
      break;
    }
    process(c);
    if (eof && !c.closing) mark_closing(c);  // the peer is gone; requests it sent were applied
  }

  void process(Connection& c) {
    std::vector<ConnId> woken;
    RequestContext ctx{state_, token_, woken, limits_};
    std::string error;
    while (!c.closing && c.unparsed() > 0) {
      ParseStatus s = handle_request(c, ctx, &error);
      if (s == ParseStatus::kNeedMore) break;
      if (s == ParseStatus::kInvalid) {
        close_with(c, error);
        break;
      }
    }
    // Drop parsed bytes (amortised: only once they dominate the buffer).
    if (c.in_pos > 0 && (c.in_pos == c.in.size() || c.in_pos > 64 * 1024)) {
      c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(c.in_pos));
      c.in_pos = 0;
      if (c.in.capacity() > 4 * kReadChunk && c.in.size() < kReadChunk) c.in.shrink_to_fit();
    }
    if (!c.closing) flush(c);
    for (ConnId id : woken) {
      auto it = conns_.find(id);
      if (it == conns_.end() || it->second->closing) continue;
      it->second->out.push_back(static_cast<uint8_t>(WaitResponse::kStopWaiting));
      flush(*it->second);
    }
  }

  void flush(Connection& c) {
    while (c.unsent() > 0) {
      ssize_t n = ::send(c.fd.get(), c.out.data() + c.out_pos, c.unsent(), MSG_NOSIGNAL);
      if (n > 0) {
        c.out_pos += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      mark_closing(c);  // the peer went away; nothing to report to anyone
      return;
    }
    if (c.unsent() == 0) {
      c.out.clear();
      c.out_pos = 0;
    } else if (c.unsent() > limits_.max_output_bytes) {  // only WAIT wake-ups get here: 1 byte each
      close_with(c, "client does not read its replies (" + std::to_string(c.unsent()) + " bytes queued)");
      return;
    }
    bool want = c.unsent() > 0;
    if (want != c.epollout) {
      epoll_event ev{};
      ev.events = want ? (EPOLLIN | EPOLLOUT) : EPOLLIN;
      ev.data.u64 = c.id;
      ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
      c.epollout = want;
    }
  }

  void close_with(Connection& c, const std::string& why) {
    DDP_LOG(WARN) << "store server: closing connection from " << c.peer << ": " << why;
    mark_closing(c);
  }

  void mark_closing(Connection& c) {
    if (c.closing) return;
    c.closing = true;
    to_close_.push_back(c.id);
  }

  void close_pending() {
    for (ConnId id : to_close_) {
      auto it = conns_.find(id);
      if (it == conns_.end()) continue;
      state_.cancel_wait(id);
      ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, it->second->fd.get(), nullptr);
      conns_.erase(it);
    }
    to_close_.clear();
  }

  std::string token_;
  size_t max_connections_;
  uint64_t max_input_;
  std::chrono::milliseconds hello_timeout_;
  RequestLimits limits_;
  std::deque<std::pair<Clock::time_point, ConnId>> hello_deadlines_;
  RateLimitedLog cap_log_;
  Fd listen_, epoll_, wake_;
  int port_ = 0;
  std::thread thread_;
  std::mutex stop_mu_;
  std::atomic<bool> stopping_{false};
  std::unordered_map<ConnId, std::unique_ptr<Connection>> conns_;
  std::vector<ConnId> to_close_;
  StoreState state_;
  ConnId next_id_ = 2;
  bool accept_paused_ = false;
  Clock::time_point accept_resume_at_{};
};

}  // namespace
}  // namespace store

std::unique_ptr<TCPStoreServer> TCPStoreServer::start(int port, const std::string& token) {
  return start(TCPStoreOptions().port(port).token(token));
}

std::unique_ptr<TCPStoreServer> TCPStoreServer::start(const TCPStoreOptions& options) {
  return std::make_unique<store::Server>(options);
}

}  // namespace ddp
