#pragma once
// The checkpoint flags every trainer shares, so train_cifar10 and train_ranzcr spell them the same:
//   --checkpoint-dir DIR     where checkpoints go (empty: none are written)
//   --checkpoint-every N     also save every N global steps (0: only at epoch ends)
//   --checkpoint-keep N      keep the newest N checkpoints (0: all)
//   --resume {auto|none|FILE}  auto: newest valid checkpoint in DIR, fresh start when there is none
//
//   cxxopts::Options opts("train_cifar10");
//   ddp::CheckpointFlags::add_to(opts);
//   auto parsed = opts.parse(argc, argv);
//   auto flags = ddp::CheckpointFlags::from(parsed);            // ConfigError naming a bad flag
//   ddp::Checkpointer ckpt(flags.options(), pg);
//   auto resumed = ckpt.resume(flags.resume, *net, &optimizer);
//
// Trainers with their own argv parser call flags.set(name, value) for each flag instead.
// add_to() and from() are inline, so libddp itself does not depend on cxxopts; set() is libddp's.

#include <ddp/checkpoint.h>
#include <ddp/errors.h>  // the ConfigError set() and from() throw
#include <ddp/export.h>

#include <cxxopts.hpp>

#include <cstdint>
#include <string>

namespace ddp {

struct CheckpointFlags {
  std::string dir;
  int64_t every = 0;
  int keep = 3;
  std::string resume = "auto";

  /// Registers the flags (group "Checkpoints") with their defaults.
  static void add_to(cxxopts::Options& options) {
    options.add_options("Checkpoints")
        ("checkpoint-dir", "folder for checkpoints (shared storage with several nodes); empty: none",
         cxxopts::value<std::string>()->default_value(""), "DIR")
        ("checkpoint-every", "also checkpoint every N optimizer steps (0: only at epoch ends)",
         cxxopts::value<std::string>()->default_value("0"), "N")
        ("checkpoint-keep", "keep the newest N checkpoints (0: all)",
         cxxopts::value<std::string>()->default_value("3"), "N")
        ("resume", "auto (newest valid checkpoint in --checkpoint-dir, else a fresh start), none, or a file",
         cxxopts::value<std::string>()->default_value("auto"), "{auto|none|FILE}");
  }

  /// Reads and validates the flags registered by add_to(). ConfigError naming a bad flag.
  static CheckpointFlags from(const cxxopts::ParseResult& parsed) {
    CheckpointFlags f;
    for (const char* name : {"checkpoint-dir", "checkpoint-every", "checkpoint-keep", "resume"})
      f.set(name, parsed[name].as<std::string>());
    return f;
  }

  /// Sets one flag by name (without leading dashes). False when `name` is not one of these flags;
  /// ConfigError naming the flag and the value when the value is bad (libddp: its numbers are read
  /// as every other flag's are).
  DDP_API bool set(const std::string& name, const std::string& value);

  CheckpointOptions options() const { return CheckpointOptions().dir(dir).every(every).keep(keep); }
};

}  // namespace ddp
