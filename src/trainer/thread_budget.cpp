#include "trainer/thread_budget.h"

#include <ddp/errors.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "util/nproc.h"

namespace ddp::trainer {
namespace {

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace

int intra_op_threads(int flag, const WorldInfo& world) {
  if (flag > 0) return flag;
  if (const char* omp = std::getenv("OMP_NUM_THREADS")) {
    char* end = nullptr;
    const long v = std::strtol(omp, &end, 10);
    if (*omp && *end == '\0' && v > 0 && v <= 1024) return static_cast<int>(v);
    throw ConfigError("OMP_NUM_THREADS='" + std::string(omp) + "' is not a thread count in 1..1024");
  }
  int ranks_here = std::max(1, world.local_world_size);
  if (ranks_here == 1 && world.world_size > 1 && is_loopback(world.master_addr)) ranks_here = world.world_size;
  return std::max(1, util::usable_cpus().n / ranks_here);
}

}  // namespace ddp::trainer
