#include "trainer/sagemaker_config.h"

#include <ddp/errors.h>

#include <sys/stat.h>

#include "util/files.h"
#include "util/json.h"
#include "util/numbers.h"

namespace ddp::trainer {
namespace {

using util::JsonValue;
using Kind = util::JsonValue::Kind;

constexpr size_t kMaxConfigBytes = 4u << 20;  // SageMaker's own files are a few KiB

const JsonValue& require_object(const JsonValue& v, const std::string& source) {
  if (!v.is(Kind::kObject))
    throw ConfigError(source + ": the document is " + JsonValue::kind_name(v.kind()) + ", not a JSON object");
  return v;
}

// One hyperparameter as the toolkit decodes it (environment.read_hyperparameters: json.loads, else
// the text), then as a flag value.
std::string decode_hyperparameter(const std::string& name, const JsonValue& v, const std::string& source) {
  const std::string what = source + ": hyperparameter \"" + util::printable(name, 64) + "\"";
  JsonValue decoded = v;
  if (v.is(Kind::kString)) {
    try {
      decoded = util::parse_json(v.text(), what);
    } catch (const ConfigError&) {
      return v.text();  // not JSON: the text itself, e.g. gloo
    }
  }
  switch (decoded.kind()) {
    case Kind::kString:
    case Kind::kNumber: return decoded.text();
    case Kind::kBool: return decoded.bool_value() ? "true" : "false";
    default:
      throw ConfigError(what + " is " + JsonValue::kind_name(decoded.kind()) +
                        ": a trainer flag takes one string, number or boolean");
  }
}

std::string read_config_file(const std::string& path) {
  try {
    return util::read_file(path, kMaxConfigBytes);
  } catch (const DataError& e) {
    throw ConfigError(std::string(e.what()) + "; is this a SageMaker training container?");
  }
}

// "ranzcr" / "train_ranzcr" -> "train_ranzcr"; empty when `value` names no trainer.
std::string program_named(const std::string& value) {
  for (const char* name : {"cifar10", "ranzcr"}) {
    const std::string program = std::string("train_") + name;
    if (value == name || value == program) return program;
  }
  return "";
}

std::string checked(const std::string& what, const std::string& value) {
  const std::string program = program_named(value);
  if (program.empty())
    throw ConfigError(what + "='" + util::printable(value) +
                      "' is not a trainer: cifar10 or ranzcr (train_cifar10 or train_ranzcr)");
  return program;
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

std::string sagemaker_root(const util::EnvMap& env) {
  auto v = util::env_get(env, "SAGEMAKER_BASE_DIR");
  if (!v) return "/opt/ml";
  if ((*v)[0] != '/') throw ConfigError("SAGEMAKER_BASE_DIR='" + util::printable(*v) + "' is not an absolute path");
  return *v;
}

ResourceConfig parse_resource_config(std::string_view text, const std::string& source) {
  const JsonValue doc = util::parse_json(text, source, util::JsonLimits{kMaxConfigBytes, 64});
  require_object(doc, source);
  ResourceConfig rc;
  rc.current_host = doc.at("current_host", source).string_value(source + ": current_host");
  const JsonValue& hosts = doc.at("hosts", source);
  if (!hosts.is(Kind::kArray))
    throw ConfigError(source + ": hosts is " + JsonValue::kind_name(hosts.kind()) + ", not a list of host names");
  for (const JsonValue& h : hosts.array_items()) {
    const std::string what = source + ": hosts[" + std::to_string(rc.hosts.size()) + "]";
    const std::string& name = h.string_value(what);
    if (name.empty()) throw ConfigError(what + " is an empty name");
    for (const auto& seen : rc.hosts)
      if (seen == name) throw ConfigError(what + " '" + util::printable(name) + "' is listed twice");
    rc.hosts.push_back(name);
  }
  if (rc.hosts.empty()) throw ConfigError(source + ": hosts is an empty list");
  bool found = false;
  for (const auto& h : rc.hosts) found = found || h == rc.current_host;
  if (!found)
    throw ConfigError(source + ": current_host '" + util::printable(rc.current_host) + "' is not one of hosts");
  if (const JsonValue* nic = doc.find("network_interface_name"))
    rc.network_interface_name = nic->string_value(source + ": network_interface_name");
  return rc;
}

Hyperparameters parse_hyperparameters(std::string_view text, const std::string& source) {
  const JsonValue doc = util::parse_json(text, source, util::JsonLimits{kMaxConfigBytes, 64});
  require_object(doc, source);
  Hyperparameters hp;
  for (const auto& [name, value] : doc.members()) {
    if (name.rfind("sagemaker_", 0) == 0) {
      hp.ignored.push_back(name);
      continue;
    }
    if (name == "trainer") {
      hp.trainer = decode_hyperparameter(name, value, source);
      continue;
    }
    hp.values.emplace_back(name, decode_hyperparameter(name, value, source));
  }
  return hp;
}

std::vector<std::string> parse_input_data_config(std::string_view text, const std::string& source) {
  const JsonValue doc = util::parse_json(text, source, util::JsonLimits{kMaxConfigBytes, 64});
  require_object(doc, source);
  std::vector<std::string> channels;
  for (const auto& [name, value] : doc.members()) {
    if (!value.is(Kind::kObject))
      throw ConfigError(source + ": channel \"" + util::printable(name, 64) + "\" is " +
                        JsonValue::kind_name(value.kind()) + ", not an object");
    // FastFile streams S3 objects but shows them as files under input/data/<channel>, as File does.
    if (const JsonValue* mode = value.find("TrainingInputMode")) {
      const std::string& m = mode->string_value(source + ": " + name + ".TrainingInputMode");
      if (m != "File" && m != "FastFile")
        throw ConfigError(source + ": channel \"" + util::printable(name, 64) + "\" has TrainingInputMode '" +
                          util::printable(m) + "'; the trainers read files: use File or FastFile");
    }
    channels.push_back(name);
  }
  return channels;
}

SageMakerConfig read_sagemaker_config(const std::string& root) {
  SageMakerConfig c;
  c.root = root;
  const std::string dir = root + "/input/config/";
  c.resources = parse_resource_config(read_config_file(dir + "resourceconfig.json"), dir + "resourceconfig.json");
  c.hyperparameters =
      parse_hyperparameters(read_config_file(dir + "hyperparameters.json"), dir + "hyperparameters.json");
  if (file_exists(dir + "inputdataconfig.json")) {
    c.has_input_data_config = true;
    c.channels = parse_input_data_config(read_config_file(dir + "inputdataconfig.json"), dir + "inputdataconfig.json");
  }
  return c;
}

std::string sagemaker_trainer(const Hyperparameters& hp, const util::EnvMap& env, const std::string& running) {
  const auto from_env = util::env_get(env, "SAGEMAKER_PROGRAM");
  const std::string by_env = from_env ? checked("SAGEMAKER_PROGRAM", *from_env) : "";
  const std::string by_hp = hp.trainer.empty() ? "" : checked("hyperparameter \"trainer\"", hp.trainer);
  if (!by_env.empty() && !by_hp.empty() && by_env != by_hp)
    throw ConfigError("hyperparameter \"trainer\"='" + util::printable(hp.trainer) + "' and SAGEMAKER_PROGRAM='" +
                      util::printable(*from_env) + "' name different trainers: set one");
  if (!by_hp.empty()) return by_hp;
  if (!by_env.empty()) return by_env;
  return running;
}

}  // namespace ddp::trainer
