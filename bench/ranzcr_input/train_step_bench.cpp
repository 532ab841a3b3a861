// Training-step throughput of the RANZCR model on CPU: ResNet (1-channel stem, 11 outputs),
// BCE-with-logits, Adam (lr 1e-3, weight decay 0.1), one process, no communication.
// train_step_torch.py runs the same step with PyTorch for a side-by-side number.
//
//   bench_ranzcr_train_step --arch resnet18 --image-size 224 --batch-size 16 --steps 5 --threads 2
#include "models/resnet.h"

#include <ddp/errors.h>

#include <cxxopts.hpp>
#include <torch/torch.h>

#include <chrono>
#include <ctime>
#include <iostream>

int main(int argc, char** argv) {
  try {
    cxxopts::Options cli("bench_ranzcr_train_step", "ResNet training step throughput (CPU)");
    cli.add_options()
        ("arch", "resnet18|resnet34|resnet50", cxxopts::value<std::string>()->default_value("resnet18"))
        ("image-size", "input side", cxxopts::value<int64_t>()->default_value("224"))
        ("batch-size", "batch size", cxxopts::value<int64_t>()->default_value("16"))
        ("steps", "timed steps", cxxopts::value<int>()->default_value("5"))
        ("warmup", "untimed steps first", cxxopts::value<int>()->default_value("2"))
        ("threads", "intra-op threads", cxxopts::value<int>()->default_value("2"))
        ("channels-last", "NHWC memory format", cxxopts::value<bool>()->default_value("false"));
    auto args = cli.parse(argc, argv);
    torch::set_num_threads(args["threads"].as<int>());
    torch::manual_seed(0);
    using namespace ddp::models;
    ResNet net(ResNetOptions(parse_resnet_arch(args["arch"].as<std::string>())).in_channels(1).num_classes(11));
    const bool nhwc = args["channels-last"].as<bool>();
    if (nhwc) {
      for (auto& p : net->parameters()) {
        if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
      }
    }
    torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(1e-3).weight_decay(0.1));
    const int64_t b = args["batch-size"].as<int64_t>(), s = args["image-size"].as<int64_t>();
    auto x = torch::randn({b, 1, s, s});
    if (nhwc) x = x.contiguous(at::MemoryFormat::ChannelsLast);
    auto y = (torch::rand({b, 11}) < 0.3).to(torch::kFloat);
    auto step = [&] {
      opt.zero_grad();
      auto loss = torch::binary_cross_entropy_with_logits(net->forward(x), y);
      loss.backward();
      opt.step();
    };
    for (int i = 0; i < args["warmup"].as<int>(); ++i) step();
    const int steps = args["steps"].as<int>();
    // Wall time, and process CPU time (all threads): on a shared machine the second is the steadier.
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    for (int i = 0; i < steps; ++i) step();
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    std::cout << "RESULT ours arch=" << args["arch"].as<std::string>() << " image_size=" << s << " batch=" << b
              << " threads=" << args["threads"].as<int>() << (nhwc ? " channels_last" : "")
              << " step_s=" << sec / steps << " images_per_s=" << b * steps / sec
              << " cpu_s_per_image=" << cpu / (b * steps) << std::endl;
    return 0;
  } catch (const std::exception& e) {
    return ddp::report_and_exit_code(e);
  }
}
