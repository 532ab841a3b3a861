// ddp::PrefixStore: "<prefix>/<key>" on top of any store, as c10d's PrefixStore lays keys out.
#include <ddp/errors.h>
#include <ddp/store.h>

namespace ddp {

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> base)
    : prefix_(std::move(prefix)), base_(std::move(base)) {
  if (!base_) throw ConfigError("PrefixStore('" + prefix_ + "') needs a base store, got null");
  timeout_ = base_->timeout();
}

void PrefixStore::set(const std::string& key, const Bytes& value) { base_->set(k(key), value); }

Store::Bytes PrefixStore::get(const std::string& key) {
  // Wait with this view's timeout first; the base's get() then finds the key at once.
  base_->wait({k(key)}, timeout_);
  return base_->get(k(key));
}

int64_t PrefixStore::add(const std::string& key, int64_t delta) { return base_->add(k(key), delta); }

Store::Bytes PrefixStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  return base_->compare_set(k(key), expected, desired);
}

bool PrefixStore::check(const std::vector<std::string>& keys) {
  std::vector<std::string> prefixed;
  prefixed.reserve(keys.size());
  for (const auto& key : keys) prefixed.push_back(k(key));
  return base_->check(prefixed);
}

void PrefixStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  std::vector<std::string> prefixed;
  prefixed.reserve(keys.size());
  for (const auto& key : keys) prefixed.push_back(k(key));
  base_->wait(prefixed, timeout);
}

bool PrefixStore::delete_key(const std::string& key) { return base_->delete_key(k(key)); }

/// Like c10d's PrefixStore: the base store's count (keys are not tracked per prefix).
int64_t PrefixStore::num_keys() { return base_->num_keys(); }

}  // namespace ddp
