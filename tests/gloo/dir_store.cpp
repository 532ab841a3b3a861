#include "dir_store.h"

#include <ddp/errors.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

namespace ddp::testing {
namespace {

// Serializes read-modify-write operations (add, compare_set) across processes.
class DirLock {
 public:
  explicit DirLock(const std::string& dir) : fd_(::open((dir + "/.lock").c_str(), O_CREAT | O_RDWR, 0600)) {
    if (fd_ < 0 || flock(fd_, LOCK_EX) != 0) throw StoreError("DirStore: cannot lock " + dir);
  }
  ~DirLock() {
    flock(fd_, LOCK_UN);
    ::close(fd_);
  }

 private:
  int fd_;
};

}  // namespace

DirStore::DirStore(std::string dir) : dir_(std::move(dir)) {}

std::string DirStore::path(const std::string& key) const {
  static const char* hex = "0123456789abcdef";
  std::string name = "k_";
  for (unsigned char c : key) {
    name += hex[c >> 4];
    name += hex[c & 15];
  }
  return dir_ + "/" + name;
}

bool DirStore::read(const std::string& key, Bytes* out) const {
  std::ifstream in(path(key), std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

void DirStore::write(const std::string& key, const Bytes& value) {
  std::ostringstream tmp;
  tmp << dir_ << "/.tmp-" << getpid() << "-" << std::this_thread::get_id();
  {
    std::ofstream out(tmp.str(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(value.data()), static_cast<std::streamsize>(value.size()));
    if (!out) throw StoreError("DirStore: cannot write " + tmp.str());
  }
  if (std::rename(tmp.str().c_str(), path(key).c_str()) != 0) throw StoreError("DirStore: cannot rename to " + path(key));
}

void DirStore::set(const std::string& key, const Bytes& value) { write(key, value); }

Store::Bytes DirStore::get(const std::string& key) {
  wait({key}, timeout());
  Bytes b;
  if (!read(key, &b)) throw StoreError("DirStore: key '" + key + "' vanished");
  return b;
}

int64_t DirStore::add(const std::string& key, int64_t delta) {
  DirLock lock(dir_);
  Bytes b;
  int64_t v = read(key, &b) ? std::stoll(std::string(b.begin(), b.end())) : 0;
  v += delta;
  std::string s = std::to_string(v);
  write(key, Bytes(s.begin(), s.end()));
  return v;
}

Store::Bytes DirStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  DirLock lock(dir_);
  Bytes current;
  bool exists = read(key, &current);
  if ((!exists && expected.empty()) || (exists && current == expected)) {
    write(key, desired);
    return desired;
  }
  return current;
}

bool DirStore::check(const std::vector<std::string>& keys) {
  for (const auto& k : keys)
    if (::access(path(k).c_str(), F_OK) != 0) return false;
  return true;
}

void DirStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!check(keys)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string missing;
      for (const auto& k : keys)
        if (::access(path(k).c_str(), F_OK) != 0) missing += (missing.empty() ? "" : ", ") + k;
      throw TimeoutError("DirStore: keys not set within " + std::to_string(timeout.count()) + " ms: " + missing);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

bool DirStore::delete_key(const std::string& key) { return ::unlink(path(key).c_str()) == 0; }

int64_t DirStore::num_keys() {
  int64_t n = 0;
  if (DIR* d = opendir(dir_.c_str())) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name).rfind("k_", 0) == 0) ++n;
    closedir(d);
  }
  return n;
}

}  // namespace ddp::testing
