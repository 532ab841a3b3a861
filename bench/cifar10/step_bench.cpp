// Times the pieces of one CIFAR-10 training step on this machine (one intra-op thread by default):
// batch assembly (augment + normalise), forward + backward + SGD step of the Net (the same LibTorch
// ops Python's Net runs), and test-set forward at several chunk sizes.
//
//   cifar10_step_bench [--threads 1] [--batch 64] [--iters 200]
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "data/cifar/cifar_transforms.h"
#include "models/cifar_net.h"

namespace {

using Clock = std::chrono::steady_clock;

template <typename Fn>
double best_ms(int iters, Fn fn) {
  for (int i = 0; i < 5; ++i) fn();
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) fn();
    best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / iters);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, batch = 64, iters = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--threads") threads = std::stoi(argv[i + 1]);
    else if (a == "--batch") batch = std::stoi(argv[i + 1]);
    else if (a == "--iters") iters = std::stoi(argv[i + 1]);
  }
  torch::set_num_threads(threads);
  torch::manual_seed(0);

  ddp::data::cifar::CifarSplit split;
  split.images = torch::randint(0, 256, {4096, 3, 32, 32}, torch::kByte);
  split.labels = torch::randint(0, 10, {4096}, torch::kLong);
  std::vector<int64_t> idx(batch);
  for (int i = 0; i < batch; ++i) idx[i] = (i * 97) % 4096;
  auto images = torch::empty({batch, 3, 32, 32}), labels = torch::empty({batch}, torch::kLong);
  auto aug = ddp::data::cifar::CifarAugment().seed(1);
  double assemble = best_ms(iters, [&] { ddp::data::cifar::assemble_cifar_batch(split, idx.data(), batch, aug, 0, images, labels); });
  std::printf("batch assembly (augment+normalise, %d images): %.3f ms\n", batch, assemble);

  {
    ddp::models::CifarNet net;
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));
    double step = best_ms(iters, [&] {
      opt.zero_grad();
      auto loss = torch::nn::functional::cross_entropy(net->forward(images), labels);
      loss.backward();
      opt.step();
    });
    std::printf("train step: %.3f ms (%.0f images/s)\n", step, batch / step * 1000);
    torch::NoGradGuard no_grad;
    auto test = torch::randn({1000, 3, 32, 32});
    for (int chunk : {1000, 250, 100}) {
      double ms = best_ms(3, [&] {
        for (int s = 0; s < 1000; s += chunk) net->forward(test.slice(0, s, s + chunk));
      });
      std::printf("  eval forward 1000 images in chunks of %d: %.1f ms\n", chunk, ms);
    }
  }
  return 0;
}
