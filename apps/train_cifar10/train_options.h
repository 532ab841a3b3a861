#pragma once
// train_cifar10's flags, read with cxxopts and validated; every bad value is a ddp::ConfigError
// naming the flag (exit 2).
//
//   TrainOptions o = parse_train_options(argc, argv, environment);   // nullopt: --help or --version was printed

#include <ddp/checkpoint_flags.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace train_cifar10 {

struct TrainOptions {
  // Data and output. Defaults from SageMaker's SM_CHANNEL_TRAIN / SM_CHANNEL_TRAINING / SM_MODEL_DIR.
  std::string data_dir;
  std::string model_dir;
  std::string metrics_file;  ///< JSONL, rank 0; empty: none

  // The seed script's hyper-parameters and defaults.
  int64_t batch_size = 64;  ///< per rank
  int64_t test_batch_size = 1000;
  int64_t epochs = 10;
  double lr = 0.01;
  double momentum = 0.5;
  int64_t seed = 1;
  int64_t log_interval = 10;

  std::string backend = "auto";  ///< auto | gloo | nccl
  std::string device = "auto";   ///< auto | cpu | cuda
  std::string model = "net";     ///< net | resnet18
  int workers = 1;               ///< loader threads
  int prefetch = 4;              ///< ready batches queued per loader
  int64_t max_steps = 0;         ///< stop after this many optimizer steps (0: no limit)
  int threads = 0;               ///< intra-op threads; 0: cores / local world size
  bool augment = true;           ///< RandomCrop(32, 4) + flip on the training set
  std::string progress = "auto"; ///< auto (bar on a TTY) | bar | plain

  /// --checkpoint-dir, --checkpoint-every, --checkpoint-keep, --resume (shared by every trainer).
  ddp::CheckpointFlags checkpoint;
};

/// Parses argv. `env` supplies the SM_* defaults (the process environment in main()).
/// Returns nullopt after printing --help (with the environment variables and exit codes) or --version.
std::optional<TrainOptions> parse_train_options(int argc, char** argv, const std::map<std::string, std::string>& env);

/// The process environment as a map.
std::map<std::string, std::string> process_environment();

}  // namespace train_cifar10
