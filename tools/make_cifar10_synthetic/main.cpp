// make_cifar10_synthetic: writes a small, learnable CIFAR-10 look-alike in the published layouts.
//
//   make_cifar10_synthetic --out /tmp/c10 --train 10000 --test 2000 --seed 0 --layout both [--signal 1 --noise 25]
#include <ddp/errors.h>

#include <cxxopts.hpp>

#include <iostream>

#include "data/cifar/cifar_synthetic.h"
#include "util/cli.h"

int main(int argc, char** argv) {
  try {
    cxxopts::Options cli("make_cifar10_synthetic",
                         "Write a learnable synthetic CIFAR-10 (class-dependent colour + stripes + noise) in the "
                         "binary (cifar-10-batches-bin/) and/or Python (cifar-10-batches-py/) layout.");
    cli.add_options()
        ("out", "output directory (created if missing)", cxxopts::value<std::string>(), "DIR")
        ("train", "training images, a multiple of 5 (split over data_batch_1..5)", cxxopts::value<int64_t>()->default_value("50000"), "N")
        ("test", "test images", cxxopts::value<int64_t>()->default_value("10000"), "N")
        ("seed", "random seed", cxxopts::value<uint64_t>()->default_value("0"), "N")
        ("layout", "bin, py or both", cxxopts::value<std::string>()->default_value("both"), "{bin|py|both}")
        ("signal", "class signal strength in [0, 1] (1: easy; 0.15: harder)", cxxopts::value<double>()->default_value("1"), "X")
        ("noise", "per-pixel noise standard deviation (0-255 scale)", cxxopts::value<double>()->default_value("25"), "X");
    const auto parsed = ddp::util::parse_command_line(cli, argc, argv, ddp::util::CommandLineRules().required({"out"}));
    if (!parsed) return 0;
    const cxxopts::ParseResult& args = *parsed;
    const std::string layout = args["layout"].as<std::string>();
    if (layout != "bin" && layout != "py" && layout != "both")
      throw ddp::ConfigError("make_cifar10_synthetic: --layout must be bin, py or both, got '" + layout + "'");
    auto options = ddp::data::cifar::SyntheticCifarOptions()
                       .out_dir(args["out"].as<std::string>())
                       .train(args["train"].as<int64_t>())
                       .test(args["test"].as<int64_t>())
                       .seed(args["seed"].as<uint64_t>())
                       .signal(args["signal"].as<double>())
                       .noise(args["noise"].as<double>())
                       .write_binary(layout != "py")
                       .write_python(layout != "bin");
    ddp::data::cifar::write_synthetic_cifar10(options);
    std::cout << "wrote " << options.train() << " training and " << options.test() << " test images (" << layout
              << ") to " << options.out_dir() << std::endl;
    return 0;
  } catch (const std::exception& e) {
    return ddp::report_and_exit_code(e);
  }
}
