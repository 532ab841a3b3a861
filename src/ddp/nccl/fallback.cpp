// The NCCL entry points when ddp is built without NCCL (DDP_WITH_NCCL=OFF or no CUDA toolkit found):
// they report why instead of failing to link. The real ones live in availability.cpp
// and process_group_nccl.cpp next to this file; src/CMakeLists.txt compiles one set or the other.
#include <ddp/errors.h>
#include <ddp/process_group_nccl.h>

namespace ddp {

bool nccl_available() { return false; }

std::string nccl_unavailable_reason() {
  return "ddp was built without NCCL (DDP_WITH_NCCL=OFF or no CUDA runtime/NCCL found at build time)";
}

std::string nccl_version() { return ""; }

std::shared_ptr<ProcessGroup> make_nccl_process_group(std::shared_ptr<Store>, int, int, int, NcclOptions) {
  throw ConfigError("backend 'nccl' requested, but " + nccl_unavailable_reason() + "; use --backend gloo");
}

}  // namespace ddp
