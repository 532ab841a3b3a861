// Fuzz target: ddprun's command line. The bytes are split into arguments at NULs and newlines
// (argv[0] is "ddprun"), parsed with parse_launch_args() against a fixed environment, and the
// resulting LaunchConfig described. Malformed input must end in a ddp::ConfigError; anything else
// (another exception, a crash, a sanitizer report) is a bug.
#include <ddp/errors.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ddp/launcher/launch_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> argv{"ddprun"};
  std::string arg;
  for (size_t i = 0; i < size; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\0' || c == '\n') {
      argv.push_back(arg);
      arg.clear();
    } else {
      arg += c;
    }
  }
  if (!arg.empty()) argv.push_back(arg);
  const std::map<std::string, std::string> env{{"PATH", "/usr/bin:/bin"}};
  try {
    ddp::launcher::LaunchConfig c = ddp::launcher::parse_launch_args(argv, env);
    if (!c.help && !c.version) (void)c.describe();
  } catch (const ddp::ConfigError&) {
  }
  return 0;
}
