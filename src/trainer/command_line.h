#pragma once
// The part of a trainer's command line that is the same for every trainer: parse, answer --help
// (the usage, then the environment variables and exit codes) and --version, refuse stray arguments.
//
//   cxxopts::Options cli("train_x", "...");
//   ddp::trainer::add_runtime_flags(cli, "...");   // plus the task's own flags
//   auto args = ddp::trainer::parse_command_line(cli, argc, argv, {"Data", "Training", "Runtime", "Checkpoints"});
//   if (!args) return 0;                            // --help or --version was printed

#include <cxxopts.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ddp::trainer {

/// Registers --version and -h/--help in the "Runtime" group.
void add_help_flags(cxxopts::Options& cli);

/// Parses argv. nullopt after printing --help (the `groups` in this order; all when empty) or
/// --version to stdout. ConfigError "<program>: <reason> (see --help)" for an unknown flag or a
/// value cxxopts refuses, and for a positional argument.
std::optional<cxxopts::ParseResult> parse_command_line(cxxopts::Options& cli, int argc, char** argv,
                                                       const std::vector<std::string>& groups = {});

}  // namespace ddp::trainer
