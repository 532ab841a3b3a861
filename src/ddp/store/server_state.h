#pragma once
// The server's key-value map and the clients blocked in WAIT. Pure logic, no sockets: every
// mutation reports which connections' WAITs it completed, and the event loop answers them.

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ddp/store/wire.h"

namespace ddp::store {

using ConnId = uint64_t;

class StoreState {
 public:
  void set(const std::string& key, Bytes value, std::vector<ConnId>* woken);
  /// c10d semantics: when the key is missing it is created only if `expected` is empty, and the
  /// reply is `desired` (created) or `expected` (not created); when present, it is replaced if equal
  /// to `expected`. Returns the reply.
  Bytes compare_set(const std::string& key, const Bytes& expected, Bytes desired,
                    std::vector<ConnId>* woken);
  /// Adds to the ASCII decimal counter (0 when missing). nullopt when the stored value is not an
  /// integer or the sum overflows (the value is left alone then).
  std::optional<int64_t> add(const std::string& key, int64_t delta, std::vector<ConnId>* woken);
  void append(const std::string& key, const Bytes& value, std::vector<ConnId>* woken);
  const Bytes* get(const std::string& key) const;
  bool check(const std::vector<std::string>& keys) const;
  bool delete_key(const std::string& key);
  int64_t num_keys() const { return static_cast<int64_t>(kv_.size()); }
  std::vector<std::string> keys() const;

  /// Bytes held: every key plus its value, and for each queued item its queue's name plus the item.
  uint64_t stored_bytes() const { return bytes_; }
  /// What `key` costs now in stored_bytes() (0 when absent).
  uint64_t entry_bytes(const std::string& key) const;

  // c10d's queues (2.x QUEUE_PUSH/QUEUE_POP/QUEUE_LEN): a WAIT on a queue's name returns once the
  // queue is non-empty; a push wakes one such waiter.
  void queue_push(const std::string& queue, Bytes value, std::vector<ConnId>* woken);
  /// The length before popping, and the popped value when there was one.
  std::pair<int64_t, std::optional<Bytes>> queue_pop(const std::string& queue);
  int64_t queue_len(const std::string& queue) const;
  /// Size of the item QUEUE_POP would return (0 when the queue is empty).
  uint64_t queue_front_bytes(const std::string& queue) const;

  /// True when every key exists now (answer at once); otherwise `conn` waits for the missing ones
  /// (replacing any WAIT it had pending) and is reported by a later mutation.
  bool wait(ConnId conn, const std::vector<std::string>& keys);
  /// Drops `conn`'s pending WAIT, if any.
  void cancel_wait(ConnId conn);
  /// Number of connections blocked in WAIT (for tests and logs).
  size_t waiting_connections() const { return pending_.size(); }

 private:
  void wake(const std::string& key, std::vector<ConnId>* woken, bool only_one = false);
  bool present(const std::string& key) const;

  /// Replaces kv_[key] by `value`, keeping bytes_ in step.
  void put(const std::string& key, Bytes value);

  uint64_t bytes_ = 0;
  std::unordered_map<std::string, Bytes> kv_;
  std::unordered_map<std::string, std::deque<Bytes>> queues_;
  std::unordered_map<std::string, std::vector<ConnId>> waiters_;  // key -> connections waiting on it
  std::unordered_map<ConnId, std::unordered_set<std::string>> pending_;  // conn -> keys still missing
};

}  // namespace ddp::store
