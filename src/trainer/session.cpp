#include "trainer/session.h"

#include <ddp/errors.h>
#include <ddp/init.h>
#include <ddp/logging.h>
#include <ddp/process_group.h>
#include <ddp/signals.h>

#include <chrono>

#include "trainer/blas.h"
#include "trainer/thread_budget.h"

namespace ddp::trainer {

DeviceChoice choose_device(const RuntimeOptions& runtime) {
  DeviceChoice c;
  if (runtime.device() == "cpu") {
    c.why = "--device cpu";
  } else {
    c.device = ddp::default_device();  // ConfigError when LOCAL_RANK has no device of its own
    if (c.device.is_cuda()) {
      c.why = "--device " + runtime.device() + ": CUDA is usable, cuda:LOCAL_RANK";
    } else if (runtime.device() == "cuda") {
      // Asked for, so its absence is an error rather than a silent CPU run.
      throw ddp::ConfigError("--device cuda, but CUDA is not usable here (" + ddp::cpu_fallback_reason() + ")");
    } else {
      c.why = "--device auto: " + ddp::cpu_fallback_reason();
    }
  }
  if (runtime.backend() == "nccl" && !c.device.is_cuda())
    throw ddp::ConfigError("--backend nccl needs CUDA tensors, but this run uses " + c.device.str() + " (" + c.why + ")");
  return c;
}

bool Session::rank0() const { return pg->rank() == 0; }

Session start_session(const RuntimeOptions& runtime, const DeviceChoice& device, const std::string& program,
                      const std::string& details) {
  Session s;
  s.device = device.device;
  // --timeout 0 leaves InitOptions' 0: the backend's own default.
  auto timeout = std::chrono::milliseconds(static_cast<int64_t>(runtime.timeout_seconds() * 1000.0));
  if (runtime.timeout_seconds() > 0 && timeout.count() == 0) timeout = std::chrono::milliseconds(1);
  s.pg = ddp::init_process_group(ddp::InitOptions().backend(runtime.backend()).device(s.device).timeout(timeout));
  // From here SIGTERM means "finish the step, checkpoint, exit 143". Not before: while joining there
  // is nothing to save, and a flag nobody polls yet would keep a rank waiting on a peer or an
  // unreachable store until the launcher's or the kubelet's grace period ends in SIGKILL.
  ddp::install_stop_handlers();
  s.threads = intra_op_threads(runtime.threads(), ddp::world());
  set_intra_op_threads(s.threads);
  if (s.rank0()) {
    const BlasInfo blas = blas_in_use();
    DDP_LOG(INFO) << program << ": " << ddp::world().describe() << ", backend " << s.pg->backend_name() << ", device "
                  << s.device.str() << " (" << device.why << "), " << s.threads << " intra-op threads, BLAS "
                  << blas.describe() << details;
    warn_if_slow(blas);
  }
  return s;
}

}  // namespace ddp::trainer
