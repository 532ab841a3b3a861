#include "trainer/thread_budget.h"

#include <ddp/errors.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "util/nproc.h"
#include "util/numbers.h"

namespace ddp::trainer {
namespace {

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace

int intra_op_threads(int flag, const WorldInfo& world) {
  if (flag > 0) return flag;
  if (const char* omp = std::getenv("OMP_NUM_THREADS"))  // set but bad: ConfigError naming it and its value
    return static_cast<int>(util::parse_int("OMP_NUM_THREADS", omp, 1, 1024));
  int ranks_here = std::max(1, world.local_world_size);
  if (ranks_here == 1 && world.world_size > 1 && is_loopback(world.master_addr)) ranks_here = world.world_size;
  return std::max(1, util::usable_cpus().n / ranks_here);
}

}  // namespace ddp::trainer
