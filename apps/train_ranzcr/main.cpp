// train_ranzcr: distributed ResNet training on RANZCR CLiP (see docs/RANZCR.md).
//
//   train_ranzcr --data-dir /data/ranzcr --arch resnet18 --image-size 512 --epochs 10
//   ddprun --nproc-per-node 2 train_ranzcr --data-dir /data/ranzcr ...
//   train_ranzcr --predict --data-dir /data/ranzcr --weights model.pt --out submission.csv
#include "options.h"
#include "session.h"

#include <ddp/errors.h>
#include <ddp/signals.h>

#include <iostream>

int main(int argc, char** argv) {
  try {
    bool help = false;
    std::string usage;
    train_ranzcr::Options options = train_ranzcr::parse_options(argc, argv, &help, &usage);
    if (help) {
      std::cout << usage << std::flush;
      return 0;
    }
    ddp::install_stop_handlers();
    train_ranzcr::Session session = train_ranzcr::start_session(options);
    return options.predict ? train_ranzcr::predict(options, session) : train_ranzcr::train(options, session);
  } catch (const std::exception& e) {
    return ddp::report_and_exit_code(e);
  }
}
