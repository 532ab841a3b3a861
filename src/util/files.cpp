#include "util/files.h"

#include <ddp/errors.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/numbers.h"

namespace ddp::util {
namespace {

constexpr const char* kTempMarker = ".tmp-";

std::string reason(int err) { return std::strerror(err); }

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string folder_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void make_dirs(const std::string& dir) {
  if (dir.empty()) return;
  for (size_t pos = dir.find('/', 1);; pos = dir.find('/', pos + 1)) {
    const std::string partial = dir.substr(0, pos);
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
      throw DataError("cannot create folder " + dir + ": mkdir " + partial + " failed: " + reason(errno));
    if (pos == std::string::npos) break;
  }
  if (!is_directory(dir)) throw DataError("cannot create folder " + dir + ": it exists and is not a folder");
}

std::string temp_path_for(const std::string& path) {
  const auto slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  // pid and thread id: writers of the same path in other processes or threads never share a file.
  return folder + "." + name + kTempMarker + std::to_string(::getpid()) + "-" +
         std::to_string(static_cast<long>(::syscall(SYS_gettid)));
}

std::optional<pid_t> temp_file_writer(const std::string& file_name) {
  if (file_name.empty() || file_name[0] != '.') return std::nullopt;
  const auto at = file_name.rfind(kTempMarker);
  if (at == std::string::npos) return std::nullopt;
  // "<pid>-<tid>"; a bare "<pid>" is what writers before the thread id left behind.
  const std::string ids = file_name.substr(at + std::strlen(kTempMarker));
  const auto dash = ids.find('-');
  if (dash != std::string::npos && !to_int(ids.substr(dash + 1), 1, 1LL << 31)) return std::nullopt;
  auto pid = to_int(ids.substr(0, dash), 1, 1LL << 31);
  if (!pid) return std::nullopt;
  return static_cast<pid_t>(*pid);
}

namespace {

// The read behind read_file and read_file_bytes, into either buffer without a copy between them.
template <typename Buffer>
Buffer read_whole(const std::string& path, size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) throw DataError(path + ": file not found");
    throw DataError(path + ": cannot open (" + reason(err) + ")");
  }
  Buffer out;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) <= max_bytes)
    out.reserve(static_cast<size_t>(st.st_size));  // one allocation; the read loop still decides
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw DataError(path + ": read failed after " + std::to_string(out.size()) + " bytes (" + reason(err) + ")");
    }
    if (n == 0) break;
    if (static_cast<size_t>(n) > max_bytes - out.size()) {
      ::close(fd);
      throw DataError(path + ": more than " + std::to_string(max_bytes) + " bytes, larger than such a file may be");
    }
    out.insert(out.end(), buf, buf + n);
  }
  ::close(fd);
  return out;
}

}  // namespace

std::string read_file(const std::string& path, size_t max_bytes) { return read_whole<std::string>(path, max_bytes); }

std::vector<uint8_t> read_file_bytes(const std::string& path, size_t max_bytes) {
  return read_whole<std::vector<uint8_t>>(path, max_bytes);
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

void write_file_atomically(const std::string& path, std::initializer_list<std::string_view> parts,
                           Durability durability) {
  const std::string tmp = temp_path_for(path);
  auto fail = [&](const std::string& step, int err) {
    ::unlink(tmp.c_str());
    return DataError("cannot write " + path + ": " + step + " failed: " + reason(err));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw fail("creating " + tmp, errno);
  for (std::string_view part : parts) {
    if (!write_all(fd, part)) {
      const int err = errno;
      ::close(fd);
      throw fail("writing " + tmp, err);
    }
  }
  if (durability == Durability::kSynced && ::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    throw fail("fsync of " + tmp, err);
  }
  if (::close(fd) != 0) throw fail("closing " + tmp, errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) throw fail("rename of " + tmp, errno);
  if (durability != Durability::kSynced) return;
  // The rename is durable only once the folder's entry is on disk.
  const std::string folder = folder_of(path);
  const int dfd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) throw DataError("cannot write " + path + ": opening " + folder + " for fsync failed: " + reason(errno));
  const int rc = ::fsync(dfd);
  const int err = errno;
  ::close(dfd);
  if (rc != 0 && err != EINVAL)  // some filesystems cannot fsync folders; the rename still happened
    throw DataError("cannot write " + path + ": fsync of " + folder + " failed: " + reason(err));
}

}  // namespace ddp::util
