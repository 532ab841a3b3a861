#pragma once
// ddprun's main loop: joins the other nodes, starts this node's workers, watches them and the
// store, restarts every node's workers together after a retryable failure, and turns the outcome
// into one exit code.
//
// Exit code: 0 when every worker succeeded; otherwise the failing worker's code, its class kept
// (1-127 permanent: never restarted; >= 128 retryable: restarted while --max-restarts allows);
// 128 + signal when ddprun itself was asked to stop (unless every worker had already succeeded).
#include <map>
#include <string>

#include "ddp/launcher/launch_config.h"

namespace ddp::launcher {

/// Runs the job described by `config`; `env` is the environment the workers inherit.
int run_launcher(const LaunchConfig& config, const std::map<std::string, std::string>& env);

}  // namespace ddp::launcher
