#include "ddp/gloo/store_adapter.h"

namespace ddp::gloo_backend {

GlooStoreAdapter::GlooStoreAdapter(std::shared_ptr<ddp::Store> store, std::string prefix,
                                   std::chrono::milliseconds timeout)
    : store_(std::move(store)), prefix_(std::move(prefix)), timeout_(timeout) {}

void GlooStoreAdapter::set(const std::string& key, const std::vector<char>& data) {
  store_->set(full_key(key), ddp::Store::Bytes(data.begin(), data.end()));
}

std::vector<char> GlooStoreAdapter::get(const std::string& key) {
  // ddp::Store::get blocks only up to the store's own timeout; wait first so the group's timeout
  // governs how long we give a late peer.
  wait({key}, timeout_);
  ddp::Store::Bytes b = store_->get(full_key(key));
  return std::vector<char>(b.begin(), b.end());
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void GlooStoreAdapter::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  std::vector<std::string> full;
  full.reserve(keys.size());
  for (const auto& k : keys) full.push_back(full_key(k));
  store_->wait(full, timeout);
}

}  // namespace ddp::gloo_backend
