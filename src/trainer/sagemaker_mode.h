#pragma once
// SageMaker mode: `train_cifar10 train` (what SageMaker's `docker run IMAGE train` passes to our
// ENTRYPOINT) reads /opt/ml (sagemaker_config.h) and becomes an ordinary command line plus the
// SM_* variables WorldInfo already understands, so the rest of the trainer does not know:
//
//   --data-dir   <root>/input/data/<channel>: "training", else "train" (inputdataconfig.json's
//                channels when the file exists, else the folders present)
//   --model-dir  <root>/model                  --checkpoint-dir <root>/checkpoints (when it exists)
//   --<name>=<value> per hyperparameter; a switch (e.g. no-augment) is given for "true", left out for
//                "false"; a name that is not one of the trainer's flags is a ConfigError naming it
//   SM_HOSTS, SM_CURRENT_HOST  from resourceconfig.json: rank = index of current_host in hosts,
//                master = hosts[0], port 7777 (WorldInfo rule 4)
//   GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME  = network_interface_name, unless already set
//
// Before that: the job may ask for the other trainer (sagemaker_config.h sagemaker_trainer: the
// `trainer` hyperparameter or SAGEMAKER_PROGRAM), which then replaces this process; <root>/model (created when
// missing) and <root>/checkpoints (when present) must be writable by this user, else a ConfigError
// says which folder, who owns it and what to do, before any training.
//
//   cxxopts::Options cli(...); ... add every flag ...
//   ddp::trainer::TrainerArgs args = ddp::trainer::sagemaker_or_command_line(cli, argc, argv);
//   auto parsed = ddp::util::parse_command_line(cli, args.argc(), args.argv(), rules);
//   ...
//   catch (const std::exception& e) { ddp::trainer::record_sagemaker_failure(e); return ddp::report_and_exit_code(e); }
//
// Without `train` as the first argument nothing changes (argv passes through).
#include <cxxopts.hpp>

#include <exception>
#include <string>
#include <vector>

#include "trainer/sagemaker_config.h"

namespace ddp::trainer {

/// An argv owned by value (argv() points into it).
class TrainerArgs {
 public:
  explicit TrainerArgs(std::vector<std::string> args);
  int argc() const { return static_cast<int>(ptrs_.size()) - 1; }
  const char* const* argv() const { return ptrs_.data(); }
  const std::vector<std::string>& args() const { return args_; }

 private:
  std::vector<std::string> args_;
  std::vector<const char*> ptrs_;
};

/// True when argv[1] is "train".
bool is_sagemaker_train(int argc, const char* const* argv);

/// The command line `config` asks for (see the header comment); `cli` is the trainer's parser, whose
/// flags are the hyperparameters it accepts. Pure: sets no variables.
std::vector<std::string> sagemaker_arguments(const cxxopts::Options& cli, const std::string& program,
                                             const SageMakerConfig& config);

/// argv unchanged, or in SageMaker mode: reads the config under sagemaker_root(), hands over to the
/// other trainer when the job asks for it, checks the folders it writes, sets SM_HOSTS,
/// SM_CURRENT_HOST (and the interface variables) in this process's environment, logs what it read,
/// and returns sagemaker_arguments(). Arguments after `train` are refused.
TrainerArgs sagemaker_or_command_line(const cxxopts::Options& cli, int argc, const char* const* argv);

/// In SageMaker mode (once sagemaker_or_command_line saw `train`): writes e.what() to
/// <root>/output/failure (creating the folder), which SageMaker shows as the job's FailureReason.
/// Otherwise, or when the write fails (logged), nothing. Never throws.
void record_sagemaker_failure(const std::exception& e) noexcept;

}  // namespace ddp::trainer
