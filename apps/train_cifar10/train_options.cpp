#include "train_options.h"

#include <ddp/errors.h>

#include <cxxopts.hpp>

#include <iostream>

#include "util/help_epilogue.h"
#include "util/version_banner.h"

extern char** environ;

namespace train_cifar10 {
namespace {

std::string env_or_empty(const std::map<std::string, std::string>& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

void require(bool ok, const std::string& message) {
  if (!ok) throw ddp::ConfigError(message);
}

void check_choice(const std::string& flag, const std::string& value, std::initializer_list<const char*> choices) {
  std::string list;
  for (const char* c : choices) {
    if (value == c) return;
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  throw ddp::ConfigError(flag + "='" + value + "' is not one of " + list);
}

}  // namespace

std::map<std::string, std::string> process_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

std::optional<TrainOptions> parse_train_options(int argc, char** argv, const std::map<std::string, std::string>& env) {
  TrainOptions o;
  cxxopts::Options cli("train_cifar10",
                       "Distributed CIFAR-10 training (the aws-do-kubeflow workshop's cifar10-distributed-gpu-final.py, "
                       "in C++). Rank and world come from the environment (torchrun/ddprun, PyTorchJob, Kubeflow PET_*, "
                       "SageMaker); see docs/CIFAR10.md.");
  // Flags are read as strings and converted here, so a bad value is our ConfigError naming the flag.
  cli.add_options("Data")
      ("data-dir", "folder holding cifar-10-batches-bin/ or cifar-10-batches-py/ (default: $SM_CHANNEL_TRAIN, $SM_CHANNEL_TRAINING)",
       cxxopts::value<std::string>())
      ("model-dir", "where rank 0 writes model.pt (default: $SM_MODEL_DIR, else ./model)", cxxopts::value<std::string>())
      ("metrics-file", "rank 0 appends JSON lines (step, epoch, loss, accuracy, images/s) here", cxxopts::value<std::string>()->default_value(""))
      ("workers", "loader threads per rank (0: assemble batches inline)", cxxopts::value<std::string>()->default_value("1"))
      ("prefetch", "ready batches queued ahead of the training loop", cxxopts::value<std::string>()->default_value("4"))
      ("no-augment", "train without RandomCrop(32, padding=4) + horizontal flip");
  cli.add_options("Training")
      ("batch-size", "training batch size per rank", cxxopts::value<std::string>()->default_value("64"))
      ("test-batch-size", "evaluation batch size", cxxopts::value<std::string>()->default_value("1000"))
      ("epochs", "epochs to train", cxxopts::value<std::string>()->default_value("10"))
      ("lr", "SGD learning rate", cxxopts::value<std::string>()->default_value("0.01"))
      ("momentum", "SGD momentum", cxxopts::value<std::string>()->default_value("0.5"))
      ("seed", "random seed (model init, shuffling, augmentation)", cxxopts::value<std::string>()->default_value("1"))
      ("log-interval", "log every N steps", cxxopts::value<std::string>()->default_value("10"))
      ("max-steps", "stop after N optimizer steps, evaluate and save (0: no limit)", cxxopts::value<std::string>()->default_value("0"))
      ("model", "net (the seed's CNN) or resnet18 (CIFAR stem)", cxxopts::value<std::string>()->default_value("net"));
  cli.add_options("Runtime")
      ("backend", "auto, gloo or nccl", cxxopts::value<std::string>()->default_value("auto"))
      ("device", "auto (cuda:LOCAL_RANK when usable, else cpu), cpu or cuda", cxxopts::value<std::string>()->default_value("auto"))
      ("threads", "intra-op threads per rank (0: $OMP_NUM_THREADS if set, else cores / ranks on this node)", cxxopts::value<std::string>()->default_value("0"))
      ("progress", "auto (a bar on a terminal, plain lines otherwise), bar or plain", cxxopts::value<std::string>()->default_value("auto"))
      ("version", "print the version and exit")
      ("h,help", "show this help");
  ddp::CheckpointFlags::add_to(cli);

  cxxopts::ParseResult args;
  try {
    args = cli.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    throw ddp::ConfigError(std::string("train_cifar10: ") + e.what());
  }
  if (args.count("help")) {
    std::cout << cli.help({"Data", "Training", "Runtime", "Checkpoints"}) << "\n"
              << ddp::util::help_epilogue(ddp::util::HelpFor::kTrainer) << std::flush;
    return std::nullopt;
  }
  if (args.count("version")) {
    std::cout << ddp::util::version_banner("train_cifar10") << std::endl;
    return std::nullopt;
  }
  if (!args.unmatched().empty()) throw ddp::ConfigError("train_cifar10: unexpected argument '" + args.unmatched()[0] + "'");

  auto integer = [&](const std::string& flag, int64_t lo, int64_t hi) {
    const std::string v = args[flag].as<std::string>();
    size_t used = 0;
    long long x = 0;
    try {
      x = std::stoll(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    require(used == v.size() && !v.empty() && x >= lo && x <= hi,
            "--" + flag + "='" + v + "' is not an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
    return static_cast<int64_t>(x);
  };
  auto real = [&](const std::string& flag, double lo, double hi) {
    const std::string v = args[flag].as<std::string>();
    size_t used = 0;
    double x = 0;
    try {
      x = std::stod(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    require(used == v.size() && !v.empty() && x >= lo && x <= hi,
            "--" + flag + "='" + v + "' is not a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return x;
  };

  if (args.count("data-dir")) {
    o.data_dir = args["data-dir"].as<std::string>();
  } else {
    o.data_dir = env_or_empty(env, "SM_CHANNEL_TRAIN");
    if (o.data_dir.empty()) o.data_dir = env_or_empty(env, "SM_CHANNEL_TRAINING");
  }
  require(!o.data_dir.empty(), "--data-dir is required (or set SM_CHANNEL_TRAIN / SM_CHANNEL_TRAINING)");
  if (args.count("model-dir")) {
    o.model_dir = args["model-dir"].as<std::string>();
    require(!o.model_dir.empty(), "--model-dir is empty");
  } else {
    o.model_dir = env_or_empty(env, "SM_MODEL_DIR");
    if (o.model_dir.empty()) o.model_dir = "model";
  }
  o.metrics_file = args["metrics-file"].as<std::string>();

  o.batch_size = integer("batch-size", 1, 1 << 20);
  o.test_batch_size = integer("test-batch-size", 1, 1 << 20);
  o.epochs = integer("epochs", 1, 1000000);
  o.lr = real("lr", 0, 1e6);
  o.momentum = real("momentum", 0, 1);
  o.seed = integer("seed", 0, INT64_C(1) << 62);
  o.log_interval = integer("log-interval", 1, INT64_C(1) << 40);
  o.max_steps = integer("max-steps", 0, INT64_C(1) << 40);
  o.workers = static_cast<int>(integer("workers", 0, 64));
  o.prefetch = static_cast<int>(integer("prefetch", 1, 1024));
  o.threads = static_cast<int>(integer("threads", 0, 1024));
  o.augment = args.count("no-augment") == 0;
  o.backend = args["backend"].as<std::string>();
  check_choice("--backend", o.backend, {"auto", "gloo", "nccl"});
  o.device = args["device"].as<std::string>();
  check_choice("--device", o.device, {"auto", "cpu", "cuda"});
  o.model = args["model"].as<std::string>();
  check_choice("--model", o.model, {"net", "resnet18"});
  o.progress = args["progress"].as<std::string>();
  check_choice("--progress", o.progress, {"auto", "bar", "plain"});
  require(!(o.device == "cpu" && o.backend == "nccl"), "--backend nccl needs CUDA tensors, but --device is cpu");
  o.checkpoint = ddp::CheckpointFlags::from(args);
  return o;
}

}  // namespace train_cifar10
