#pragma once
// A word that must be one of a fixed few (--backend auto|gloo|nccl), checked one way everywhere.
//
//   ddp::util::require_choice("--progress", value, {"auto", "bar", "plain"});

#include <string>
#include <vector>

namespace ddp::util {

/// Returns when `value` is one of `choices`; otherwise a ConfigError naming the thing, the value and
/// the choices: "WHAT='value' is not one of a, b, c".
void require_choice(const std::string& what, const std::string& value, const std::vector<std::string>& choices);

}  // namespace ddp::util
