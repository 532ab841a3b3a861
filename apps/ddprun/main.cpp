// ddprun: torchrun for ddp programs. See docs/DDPRUN.md.
//
//   ddprun --nproc-per-node 4 train_cifar10 --epochs 10
#include <ddp/errors.h>

#include <iostream>

#include "util/env.h"
#include "util/version_banner.h"
#include "ddp/launcher/agent.h"
#include "ddp/launcher/launch_config.h"

int main(int argc, char** argv) {
  try {
    auto env = ddp::util::process_env();
    auto config = ddp::launcher::parse_launch_args(std::vector<std::string>(argv, argv + argc), env);
    if (config.help) {
      std::cout << ddp::launcher::launch_usage();
      return 0;
    }
    if (config.version) {
      std::cout << ddp::util::version_banner("ddprun") << std::endl;
      return 0;
    }
    return ddp::launcher::run_launcher(config, env);
  } catch (const std::exception& e) {
    return ddp::report_and_exit_code(e);
  }
}
