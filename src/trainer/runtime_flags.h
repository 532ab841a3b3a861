#pragma once
// The flags every trainer has, declared once: where data and outputs go and how the run executes.
// Each app adds them to its cxxopts parser next to its own task flags.
//
//   --data-dir      default $SM_CHANNEL_TRAIN, else $SM_CHANNEL_TRAINING (SageMaker); may stay empty
//                   here: whether it is required is the task's call
//   --model-dir     default $SM_MODEL_DIR, else ./model; rank 0 writes model.pt there
//   --metrics-file  JSON lines on rank 0 (empty: none)
//   --katib-metrics-file  each evaluation's metrics as Katib's File collector reads them (JSON lines,
//                   string values, "timestamp"); rank 0 (empty: none)
//   --tensorboard-dir  TensorBoard event files from rank 0 (empty: none; tensorboard_writer.h)
//   --backend auto|gloo|nccl   --device auto|cpu|cuda (session.h says what auto does)
//   --threads N (0: thread_budget.h)   --progress auto|bar|plain
//   --log-interval N   --max-steps N (0: no limit)
//   --comm-hook none|fp16|bf16|powersgd:R   --powersgd-start-iter N   how DDP reduces gradients
//                   (comm_hook_choice.h)
//   --zero          the optimizer state sharded across the ranks (optimizer_choice.h)
//   --static-graph  DistributedDataParallelOptions::static_graph (docs/DDP.md#static_graph)
//   --timeout S     seconds a collective, the rendezvous or a store call may take before the rank
//                   fails with TimeoutError (exit 201, retryable); 0: the backend's default (Gloo 30 min,
//                   NCCL 10 min). A short one bounds how long a rank waits for a peer whose network is gone.
//
//   cxxopts::Options cli("train_x", "...");
//   ddp::trainer::add_runtime_flags(cli, "train.csv and train/");
//   auto args = ddp::util::parse_command_line(cli, argc, argv, ddp::trainer::trainer_rules({"Data", "Runtime"}));
//   if (!args) return 0;                                                          // --help or --version
//   ddp::trainer::RuntimeOptions rt = ddp::trainer::read_runtime_flags(*args);   // SM_* from the environment
//
// Every bad value is a ddp::ConfigError naming the flag (exit 2).

#include <torch/arg.h>

#include <cxxopts.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trainer/comm_hook_setting.h"
#include "util/cli.h"

namespace ddp::trainer {

struct RuntimeOptions {
  TORCH_ARG(std::string, data_dir);
  TORCH_ARG(std::string, model_dir) = "model";
  TORCH_ARG(std::string, metrics_file);
  TORCH_ARG(std::string, katib_metrics_file);
  TORCH_ARG(std::string, tensorboard_dir);
  TORCH_ARG(std::string, backend) = "auto";
  TORCH_ARG(std::string, device) = "auto";
  /// Intra-op threads per rank; 0: intra_op_threads()'s default.
  TORCH_ARG(int, threads) = 0;
  TORCH_ARG(std::string, progress) = "auto";
  /// Progress lines and JSON "train" records every N steps.
  TORCH_ARG(int64_t, log_interval) = 10;
  /// Stop after N optimizer steps (evaluate and save); 0: no limit.
  TORCH_ARG(int64_t, max_steps) = 0;
  /// Process-group timeout in seconds (collectives, rendezvous, store calls); 0: the backend's default.
  TORCH_ARG(double, timeout_seconds) = 0;
  /// --comm-hook and --powersgd-start-iter.
  TORCH_ARG(CommHookSetting, comm_hook);
  /// --zero: ddp::ZeroRedundancyOptimizer around the trainer's optimizer.
  TORCH_ARG(bool, zero) = false;
  /// --static-graph: DDP learns the model's autograd graph in the first step (static_graph).
  TORCH_ARG(bool, static_graph) = false;
};

/// Registers the flags: --data-dir and --model-dir in group "Data" (`data_dir_holds` completes
/// "folder holding ..."), the rest in "Runtime".
void add_runtime_flags(cxxopts::Options& cli, const std::string& data_dir_holds);

/// Reads and validates the flags add_runtime_flags() registered; `env` supplies the SM_* defaults.
RuntimeOptions read_runtime_flags(const cxxopts::ParseResult& args, const std::map<std::string, std::string>& env);
/// The same with this process's environment.
RuntimeOptions read_runtime_flags(const cxxopts::ParseResult& args);

/// How a trainer's command line is parsed (util::parse_command_line): --help lists `help_groups` in
/// this order, --version and -h/--help among the Runtime flags, then the environment variables and
/// exit codes (util::HelpFor::kTrainer).
util::CommandLineRules trainer_rules(std::vector<std::string> help_groups);

}  // namespace ddp::trainer
