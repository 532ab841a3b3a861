#pragma once
// How many workers "--nproc-per-node auto|gpu|cpu" means in this container.
#include <map>
#include <string>

namespace ddp::util {

struct Count {
  int n = 0;
  std::string how;  ///< for the log: "2 GPUs (CUDA_VISIBLE_DEVICES=0,1)", "4 CPUs (cgroup cpu.max 400000 100000)"
};

/// GPUs this process may use: none when the machine shows none (/dev/nvidia<N> files,
/// the CUDA driver's cuDeviceGetCount, loaded with dlopen); otherwise CUDA_VISIBLE_DEVICES' entries when set, else all.
/// `root` prefixes the /dev path (tests).
Count visible_gpus(const std::map<std::string, std::string>& env, const std::string& root = "");

/// CPUs this container may use: the smallest of sched_getaffinity and the cgroup CPU quota
/// (v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us, at every level of this process's
/// cgroup), rounded up, at least 1. `root` prefixes /proc and /sys (tests).
Count usable_cpus(const std::string& root = "");

/// "auto" (GPUs when there are any, else CPUs), "gpu" (ConfigError without GPUs) or "cpu".
Count auto_nproc(const std::string& mode, const std::string& source,
                 const std::map<std::string, std::string>& env);

}  // namespace ddp::util
