#include "trainer/sagemaker_mode.h"

#include <ddp/errors.h>
#include <ddp/logging.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sys/stat.h>
#include <unistd.h>

#include "util/files.h"
#include "util/json.h"
#include "util/numbers.h"
#include "util/program_path.h"

namespace ddp::trainer {
namespace {

// Set once `train` was seen: where the failure file goes. Only main()'s thread touches it.
std::string g_failure_root;  // NOLINT: the one process-wide fact main()'s catch needs

// Flags SageMaker mode sets itself from the layout of /opt/ml: a hyperparameter may not move them.
const std::map<std::string, std::string>& reserved_flags() {
  static const std::map<std::string, std::string> reserved = {
      {"data-dir", "the training channel, /opt/ml/input/data/<channel>"},
      {"model-dir", "/opt/ml/model, the folder SageMaker uploads"},
      {"help", "a command-line flag"},
      {"version", "a command-line flag"},
  };
  return reserved;
}

// cxxopts 3.0 keeps one long name per option, 3.1+ a list: both spellings.
void add_names(const std::string& name, std::map<std::string, bool>& out, bool boolean) { out[name] = boolean; }
template <class Names>
void add_names(const Names& names, std::map<std::string, bool>& out, bool boolean) {
  for (const auto& n : names) out[n] = boolean;
}

// The trainer's long flags -> whether each is a switch (takes no value).
std::map<std::string, bool> trainer_flags(const cxxopts::Options& cli) {
  std::map<std::string, bool> flags;
  for (const auto& group : cli.groups())
    for (const auto& option : cli.group_help(group).options) add_names(option.l, flags, option.is_boolean);
  return flags;
}

// "training", else "train": among the declared channels, or among the folders when no
// inputdataconfig.json was written.
std::string training_channel(const SageMakerConfig& c) {
  const std::string data = c.root + "/input/data/";
  for (const char* name : {"training", "train"}) {
    bool present = false;
    if (c.has_input_data_config) {
      for (const auto& ch : c.channels) present = present || ch == name;
    } else {
      present = util::is_directory(data + name);
    }
    if (present) return data + name;
  }
  std::string seen;
  for (const auto& ch : c.channels) seen += (seen.empty() ? "" : ", ") + ch;
  throw ConfigError(c.has_input_data_config
                        ? c.root + "/input/config/inputdataconfig.json declares no channel named training or train"
                              " (channels: " + (seen.empty() ? "none" : seen) + ")"
                        : "no training channel: neither " + data + "training nor " + data + "train exists");
}

// SageMaker makes /opt/ml before the container starts; whether the image's USER may write its model/
// and checkpoints/ folders depends on how they were made. Find out before training, not after it.
void require_writable(const std::string& dir) {
  if (::access(dir.c_str(), W_OK | X_OK) == 0) return;
  const std::string reason = std::strerror(errno);
  struct stat st {};
  const std::string made = ::stat(dir.c_str(), &st) == 0
                               ? "owner uid " + std::to_string(st.st_uid) + ", mode " +
                                     std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
                                     std::to_string(st.st_mode & 7)
                               : reason;
  throw ConfigError(dir + " is not writable by uid " + std::to_string(::geteuid()) + " (" + made +
                    "): the platform made it for another user; run the image as root "
                    "(docs/KUBEFLOW.md, SageMaker, \"Which user runs the container\")");
}

// Replaces this process with `program train` (sagemaker_trainer's choice): the running program's
// folder first (the image's /opt/ddp/bin holds both trainers), then PATH. Same pid, so SageMaker's
// signals reach the trainer; the other program reads the same /opt/ml. Returns only by throwing.
[[noreturn]] void exec_trainer(const std::string& program, const util::EnvMap& env) {
  std::string path;
  const std::string here = util::own_directory();
  if (!here.empty() && ::access((here + "/" + program).c_str(), X_OK) == 0) {
    path = here + "/" + program;
  } else {
    try {
      path = util::resolve_program(program, env);
    } catch (const ConfigError& e) {
      throw ConfigError("sagemaker: the job asks for " + program + ", which is neither in " +
                        (here.empty() ? std::string("this program's folder") : here) + " nor in PATH (" + e.what() +
                        ")");
    }
  }
  DDP_LOG(INFO) << "sagemaker: the job asks for " << program << ": running " << path << " train";
  const char* argv[] = {path.c_str(), "train", nullptr};
  ::execv(path.c_str(), const_cast<char* const*>(argv));
  throw ConfigError("sagemaker: cannot start " + path + ": " + std::strerror(errno));
}

void set_env(const char* name, const std::string& value, bool overwrite) {
  if (::setenv(name, value.c_str(), overwrite ? 1 : 0) != 0)
    throw ConfigError(std::string("cannot set ") + name + ": " + std::strerror(errno));
}

}  // namespace

TrainerArgs::TrainerArgs(std::vector<std::string> args) : args_(std::move(args)) {
  for (const auto& a : args_) ptrs_.push_back(a.c_str());
  ptrs_.push_back(nullptr);
}

bool is_sagemaker_train(int argc, const char* const* argv) { return argc >= 2 && std::strcmp(argv[1], "train") == 0; }

std::vector<std::string> sagemaker_arguments(const cxxopts::Options& cli, const std::string& program,
                                             const SageMakerConfig& config) {
  const std::string source = config.root + "/input/config/hyperparameters.json";
  const std::map<std::string, bool> flags = trainer_flags(cli);
  std::vector<std::string> args = {program, "--data-dir", training_channel(config), "--model-dir", config.root + "/model"};
  bool checkpoint_dir_given = false;
  std::vector<std::string> from_hyperparameters;
  for (const auto& [name, value] : config.hyperparameters.values) {
    const std::string what = source + ": hyperparameter \"" + util::printable(name, 64) + "\"";
    auto reserved = reserved_flags().find(name);
    if (reserved != reserved_flags().end())
      throw ConfigError(what + " cannot be set here: SageMaker mode sets it (" + reserved->second + ")");
    auto flag = flags.find(name);
    if (flag == flags.end())
      throw ConfigError(what + " is not a flag of " + program + " (see " + program + " --help; " +
                        "SageMaker's own sagemaker_* names are ignored)");
    if (name == "checkpoint-dir") checkpoint_dir_given = true;
    if (!flag->second) {
      from_hyperparameters.push_back("--" + name + "=" + value);
    } else if (value == "true" || value == "True") {
      from_hyperparameters.push_back("--" + name);
    } else if (value != "false" && value != "False") {
      throw ConfigError(what + "='" + util::printable(value) + "' is a switch: expected true or false");
    }
  }
  if (!checkpoint_dir_given && flags.count("checkpoint-dir") && util::is_directory(config.root + "/checkpoints")) {
    args.push_back("--checkpoint-dir");
    args.push_back(config.root + "/checkpoints");
  }
  args.insert(args.end(), from_hyperparameters.begin(), from_hyperparameters.end());
  return args;
}

TrainerArgs sagemaker_or_command_line(const cxxopts::Options& cli, int argc, const char* const* argv) {
  if (!is_sagemaker_train(argc, argv)) return TrainerArgs(std::vector<std::string>(argv, argv + argc));
  const std::string program = cli.program();
  const util::EnvMap env = util::process_env();
  const std::string root = sagemaker_root(env);
  g_failure_root = root;
  if (argc > 2)
    throw ConfigError(program + " train: unexpected argument '" + util::printable(argv[2], 64) +
                      "' (SageMaker mode takes its settings from " + root + "/input/config/hyperparameters.json)");
  const SageMakerConfig config = read_sagemaker_config(root);
  const std::string wanted = sagemaker_trainer(config.hyperparameters, env, program);
  if (wanted != program) exec_trainer(wanted, env);
  std::vector<std::string> args = sagemaker_arguments(cli, program, config);
  if (!util::is_directory(root + "/model")) util::make_dirs(root + "/model");
  require_writable(root + "/model");
  if (util::is_directory(root + "/checkpoints")) require_writable(root + "/checkpoints");
  std::string hosts = "[";
  for (const auto& h : config.resources.hosts) hosts += (hosts.size() > 1 ? "," : "") + util::json_quote(h);
  set_env("SM_HOSTS", hosts + "]", true);
  set_env("SM_CURRENT_HOST", config.resources.current_host, true);
  if (!config.resources.network_interface_name.empty()) {
    set_env("GLOO_SOCKET_IFNAME", config.resources.network_interface_name, false);
    set_env("NCCL_SOCKET_IFNAME", config.resources.network_interface_name, false);
  }
  for (const auto& name : config.hyperparameters.ignored)
    DDP_LOG(INFO) << "sagemaker: hyperparameter " << name << " ignored (the SageMaker toolkit's own)";
  std::string line;
  for (size_t i = 1; i < args.size(); ++i) line += " " + args[i];
  DDP_LOG(INFO) << "sagemaker: " << root << ", host " << config.resources.current_host << " of " << hosts
                << "], uid " << ::geteuid() << ": " << program << line;
  return TrainerArgs(std::move(args));
}

void record_sagemaker_failure(const std::exception& e) noexcept {
  if (g_failure_root.empty()) return;
  try {
    const std::string dir = g_failure_root + "/output";
    util::make_dirs(dir);
    util::write_file_atomically(dir + "/failure", {e.what(), "\n"});
  } catch (const std::exception& write_error) {
    DDP_LOG(ERROR) << "sagemaker: could not write the failure reason: " << write_error.what();
  }
}

}  // namespace ddp::trainer
