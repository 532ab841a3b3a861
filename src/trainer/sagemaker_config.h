#pragma once
// What SageMaker tells a training container, read from the files it writes under /opt/ml (no
// sagemaker-training-toolkit, no SM_* variables): docs/KUBEFLOW.md "SageMaker" has the contract.
//
//   <root>/input/config/resourceconfig.json    {"current_host":"algo-1","hosts":["algo-1","algo-2"],
//                                                "network_interface_name":"eth0", ...other keys ignored}
//   <root>/input/config/hyperparameters.json   {"epochs":"1","model-type":"\"custom\"", ...}
//   <root>/input/config/inputdataconfig.json   {"training":{"TrainingInputMode":"File", ...}} (optional;
//                                                File or FastFile: both present the data as files)
//
//   SageMakerConfig c = read_sagemaker_config(sagemaker_root(util::process_env()));
//
// <root> is /opt/ml, or $SAGEMAKER_BASE_DIR (the toolkit's name for the same override) when set.
// Every problem is a ConfigError naming the file (and, for bad JSON, the byte offset).
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/env.h"

namespace ddp::trainer {

/// resourceconfig.json: this instance, all instances (rank order = this order), the interface.
struct ResourceConfig {
  std::string current_host;
  std::vector<std::string> hosts;
  std::string network_interface_name;  ///< empty when absent
};

/// hyperparameters.json decoded as the toolkit does: a value that parses as JSON is that JSON (so
/// "\"custom\"" and "custom" both mean custom, "1" means 1), anything else is the text itself. A
/// number or boolean becomes its text; null, arrays and objects are refused (no trainer flag takes
/// one). `sagemaker_*` names (the toolkit's own, e.g. sagemaker_program) are moved to `ignored`;
/// `trainer` (which program runs: sagemaker_trainer below) to `trainer`.
struct Hyperparameters {
  std::vector<std::pair<std::string, std::string>> values;  ///< file order
  std::vector<std::string> ignored;
  std::string trainer;  ///< the `trainer` hyperparameter; empty when absent
};

struct SageMakerConfig {
  std::string root;
  ResourceConfig resources;
  Hyperparameters hyperparameters;
  /// Channel names from inputdataconfig.json; empty when the file is absent.
  std::vector<std::string> channels;
  bool has_input_data_config = false;
};

/// "/opt/ml", or $SAGEMAKER_BASE_DIR when set (ConfigError when it is set but relative).
std::string sagemaker_root(const util::EnvMap& env);

/// The three parsers over a file's bytes; `source` names the file in errors.
ResourceConfig parse_resource_config(std::string_view text, const std::string& source);
Hyperparameters parse_hyperparameters(std::string_view text, const std::string& source);
std::vector<std::string> parse_input_data_config(std::string_view text, const std::string& source);

/// Reads <root>/input/config/*.json: resourceconfig.json and hyperparameters.json are required,
/// inputdataconfig.json is optional.
SageMakerConfig read_sagemaker_config(const std::string& root);

/// Which trainer `docker run IMAGE train` runs, "train_cifar10" or "train_ranzcr". The image's
/// ENTRYPOINT is train_cifar10, and neither the SageMaker KFP component nor an Estimator without
/// ContainerEntrypoint can change it, so the job says it instead: the `trainer` hyperparameter
/// (cifar10 or ranzcr; train_cifar10 / train_ranzcr also accepted), or SAGEMAKER_PROGRAM (the
/// toolkit's name for the program to run: an Estimator's environment, CreateTrainingJob's
/// Environment, or ENV in a derived image); neither: `running`, the program that was started. Both set
/// and naming different trainers, or a value naming no trainer, is a ConfigError naming the values.
std::string sagemaker_trainer(const Hyperparameters& hp, const util::EnvMap& env, const std::string& running);

}  // namespace ddp::trainer
