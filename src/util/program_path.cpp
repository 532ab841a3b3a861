#include "util/program_path.h"

#include <ddp/errors.h>

#include <climits>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace ddp::util {

std::string resolve_program(const std::string& program, const EnvMap& env) {
  auto executable = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (program.empty()) throw ConfigError("the program to run is an empty string");
  if (program.find('/') != std::string::npos) {
    if (!executable(program)) throw ConfigError("program '" + program + "' does not exist or is not executable");
    return program;
  }
  auto path = env_get(env, "PATH");
  std::stringstream in(path ? *path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(in, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (executable(candidate)) return candidate;
  }
  throw ConfigError("program '" + program + "' is not an executable file in PATH" +
                    (path ? "='" + *path + "'" : std::string(" (unset)")));
}

std::string own_directory() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  const std::string path(buf, static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

}  // namespace ddp::util
