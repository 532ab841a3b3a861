#include "options.h"

#include <ddp/errors.h>

#include <cxxopts.hpp>

#include "trainer/runtime_flags.h"
#include "trainer/sagemaker_mode.h"
#include "util/choices.h"
#include "util/cli.h"
#include "util/numbers.h"

namespace train_cifar10 {

std::optional<Options> parse_options(int argc, char** argv) {
  using ddp::util::parse_int;
  using ddp::util::parse_real;
  cxxopts::Options cli("train_cifar10",
                       "Distributed CIFAR-10 training (the aws-do-kubeflow workshop's cifar10-distributed-gpu-final.py, "
                       "in C++). Rank and world come from the environment (torchrun/ddprun, PyTorchJob, Kubeflow PET_*, "
                       "SageMaker); see docs/CIFAR10.md.");
  ddp::trainer::add_runtime_flags(cli, "cifar-10-batches-bin/ or cifar-10-batches-py/");
  // Flags are read as strings and converted by util/numbers.h, so a bad value is our ConfigError naming the flag.
  cli.add_options("Data")
      ("workers", "loader threads per rank (0: assemble batches inline)", cxxopts::value<std::string>()->default_value("1"), "N")
      ("prefetch", "ready batches queued ahead of the training loop", cxxopts::value<std::string>()->default_value("4"), "N")
      ("no-augment", "train without RandomCrop(32, padding=4) + horizontal flip");
  cli.add_options("Training")
      ("batch-size", "training batch size per rank", cxxopts::value<std::string>()->default_value("64"), "N")
      ("test-batch-size", "evaluation batch size", cxxopts::value<std::string>()->default_value("1000"), "N")
      ("epochs", "epochs to train", cxxopts::value<std::string>()->default_value("10"), "N")
      ("lr", "SGD learning rate", cxxopts::value<std::string>()->default_value("0.01"), "X")
      ("momentum", "SGD momentum", cxxopts::value<std::string>()->default_value("0.5"), "X")
      ("seed", "random seed (model init, shuffling, augmentation)", cxxopts::value<std::string>()->default_value("1"), "N")
      ("model", "net (the seed's CNN) or resnet18 (CIFAR stem)", cxxopts::value<std::string>()->default_value("net"), "{net|resnet18}")
      ("model-type", "the AWS workshop's name for the model: custom (= --model net)", cxxopts::value<std::string>(), "{custom}")
      ("sync-bn", "BatchNorm statistics over every rank's batch (ddp::SyncBatchNorm; --model resnet18)");
  ddp::CheckpointFlags::add_to(cli);

  // `train_cifar10 train`: SageMaker's files become the command line (trainer/sagemaker_mode.h).
  const ddp::trainer::TrainerArgs cmd = ddp::trainer::sagemaker_or_command_line(cli, argc, argv);
  auto parsed = ddp::util::parse_command_line(cli, cmd.argc(), cmd.argv(),
                                              ddp::trainer::trainer_rules({"Data", "Training", "Runtime", "Checkpoints"}));
  if (!parsed) return std::nullopt;
  const cxxopts::ParseResult& args = *parsed;
  auto value = [&](const std::string& flag) { return args[flag].as<std::string>(); };

  Options o;
  o.runtime = ddp::trainer::read_runtime_flags(args);
  if (o.runtime.data_dir().empty())
    throw ddp::ConfigError("--data-dir is required (or set SM_CHANNEL_TRAIN / SM_CHANNEL_TRAINING)");
  o.batch_size = parse_int("--batch-size", value("batch-size"), 1, 1 << 20);
  o.test_batch_size = parse_int("--test-batch-size", value("test-batch-size"), 1, 1 << 20);
  o.epochs = parse_int("--epochs", value("epochs"), 1, 1000000);
  o.lr = parse_real("--lr", value("lr"), 0, 1e6);
  o.momentum = parse_real("--momentum", value("momentum"), 0, 1);
  o.seed = parse_int("--seed", value("seed"), 0, INT64_C(1) << 62);
  o.workers = static_cast<int>(parse_int("--workers", value("workers"), 0, 64));
  o.prefetch = static_cast<int>(parse_int("--prefetch", value("prefetch"), 1, 1024));
  o.augment = args.count("no-augment") == 0;
  o.model = value("model");
  ddp::util::require_choice("--model", o.model, {"net", "resnet18"});
  if (args.count("model-type")) {
    ddp::util::require_choice("--model-type", value("model-type"), {"custom"});
    if (args.count("model") && o.model != "net")
      throw ddp::ConfigError("--model-type custom is --model net, but --model is '" + o.model + "'");
    o.model = "net";
  }
  o.sync_bn = args.count("sync-bn") > 0;
  if (o.sync_bn && o.model == "net")
    throw ddp::ConfigError("--sync-bn synchronises BatchNorm, and --model net has none (use --model resnet18)");
  o.checkpoint = ddp::CheckpointFlags::from(args);
  return o;
}

}  // namespace train_cifar10
