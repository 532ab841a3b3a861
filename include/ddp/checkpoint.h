#pragma once
// Checkpoints for exact resume: model state, optimizer state, where training stands (epoch, step,
// sampler position), every rank's RNG states and free-form metadata.
//
// Rank 0 writes, atomically (temporary file in the same folder, fsync, rename, fsync of the folder),
// with a CRC32C of the payload in a small header, so a torn, truncated or flipped file is detected.
// Files are named `ckpt-<global step, 12 digits>.ddpckpt` (sortable by global step); the last
// `keep` are kept. On resume every rank reads the same file (rank 0 picks it and tells the others),
// so with several nodes the checkpoint folder must be shared storage (a PVC).
//
//   ddp::Checkpointer ckpt(ddp::CheckpointOptions().dir(flags.dir).keep(flags.keep).every(flags.every), pg);
//   ddp::TrainingProgress progress;                          // epoch 0, step 0
//   if (auto resumed = ckpt.resume(flags.resume, *net, &optimizer)) progress = resumed->progress;
//   ddp::install_stop_handlers();
//   ddp::StopVote stop_vote(*pg);                            // signals.h
//   while (progress.epoch < epochs) {
//     sampler.set_epoch(progress.epoch);   // and skip progress.samples_in_epoch of this rank's indices
//     for (each remaining batch) {
//       train_step(batch);
//       progress.step_done(batch_size);
//       bool stop = stop_vote.poll();                   // collective: every rank stops after the same step
//       if (stop || ckpt.due(progress)) ckpt.save(*net, &optimizer, progress);
//       if (stop) return ddp::stop_exit_code();         // 143 after SIGTERM
//     }
//     progress.next_epoch();
//     ckpt.save(*net, &optimizer, progress);            // at every epoch end
//   }
//
// Errors: a checkpoint that cannot be used is a ddp::DataError naming the file and what is wrong;
// failing to write one is a ddp::DataError naming the file and the errno text.

#include <ddp/export.h>
#include <ATen/core/Generator.h>
#include <torch/arg.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace torch {
namespace nn {
class Module;
}  // namespace nn
namespace optim {
class Optimizer;
}  // namespace optim
}  // namespace torch

namespace ddp {

class ProcessGroup;

/// Where training stands. Every rank holds the same values (ranks step together).
struct DDP_API TrainingProgress {
  int64_t epoch = 0;             ///< epoch in progress, 0-based
  int64_t step_in_epoch = 0;     ///< optimizer steps finished in this epoch
  int64_t global_step = 0;       ///< optimizer steps finished since the start of training
  int64_t samples_in_epoch = 0;  ///< this rank's samples consumed in this epoch (sampler start index)
  /// Positions of this epoch's order consumed by a world of another size before this one took over
  /// (DistributedSampler::set_epoch_offset); 0 unless an elastic job changed size mid-epoch.
  int64_t epoch_offset = 0;

  /// One optimizer step done on `batch_samples` samples of this rank.
  void step_done(int64_t batch_samples) {
    ++step_in_epoch;
    ++global_step;
    samples_in_epoch += batch_samples;
  }
  /// The epoch is over: move to the start of the next.
  void next_epoch() {
    ++epoch;
    step_in_epoch = 0;
    samples_in_epoch = 0;
    epoch_offset = 0;
  }
  /// Resumed by `world` ranks from a checkpoint that `saved_world` ranks wrote: when the sizes
  /// differ, the positions of the epoch's order consumed so far (epoch_offset + samples_in_epoch x
  /// saved_world, at most `epoch_size`, the dataset's length) become the epoch offset and every rank
  /// starts the rest at 0, so no sample of the epoch is trained twice or skipped. Returns true when
  /// it changed anything. step_in_epoch and global_step go on counting.
  bool change_world_size(int64_t saved_world, int64_t world, int64_t epoch_size);
  /// "epoch 3 step 17 (global 1041, 2176 samples into the epoch)".
  std::string describe() const;
};

/// What a checkpoint held besides model and optimizer tensors.
struct CheckpointInfo {
  std::string path;
  TrainingProgress progress;
  std::map<std::string, std::string> metadata;
  int world_size = 1;  ///< ranks that saved it (RNG states exist per rank)
};

/// Chained setters as in LibTorch (TORCH_ARG): CheckpointOptions().dir("ckpt").keep(5).
struct CheckpointOptions {
  /// Folder of the checkpoints; created when missing. Empty: checkpointing disabled (save() is a
  /// no-op, resume("auto") starts fresh).
  TORCH_ARG(std::string, dir) = "";
  /// Keep the newest `keep` checkpoints, delete older ones (0: keep all).
  TORCH_ARG(int, keep) = 3;
  /// due() is true every `every` global steps (0: only when the trainer saves at epoch ends).
  TORCH_ARG(int64_t, every) = 0;
  /// Save and restore CUDA generators too when CUDA is usable.
  TORCH_ARG(bool, cuda_rng) = true;
};

/// Writes and reads checkpoints. With a process group of size > 1, save() and resume() are
/// collectives: every rank calls them at the same point (same global step).
class DDP_API Checkpointer {
 public:
  /// `pg` may be null for a single process.
  explicit Checkpointer(CheckpointOptions options, std::shared_ptr<ProcessGroup> pg = nullptr);
  ~Checkpointer();

  /// Another generator saved and restored with every checkpoint, per rank (the default CPU
  /// generator, and CUDA's when present, are always included). Returns *this.
  Checkpointer& track_generator(const std::string& name, at::Generator generator);

  /// Named tensors of one rank's state (state_tensors() of ddp::comm_hooks::PowerSGDState).
  using RankState = std::vector<std::pair<std::string, at::Tensor>>;
  /// Another piece of per-rank state saved and restored with every checkpoint: `save` runs on every
  /// rank in save(), and rank 0 keeps each rank's tensors; `load` runs in load() with the tensors
  /// this rank saved. When the checkpoint was written by another number of ranks, `load` gets rank
  /// 0's tensors and same_world false (the state is then the caller's to adapt). A checkpoint
  /// without the entry (saved without it) leaves the state as it is, with a warning. Returns *this.
  Checkpointer& track_rank_state(const std::string& name, std::function<RankState()> save,
                                 std::function<void(const RankState& tensors, bool same_world)> load);

  /// True when options().every() > 0 and progress.global_step is a multiple of it.
  bool due(const TrainingProgress& progress) const;

  /// Saves model (parameters + buffers by name), optimizer (may be null), progress, metadata and
  /// every rank's RNG states. Collective with a group. Returns the file written on rank 0, "" on the
  /// other ranks and when checkpointing is disabled.
  std::string save(torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                   const TrainingProgress& progress,
                   const std::map<std::string, std::string>& metadata = {});

  /// Restores model, optimizer (may be null) and this rank's RNG states from `path`.
  /// DataError when the file is missing, corrupt, or does not match the model (names the tensor).
  CheckpointInfo load(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer);

  /// The --resume policy: "none" (fresh start, returns nullopt), "auto" (newest valid checkpoint in
  /// dir(); nullopt when there is none; a corrupt one is logged and skipped; DataError when
  /// checkpoints exist but none is usable) or a path (must be usable, else DataError).
  /// Collective with a group: rank 0 chooses, every rank loads the same file.
  std::optional<CheckpointInfo> resume(const std::string& policy, torch::nn::Module& model,
                                       torch::optim::Optimizer* optimizer);

  const CheckpointOptions& options() const { return options_; }

 private:
  struct Impl;
  CheckpointOptions options_;
  std::unique_ptr<Impl> impl_;
};

/// File name of the checkpoint of `global_step`: "ckpt-000000001041.ddpckpt".
DDP_API std::string checkpoint_file_name(int64_t global_step);

/// Checkpoint files in `dir` (by name, not verified), oldest first; empty when dir does not exist.
DDP_API std::vector<std::string> list_checkpoints(const std::string& dir);

/// Verifies header and checksum of `path` and reads its progress and metadata (no tensors loaded
/// into anything). DataError naming the file and what is wrong.
DDP_API CheckpointInfo read_checkpoint_info(const std::string& path);

/// The newest checkpoint in `dir` that verifies, logging (WARN) every newer one that does not and
/// why. nullopt when dir has no checkpoints; DataError listing each file's problem when none verifies.
DDP_API std::optional<std::string> find_latest_valid_checkpoint(const std::string& dir);

}  // namespace ddp
