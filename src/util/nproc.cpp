#include "util/nproc.h"

#include <ddp/errors.h>
#include <dirent.h>
#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include "util/numbers.h"

namespace ddp::util {
namespace {

std::optional<std::string> read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

int count_nvidia_device_files(const std::string& root) {
  int n = 0;
  DIR* d = ::opendir((root + "/dev").c_str());
  if (!d) return 0;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 6 && name.compare(0, 6, "nvidia") == 0 &&
        std::all_of(name.begin() + 6, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      ++n;
  }
  ::closedir(d);
  return n;
}

// CUDA reads CUDA_VISIBLE_DEVICES up to the first entry it cannot parse; entries are indices or
// GPU-/MIG- UUIDs.
int count_visible_entries(const std::string& value) {
  int n = 0;
  std::stringstream in(value);
  std::string token;
  while (std::getline(in, token, ',')) {
    token.erase(0, token.find_first_not_of(" \t"));
    token.erase(token.find_last_not_of(" \t") + 1);
    bool index = !token.empty() && std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; });
    bool uuid = token.rfind("GPU-", 0) == 0 || token.rfind("MIG-", 0) == 0;
    if (!index && !uuid) break;
    ++n;
  }
  return n;
}

// One cgroup level's CPU limit in CPUs, or nullopt when unlimited / unreadable.
std::optional<double> v2_limit(const std::string& dir, std::string* text) {
  auto line = read_first_line(dir + "/cpu.max");
  if (!line) return std::nullopt;
  std::istringstream in(*line);
  std::string quota;
  long long period = 0;
  in >> quota >> period;
  if (quota == "max" || period <= 0) return std::nullopt;
  // "max" or a positive count of microseconds; anything else reads as no limit.
  const auto q = to_int(quota, 1, std::numeric_limits<long long>::max());
  if (!q) return std::nullopt;
  *text = "cgroup " + dir + "/cpu.max '" + *line + "'";
  return static_cast<double>(*q) / static_cast<double>(period);
}

std::optional<double> v1_limit(const std::string& dir, std::string* text) {
  auto quota = read_first_line(dir + "/cpu.cfs_quota_us");
  auto period = read_first_line(dir + "/cpu.cfs_period_us");
  if (!quota || !period) return std::nullopt;
  // The quota is -1 when unlimited; anything but two positive counts reads as no limit.
  const auto q = to_int(*quota, 1, std::numeric_limits<long long>::max());
  const auto p = to_int(*period, 1, std::numeric_limits<long long>::max());
  if (!q || !p) return std::nullopt;
  *text = "cgroup " + dir + "/cpu.cfs_quota_us " + *quota + " / cpu.cfs_period_us " + *period;
  return static_cast<double>(*q) / static_cast<double>(*p);
}

// The tightest limit from this cgroup up to the hierarchy's root.
std::optional<double> walk_up(const std::string& mount, std::string path, bool v2, std::string* text) {
  std::optional<double> best;
  while (true) {
    std::string t;
    auto limit = v2 ? v2_limit(mount + path, &t) : v1_limit(mount + path, &t);
    if (limit && (!best || *limit < *best)) {
      best = limit;
      *text = t;
    }
    if (path.empty() || path == "/") break;
    size_t slash = path.find_last_of('/');
    path = slash == 0 || slash == std::string::npos ? "" : path.substr(0, slash);
  }
  return best;
}

std::optional<double> cgroup_cpu_limit(const std::string& root, std::string* text) {
  std::ifstream in(root + "/proc/self/cgroup");
  std::string line;
  std::optional<double> best;
  auto consider = [&](std::optional<double> v, const std::string& t) {
    if (v && (!best || *v < *best)) {
      best = v;
      *text = t;
    }
  };
  while (std::getline(in, line)) {
    // "hierarchy-id:controllers:path"; v2 is "0::path".
    size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    std::string t;
    if (controllers.empty()) {
      // In a cgroup namespace the path may not exist under the mount; the mount itself is ours.
      std::optional<double> v = walk_up(root + "/sys/fs/cgroup", path, true, &t);
      if (!v) v = v2_limit(root + "/sys/fs/cgroup", &t);
      consider(v, t);
    } else if (("," + controllers + ",").find(",cpu,") != std::string::npos) {
      for (const std::string mount : {"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"}) {
        std::optional<double> v = walk_up(root + mount, path, false, &t);
        if (!v) v = v1_limit(root + mount, &t);
        consider(v, t);
      }
    }
  }
  return best;
}

// The CUDA driver's device count (cuDeviceGetCount), the count LibTorch's CUDA build reports too.
// The driver is loaded only when a count is asked for: ddprun links neither CUDA nor LibTorch, and
// a machine without the driver has no GPU to count. Not unloaded: the driver keeps its threads.
int cuda_driver_device_count() {
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) return 0;
  using InitFn = int (*)(unsigned int);
  using CountFn = int (*)(int*);
  auto init = reinterpret_cast<InitFn>(::dlsym(driver, "cuInit"));
  auto count = reinterpret_cast<CountFn>(::dlsym(driver, "cuDeviceGetCount"));
  int n = 0;
  if (init == nullptr || count == nullptr || init(0) != 0 || count(&n) != 0) return 0;  // 0: CUDA_SUCCESS
  return n;
}

}  // namespace

Count visible_gpus(const std::map<std::string, std::string>& env, const std::string& root) {
  int files = count_nvidia_device_files(root);
  int driver_count = root.empty() ? cuda_driver_device_count() : 0;
  int physical = std::max(files, driver_count);
  if (physical == 0) return {0, "no GPU (no /dev/nvidia<N>, the CUDA driver reports no device)"};
  auto it = env.find("CUDA_VISIBLE_DEVICES");
  if (it != env.end()) {
    int n = std::min(count_visible_entries(it->second), physical);
    return {n, std::to_string(n) + " GPUs (CUDA_VISIBLE_DEVICES=" + it->second + ")"};
  }
  std::string how = files >= driver_count ? std::to_string(files) + " /dev/nvidia<N> files"
                                          : "the CUDA driver's cuDeviceGetCount";
  return {physical, std::to_string(physical) + " GPUs (" + how + ")"};
}

Count usable_cpus(const std::string& root) {
  int affinity = 0;
  std::string how;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (root.empty() && ::sched_getaffinity(0, sizeof set, &set) == 0) {
    affinity = CPU_COUNT(&set);
    how = "sched_getaffinity";
  } else {
    long online = ::sysconf(_SC_NPROCESSORS_ONLN);
    affinity = online > 0 ? static_cast<int>(online) : 1;
    how = "online CPUs";
  }
  int n = affinity;
  std::string cgroup_text;
  if (auto limit = cgroup_cpu_limit(root, &cgroup_text)) {
    int quota = std::max(1, static_cast<int>(std::ceil(*limit - 1e-9)));
    if (quota < n) {
      n = quota;
      how = cgroup_text;
    }
  }
  n = std::max(n, 1);
  return {n, std::to_string(n) + " CPUs (" + how + ")"};
}

Count auto_nproc(const std::string& mode, const std::string& source, const std::map<std::string, std::string>& env) {
  if (mode == "cpu") return usable_cpus();
  Count gpus = visible_gpus(env);
  if (mode == "gpu") {
    if (gpus.n == 0) throw ConfigError(source + "=gpu but " + gpus.how);
    return gpus;
  }
  if (gpus.n > 0) return gpus;
  return usable_cpus();
}

}  // namespace ddp::util
