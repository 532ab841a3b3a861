#include "session.h"

#include "ddp/launcher/nproc.h"

#include <ddp/errors.h>
#include <ddp/init.h>
#include <ddp/logging.h>
#include <ddp/process_group.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace train_ranzcr {
namespace {

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// --threads when given, else OMP_NUM_THREADS when set (as PyTorch honours it), else the CPUs this
// container may use (affinity and cgroup quota: a pod with a CPU limit on a big node) shared by the
// ranks on this node. Without a launcher the ranks on this node are unknown, except that with a
// loopback MASTER_ADDR they all are. Oversubscribed OpenMP threads spin and crawl.
int intra_op_threads(int flag, const ddp::WorldInfo& world) {
  if (flag > 0) return flag;
  if (const char* omp = std::getenv("OMP_NUM_THREADS")) {
    char* end = nullptr;
    const long v = std::strtol(omp, &end, 10);
    if (*omp && *end == '\0' && v > 0 && v <= 1024) return static_cast<int>(v);
    throw ddp::ConfigError("OMP_NUM_THREADS='" + std::string(omp) + "' is not a thread count in 1..1024");
  }
  int ranks_here = std::max(1, world.local_world_size);
  if (ranks_here == 1 && world.world_size > 1 && is_loopback(world.master_addr)) ranks_here = world.world_size;
  return std::max(1, ddp::launcher::usable_cpus().n / ranks_here);
}

}  // namespace

Session start_session(const Options& o) {
  Session s;
  if (o.device == "cpu") {
    s.device = c10::Device(c10::kCPU);
  } else {
    s.device = ddp::default_device();
    if (o.device == "cuda" && !s.device.is_cuda()) {
      throw ddp::ConfigError("--device cuda: no usable CUDA device (" + ddp::cpu_fallback_reason() + ")");
    }
  }
  if (o.amp == "bf16" && !s.device.is_cuda()) {
    // bf16 autocast on CPU is slower than fp32 on CPUs without bf16 units; refuse rather than surprise.
    throw ddp::ConfigError("--amp bf16 needs a CUDA device; this run uses " + s.device.str() +
                           (o.device == "auto" ? " (" + ddp::cpu_fallback_reason() + ")" : std::string()));
  }
  s.amp = o.amp == "bf16";
  if (o.backend == "nccl" && !s.device.is_cuda()) {
    throw ddp::ConfigError("--backend nccl needs --device cuda (this run uses " + s.device.str() + ")");
  }
  ddp::InitOptions init;
  init.backend = o.backend;
  init.device = s.device;
  s.pg = ddp::init_process_group(init);
  s.threads = intra_op_threads(o.threads, ddp::world());
  at::set_num_threads(s.threads);
  DDP_LOG(INFO) << "train_ranzcr rank " << s.pg->rank() << "/" << s.pg->size() << " on " << s.device.str()
                << ", backend " << s.pg->backend_name() << ", " << s.threads << " compute threads, "
                << o.workers << " loader threads" << (s.amp ? ", bf16 autocast" : "");
  return s;
}

}  // namespace train_ranzcr
