// The trainers' default intra-op thread count: --threads, OMP_NUM_THREADS, else this container's
// CPUs shared by the ranks on this node.
#include <ddp/errors.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

#include "util/nproc.h"
#include "trainer/thread_budget.h"

using ddp::trainer::intra_op_threads;

namespace {

// Sets or unsets OMP_NUM_THREADS for one test and puts the old value back.
class OmpEnv {
 public:
  explicit OmpEnv(std::optional<std::string> value) {
    if (const char* old = std::getenv("OMP_NUM_THREADS")) old_ = old;
    if (value) setenv("OMP_NUM_THREADS", value->c_str(), 1);
    else unsetenv("OMP_NUM_THREADS");
  }
  ~OmpEnv() {
    if (old_) setenv("OMP_NUM_THREADS", old_->c_str(), 1);
    else unsetenv("OMP_NUM_THREADS");
  }

 private:
  std::optional<std::string> old_;
};

ddp::WorldInfo world(int world_size, int local_world_size, const std::string& master) {
  ddp::WorldInfo w;
  w.world_size = world_size;
  w.local_world_size = local_world_size;
  w.master_addr = master;
  return w;
}

}  // namespace

TEST(ThreadBudget, FlagWinsOverEverything) {
  OmpEnv omp("7");
  EXPECT_EQ(intra_op_threads(3, world(4, 4, "127.0.0.1")), 3);
}

TEST(ThreadBudget, OmpNumThreadsWinsOverTheCpuShare) {
  OmpEnv omp("5");
  EXPECT_EQ(intra_op_threads(0, world(64, 64, "127.0.0.1")), 5);
}

TEST(ThreadBudget, BadOmpNumThreadsIsAConfigErrorNamingIt) {
  for (const char* bad : {"two", "0", "-1", "4x", "", "100000"}) {
    OmpEnv omp{std::optional<std::string>(bad)};
    try {
      intra_op_threads(0, world(1, 1, "127.0.0.1"));
      ADD_FAILURE() << "OMP_NUM_THREADS='" << bad << "' was accepted";
    } catch (const ddp::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("OMP_NUM_THREADS='" + std::string(bad) + "'"), std::string::npos) << e.what();
      EXPECT_EQ(e.exit_code(), 2);
    }
  }
}

TEST(ThreadBudget, CpusAreSharedByTheRanksOnThisNode) {
  OmpEnv omp(std::nullopt);
  const int cpus = ddp::util::usable_cpus().n;
  EXPECT_EQ(intra_op_threads(0, world(1, 1, "127.0.0.1")), cpus);
  // A launcher says how many ranks share the node.
  EXPECT_EQ(intra_op_threads(0, world(8, 2, "10.0.0.1")), std::max(1, cpus / 2));
  // Without a launcher, a loopback master means every rank is here; a remote one says nothing.
  EXPECT_EQ(intra_op_threads(0, world(3, 1, "localhost")), std::max(1, cpus / 3));
  EXPECT_EQ(intra_op_threads(0, world(3, 1, "cifar10-master-0")), cpus);
  // Never below one thread.
  EXPECT_EQ(intra_op_threads(0, world(4096, 4096, "127.0.0.1")), 1);
}
