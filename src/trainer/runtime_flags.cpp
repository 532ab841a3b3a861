#include "trainer/runtime_flags.h"

#include <ddp/errors.h>

#include "util/choices.h"
#include "util/env.h"
#include "util/numbers.h"

namespace ddp::trainer {
namespace {

std::string env_or_empty(const std::map<std::string, std::string>& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

}  // namespace

void add_runtime_flags(cxxopts::Options& cli, const std::string& data_dir_holds) {
  // Values are read as strings and converted by util/numbers.h, so a bad one is our ConfigError.
  cli.add_options("Data")
      ("data-dir", "folder holding " + data_dir_holds + " (default: $SM_CHANNEL_TRAIN, $SM_CHANNEL_TRAINING)",
       cxxopts::value<std::string>(), "DIR")
      ("model-dir", "where rank 0 writes model.pt (default: $SM_MODEL_DIR, else ./model)", cxxopts::value<std::string>(), "DIR");
  cli.add_options("Runtime")
      ("backend", "auto, gloo or nccl", cxxopts::value<std::string>()->default_value("auto"), "{auto|gloo|nccl}")
      ("device", "auto (cuda:LOCAL_RANK when usable, else cpu), cpu or cuda", cxxopts::value<std::string>()->default_value("auto"), "{auto|cpu|cuda}")
      ("threads", "intra-op threads per rank (0: $OMP_NUM_THREADS if set, else usable CPUs / ranks on this node)",
       cxxopts::value<std::string>()->default_value("0"), "N")
      ("progress", "auto (a bar on a terminal, plain lines otherwise), bar or plain", cxxopts::value<std::string>()->default_value("auto"), "{auto|bar|plain}")
      ("log-interval", "plain progress lines and JSON train records every N steps", cxxopts::value<std::string>()->default_value("10"), "N")
      ("max-steps", "stop after N optimizer steps, evaluate and save (0: no limit)", cxxopts::value<std::string>()->default_value("0"), "N")
      ("timeout", "seconds a collective, the rendezvous or a store call may wait before the rank exits 201 "
                  "(0: the backend's default, Gloo 30 min, NCCL 10 min)",
       cxxopts::value<std::string>()->default_value("0"), "SECONDS")
      ("comm-hook", "how DDP reduces gradients: none (allreduce), fp16 or bf16 (compressed allreduce), powersgd:N "
                    "(PowerSGD of rank N, as PyTorch's powerSGD_hook; its state is checkpointed)",
       cxxopts::value<std::string>()->default_value("none"), "{none|fp16|bf16|powersgd:N}")
      ("powersgd-start-iter", "--comm-hook powersgd: plain allreduce for the first N steps (PyTorch's "
                              "start_powerSGD_iter; at least 2)",
       cxxopts::value<std::string>()->default_value("1000"), "N")
      ("zero", "shard the optimizer state across the ranks (ddp::ZeroRedundancyOptimizer, PyTorch's ZeRO); "
               "checkpoints keep the plain optimizer's format")
      ("static-graph", "DDP learns the model's autograd graph in the first step and relies on it staying the "
                       "same (PyTorch's static_graph=True); a graph that changes stops every rank with an error")
      ("metrics-file", "rank 0 appends JSON lines (train intervals, evaluations, a summary) here",
       cxxopts::value<std::string>()->default_value(""), "FILE")
      ("katib-metrics-file", "rank 0 appends each evaluation's metrics here as the JSON lines Katib's File "
                             "collector reads (format JSON: string values, a timestamp)",
       cxxopts::value<std::string>()->default_value(""), "FILE")
      ("tensorboard-dir", "rank 0 writes TensorBoard event files (losses, accuracy or AUC, learning rate, "
                          "images/s) here, continuing across resumes",
       cxxopts::value<std::string>()->default_value(""), "DIR");
}

RuntimeOptions read_runtime_flags(const cxxopts::ParseResult& args, const std::map<std::string, std::string>& env) {
  RuntimeOptions o;
  if (args.count("data-dir")) {
    o.data_dir(args["data-dir"].as<std::string>());
  } else {
    o.data_dir(env_or_empty(env, "SM_CHANNEL_TRAIN"));
    if (o.data_dir().empty()) o.data_dir(env_or_empty(env, "SM_CHANNEL_TRAINING"));
  }
  if (args.count("model-dir")) {
    o.model_dir(args["model-dir"].as<std::string>());
    if (o.model_dir().empty()) throw ddp::ConfigError("--model-dir is empty");
  } else if (!env_or_empty(env, "SM_MODEL_DIR").empty()) {
    o.model_dir(env_or_empty(env, "SM_MODEL_DIR"));
  }
  o.metrics_file(args["metrics-file"].as<std::string>());
  o.tensorboard_dir(args["tensorboard-dir"].as<std::string>());
  o.katib_metrics_file(args["katib-metrics-file"].as<std::string>());
  if (!o.katib_metrics_file().empty() && o.katib_metrics_file() == o.metrics_file())
    throw ddp::ConfigError("--katib-metrics-file and --metrics-file are both '" + o.metrics_file() +
                           "': Katib's file holds string values, the metrics file numbers; give two files");
  o.backend(args["backend"].as<std::string>());
  util::require_choice("--backend", o.backend(), {"auto", "gloo", "nccl"});
  o.device(args["device"].as<std::string>());
  util::require_choice("--device", o.device(), {"auto", "cpu", "cuda"});
  if (o.device() == "cpu" && o.backend() == "nccl")
    throw ddp::ConfigError("--backend nccl needs CUDA tensors, but --device is cpu");
  o.threads(static_cast<int>(util::parse_int("--threads", args["threads"].as<std::string>(), 0, 1024)));
  o.progress(args["progress"].as<std::string>());
  util::require_choice("--progress", o.progress(), {"auto", "bar", "plain"});
  o.log_interval(util::parse_int("--log-interval", args["log-interval"].as<std::string>(), 1, INT64_C(1) << 40));
  o.max_steps(util::parse_int("--max-steps", args["max-steps"].as<std::string>(), 0, INT64_C(1) << 40));
  o.timeout_seconds(util::parse_real("--timeout", args["timeout"].as<std::string>(), 0, 7 * 24 * 3600.0));
  o.comm_hook(parse_comm_hook(args["comm-hook"].as<std::string>(), args["powersgd-start-iter"].as<std::string>()));
  o.zero(args.count("zero") > 0);
  o.static_graph(args.count("static-graph") > 0);
  return o;
}

RuntimeOptions read_runtime_flags(const cxxopts::ParseResult& args) { return read_runtime_flags(args, ddp::util::process_env()); }

}  // namespace ddp::trainer

namespace ddp::trainer {

util::CommandLineRules trainer_rules(std::vector<std::string> help_groups) {
  return util::CommandLineRules()
      .help_groups(std::move(help_groups))
      .help_flags_group("Runtime")
      .epilogue(util::HelpFor::kTrainer);
}

}  // namespace ddp::trainer
