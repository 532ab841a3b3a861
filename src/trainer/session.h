#pragma once
// Where a trainer runs: the device, the process group and the thread budget, chosen one way for
// every trainer, and the one startup line that says so.
//
// Device (--device):
//   cpu   the CPU.
//   auto  cuda:LOCAL_RANK when LibTorch has CUDA and a device is visible (a single visible device is
//         this rank's: a launcher gave each rank its own CUDA_VISIBLE_DEVICES), else the CPU; the
//         startup line says which and why. --backend does not change this choice: with
//         --backend gloo on a CUDA machine the model still trains on the GPU and Gloo reduces host
//         copies of the gradients (ProcessGroup::device() is the CPU).
//   cuda  like auto, but no usable CUDA device is a ConfigError rather than a CPU run.
// --backend nccl needs CUDA tensors: with a CPU device (asked for, or what auto found) it is a
// ConfigError naming the flag. --backend auto: NCCL on a CUDA device when ddp has NCCL, else Gloo.
//
//   auto device = ddp::trainer::choose_device(rt);            // before joining: task checks (e.g. --amp)
//   ddp::trainer::Session s = ddp::trainer::start_session(rt, device, "train_x", ", model net");

#include <c10/core/Device.h>

#include <memory>
#include <string>

#include "trainer/runtime_flags.h"

namespace ddp {
class ProcessGroup;
}

namespace ddp::trainer {

struct DeviceChoice {
  c10::Device device{c10::kCPU};
  std::string why;  ///< e.g. "--device auto: LibTorch built without CUDA", for the startup line
};

/// --device and --backend as described above. ConfigError naming the flag.
DeviceChoice choose_device(const RuntimeOptions& runtime);

struct Session {
  std::shared_ptr<ddp::ProcessGroup> pg;
  c10::Device device{c10::kCPU};
  int threads = 1;  ///< intra-op threads of this rank
  bool rank0() const;
};

/// Joins the process group from the environment (docs/ENVIRONMENT.md) with --backend on `device`
/// (--timeout bounds it), then installs the stop handlers (ddp/signals.h: SIGTERM finishes the step,
/// checkpoints and exits 143; before that, while joining, SIGTERM ends the process at once),
/// sets the thread budget (--threads) and has rank 0 log the startup line:
///   "<program>: <world>, backend gloo, device cpu (why), 4 intra-op threads, BLAS ...<details>"
/// and warn when the BLAS is the slow reference one.
Session start_session(const RuntimeOptions& runtime, const DeviceChoice& device, const std::string& program,
                      const std::string& details);

}  // namespace ddp::trainer
