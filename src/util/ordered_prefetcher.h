#pragma once
// Produces batches 0..count-1 on background threads and hands them out in order.
//
// Each batch is a pure function of its index (the producer must not depend on which thread runs it
// or when), so what the consumer sees is deterministic regardless of thread timing. At most
// `capacity` batches are produced ahead of the consumer (a bounded queue of ready batches).
//
//   OrderedPrefetcher<Batch> batches(num_batches, [&](int64_t i) { return make_batch(i); },
//                                    PrefetchOptions().workers(2).capacity(4));
//   while (auto b = batches.next()) train_on(*b);
//
// An exception thrown by the producer for batch i is rethrown by the next() that would return i.
// workers(0) produces each batch inline inside next() (no threads).

#include <torch/arg.h>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace ddp::util {

struct PrefetchOptions {
  /// background threads; 0: produce inline in next()
  TORCH_ARG(int, workers) = 1;
  /// batches produced ahead of the consumer (>= 1)
  TORCH_ARG(int, capacity) = 4;
};

template <typename T>
class OrderedPrefetcher {
 public:
  using Producer = std::function<T(int64_t index)>;

  OrderedPrefetcher(int64_t count, Producer produce, PrefetchOptions options = {})
      : count_(count), produce_(std::move(produce)), capacity_(options.capacity()) {
    if (count_ < 0) throw std::invalid_argument("OrderedPrefetcher: negative batch count");
    if (options.workers() < 0) throw std::invalid_argument("OrderedPrefetcher: negative worker count");
    if (capacity_ < 1) throw std::invalid_argument("OrderedPrefetcher: capacity must be >= 1");
    int workers = static_cast<int>(std::min<int64_t>(options.workers(), count_));
    threads_.reserve(workers);
    for (int w = 0; w < workers; ++w) threads_.emplace_back([this] { work(); });
  }

  ~OrderedPrefetcher() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

  OrderedPrefetcher(const OrderedPrefetcher&) = delete;
  OrderedPrefetcher& operator=(const OrderedPrefetcher&) = delete;

  /// The next batch in index order, or nullopt after the last one.
  std::optional<T> next() {
    if (delivered_ >= count_) return std::nullopt;
    const int64_t index = delivered_;
    if (threads_.empty()) {
      ++delivered_;
      return produce_(index);
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return ready_.count(index) != 0; });
    Slot slot = std::move(ready_.at(index));
    ready_.erase(index);
    ++delivered_;
    lock.unlock();
    cv_.notify_all();  // a worker may now claim one more index
    if (slot.error) std::rethrow_exception(slot.error);
    return std::move(slot.value);
  }

  int64_t size() const { return count_; }
  int64_t delivered() const { return delivered_; }

 private:
  struct Slot {
    std::optional<T> value;
    std::exception_ptr error;
  };

  void work() {
    for (;;) {
      int64_t index;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || claimed_ >= count_ || claimed_ < delivered_ + capacity_; });
        if (stop_ || claimed_ >= count_) return;
        index = claimed_++;
      }
      Slot slot;
      try {
        slot.value.emplace(produce_(index));
      } catch (...) {
        slot.error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        ready_.emplace(index, std::move(slot));
      }
      cv_.notify_all();
    }
  }

  const int64_t count_;
  const Producer produce_;
  const int64_t capacity_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int64_t, Slot> ready_;
  int64_t claimed_ = 0;    // next index a worker will take (guarded by mu_)
  int64_t delivered_ = 0;  // next index next() returns (written by the consumer under mu_)
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace ddp::util
