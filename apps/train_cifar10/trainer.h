#pragma once
// The training run: process group, data, model, DDP, the epoch loop with evaluation, saving.
//
//   return train_cifar10::run_training(options);   // exit code (0, or a stop code later)

#include "train_options.h"

namespace train_cifar10 {

/// Runs the whole job on this rank. Throws ddp::Error subclasses on failure.
int run_training(const TrainOptions& options);

}  // namespace train_cifar10
