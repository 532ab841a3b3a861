#pragma once
// A ddp::Store kept in a directory shared by the test's processes (one file per key). Test-only:
// it lets the process-group tests run without a TCP store server.

#include <ddp/store.h>

#include <string>

namespace ddp::testing {

class DirStore : public Store {
 public:
  explicit DirStore(std::string dir);

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
  std::string path(const std::string& key) const;
  bool read(const std::string& key, Bytes* out) const;
  void write(const std::string& key, const Bytes& value);
  std::string dir_;
};

}  // namespace ddp::testing
