// DistributedDataParallel::join() on uneven inputs: the workers behind the Join tests in
// ddp_test.cpp.
//
// join_parity_prepare / join_parity_train: against torch's model.join() (python/join_reference.py),
// 2 ranks, the CNN with BatchNorm, rank 0 on 5 batches and rank 1 on 3, with
// divide_by_initial_world_size true and false. What must hold, bit for bit: every parameter and
// buffer on each rank equals torch's on that rank (so the shadowed steps, the buffers broadcast
// from the highest rank still training, the divisor and the final agreement all match).
//
// join_matches_one_process: 3 ranks on 4, 2 and 1 batches, no buffers. One process recomputes each
// step from the batches of the ranks still training in it, their gradients summed and divided by 3
// (or by how many train), and every rank must end with that model (1e-5: float sums in another
// order). join_throw_on_early_termination: every rank gets the DataError at the same step.
#include <ddp/distributed_data_parallel.h>
#include <ddp/errors.h>
#include <ddp/init.h>

#include <torch/torch.h>

#include <cstdlib>
#include <iostream>
#include <sstream>

#include "support/multiprocess.h"
#include "tensor_files.h"
#include "test_models.h"

namespace {

using ddp::testing::Cnn;
using ddp::testing::find_tensor;
using ddp::testing::Mlp;
using ddp::testing::NamedTensors;

constexpr int64_t kJoinBatch = 8;  // 4 images per rank of 2

std::string join_dir() {
  const char* d = std::getenv("DDP_PARITY_DIR");
  if (!d) throw std::runtime_error("DDP_PARITY_DIR is not set");
  return d;
}

int join_steps(int rank) { return rank == 0 ? 5 : 3; }  // STEPS in join_reference.py

DDP_TEST_WORKER(join_parity_prepare) {
  torch::manual_seed(47);
  Cnn net(true);
  NamedTensors init, data;
  for (const auto& item : net->named_parameters()) init.emplace_back(item.key(), item.value());
  for (const auto& item : net->named_buffers()) init.emplace_back(item.key(), item.value());
  for (int s = 0; s < 5; ++s) {
    data.emplace_back("x" + std::to_string(s), torch::randn({kJoinBatch, 3, 32, 32}));
    data.emplace_back("y" + std::to_string(s), torch::randint(0, 10, {kJoinBatch}));
  }
  ddp::testing::write_tensors(join_dir(), "join_init", init);
  ddp::testing::write_tensors(join_dir(), "join_data", data);
  return 0;
}

DDP_TEST_WORKER(join_parity_train) {
  auto pg = ddp::init_process_group();
  torch::set_num_threads(1);
  const NamedTensors init = ddp::testing::read_tensors(join_dir(), "join_init");
  const NamedTensors data = ddp::testing::read_tensors(join_dir(), "join_data");
  int failures = 0;
  for (const bool initial : {true, false}) {
    const std::string name = initial ? "initial" : "dynamic";
    Cnn net(true);
    {
      torch::NoGradGuard g;
      for (auto& item : net->named_parameters()) item.value().copy_(find_tensor(init, item.key()));
      for (auto& item : net->named_buffers()) item.value().copy_(find_tensor(init, item.key()));
    }
    ddp::DistributedDataParallel model(net, pg);
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
    const int64_t per = kJoinBatch / pg->size();
    model.join(
        [&] {
          for (int s = 0; s < join_steps(pg->rank()); ++s) {
            auto x = find_tensor(data, "x" + std::to_string(s)).narrow(0, pg->rank() * per, per);
            auto y = find_tensor(data, "y" + std::to_string(s)).narrow(0, pg->rank() * per, per);
            opt.zero_grad();
            torch::nn::functional::cross_entropy(model(x), y).backward();
            opt.step();
          }
        },
        ddp::JoinOptions().divide_by_initial_world_size(initial));
    const NamedTensors theirs =
        ddp::testing::read_tensors(join_dir(), "join_" + name + "_rank" + std::to_string(pg->rank()));
    size_t compared = 0;
    auto compare = [&](const std::string& key, const at::Tensor& ours) {
      ++compared;
      const at::Tensor t = find_tensor(theirs, key);
      if (torch::equal(ours, t)) return;
      ++failures;
      std::cerr << "rank " << pg->rank() << " FAILED: " << name << ": " << key << " differs from torch's join: max |diff| "
                << (ours.to(torch::kDouble) - t.to(torch::kDouble)).abs().max().item<double>() << std::endl;
    };
    for (const auto& item : net->named_parameters()) compare(item.key(), item.value());
    for (const auto& item : net->named_buffers()) compare(item.key(), item.value());
    if (compared != theirs.size()) {
      ++failures;
      std::cerr << "FAILED: torch wrote " << theirs.size() << " tensors, we compared " << compared << std::endl;
    }
  }
  return failures == 0 ? 0 : 1;
}

// ---- 3 ranks against one process -------------------------------------------------------------------

constexpr int kRanks3 = 3;
int steps_of(int rank) { return rank == 0 ? 4 : rank == 1 ? 2 : 1; }

std::pair<at::Tensor, at::Tensor> batch_of(int rank, int step) {
  torch::manual_seed(1000 + 10 * rank + step);
  return {torch::randn({4, 20}), torch::randint(0, 10, {4})};
}

// This rank's uneven loop inside join(): its steps_of(rank) batches; counts the steps it finished.
void train_own_batches(ddp::DistributedDataParallel<Mlp>& model, torch::optim::Optimizer& opt, int rank,
                       ddp::JoinOptions options, int* trained = nullptr) {
  model.join(
      [&] {
        for (int s = 0; s < steps_of(rank); ++s) {
          auto [x, y] = batch_of(rank, s);
          opt.zero_grad();
          torch::nn::functional::cross_entropy(model(x), y).backward();
          opt.step();
          if (trained) ++*trained;
        }
      },
      options);
}

DDP_TEST_WORKER(join_matches_one_process) {
  auto pg = ddp::init_process_group();
  torch::set_num_threads(1);
  int failures = 0;
  for (const bool initial : {true, false}) {
    torch::manual_seed(48);
    Mlp reference;
    torch::manual_seed(48);
    Mlp net;
    ddp::DistributedDataParallel model(net, pg);
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    train_own_batches(model, opt, pg->rank(), ddp::JoinOptions().divide_by_initial_world_size(initial));
    // One process: each step, the ranks with a batch in it, each gradient / divisor, summed.
    torch::optim::SGD ref_opt(reference->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    for (int s = 0; s < steps_of(0); ++s) {
      int active = 0;
      for (int r = 0; r < kRanks3; ++r) active += s < steps_of(r) ? 1 : 0;
      const double divisor = initial ? kRanks3 : active;
      ref_opt.zero_grad();
      for (int r = 0; r < kRanks3; ++r) {
        if (s >= steps_of(r)) continue;
        auto [x, y] = batch_of(r, s);
        (torch::nn::functional::cross_entropy(reference(x), y) / divisor).backward();
      }
      ref_opt.step();
    }
    double worst = 0;
    auto ours = net->parameters(), ref = reference->parameters();
    for (size_t i = 0; i < ours.size(); ++i) worst = std::max(worst, (ours[i] - ref[i]).abs().max().item<double>());
    const bool moved = !torch::equal(ours[0], [] {
      torch::manual_seed(48);
      return Mlp()->parameters()[0];
    }());
    std::cerr << "rank " << pg->rank() << " divide_by_initial_world_size " << initial << ": max |diff| " << worst
              << std::endl;
    if (!(worst <= 1e-5) || !moved) {
      ++failures;
      std::cerr << "rank " << pg->rank() << " FAILED: join with divide_by_initial_world_size=" << initial
                << " differs from one process by " << worst << (moved ? "" : " (and the model never moved)")
                << std::endl;
    }
  }
  return failures == 0 ? 0 : 1;
}

DDP_TEST_WORKER(join_throw_on_early_termination) {
  auto pg = ddp::init_process_group();
  torch::manual_seed(49);
  Mlp net;
  ddp::DistributedDataParallel model(net, pg);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1));
  int trained = 0;
  std::string error;
  try {
    train_own_batches(model, opt, pg->rank(), ddp::JoinOptions().throw_on_early_termination(true), &trained);
  } catch (const ddp::DataError& e) {
    error = e.what();
  }
  // Rank 2 has 1 batch: after it, every rank stops at the next step (ranks 0 and 1 in their
  // second forward, rank 2 in join's first round), so each trained exactly 1 step.
  std::cerr << "rank " << pg->rank() << " trained " << trained << ", error: " << error << std::endl;
  if (trained != 1 || error.find("throw_on_early_termination") == std::string::npos) return 1;
  if (pg->rank() == 2 && error.find("rank 2 ran out of inputs") == std::string::npos) return 1;
  // The group is still usable afterwards (nobody is left waiting in a collective).
  std::vector<at::Tensor> t = {torch::ones({1})};
  pg->allreduce(t)->wait();
  return t[0].item<float>() == kRanks3 ? 0 : 1;
}

}  // namespace
