// Fuzz target: the environment contract (docs/ENVIRONMENT.md). The bytes are lines "KEY=VALUE" (a
// later line overrides an earlier one; values may hold any byte but a newline), read into a
// util::EnvMap (the process environment is not touched) and resolved twice: as a worker would
// (WorldInfo::from_env) and as ddprun would (parse_launch_args for "ddprun /bin/true"). Bad values
// must end in a ddp::ConfigError naming the variable; anything else is a bug.
#include <ddp/errors.h>
#include <ddp/world_info.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "ddp/launcher/launch_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::map<std::string, std::string> env;
  const std::string text(reinterpret_cast<const char*>(data), size);
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(begin, end - begin);
    const size_t eq = line.find('=');
    if (eq != std::string::npos && eq > 0) env[line.substr(0, eq)] = line.substr(eq + 1);
    begin = end + 1;
  }
  try {
    ddp::WorldInfo w = ddp::WorldInfo::from_env(env);
    (void)w.describe();
  } catch (const ddp::ConfigError&) {
  }
  try {
    ddp::launcher::LaunchConfig c = ddp::launcher::parse_launch_args({"ddprun", "/bin/true"}, env);
    (void)c.describe();
  } catch (const ddp::ConfigError&) {
  }
  return 0;
}
