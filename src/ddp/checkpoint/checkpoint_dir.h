#pragma once
// Naming, listing and retiring checkpoint files in a folder.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ddp::detail {

/// The global step in a checkpoint file name ("ckpt-000000001041.ddpckpt" -> 1041), or nullopt.
std::optional<int64_t> checkpoint_step_from_name(const std::string& name);

struct CheckpointFile {
  std::string path;
  int64_t global_step;
};

/// Checkpoint files in `dir`, oldest (lowest step) first. Empty when dir is missing.
std::vector<CheckpointFile> checkpoint_files(const std::string& dir);

/// Retired checkpoints ("<checkpoint name>.stale"), oldest (lowest step) first.
std::vector<CheckpointFile> stale_checkpoint_files(const std::string& dir);

/// Deletes all but the newest `keep` checkpoints, and all but the newest `keep` retired (.stale)
/// ones (keep 0: none deleted); logs each deletion.
void prune_checkpoints(const std::string& dir, int keep);

/// Renames checkpoints newer than `global_step` to "<name>.stale": they belong to a run this one
/// replaced (started fresh or from an older file) and must not be picked by a later --resume auto.
void retire_checkpoints_after(const std::string& dir, int64_t global_step);

/// Removes temporary files of writers that are gone (".ckpt-*.tmp-<pid>" of a dead pid).
void remove_stale_temporaries(const std::string& dir);

}  // namespace ddp::detail
