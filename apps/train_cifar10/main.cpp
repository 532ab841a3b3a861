// train_cifar10: distributed CIFAR-10 training; the C++ counterpart of the aws-do-kubeflow
// workshop's cifar10-distributed-gpu-final.py. Usage and behaviour: docs/CIFAR10.md.
#include <ddp/errors.h>

#include "options.h"
#include "train.h"
#include "trainer/sagemaker_mode.h"

int main(int argc, char** argv) {
  try {
    auto options = train_cifar10::parse_options(argc, argv);
    if (!options) return 0;  // --help or --version
    return train_cifar10::train(*options);
  } catch (const std::exception& e) {
    ddp::trainer::record_sagemaker_failure(e);  // `train_cifar10 train`: /opt/ml/output/failure
    return ddp::report_and_exit_code(e);
  }
}
