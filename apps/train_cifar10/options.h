#pragma once
// train_cifar10's flags: the runtime flags every trainer shares (src/trainer/runtime_flags.h), the
// checkpoint flags, and CIFAR-10's own. Every bad value is a ddp::ConfigError naming the flag (exit 2).
//
//   std::optional<Options> o = parse_options(argc, argv);   // nullopt: --help or --version was printed

#include <ddp/checkpoint_flags.h>

#include <cstdint>
#include <optional>
#include <string>

#include "trainer/runtime_flags.h"

namespace train_cifar10 {

struct Options {
  /// --data-dir (required here), --model-dir, --metrics-file, --backend, --device, --threads,
  /// --progress, --log-interval, --max-steps.
  ddp::trainer::RuntimeOptions runtime;

  // The seed script's hyper-parameters and defaults.
  int64_t batch_size = 64;  ///< per rank
  int64_t test_batch_size = 1000;
  int64_t epochs = 10;
  double lr = 0.01;
  double momentum = 0.5;
  int64_t seed = 1;

  std::string model = "net";     ///< net | resnet18 (models/model_factory.h)
  int workers = 1;               ///< loader threads
  int prefetch = 4;              ///< ready batches queued per loader
  bool augment = true;           ///< RandomCrop(32, 4) + flip on the training set
  bool sync_bn = false;          ///< --sync-bn: ddp::SyncBatchNorm in the ResNet

  /// --checkpoint-dir, --checkpoint-every, --checkpoint-keep, --resume (shared by every trainer).
  ddp::CheckpointFlags checkpoint;
};

/// Parses argv (SM_* defaults from the environment). Returns nullopt after printing --help (with the
/// environment variables and exit codes) or --version.
std::optional<Options> parse_options(int argc, char** argv);

}  // namespace train_cifar10
