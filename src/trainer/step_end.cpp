#include "trainer/step_end.h"

#include <ddp/checkpoint.h>
#include <ddp/logging.h>
#include <ddp/signals.h>

#include <torch/nn/module.h>

#include "models/state_dict.h"

namespace ddp::trainer {

bool checkpoint_or_stop(ddp::StopVote& stop, ddp::Checkpointer& checkpointer, torch::nn::Module& model,
                        torch::optim::Optimizer* optimizer, const ddp::TrainingProgress& progress,
                        const std::map<std::string, std::string>& metadata) {
  const bool stopping = stop.poll();
  if (stopping || checkpointer.due(progress)) checkpointer.save(model, optimizer, progress, metadata);
  if (stopping) {
    DDP_LOG(WARN) << "stopping on signal " << ddp::stop_signal() << " after global step " << progress.global_step
                  << ": checkpointed at " << progress.describe();
  }
  return stopping;
}

std::string save_model(const torch::nn::Module& model, const std::string& model_dir) {
  const std::string path = model_dir + "/model.pt";
  ddp::models::write_state_dict(ddp::models::state_dict_in_order(model), path);
  DDP_LOG(INFO) << "saved the model (" << model.parameters().size() << " parameter tensors) to " << path;
  return path;
}

}  // namespace ddp::trainer
