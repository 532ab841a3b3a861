// make_ranzcr_synthetic: writes train.csv + train/<uid>.jpg (and test/) in the RANZCR CLiP layout,
// with labels drawn into the images, for tests and demos.
//
//   make_ranzcr_synthetic --out /data/ranzcr-synth --n 2000 --n-test 200 --size 512 --seed 1
#include "data/ranzcr/synthetic.h"
#include "util/cli.h"

#include <ddp/errors.h>

#include <cxxopts.hpp>

#include <chrono>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  try {
    cxxopts::Options cli("make_ranzcr_synthetic",
                         "Synthetic RANZCR CLiP data: train.csv, train/<uid>.jpg, test/<uid>.jpg, test_labels.csv");
    cli.add_options()
        ("out", "output folder", cxxopts::value<std::string>(), "DIR")
        ("n,images", "training images (--n, -n or --images)", cxxopts::value<int64_t>()->default_value("200"), "N")
        ("n-test", "test images (test/ and test_labels.csv)", cxxopts::value<int64_t>()->default_value("0"), "N")
        ("size", "image side in pixels", cxxopts::value<int>()->default_value("256"), "N")
        ("patients", "distinct PatientIDs (0: n / 3)", cxxopts::value<int64_t>()->default_value("0"), "N")
        ("seed", "random seed", cxxopts::value<uint64_t>()->default_value("0"), "N")
        ("quality", "JPEG quality", cxxopts::value<int>()->default_value("90"), "N")
        ("threads", "encoding threads (0: all cores)", cxxopts::value<int>()->default_value("0"), "N");
    // cxxopts wants long names of two letters or more: spell --n as --images.
    std::vector<std::string> words(argv, argv + argc);
    for (auto& w : words) {
      if (w == "--n") w = "--images";
      if (w.rfind("--n=", 0) == 0) w = "--images=" + w.substr(4);
    }
    std::vector<char*> fixed;
    for (auto& w : words) fixed.push_back(w.data());
    const auto parsed = ddp::util::parse_command_line(cli, static_cast<int>(fixed.size()), fixed.data(),
                                                      ddp::util::CommandLineRules().required({"out"}));
    if (!parsed) return 0;
    const cxxopts::ParseResult& args = *parsed;
    auto options = ddp::data::ranzcr::SyntheticOptions()
                       .dir(args["out"].as<std::string>())
                       .images(args["n"].as<int64_t>())
                       .test_images(args["n-test"].as<int64_t>())
                       .size(args["size"].as<int>())
                       .patients(args["patients"].as<int64_t>())
                       .seed(args["seed"].as<uint64_t>())
                       .jpeg_quality(args["quality"].as<int>())
                       .threads(args["threads"].as<int>());
    const auto t0 = std::chrono::steady_clock::now();
    ddp::data::ranzcr::write_synthetic_dataset(options);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "wrote " << options.images() << " training and " << options.test_images() << " test images of "
              << options.size() << "x" << options.size() << " to " << options.dir() << " in " << s << " s"
              << std::endl;
    return 0;
  } catch (const std::exception& e) {
    return ddp::report_and_exit_code(e);
  }
}
