// train_ranzcr: distributed ResNet training on RANZCR CLiP (see docs/RANZCR.md).
//
//   train_ranzcr --data-dir /data/ranzcr --arch resnet18 --image-size 512 --epochs 10
//   ddprun --nproc-per-node 2 train_ranzcr --data-dir /data/ranzcr ...
//   train_ranzcr --predict --data-dir /data/ranzcr --weights model.pt --out submission.csv
#include "amp.h"
#include "options.h"
#include "train.h"

#include <ddp/errors.h>

#include "trainer/sagemaker_mode.h"
#include "trainer/session.h"

int main(int argc, char** argv) {
  try {
    auto options = train_ranzcr::parse_options(argc, argv);
    if (!options) return 0;  // --help or --version
    const auto device = ddp::trainer::choose_device(options->runtime);
    const bool amp = train_ranzcr::autocast_wanted(options->amp, device);
    const auto session = ddp::trainer::start_session(
        options->runtime, device, "train_ranzcr",
        ", arch " + options->arch + ", batch " + std::to_string(options->batch_size) + " per rank, " +
            std::to_string(options->workers) + " loader threads" + (amp ? ", bf16 autocast" : ""));
    return options->predict ? train_ranzcr::predict(*options, session, amp) : train_ranzcr::train(*options, session, amp);
  } catch (const std::exception& e) {
    ddp::trainer::record_sagemaker_failure(e);  // `train_ranzcr train`: /opt/ml/output/failure
    return ddp::report_and_exit_code(e);
  }
}
