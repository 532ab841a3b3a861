#pragma once
// The end of every ddp program's --help: the environment variables it reads and the exit codes it
// returns. Written once here so the programs and docs/ENVIRONMENT.md (the contract; a test checks that
// it names every variable listed here) tell the same story.
//
//   std::cout << cli.help() << "\n" << ddp::detail::help_epilogue(ddp::detail::HelpFor::kTrainer);

#include <ddp/export.h>
#include <string>

namespace ddp::detail {

/// Whose variables to list: a trainer finds its place in the job itself (WorldInfo), ddprun reads
/// the node-level PET_* variables and hands torchrun's to its workers. Exit codes are shared.
enum class HelpFor { kTrainer, kLauncher };

/// "environment variables:" and "exit codes:" sections, each line ending in '\n'.
// exported until src/util lands
DDP_API std::string help_epilogue(HelpFor program);

}  // namespace ddp::detail
