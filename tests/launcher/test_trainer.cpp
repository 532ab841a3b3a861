// ddp_test_trainer: a small but real distributed trainer for the launcher and checkpoint tests.
//
// A two-layer MLP with dropout learns a random linear teacher on synthetic data. Every rank trains on
// its shard of a per-epoch shuffle (ddp::DistributedSampler, PyTorch's index layout), gradients are
// averaged with one allreduce per step, checkpoints carry everything needed to continue exactly, and
// SIGTERM ends the run after the current step with a checkpoint and exit 143. Rank 0 writes the final
// weights (raw float32 bytes, parameters in name order) to --out, so runs compare byte for byte.
//
//   ddprun --standalone --nproc-per-node 2 ddp_test_trainer --epochs 3 --checkpoint-dir /tmp/ck --out w.bin
//
// Resumed at another world size (an elastic job), the rest of the interrupted epoch is dealt to the
// new ranks (TrainingProgress::change_world_size). --record FILE appends one line per rank and step,
// "attempt A global G epoch E rank R world W samples I,I,...", for the sample-accounting tests.
#include <ddp/checkpoint.h>
#include <ddp/checkpoint_flags.h>
#include <ddp/distributed_sampler.h>
#include <ddp/errors.h>
#include <ddp/init.h>
#include <ddp/logging.h>
#include <ddp/process_group.h>
#include <ddp/signals.h>
#include <torch/torch.h>

#include <chrono>
#include <cxxopts.hpp>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <thread>
#include <unistd.h>

namespace {

struct MlpImpl : torch::nn::Module {
  MlpImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(16, 32));
    fc2 = register_module("fc2", torch::nn::Linear(32, 4));
  }
  torch::Tensor forward(torch::Tensor x) {
    return fc2(torch::dropout(torch::relu(fc1(x)), 0.1, is_training()));
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Mlp);

// One line, one write(2) to an O_APPEND file: lines of ranks writing at once never mix.
void record_step(const std::string& path, int64_t attempt, const ddp::TrainingProgress& p, int rank, int world,
                 const int64_t* samples, int64_t n) {
  std::string line = "attempt " + std::to_string(attempt) + " global " + std::to_string(p.global_step) + " epoch " +
                     std::to_string(p.epoch) + " rank " + std::to_string(rank) + " world " + std::to_string(world) +
                     " samples ";
  for (int64_t i = 0; i < n; ++i) line += (i ? "," : "") + std::to_string(samples[i]);
  line += "\n";
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0 || ::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    throw ddp::DataError("cannot append to --record " + path);
  ::close(fd);
}

void write_weights(Mlp& net, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  for (auto& p : net->named_parameters()) {
    auto t = p.value().detach().contiguous();
    out.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
  }
  if (!out) throw ddp::DataError("cannot write " + path);
}

int train(int argc, char** argv) {
  cxxopts::Options options("ddp_test_trainer", "small deterministic distributed trainer for tests");
  options.add_options()("epochs", "epochs", cxxopts::value<int>()->default_value("2"))(
      "samples", "dataset size", cxxopts::value<int>()->default_value("256"))(
      "batch-size", "per-rank batch size", cxxopts::value<int>()->default_value("8"))(
      "lr", "learning rate", cxxopts::value<double>()->default_value("0.05"))(
      "seed", "seed", cxxopts::value<int>()->default_value("0"))(
      "out", "final weights file (rank 0)", cxxopts::value<std::string>()->default_value(""))(
      "step-sleep-ms", "pause after each step (gives tests time to interrupt)",
      cxxopts::value<int>()->default_value("0"))(
      "record", "append every step's samples to this file", cxxopts::value<std::string>()->default_value(""));
  ddp::CheckpointFlags::add_to(options);
  auto parsed = options.parse(argc, argv);
  auto ck_flags = ddp::CheckpointFlags::from(parsed);
  const int epochs = parsed["epochs"].as<int>(), samples = parsed["samples"].as<int>();
  const int batch = parsed["batch-size"].as<int>(), seed = parsed["seed"].as<int>();
  const auto sleep = std::chrono::milliseconds(parsed["step-sleep-ms"].as<int>());
  if (epochs < 1 || samples < 1 || batch < 1) throw ddp::ConfigError("--epochs, --samples, --batch-size must be >= 1");

  ddp::install_stop_handlers();
  torch::set_num_threads(1);
  torch::manual_seed(seed);
  auto pg = ddp::init_process_group();
  const int rank = pg->rank(), world = pg->size();
  std::cout << "pid " << ::getpid() << " rank " << rank << " of " << world << " attempt "
            << ddp::world().restart_count << std::endl;

  // The data and the model's initial weights depend on the seed only, so every rank agrees.
  auto data_gen = at::detail::createCPUGenerator(static_cast<uint64_t>(seed) + 1000);
  auto x = torch::randn({samples, 16}, data_gen);
  auto teacher = torch::randn({16, 4}, data_gen);
  auto y = torch::matmul(x, teacher).argmax(1);
  Mlp net;
  // Dropout masks differ per rank, from the default generator.
  torch::manual_seed(seed * 100 + rank);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(parsed["lr"].as<double>()).momentum(0.9));

  ddp::Checkpointer ckpt(ck_flags.options(), pg);
  ddp::TrainingProgress progress;
  if (auto resumed = ckpt.resume(ck_flags.resume, *net, &opt)) {
    progress = resumed->progress;
    if (progress.change_world_size(resumed->world_size, world, samples))
      std::cout << "resumed at world size " << world << " from " << resumed->world_size << ": "
                << progress.describe() << std::endl;
  }
  const std::string record = parsed["record"].as<std::string>();

  ddp::DistributedSampler sampler(samples, world, rank, /*shuffle=*/true, seed);
  while (progress.epoch < epochs) {
    sampler.set_epoch(progress.epoch);
    sampler.set_epoch_offset(progress.epoch_offset);
    // Resume mid-epoch: skip exactly the samples this rank already consumed.
    sampler.set_start_index(progress.samples_in_epoch);
    auto indices = sampler.indices();
    const int64_t steps = static_cast<int64_t>(indices.size()) / batch;
    for (int64_t step = 0; step < steps; ++step) {
      auto idx = torch::from_blob(indices.data() + step * batch, {batch}, torch::kLong).clone();
      if (!record.empty())
        record_step(record, ddp::world().restart_count, progress, rank, world, indices.data() + step * batch, batch);
      opt.zero_grad();
      auto loss = torch::nn::functional::cross_entropy(net->forward(x.index_select(0, idx)), y.index_select(0, idx));
      loss.backward();
      std::vector<at::Tensor> grads;
      for (auto& p : net->parameters()) grads.push_back(p.grad());
      pg->allreduce(grads, ddp::AllreduceOptions().op(ddp::ReduceOp::kAvg))->wait();
      opt.step();
      progress.step_done(batch);
      std::cout << "epoch " << progress.epoch << " step " << progress.step_in_epoch << " global "
                << progress.global_step << " loss " << loss.item<float>() << std::endl;
      if (sleep.count()) std::this_thread::sleep_for(sleep);
      bool stop = ddp::stop_requested_any(*pg);
      if (stop || ckpt.due(progress)) ckpt.save(*net, &opt, progress);
      if (stop) {
        std::cout << "stopping after global step " << progress.global_step << " (signal " << ddp::stop_signal() << ")"
                  << std::endl;
        return ddp::stop_exit_code();
      }
    }
    progress.next_epoch();
    ckpt.save(*net, &opt, progress, {{"finished_epoch", std::to_string(progress.epoch - 1)}});
  }
  if (rank == 0 && parsed.count("out") && !parsed["out"].as<std::string>().empty())
    write_weights(net, parsed["out"].as<std::string>());
  std::cout << "done after global step " << progress.global_step << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return train(argc, argv);
  } catch (const std::exception& e) {
    return ddp::report_and_exit_code(e);
  }
}
