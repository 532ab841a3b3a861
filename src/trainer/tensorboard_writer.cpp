#include "trainer/tensorboard_writer.h"

#include <ddp/errors.h>
#include <ddp/logging.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "trainer/tensorboard_record.h"
#include "util/files.h"
#include "util/host_name.h"

namespace ddp::trainer::tensorboard {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPrefix = "events.out.tfevents.";

double wall_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// TensorBoard's test for an event file (tensorboard/backend/event_processing/io_wrapper.py,
// data/server/logdir.rs): the name contains "tfevents".
std::vector<std::string> event_file_names(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find("tfevents") != std::string::npos && it->is_regular_file(ec)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The <secs> of "events.out.tfevents.<secs>.<...>", or -1.
long long name_seconds(const std::string& name) {
  if (name.rfind(kPrefix, 0) != 0) return -1;
  long long secs = 0;
  size_t i = std::strlen(kPrefix);
  if (i >= name.size() || !std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
  for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) && secs < (1LL << 40); ++i)
    secs = secs * 10 + (name[i] - '0');
  return secs;
}

std::string host_name() {
  std::string h = util::host_name().value_or("localhost");
  for (char& c : h)  // a name part: no separators
    if (c == '/' || c == ' ') c = '_';
  return h;
}

// Seconds since the epoch for this file's name: now, or later than every earlier file's, so the
// new file sorts after them (a restart within the same second must not sort before its predecessor).
long long file_seconds(const std::vector<std::string>& existing) {
  long long secs = static_cast<long long>(wall_time_now());
  for (const auto& name : existing) secs = std::max(secs, name_seconds(name) + 1);
  return secs;
}

// write(2) until all of `bytes` is written; false with errno set on failure.
bool write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

EarlierRecords read_earlier_records(const std::string& dir, const std::string& skip_name, int64_t resumed_step) {
  EarlierRecords found;
  for (const auto& name : event_file_names(dir)) {
    if (name == skip_name) continue;
    const std::string path = dir + "/" + name;
    ++found.files;
    try {
      const std::string bytes = util::read_file(path);
      const RecordScan scan = split_records(bytes, path);
      if (!scan.torn_tail.empty()) {
        DDP_LOG(WARN) << "tensorboard: " << path << " ends in a torn record (" << scan.torn_tail
                      << "), what a writer killed mid-write leaves; the records before it count";
      }
      for (const auto& record : scan.records) {
        const Event e = parse_event(record);
        for (const auto& s : e.scalars) {
          if (e.step > resumed_step) {
            ++found.superseded;
          } else {
            auto [it, fresh] = found.kept_upto.emplace(s.tag, e.step);
            if (!fresh) it->second = std::max(it->second, e.step);
          }
        }
      }
    } catch (const ddp::DataError& e) {
      // Someone else's damage: TensorBoard stops reading that file there; our run is not at stake.
      DDP_LOG(WARN) << "tensorboard: " << e.what() << "; its records from there on are not counted";
    }
  }
  return found;
}

EventFileWriter::EventFileWriter(const std::string& dir) {
  try {
    util::make_dirs(dir);
  } catch (const ddp::DataError& e) {
    throw ddp::ConfigError("--tensorboard-dir " + dir + ": " + e.what());
  }
  const std::vector<std::string> existing = event_file_names(dir);
  char name[512];
  std::snprintf(name, sizeof name, "%s%010lld.%s.%d", kPrefix, file_seconds(existing), host_name().c_str(),
                static_cast<int>(::getpid()));
  path_ = dir + "/" + name;
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw ddp::ConfigError("--tensorboard-dir " + dir + ": cannot create " + path_ + " (" + std::strerror(errno) + ")");
  if (!write_all(fd_, frame_record(encode_file_version(wall_time_now())))) {
    const std::string why = std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    throw ddp::ConfigError("--tensorboard-dir " + dir + ": cannot write " + path_ + " (" + why + ")");
  }
}

EventFileWriter::~EventFileWriter() {
  if (fd_ < 0) return;
  sync();
  ::close(fd_);
}

void EventFileWriter::start(int64_t resumed_step) {
  if (started_) throw std::logic_error("EventFileWriter::start called twice");
  started_ = true;
  resumed_step_ = resumed_step;
  const std::string dir = fs::path(path_).parent_path().string();
  const EarlierRecords earlier = read_earlier_records(dir, fs::path(path_).filename().string(), resumed_step);
  kept_upto_ = earlier.kept_upto;
  write_event(encode_session_start(wall_time_now(), resumed_step + 1));
  if (resumed_step > 0 || earlier.files > 0) {
    DDP_LOG(INFO) << "tensorboard: " << path_ << " continues after step " << resumed_step << " (" << earlier.files
                  << " earlier event files; " << earlier.superseded << " of their scalars are after step "
                  << resumed_step << " and TensorBoard shows this run's values there instead)";
  } else {
    DDP_LOG(INFO) << "tensorboard: writing " << path_;
  }
}

void EventFileWriter::scalars(int64_t step, const std::vector<Scalar>& values) {
  if (!started_) throw std::logic_error("EventFileWriter::scalars before start");
  if (fd_ < 0) return;
  std::vector<Scalar> fresh;
  for (const auto& v : values) {
    auto it = kept_upto_.find(v.tag);
    if (it == kept_upto_.end() || step > it->second) fresh.push_back(v);
  }
  if (!fresh.empty()) write_event(encode_scalars(wall_time_now(), step, fresh));
}

void EventFileWriter::sync() {
  if (fd_ >= 0 && ::fdatasync(fd_) != 0 && errno != EINVAL) {
    DDP_LOG(WARN) << "tensorboard: syncing " << path_ << " failed (" << std::strerror(errno) << ")";
  }
}

void EventFileWriter::write_event(const std::string& event) {
  if (fd_ < 0) return;
  if (write_all(fd_, frame_record(event))) return;
  DDP_LOG(WARN) << "tensorboard: writing " << path_ << " failed (" << std::strerror(errno)
                << "); this run writes no more TensorBoard records, training goes on";
  ::close(fd_);
  fd_ = -1;
}

}  // namespace ddp::trainer::tensorboard
