#pragma once
// What every trainer does after an optimizer step and at the end, written once:
//   - the collective stop vote (SIGTERM on any rank) and a checkpoint when one is due or a stop was
//     voted, so every rank stops after the same step;
//   - the final model.pt on rank 0 (Python's state_dict order; torch.load reads it).
//
//   if (ddp::trainer::checkpoint_or_stop(stop, checkpointer, *net, &optimizer, progress, metadata))
//     return ddp::stop_exit_code();   // 143

#include <map>
#include <string>

namespace torch::nn {
class Module;
}
namespace torch::optim {
class Optimizer;
}
namespace ddp {
class Checkpointer;
class StopVote;
struct TrainingProgress;
}  // namespace ddp

namespace ddp::trainer {

/// Polls `stop` (collective), checkpoints when a stop was voted or checkpointer.due(progress), and on
/// a stop logs "stopping on signal N after global step S: checkpointed at <progress>". True: stop now.
bool checkpoint_or_stop(ddp::StopVote& stop, ddp::Checkpointer& checkpointer, torch::nn::Module& model,
                        torch::optim::Optimizer* optimizer, const ddp::TrainingProgress& progress,
                        const std::map<std::string, std::string>& metadata = {});

/// Writes `model` to <model_dir>/model.pt (atomically, creating the folder) and logs it. Returns the path.
std::string save_model(const torch::nn::Module& model, const std::string& model_dir);

}  // namespace ddp::trainer
