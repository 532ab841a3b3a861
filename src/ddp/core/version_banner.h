#pragma once
// The one line every ddp binary prints for --version, so they all read alike:
//   train_cifar10 0.1.0 (LibTorch 1.13.0, NCCL yes)
//
//   if (wants_version) { std::cout << ddp::detail::version_banner("ddprun") << "\n"; return 0; }

#include <ddp/export.h>
#include <string>

namespace ddp::detail {

/// "<program> <libddp version> (LibTorch <version built against>, NCCL <yes|no>)"; NCCL says whether
/// libddp was built with the NCCL process group, not whether a GPU is usable here.
// exported until src/util lands
DDP_API std::string version_banner(const std::string& program);

}  // namespace ddp::detail
