#pragma once
// Process group, device and threads for one run of train_ranzcr.

#include "options.h"

#include <c10/core/Device.h>

#include <memory>

namespace ddp {
class ProcessGroup;
}

namespace train_ranzcr {

struct Session {
  std::shared_ptr<ddp::ProcessGroup> pg;
  c10::Device device = c10::Device(c10::kCPU);
  bool amp = false;  ///< bf16 autocast on
  int threads = 1;
};

/// --device, --backend, --amp, --threads: validated (ConfigError naming the flag), then the process
/// group is joined from the environment (see docs/ENVIRONMENT.md).
Session start_session(const Options& options);

/// Training and prediction. Return the process exit code.
int train(const Options& options, Session& session);
int predict(const Options& options, Session& session);

}  // namespace train_ranzcr
