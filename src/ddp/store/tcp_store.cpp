// ddp::TCPStore: the optional in-process server plus one client connection behind a mutex.
#include <mutex>

#include <ddp/errors.h>
#include <ddp/store.h>

#include "ddp/store/client.h"

namespace ddp {

struct TCPStore::Impl {
  TCPStoreOptions options;
  std::unique_ptr<TCPStoreServer> server;
  std::mutex mu;  // one request/response at a time on the connection
  std::unique_ptr<store::Client> client;
  int port = 0;
};

TCPStore::TCPStore(TCPStoreOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  const auto& o = impl_->options;
  timeout_ = o.timeout();
  impl_->port = o.port();
  if (o.is_server()) {
    impl_->server = TCPStoreServer::start(o);
    impl_->port = impl_->server->port();
  }
  store::ClientOptions co;
  co.host(o.host()).port(impl_->port).connect_timeout(o.connect_timeout()).token(o.token());
  impl_->client = std::make_unique<store::Client>(std::move(co));
}

TCPStore::~TCPStore() {
  if (!impl_) return;
  impl_->client.reset();  // close our connection before the server goes away
  impl_->server.reset();
}

const std::string& TCPStore::host() const { return impl_->options.host(); }
int TCPStore::port() const { return impl_->port; }

void TCPStore::set(const std::string& key, const Bytes& value) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->client->set(key, value, timeout_);
}

Store::Bytes TCPStore::get(const std::string& key) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->client->get(key, timeout_);
}

int64_t TCPStore::add(const std::string& key, int64_t delta) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->client->add(key, delta, timeout_);
}

Store::Bytes TCPStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->client->compare_set(key, expected, desired, timeout_);
}

bool TCPStore::check(const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->client->check(keys, timeout_);
}

void TCPStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->client->wait(keys, timeout);
}

bool TCPStore::delete_key(const std::string& key) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->client->delete_key(key, timeout_);
}

int64_t TCPStore::num_keys() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->client->num_keys(timeout_);
}

}  // namespace ddp
