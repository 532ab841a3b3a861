#include "support/python_ranks.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>

#include "support/multiprocess.h"
#include "support/subprocess.h"

namespace ddp::testing {

void run_python_ranks(const std::string& script, const std::vector<std::string>& args, int world) {
  const std::string port = std::to_string(free_port());
  std::vector<std::string> argv = {DDP_PYTHON, script};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::unique_ptr<Subprocess>> python;
  for (int rank = 0; rank < world; ++rank)
    python.push_back(std::make_unique<Subprocess>(argv, std::map<std::string, std::string>{{"RANK", std::to_string(rank)},
                                                                                           {"WORLD_SIZE", std::to_string(world)},
                                                                                           {"MASTER_ADDR", "127.0.0.1"},
                                                                                           {"MASTER_PORT", port},
                                                                                           {"OMP_NUM_THREADS", "1"}}));
  for (int rank = 0; rank < world; ++rank)
    ASSERT_EQ(python[static_cast<size_t>(rank)]->wait(std::chrono::seconds(90)), 0)
        << script << " rank " << rank << ":\n" << python[static_cast<size_t>(rank)]->output();
}

}  // namespace ddp::testing
