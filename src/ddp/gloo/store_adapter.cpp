#include "ddp/gloo/store_adapter.h"

#include <algorithm>

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
  // Gloo passes its context's timeout, which the group shrinks to a fifth while the pairs connect
  // (process_group_gloo.cpp). A key not yet in the store belongs to a peer that has not started, and
  // a peer is given the group's whole timeout to start: with a 10 s timeout, a rank that came up
  // 2 s after the others failed the rendezvous of all of them (ASan CI, 5 ranks on 2 cores).
  const std::chrono::milliseconds patience = std::max(timeout, timeout_);
  std::vector<std::string> full;
  full.reserve(keys.size());
  for (const auto& k : keys) full.push_back(full_key(k));
  store_->wait(full, patience);
}

}  // namespace ddp::gloo_backend
