// The store server: one thread running an epoll loop over non-blocking sockets. Requests are
// handled in server_request.cpp against StoreState; a WAIT never blocks the loop (the reply is
// queued when a later mutation completes it).
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
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

class Server final : public TCPStoreServer {
 public:
  Server(int port, std::string token) : token_(std::move(token)) {
    listen_ = listen_all_interfaces(port, 4096);
    port_ = bound_port(listen_.get());
    epoll_ = Fd(::epoll_create1(EPOLL_CLOEXEC));
    wake_ = Fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!epoll_.valid() || !wake_.valid())
      throw StoreError(std::string("store server: epoll/eventfd: ") + std::strerror(errno));
    add_fd(listen_.get(), kListenId, EPOLLIN);
    add_fd(wake_.get(), kWakeId, EPOLLIN);
    thread_ = std::thread([this] { run(); });
    DDP_LOG(DEBUG) << "store server listening on port " << port_
                   << (token_.empty() ? "" : " (token required)");
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
      int timeout_ms = accept_paused_ ? 100 : -1;
      int n = ::epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), timeout_ms);
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
      close_pending();
      if (accept_paused_ && Clock::now() >= accept_resume_at_) resume_accept();
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
        budget -= std::min(budget, static_cast<size_t>(n));
        if (c.unparsed() > kMaxBufferedInput) {
          close_with(c, "request larger than " + std::to_string(kMaxBufferedInput) + " bytes");
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
    RequestContext ctx{state_, token_, woken};
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
    } else if (c.unsent() > kMaxBufferedOutput) {
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
  return std::make_unique<store::Server>(port, token);
}

}  // namespace ddp
