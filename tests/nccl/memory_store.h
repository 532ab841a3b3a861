#pragma once
// An in-process ddp::Store for single-process NCCL tests (world size 1), so they need no TCP store.

#include <ddp/errors.h>
#include <ddp/store.h>

#include <condition_variable>
#include <map>
#include <mutex>

namespace ddp::testing {

class MemoryStore : public Store {
 public:
  void set(const std::string& key, const Bytes& value) override {
    std::lock_guard<std::mutex> lk(mu_);
    data_[key] = value;
    cv_.notify_all();
  }
  Bytes get(const std::string& key) override {
    wait({key}, timeout());
    std::lock_guard<std::mutex> lk(mu_);
    return data_.at(key);
  }
  int64_t add(const std::string& key, int64_t delta) override {
    std::lock_guard<std::mutex> lk(mu_);
    auto& v = data_[key];
    int64_t n = (v.empty() ? 0 : std::stoll(std::string(v.begin(), v.end()))) + delta;
    std::string s = std::to_string(n);
    v.assign(s.begin(), s.end());
    cv_.notify_all();
    return n;
  }
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = data_.find(key);
    if ((it == data_.end() && expected.empty()) || (it != data_.end() && it->second == expected)) {
      data_[key] = desired;
      cv_.notify_all();
      return desired;
    }
    return it == data_.end() ? expected : it->second;
  }
  bool check(const std::vector<std::string>& keys) override {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& k : keys)
      if (!data_.count(k)) return false;
    return true;
  }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lk(mu_);
    bool ok = cv_.wait_for(lk, timeout, [&] {
      for (auto& k : keys)
        if (!data_.count(k)) return false;
      return true;
    });
    if (!ok) throw TimeoutError("MemoryStore: keys not set in time");
  }
  using Store::wait;
  bool delete_key(const std::string& key) override {
    std::lock_guard<std::mutex> lk(mu_);
    return data_.erase(key) > 0;
  }
  int64_t num_keys() override {
    std::lock_guard<std::mutex> lk(mu_);
    return static_cast<int64_t>(data_.size());
  }
  using Store::set;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Bytes> data_;
};

}  // namespace ddp::testing
