#pragma once
// Command line of train_ranzcr (see docs/RANZCR.md for the full list and examples): the runtime
// flags every trainer shares (src/trainer/runtime_flags.h), the checkpoint flags, and RANZCR's own.

#include <ddp/checkpoint_flags.h>

#include <cstdint>
#include <optional>
#include <string>

#include "trainer/runtime_flags.h"

namespace train_ranzcr {

struct Options {
  /// --data-dir (holds train.csv and train/ and test/), --model-dir, --metrics-file, --backend,
  /// --device, --threads, --progress, --log-interval, --max-steps.
  ddp::trainer::RuntimeOptions runtime;

  // Data
  std::string csv;            ///< default <data_dir>/train.csv
  std::string image_dir;      ///< default <data_dir>/train
  int image_size = 224;
  int workers = 2;            ///< loader threads per rank
  int prefetch = 4;           ///< batches decoded ahead
  std::string cache_dir;
  bool skip_bad_images = false;
  bool augment = true;
  double val_fraction = 0.2;
  int folds = 0;              ///< > 0: --folds K --fold i instead of --val-fraction
  int fold = 0;
  uint64_t split_seed = 1;

  // Model and optimisation
  std::string arch = "resnet18";
  std::string pretrained;
  bool freeze_backbone = false;
  bool sync_bn = false;  ///< --sync-bn: ddp::SyncBatchNorm in the ResNet
  int epochs = 10;
  int64_t batch_size = 32;    ///< per rank, as in the seed
  double lr = 1e-3;
  double weight_decay = 0.1;
  std::string schedule = "none";  ///< none | cosine | step
  int step_epochs = 3;            ///< --schedule step: multiply by step_gamma every step_epochs
  double step_gamma = 0.1;
  std::string amp = "none";       ///< none | bf16 (CUDA only)
  uint64_t seed = 0;

  ddp::CheckpointFlags checkpoint;

  // Prediction
  bool predict = false;
  std::string test_dir;           ///< default <data_dir>/test
  std::string out = "submission.csv";
  std::string weights;            ///< state_dict file; else the newest checkpoint, else <model_dir>/model.pt
};

/// Parses and validates argv (SM_* defaults from the environment). ConfigError naming the flag and
/// value. nullopt after printing --help (with the environment variables and exit codes) or --version.
std::optional<Options> parse_options(int argc, char** argv);

}  // namespace train_ranzcr
