#pragma once
// A Python oracle (Debian's python3-torch) run as the ranks of a torch.distributed Gloo group on
// this host, the way the parity tests compare with PyTorch.
//
//   ddp::testing::run_python_ranks(std::string(DDP_SOURCE_DIR) + "/tests/ddp/python/join_reference.py", {dir});
#include <string>
#include <vector>

namespace ddp::testing {

/// Starts `world` copies of DDP_PYTHON `script` `args...` with RANK, WORLD_SIZE, MASTER_ADDR
/// (127.0.0.1), a free MASTER_PORT and OMP_NUM_THREADS=1, and waits up to 90 s for each, in rank
/// order. A fatal GoogleTest failure naming the first rank that does not exit 0, with its output
/// (the rest are stopped when the helper returns).
void run_python_ranks(const std::string& script, const std::vector<std::string>& args, int world = 2);

}  // namespace ddp::testing
