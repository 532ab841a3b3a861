#include "session.h"

#include "trainer/blas.h"
#include "trainer/thread_budget.h"

#include <ddp/errors.h>
#include <ddp/init.h>
#include <ddp/logging.h>
#include <ddp/process_group.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace train_ranzcr {

Session start_session(const Options& o) {
  Session s;
  if (o.device == "cpu") {
    s.device = c10::Device(c10::kCPU);
  } else {
    s.device = ddp::default_device();
    if (o.device == "cuda" && !s.device.is_cuda()) {
      throw ddp::ConfigError("--device cuda: no usable CUDA device (" + ddp::cpu_fallback_reason() + ")");
    }
  }
  if (o.amp == "bf16" && !s.device.is_cuda()) {
    // bf16 autocast on CPU is slower than fp32 on CPUs without bf16 units; refuse rather than surprise.
    throw ddp::ConfigError("--amp bf16 needs a CUDA device; this run uses " + s.device.str() +
                           (o.device == "auto" ? " (" + ddp::cpu_fallback_reason() + ")" : std::string()));
  }
  s.amp = o.amp == "bf16";
  if (o.backend == "nccl" && !s.device.is_cuda()) {
    throw ddp::ConfigError("--backend nccl needs --device cuda (this run uses " + s.device.str() + ")");
  }
  s.pg = ddp::init_process_group(ddp::InitOptions().backend(o.backend).device(s.device));
  s.threads = ddp::trainer::intra_op_threads(o.threads, ddp::world());
  ddp::trainer::set_intra_op_threads(s.threads);
  const ddp::trainer::BlasInfo blas = ddp::trainer::blas_in_use();
  DDP_LOG(INFO) << "train_ranzcr rank " << s.pg->rank() << "/" << s.pg->size() << " on " << s.device.str()
                << ", backend " << s.pg->backend_name() << ", " << s.threads << " compute threads, BLAS "
                << blas.describe() << ", " << o.workers << " loader threads" << (s.amp ? ", bf16 autocast" : "");
  if (s.pg->rank() == 0) ddp::trainer::warn_if_slow(blas);
  return s;
}

}  // namespace train_ranzcr
