#include "support/torchrun.h"

#include "support/multiprocess.h"

namespace ddp::testing {

std::vector<std::string> torchrun_argv(int nproc, const std::string& log_dir, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {DDP_PYTHON, "-u", std::string(DDP_SOURCE_DIR) + "/tests/support/torchrun_shim.py",
                                   "--nnodes", "1", "--node_rank", "0", "--master_addr", "127.0.0.1", "--master_port", std::to_string(free_port()),
                                   "--nproc_per_node", std::to_string(nproc), "--redirects", "1", "--tee", "1",
                                   "--log_dir", log_dir, "--no_python"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

}  // namespace ddp::testing
