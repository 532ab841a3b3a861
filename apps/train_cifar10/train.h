#pragma once
// The training run: session, data, model, DDP, the epoch loop with evaluation, checkpoints, saving.
//
//   return train_cifar10::train(options);   // exit code: 0, or 143 after a stop signal

#include "options.h"

namespace train_cifar10 {

/// Runs the whole job on this rank. Throws ddp::Error subclasses on failure.
int train(const Options& options);

}  // namespace train_cifar10
