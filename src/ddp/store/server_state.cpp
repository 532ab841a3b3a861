#include "ddp/store/server_state.h"

#include <algorithm>
#include <string>

namespace ddp::store {

void StoreState::put(const std::string& key, Bytes value) {
  auto [it, inserted] = kv_.try_emplace(key);
  bytes_ -= inserted ? 0 : key.size() + it->second.size();
  bytes_ += key.size() + value.size();
  it->second = std::move(value);
}

uint64_t StoreState::entry_bytes(const std::string& key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? 0 : key.size() + it->second.size();
}

void StoreState::set(const std::string& key, Bytes value, std::vector<ConnId>* woken) {
  put(key, std::move(value));
  wake(key, woken);
}

Bytes StoreState::compare_set(const std::string& key, const Bytes& expected, Bytes desired,
                              std::vector<ConnId>* woken) {
  auto it = kv_.find(key);
  if (it == kv_.end()) {
    if (!expected.empty()) return expected;  // c10d answers `expected` here, without creating it
    put(key, desired);
    wake(key, woken);
    return desired;
  }
  if (it->second == expected) put(key, std::move(desired));
  return kv_[key];
}

std::optional<int64_t> StoreState::add(const std::string& key, int64_t delta,
                                       std::vector<ConnId>* woken) {
  int64_t current = 0;
  auto it = kv_.find(key);
  if (it != kv_.end()) {
    auto parsed = parse_counter(it->second);
    if (!parsed) return std::nullopt;
    current = *parsed;
  }
  int64_t sum;
  if (__builtin_add_overflow(current, delta, &sum)) return std::nullopt;
  std::string text = std::to_string(sum);
  put(key, Bytes(text.begin(), text.end()));
  wake(key, woken);
  return sum;
}

void StoreState::append(const std::string& key, const Bytes& value, std::vector<ConnId>* woken) {
  auto [it, inserted] = kv_.try_emplace(key);
  bytes_ += (inserted ? key.size() : 0) + value.size();
  it->second.insert(it->second.end(), value.begin(), value.end());
  wake(key, woken);
}

const Bytes* StoreState::get(const std::string& key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

bool StoreState::present(const std::string& key) const {
  if (kv_.count(key)) return true;
  auto q = queues_.find(key);
  return q != queues_.end() && !q->second.empty();
}

bool StoreState::check(const std::vector<std::string>& keys) const {
  return std::all_of(keys.begin(), keys.end(), [&](const std::string& k) { return present(k); });
}

void StoreState::queue_push(const std::string& queue, Bytes value, std::vector<ConnId>* woken) {
  bytes_ += queue.size() + value.size();
  queues_[queue].push_back(std::move(value));
  wake(queue, woken, /*only_one=*/true);
}

std::pair<int64_t, std::optional<Bytes>> StoreState::queue_pop(const std::string& queue) {
  auto it = queues_.find(queue);
  if (it == queues_.end() || it->second.empty()) return {0, std::nullopt};
  auto len = static_cast<int64_t>(it->second.size());
  Bytes front = std::move(it->second.front());
  it->second.pop_front();
  bytes_ -= queue.size() + front.size();
  if (it->second.empty()) queues_.erase(it);
  return {len, std::move(front)};
}

int64_t StoreState::queue_len(const std::string& queue) const {
  auto it = queues_.find(queue);
  return it == queues_.end() ? 0 : static_cast<int64_t>(it->second.size());
}

uint64_t StoreState::queue_front_bytes(const std::string& queue) const {
  auto it = queues_.find(queue);
  return it == queues_.end() || it->second.empty() ? 0 : it->second.front().size();
}

bool StoreState::delete_key(const std::string& key) {
  auto it = kv_.find(key);
  if (it == kv_.end()) return false;
  bytes_ -= key.size() + it->second.size();
  kv_.erase(it);
  return true;
}

std::vector<std::string> StoreState::keys() const {
  std::vector<std::string> out;
  out.reserve(kv_.size());
  for (const auto& kv : kv_) out.push_back(kv.first);
  return out;
}

bool StoreState::wait(ConnId conn, const std::vector<std::string>& keys) {
  cancel_wait(conn);
  std::unordered_set<std::string> missing;
  for (const auto& k : keys)
    if (!present(k)) missing.insert(k);
  if (missing.empty()) return true;
  for (const auto& k : missing) waiters_[k].push_back(conn);
  pending_.emplace(conn, std::move(missing));
  return false;
}

void StoreState::cancel_wait(ConnId conn) {
  auto it = pending_.find(conn);
  if (it == pending_.end()) return;
  for (const auto& k : it->second) {
    auto w = waiters_.find(k);
    if (w == waiters_.end()) continue;
    auto& v = w->second;
    v.erase(std::remove(v.begin(), v.end(), conn), v.end());
    if (v.empty()) waiters_.erase(w);
  }
  pending_.erase(it);
}

void StoreState::wake(const std::string& key, std::vector<ConnId>* woken, bool only_one) {
  auto w = waiters_.find(key);
  if (w == waiters_.end()) return;
  auto& conns = w->second;
  size_t i = 0;
  for (; i < conns.size(); ++i) {
    auto p = pending_.find(conns[i]);
    if (p == pending_.end()) continue;
    p->second.erase(key);
    if (p->second.empty()) {
      pending_.erase(p);
      woken->push_back(conns[i]);
      if (only_one) {
        ++i;
        break;
      }
    }
  }
  // A queue push wakes one waiter; the ones after it keep waiting for the next push.
  conns.erase(conns.begin(), conns.begin() + static_cast<std::ptrdiff_t>(i));
  if (conns.empty()) waiters_.erase(w);
}

}  // namespace ddp::store
