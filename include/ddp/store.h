#pragma once
// Key-value store for rendezvous, wire-compatible with PyTorch's c10d TCPStore.
//
// One process (rank 0, or the launcher) hosts the server; every rank talks to it as a client. Our
// client works against a c10d TCPStore server (torchrun, TorchElastic agents) and c10d clients work
// against our server. Values are bytes; add() keeps its counter as ASCII decimal, as c10d does.
//
//   ddp::TCPStore store(ddp::TCPStoreOptions().host("10.0.0.1").port(23456).is_server(rank == 0));
//   store.set("ready/" + std::to_string(rank), "1");
//   store.wait({"ready/0", "ready/1"});
//   int64_t n = store.add("joined", 1);

#include <ddp/export.h>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <torch/arg.h>

namespace ddp {

/// Abstract store: the operations of c10d::Store that ddp uses.
class DDP_API Store {
 public:
  using Bytes = std::vector<uint8_t>;
  virtual ~Store() = default;

  virtual void set(const std::string& key, const Bytes& value) = 0;
  /// Blocks until `key` exists (up to timeout()), then returns its value. TimeoutError after.
  virtual Bytes get(const std::string& key) = 0;
  /// Adds `delta` to the integer at `key` (0 when missing) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  /// Sets `key` to `desired` if its value is `expected` (or it is missing and `expected` is empty);
  /// returns the value after the operation.
  virtual Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) = 0;
  /// True when every key exists, without waiting.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  /// Blocks until every key exists; TimeoutError naming the missing keys after `timeout`.
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout()); }
  /// Returns true when the key existed.
  virtual bool delete_key(const std::string& key) = 0;
  virtual int64_t num_keys() = 0;

  std::chrono::milliseconds timeout() const { return timeout_; }
  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

  // String conveniences.
  void set(const std::string& key, const std::string& value) { set(key, Bytes(value.begin(), value.end())); }
  std::string get_string(const std::string& key) {
    Bytes b = get(key);
    return std::string(b.begin(), b.end());
  }

 protected:
  std::chrono::milliseconds timeout_{std::chrono::minutes(5)};
};

/// A view of another store with every key prefixed by "<prefix>/" (c10d's PrefixStore layout).
class DDP_API PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> base);
  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::wait;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  using Store::set;

 private:
  std::string prefix_;
  std::shared_ptr<Store> base_;
  std::string k(const std::string& key) const { return prefix_ + "/" + key; }
};

/// $DDP_STORE_TOKEN, or "" when unset: the default shared secret of TCPStoreOptions and TCPStoreServer.
inline std::string default_store_token() {
  const char* v = std::getenv("DDP_STORE_TOKEN");
  return v ? v : "";
}

/// Options for TCPStore; chained setters as in LibTorch's *Options.
struct TCPStoreOptions {
  TORCH_ARG(std::string, host) = "127.0.0.1";
  /// 0 with is_server: pick a free port (read it back with TCPStore::port()).
  TORCH_ARG(int, port) = 29500;
  /// Host the server in this process too (on bind_address(), by default all interfaces).
  TORCH_ARG(bool, is_server) = false;
  /// Per-operation timeout (get, wait).
  TORCH_ARG(std::chrono::milliseconds, timeout) = std::chrono::minutes(5);
  /// How long to keep retrying DNS failures and refused connections before giving up.
  TORCH_ARG(std::chrono::milliseconds, connect_timeout) = std::chrono::minutes(5);
  /// Shared secret (ours, not c10d's): when non-empty, the server refuses clients without it and
  /// the client presents it. Defaults to $DDP_STORE_TOKEN; token("") turns it off explicitly.
  /// A c10d (PyTorch) client cannot join a server that has a token.
  TORCH_ARG(std::string, token) = default_store_token();

  // The server's resource model (used with is_server and by TCPStoreServer::start(options); see
  // docs/STORE.md for why each default is what it is). A client over a limit has its connection
  // closed with a logged reason; the server and every other client carry on.

  /// Address the server listens on: "" = all interfaces (IPv6 dual-stack, else IPv4), as torch's
  /// TCPStore; an IP or host name binds that one address (ConfigError when it is not local).
  TORCH_ARG(std::string, bind_address) = "";
  /// Connections the server holds at once; further ones are accepted and closed at once.
  TORCH_ARG(int, max_connections) = 8192;
  /// Bytes of keys plus values (and queued items) the server stores in all.
  TORCH_ARG(uint64_t, max_stored_bytes) = 1ull << 30;
  /// Unparsed request bytes one connection may buffer (one request must fit).
  TORCH_ARG(uint64_t, max_connection_input_bytes) = 80ull << 20;
  /// Reply bytes one connection may leave unread; checked before a reply is built.
  TORCH_ARG(uint64_t, max_connection_output_bytes) = 256ull << 20;
  /// How long a new connection has to present its token hello and its first request (with a
  /// token), or to finish a first request it has begun (without one: a silent connection is kept,
  /// as c10d 1.x clients connect and stay silent until their first operation).
  TORCH_ARG(std::chrono::milliseconds, hello_timeout) = std::chrono::seconds(60);
};

/// The TCP store: a client connection, plus the server when options.is_server().
class DDP_API TCPStore : public Store {
 public:
  explicit TCPStore(TCPStoreOptions options);
  ~TCPStore() override;
  TCPStore(const TCPStore&) = delete;
  TCPStore& operator=(const TCPStore&) = delete;

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::wait;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  using Store::set;

  const std::string& host() const;
  /// The server's port (the chosen one when options.port() was 0).
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A standalone store server (what ddprun hosts so the store outlives worker restarts).
class DDP_API TCPStoreServer {
 public:
  /// Listens on `port` (0: a free one) on all interfaces (IPv6 dual-stack, else IPv4);
  /// `token` as in TCPStoreOptions (default $DDP_STORE_TOKEN); the other limits at their defaults.
  /// Throws StoreError.
  static std::unique_ptr<TCPStoreServer> start(int port, const std::string& token = default_store_token());
  /// Listens on options.port() / bind_address() with options.token() and the limits in `options`.
  static std::unique_ptr<TCPStoreServer> start(const TCPStoreOptions& options);
  virtual ~TCPStoreServer() = default;
  virtual int port() const = 0;
  /// Stops accepting and closes every connection; idempotent.
  virtual void stop() = 0;
};

}  // namespace ddp
