// Fuzz target: SageMaker's config files as the trainers read them in `train` mode
// (src/trainer/sagemaker_config.h) and the JSON reader under them (src/util/json.h). The same bytes
// go to each of the three file parsers (resourceconfig.json, hyperparameters.json,
// inputdataconfig.json), to the trainer choice (as hyperparameters, their `trainer`, and as
// SAGEMAKER_PROGRAM) and to parse_json with a small depth limit. Bad input must end in a
// ddp::ConfigError; anything else (a crash, another exception, a hang) is a bug.
#include <ddp/errors.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "trainer/sagemaker_config.h"
#include "util/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)ddp::trainer::parse_resource_config(text, "resourceconfig.json");
  } catch (const ddp::ConfigError&) {
  }
  try {
    const auto hp = ddp::trainer::parse_hyperparameters(text, "hyperparameters.json");
    const std::string chosen = ddp::trainer::sagemaker_trainer(hp, {}, "train_cifar10");
    if (chosen != "train_cifar10" && chosen != "train_ranzcr") __builtin_trap();
  } catch (const ddp::ConfigError&) {
  }
  try {
    (void)ddp::trainer::sagemaker_trainer({}, {{"SAGEMAKER_PROGRAM", std::string(text)}}, "train_ranzcr");
  } catch (const ddp::ConfigError&) {
  }
  try {
    (void)ddp::trainer::parse_input_data_config(text, "inputdataconfig.json");
  } catch (const ddp::ConfigError&) {
  }
  try {
    const ddp::util::JsonValue v = ddp::util::parse_json(text, "doc", ddp::util::JsonLimits{1u << 16, 8});
    // What was read must quote back into JSON that reads the same (strings only: numbers keep text).
    if (v.is(ddp::util::JsonValue::Kind::kString) &&
        ddp::util::parse_json(ddp::util::json_quote(v.text()), "requoted").text() != v.text())
      __builtin_trap();
  } catch (const ddp::ConfigError&) {
  }
  return 0;
}
