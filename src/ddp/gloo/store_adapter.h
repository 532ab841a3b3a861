#pragma once
// Lets Gloo's rendezvous (connectFullMesh) talk to a ddp::Store: every key Gloo writes or reads is
// placed under `prefix` + "/" so it cannot collide with other users of the same store.

#include <ddp/store.h>
#include <gloo/rendezvous/store.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace ddp::gloo_backend {

class GlooStoreAdapter : public ::gloo::rendezvous::Store {
 public:
  /// `timeout` bounds every blocking get/wait that does not pass its own.
  GlooStoreAdapter(std::shared_ptr<ddp::Store> store, std::string prefix, std::chrono::milliseconds timeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

  /// The full key in the underlying store (for messages).
  std::string full_key(const std::string& key) const { return prefix_ + "/" + key; }

 private:
  std::shared_ptr<ddp::Store> store_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
};

}  // namespace ddp::gloo_backend
