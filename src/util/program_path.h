#pragma once
// Where a program name leads, the way execvp looks it up: ddprun's program and the trainer that
// SageMaker mode hands over to.
//
//   std::string path = util::resolve_program("train_ranzcr", util::process_env());
#include <string>

#include "util/env.h"

namespace ddp::util {

/// Finds `program` the way execvp would (a name without '/' is looked up in PATH). ConfigError when
/// it does not exist or is not executable.
std::string resolve_program(const std::string& program, const EnvMap& env);

/// The folder of this process's executable (/proc/self/exe); empty when it cannot be read.
std::string own_directory();

}  // namespace ddp::util
