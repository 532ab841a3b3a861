// make_cifar10_from_idx: real images for train_cifar10. Reads MNIST-style IDX files (by default
// Fashion-MNIST from Debian's dataset-fashion-mnist package) and writes them in the CIFAR-10
// layouts, each 28x28 grey image centred on a 32x32 canvas and copied to R, G and B.
//
//   make_cifar10_from_idx --out /tmp/fashion --layout py
//   make_cifar10_from_idx --source ~/mnist --class-names 0,1,2,3,4,5,6,7,8,9 --out /tmp/mnist
#include <ddp/errors.h>

#include <cxxopts.hpp>

#include <iostream>

#include "data/cifar/cifar_from_idx.h"
#include "util/files.h"
#include "data/idx/idx_file.h"
#include "util/cli.h"

namespace {

constexpr const char* kDefaultSource = "/usr/share/datasets/fashion-mnist";

// The IDX file `stem` under `dir`, compressed or not.
std::string find_idx(const std::string& dir, const std::string& stem) {
  for (const char* suffix : {".gz", ""}) {
    const std::string path = ddp::util::join_path(dir, stem + suffix);
    if (ddp::util::is_regular_file(path)) return path;
  }
  std::string hint = dir == kDefaultSource ? " (Debian: apt-get install dataset-fashion-mnist)" : "";
  throw ddp::DataError(ddp::util::join_path(dir, stem) + "[.gz]: not found" + hint);
}

std::vector<std::string> split_names(const std::string& list) {
  std::vector<std::string> names;
  size_t start = 0;
  for (;;) {
    const size_t comma = list.find(',', start);
    names.push_back(list.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (const auto& n : names)
    if (n.empty()) throw ddp::ConfigError("make_cifar10_from_idx: --class-names '" + list + "' has an empty name");
  if (names.size() != 10)
    throw ddp::ConfigError("make_cifar10_from_idx: --class-names needs 10 names, got " + std::to_string(names.size()));
  return names;
}

int64_t non_negative(const cxxopts::ParseResult& args, const std::string& flag) {
  const int64_t v = args[flag].as<int64_t>();
  if (v < 0) throw ddp::ConfigError("make_cifar10_from_idx: --" + flag + " " + std::to_string(v) + " is negative");
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    cxxopts::Options cli("make_cifar10_from_idx",
                         "Write MNIST-style IDX images (default: Fashion-MNIST from Debian's dataset-fashion-mnist) "
                         "in the CIFAR-10 binary (cifar-10-batches-bin/) and/or Python (cifar-10-batches-py/) layout.");
    // The default is spelled out in the description with a space after each comma, not given as
    // cxxopts' default_value: one 90-character word cannot be broken onto lines of the man page.
    std::string default_names, shown_names;
    for (const auto& n : ddp::data::cifar::fashion_mnist_class_names()) {
      default_names += (default_names.empty() ? "" : ",") + n;
      shown_names += (shown_names.empty() ? "" : ", ") + n;
    }
    cli.add_options()
        ("source", "folder with {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]", cxxopts::value<std::string>()->default_value(kDefaultSource), "DIR")
        ("out", "output folder (created if missing)", cxxopts::value<std::string>(), "DIR")
        ("layout", "bin, py or both", cxxopts::value<std::string>()->default_value("both"), "{bin|py|both}")
        ("train", "keep the first N training images, a multiple of 5 (0: all)", cxxopts::value<int64_t>()->default_value("0"), "N")
        ("test", "keep the first N test images (0: all)", cxxopts::value<int64_t>()->default_value("0"), "N")
        ("class-names", "the 10 class names, comma-separated, in label order (default: Fashion-MNIST's, " + shown_names + ")",
         cxxopts::value<std::string>(), "LIST");
    const auto parsed = ddp::util::parse_command_line(cli, argc, argv, ddp::util::CommandLineRules().required({"out"}));
    if (!parsed) return 0;
    const cxxopts::ParseResult& args = *parsed;
    const std::string layout = args["layout"].as<std::string>();
    if (layout != "bin" && layout != "py" && layout != "both")
      throw ddp::ConfigError("make_cifar10_from_idx: --layout must be bin, py or both, got '" + layout + "'");
    const std::vector<std::string> names = split_names(args.count("class-names") ? args["class-names"].as<std::string>() : default_names);
    const int64_t train_limit = non_negative(args, "train"), test_limit = non_negative(args, "test");

    const std::string source = args["source"].as<std::string>();
    // Located one by one, so a missing file is reported in a fixed order.
    const std::string train_images = find_idx(source, "train-images-idx3-ubyte");
    const std::string train_labels = find_idx(source, "train-labels-idx1-ubyte");
    const std::string test_images = find_idx(source, "t10k-images-idx3-ubyte");
    const std::string test_labels = find_idx(source, "t10k-labels-idx1-ubyte");
    using ddp::data::read_idx_file;
    const ddp::data::cifar::CifarRecords train = ddp::data::cifar::cifar_split_from_idx(
        read_idx_file(train_images), read_idx_file(train_labels), train_limit, source + " training set");
    const ddp::data::cifar::CifarRecords test = ddp::data::cifar::cifar_split_from_idx(
        read_idx_file(test_images), read_idx_file(test_labels), test_limit, source + " test set");
    // The layout splits training images evenly over five files.
    if (train.count % 5 != 0)
      throw ddp::ConfigError("make_cifar10_from_idx: " + std::to_string(train.count) +
                             " training images is not a multiple of 5; pass --train with one");
    ddp::data::cifar::CifarLayoutFiles files;
    files.out_dir = args["out"].as<std::string>();
    files.train = &train;
    files.test = &test;
    files.class_names = names;
    files.train_name_prefix = "idx_train";
    files.test_name_prefix = "idx_test";
    files.binary = layout != "py";
    files.python = layout != "bin";
    ddp::data::cifar::write_cifar10_layout(files);
    std::cout << "wrote " << train.count << " training and " << test.count << " test images from " << source << " ("
              << layout << ") to " << files.out_dir << std::endl;
    return 0;
  } catch (const std::exception& e) {
    return ddp::report_and_exit_code(e);
  }
}
