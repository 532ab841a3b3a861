#pragma once
// Command line of train_ranzcr (see docs/RANZCR.md for the full list and examples).

#include <ddp/checkpoint_flags.h>

#include <cstdint>
#include <string>

namespace train_ranzcr {

struct Options {
  // Data
  std::string data_dir;       ///< holds train.csv and train/ (and test/)
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
  int epochs = 10;
  int64_t batch_size = 32;    ///< per rank, as in the seed
  double lr = 1e-3;
  double weight_decay = 0.1;
  std::string schedule = "none";  ///< none | cosine | step
  int step_epochs = 3;            ///< --schedule step: multiply by step_gamma every step_epochs
  double step_gamma = 0.1;
  std::string amp = "none";       ///< none | bf16 (CUDA only)
  uint64_t seed = 0;

  // Runtime
  std::string device = "auto";    ///< auto | cpu | cuda
  std::string backend = "auto";   ///< auto | gloo | nccl
  int threads = 0;                ///< intra-op threads per rank; 0: cores / local ranks
  std::string metrics_file;
  std::string progress = "auto";  ///< auto (on a TTY) | on | off
  std::string save_model;         ///< final weights (state_dict file), rank 0
  ddp::CheckpointFlags checkpoint;

  // Prediction
  bool predict = false;
  std::string test_dir;           ///< default <data_dir>/test
  std::string out = "submission.csv";
  std::string weights;            ///< state_dict file; else the newest checkpoint in --checkpoint-dir
};

/// Parses and validates argv. ConfigError naming the flag and value. `help` is set (and the
/// usage text returned in `usage`) for --help.
Options parse_options(int argc, char** argv, bool* help, std::string* usage);

}  // namespace train_ranzcr
