#pragma once
// Command line of train_ranzcr (see docs/RANZCR.md for the full list and examples).

#include <ddp/checkpoint_flags.h>

#include <cstdint>
#include <string>

namespace train_ranzcr {

struct Options {
  // Data
  std::string data_dir;       ///< holds train.csv and train/ (and test/); $SM_CHANNEL_TRAIN(ING)
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
  std::string progress = "auto";  ///< auto (a bar on a terminal, plain lines otherwise) | bar | plain
  int64_t log_interval = 10;      ///< plain progress lines and JSON "train" records every N steps
  int64_t max_steps = 0;          ///< stop after N optimizer steps (validate, save); 0: no limit
  std::string model_dir;          ///< rank 0 writes model.pt here ($SM_MODEL_DIR, else ./model)
  ddp::CheckpointFlags checkpoint;

  // Prediction
  bool predict = false;
  std::string test_dir;           ///< default <data_dir>/test
  std::string out = "submission.csv";
  std::string weights;            ///< state_dict file; else the newest checkpoint, else <model_dir>/model.pt
};

/// Parses and validates argv. ConfigError naming the flag and value. For --help and --version,
/// `help` is set and `usage` holds the text to print before exiting 0 (the usage with the
/// environment variables and exit codes, or the version line).
Options parse_options(int argc, char** argv, bool* help, std::string* usage);

}  // namespace train_ranzcr
