// ddp::Checkpointer: what goes into a checkpoint, and the resume policy.
//
// Payload: a LibTorch archive with
//   format            "ddp-checkpoint-1"
//   epoch, step_in_epoch, global_step, samples_in_epoch, world_size, saved_unix_time   (ints)
//   epoch_offset                                                                   (int; absent before issue 26: 0)
//   metadata          Dict[str, str]
//   model             Dict[str, Tensor]   parameters and buffers by their dotted name (CPU copies)
//   optimizer         nested archive       torch::optim::Optimizer::save (absent without optimizer); a
//                                          ZeroRedundancyOptimizer's consolidated state, the same format
//   rng               List[Tensor]         per rank, uint8: rng_state.h's serialized generator states
//   state.<name>      List[Tensor]         per rank, uint8: a LibTorch archive of the tensors of a
//                                          track_rank_state() entry (absent when none is tracked)
#include <ddp/checkpoint.h>
#include <ddp/errors.h>
#include <ddp/logging.h>
#include <ddp/process_group.h>
#include <ddp/zero_redundancy_optimizer.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/archive.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <sstream>

#include "ddp/checkpoint/checkpoint_dir.h"
#include "ddp/checkpoint/checkpoint_file.h"
#include "ddp/checkpoint/rng_state.h"
#include "ddp/optim/optimizer_state_fields.h"
#include "util/archive_bytes.h"
#include "util/collectives.h"
#include "util/files.h"

namespace ddp {
namespace {

constexpr const char* kFormat = "ddp-checkpoint-1";
constexpr int64_t kFresh = -1;        // resume: nothing to load
constexpr int64_t kRankZeroFailed = -2;

// A checkpoint file opened and verified; the archive stays readable for the optimizer.
struct OpenedCheckpoint {
  std::string bytes;
  torch::serialize::InputArchive archive;
  CheckpointInfo info;
};

int64_t read_int(torch::serialize::InputArchive& a, const std::string& key, const std::string& path) {
  c10::IValue v;
  if (!a.try_read(key, v) || !v.isInt())
    throw DataError("checkpoint " + path + ": the payload has no integer '" + key + "'");
  return v.toInt();
}

// The first line of a LibTorch message (c10::Error appends a C++ backtrace).
std::string first_line(const char* what) {
  std::string s(what);
  return s.substr(0, s.find('\n'));
}

// Everything a resume reads from the archive, checked for presence and type here, so that a
// payload LibTorch cannot use is a DataError that --resume auto skips like a checksum failure.
void parse_payload(OpenedCheckpoint& ck, const std::string& path, std::string_view payload) {
  ck.archive.load_from(payload.data(), payload.size(), c10::Device(c10::kCPU));
  c10::IValue format;
  if (!ck.archive.try_read("format", format) || !format.isString() || format.toStringRef() != kFormat)
    throw DataError("checkpoint " + path + ": the payload is not a '" + kFormat + "' archive");
  CheckpointInfo& info = ck.info;
  info.path = path;
  info.progress.epoch = read_int(ck.archive, "epoch", path);
  info.progress.step_in_epoch = read_int(ck.archive, "step_in_epoch", path);
  info.progress.global_step = read_int(ck.archive, "global_step", path);
  info.progress.samples_in_epoch = read_int(ck.archive, "samples_in_epoch", path);
  // Written since elastic resumes (issue 26); an older file never changed size mid-epoch.
  c10::IValue offset;
  if (ck.archive.try_read("epoch_offset", offset)) {
    if (!offset.isInt()) throw DataError("checkpoint " + path + ": the payload's 'epoch_offset' is not an integer");
    info.progress.epoch_offset = offset.toInt();
  }
  // Counters a sampler or a loop would start from: a negative one is a damaged file, skipped like one.
  for (const auto& [key, value] : {std::pair<const char*, int64_t>{"epoch", info.progress.epoch},
                                   {"step_in_epoch", info.progress.step_in_epoch},
                                   {"global_step", info.progress.global_step},
                                   {"samples_in_epoch", info.progress.samples_in_epoch},
                                   {"epoch_offset", info.progress.epoch_offset}})
    if (value < 0) throw DataError("checkpoint " + path + ": the payload's '" + key + "' is negative (" + std::to_string(value) + ")");
  info.world_size = static_cast<int>(read_int(ck.archive, "world_size", path));
  if (info.world_size < 1)
    throw DataError("checkpoint " + path + ": the payload's 'world_size' is " + std::to_string(info.world_size) +
                    ", not a number of ranks");
  c10::IValue metadata;
  if (!ck.archive.try_read("metadata", metadata) || !metadata.isGenericDict())
    throw DataError("checkpoint " + path + ": the payload has no 'metadata' dict");
  for (const auto& entry : metadata.toGenericDict()) {
    if (!entry.key().isString() || !entry.value().isString())
      throw DataError("checkpoint " + path + ": the payload's 'metadata' holds a value that is not a string");
    info.metadata[entry.key().toStringRef()] = entry.value().toStringRef();
  }
  c10::IValue model;
  if (!ck.archive.try_read("model", model) || !model.isGenericDict())
    throw DataError("checkpoint " + path + ": the payload has no 'model' dict");
  for (const auto& entry : model.toGenericDict())
    if (!entry.key().isString() || !entry.value().isTensor())
      throw DataError("checkpoint " + path + ": the payload's 'model' holds an entry that is not a named tensor");
  c10::IValue rng;
  if (!ck.archive.try_read("rng", rng) || !rng.isTensorList())
    throw DataError("checkpoint " + path + ": the payload has no 'rng' tensor list");
}

std::unique_ptr<OpenedCheckpoint> open_checkpoint(const std::string& path) {
  auto ck = std::make_unique<OpenedCheckpoint>();
  ck->bytes = util::read_file(path);
  std::string_view payload = detail::verified_payload(path, ck->bytes);
  try {
    parse_payload(*ck, path, payload);
  } catch (const DataError&) {
    throw;
  } catch (const std::exception& e) {
    // A c10::Error from the zip reader, the unpickler or an IValue of the wrong type.
    throw DataError("checkpoint " + path + ": checksum is fine but the payload does not parse: " + first_line(e.what()));
  }
  return ck;
}

// Parameters and buffers by dotted name, as the checkpoint stores them.
std::vector<std::pair<std::string, at::Tensor>> model_tensors(torch::nn::Module& model) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (auto& p : model.named_parameters(/*recurse=*/true)) out.emplace_back(p.key(), p.value());
  for (auto& b : model.named_buffers(/*recurse=*/true)) out.emplace_back(b.key(), b.value());
  return out;
}

std::string shape_of(const at::Tensor& t) {
  std::ostringstream s;
  s << t.sizes() << " " << t.scalar_type();
  return s.str();
}

void load_model(OpenedCheckpoint& ck, torch::nn::Module& model) {
  const std::string& path = ck.info.path;
  c10::IValue stored;
  if (!ck.archive.try_read("model", stored) || !stored.isGenericDict())
    throw DataError("checkpoint " + path + ": 'model' is missing");
  auto dict = stored.toGenericDict();
  auto tensors = model_tensors(model);
  for (auto& [name, target] : tensors)
    if (!dict.contains(name))
      throw DataError("checkpoint " + path + " has no tensor '" + name +
                      "' that the model has: was it saved from a different model?");
  if (dict.size() != tensors.size()) {
    for (const auto& entry : dict) {
      const std::string& name = entry.key().toStringRef();
      bool known = false;
      for (auto& t : tensors) known = known || t.first == name;
      if (!known)
        throw DataError("checkpoint " + path + " holds tensor '" + name +
                        "' that the model does not have: was it saved from a different model?");
    }
  }
  torch::NoGradGuard no_grad;
  for (auto& [name, target] : tensors) {
    at::Tensor source = dict.at(name).toTensor();
    if (source.sizes() != target.sizes() || source.scalar_type() != target.scalar_type())
      throw DataError("checkpoint " + path + ": tensor '" + name + "' is " + shape_of(source) +
                      ", the model's is " + shape_of(target));
    target.copy_(source);
  }
}

}  // namespace

std::string TrainingProgress::describe() const {
  std::ostringstream s;
  s << "epoch " << epoch << " step " << step_in_epoch << " (global step " << global_step << ", "
    << samples_in_epoch << " samples into the epoch on this rank";
  if (epoch_offset) s << " after the first " << epoch_offset << " of its order";
  s << ")";
  return s.str();
}

bool TrainingProgress::change_world_size(int64_t saved_world, int64_t world, int64_t epoch_size) {
  if (saved_world < 1 || world < 1 || epoch_size < 0)
    throw ConfigError("TrainingProgress::change_world_size: saved world " + std::to_string(saved_world) + ", world " +
                      std::to_string(world) + ", epoch size " + std::to_string(epoch_size) +
                      " (need >= 1, >= 1, >= 0)");
  if (saved_world == world) return false;
  // Ranks step together, so each of the saved world's consumed the same samples_in_epoch indices:
  // positions epoch_offset .. epoch_offset + samples_in_epoch * saved_world - 1 of the order, the
  // ones past its end being the padding that repeats its start.
  epoch_offset = std::min(epoch_size, epoch_offset + samples_in_epoch * saved_world);
  samples_in_epoch = 0;
  return true;
}

// A track_rank_state() entry.
struct TrackedState {
  std::string name;
  std::function<Checkpointer::RankState()> save;
  std::function<void(const Checkpointer::RankState&, bool)> load;
};

std::string rank_state_bytes(const Checkpointer::RankState& tensors) {
  torch::serialize::OutputArchive archive;
  for (const auto& [name, t] : tensors) archive.write(name, t.detach().cpu());
  return util::archive_bytes(archive);
}

Checkpointer::RankState rank_state_from(const at::Tensor& blob, const std::string& what) {
  const at::Tensor t = blob.contiguous();
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(static_cast<const char*>(t.data_ptr()), static_cast<size_t>(t.nbytes()), c10::Device(c10::kCPU));
    Checkpointer::RankState out;
    for (const std::string& key : archive.keys()) {
      at::Tensor value;
      archive.read(key, value);
      out.emplace_back(key, value);
    }
    return out;
  } catch (const c10::Error& e) {
    throw DataError(what + " is not a tensor archive: " + first_line(e.what()));
  }
}

at::Tensor byte_tensor(const std::string& blob) {
  at::Tensor t = at::empty({static_cast<int64_t>(blob.size())}, at::TensorOptions().dtype(at::kByte));
  std::memcpy(t.data_ptr(), blob.data(), blob.size());
  return t;
}

struct Checkpointer::Impl {
  std::shared_ptr<ProcessGroup> pg;
  detail::NamedGenerators tracked;
  std::vector<TrackedState> states;
  int rank() const { return pg ? pg->rank() : 0; }
  int size() const { return pg ? pg->size() : 1; }
};

Checkpointer::Checkpointer(CheckpointOptions options, std::shared_ptr<ProcessGroup> pg)
    : options_(std::move(options)), impl_(std::make_unique<Impl>()) {
  if (options_.keep() < 0) throw ConfigError("checkpoint keep=" + std::to_string(options_.keep()) + " is negative");
  if (options_.every() < 0)
    throw ConfigError("checkpoint every=" + std::to_string(options_.every()) + " is negative");
  impl_->pg = std::move(pg);
}

Checkpointer::~Checkpointer() = default;

Checkpointer& Checkpointer::track_generator(const std::string& name, at::Generator generator) {
  for (auto& [n, g] : impl_->tracked)
    if (n == name) throw ConfigError("generator '" + name + "' is already tracked by the checkpointer");
  impl_->tracked.emplace_back(name, std::move(generator));
  return *this;
}

Checkpointer& Checkpointer::track_rank_state(const std::string& name, std::function<RankState()> save,
                                             std::function<void(const RankState&, bool)> load) {
  if (name.empty() || !save || !load) throw ConfigError("track_rank_state: a name, a save and a load function are needed");
  for (const auto& s : impl_->states)
    if (s.name == name) throw ConfigError("state '" + name + "' is already tracked by the checkpointer");
  impl_->states.push_back({name, std::move(save), std::move(load)});
  return *this;
}

bool Checkpointer::due(const TrainingProgress& progress) const {
  return options_.every() > 0 && progress.global_step > 0 && progress.global_step % options_.every() == 0;
}

std::string Checkpointer::save(torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                               const TrainingProgress& progress,
                               const std::map<std::string, std::string>& metadata) {
  if (options_.dir().empty()) return "";
  std::string mine = detail::capture_rng_states(impl_->tracked, options_.cuda_rng());
  std::vector<std::string> rng = impl_->size() > 1 ? util::allgather_bytes(*impl_->pg, mine)
                                                   : std::vector<std::string>{mine};
  std::vector<std::vector<std::string>> states;  // per tracked state, per rank
  for (const auto& s : impl_->states) {
    std::string bytes = rank_state_bytes(s.save());
    states.push_back(impl_->size() > 1 ? util::allgather_bytes(*impl_->pg, bytes) : std::vector<std::string>{bytes});
  }
  // A sharded optimizer's state is on every rank: gathered on rank 0, which writes it whole.
  if (auto* zero = dynamic_cast<ZeroRedundancyOptimizer*>(optimizer)) zero->consolidate_state_dict(0);
  std::string written;
  std::string error;
  if (impl_->rank() == 0) {
    try {
      auto started = std::chrono::steady_clock::now();
      torch::serialize::OutputArchive archive;
      archive.write("format", c10::IValue(std::string(kFormat)));
      archive.write("epoch", c10::IValue(progress.epoch));
      archive.write("step_in_epoch", c10::IValue(progress.step_in_epoch));
      archive.write("global_step", c10::IValue(progress.global_step));
      archive.write("samples_in_epoch", c10::IValue(progress.samples_in_epoch));
      archive.write("epoch_offset", c10::IValue(progress.epoch_offset));
      archive.write("world_size", c10::IValue(static_cast<int64_t>(impl_->size())));
      archive.write("saved_unix_time",
                    c10::IValue(static_cast<int64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                                         std::chrono::system_clock::now().time_since_epoch())
                                                         .count())));
      c10::Dict<std::string, std::string> meta;
      for (auto& [k, v] : metadata) meta.insert(k, v);
      archive.write("metadata", c10::IValue(meta));
      c10::Dict<std::string, at::Tensor> tensors;
      for (auto& [name, t] : model_tensors(model)) tensors.insert(name, t.detach().cpu());
      archive.write("model", c10::IValue(tensors));
      if (optimizer) {
        torch::serialize::OutputArchive opt_archive;
        optimizer->save(opt_archive);
        archive.write("optimizer", opt_archive);
      }
      c10::List<at::Tensor> rng_list;
      for (auto& blob : rng) rng_list.push_back(byte_tensor(blob));
      archive.write("rng", c10::IValue(rng_list));
      for (size_t i = 0; i < states.size(); ++i) {
        c10::List<at::Tensor> per_rank;
        for (auto& blob : states[i]) per_rank.push_back(byte_tensor(blob));
        archive.write("state." + impl_->states[i].name, c10::IValue(per_rank));
      }

      const std::string payload = util::archive_bytes(archive);
      const std::string name = checkpoint_file_name(progress.global_step);
      util::make_dirs(options_.dir());
      util::write_file_atomically(options_.dir() + "/" + name, {detail::make_checkpoint_header(payload), payload});
      detail::prune_checkpoints(options_.dir(), options_.keep());
      written = options_.dir() + "/" + name;
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
      DDP_LOG(INFO) << "checkpoint " << written << " written (" << payload.size() / 1024 << " KiB, "
                    << static_cast<int>(ms) << " ms): " << progress.describe();
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  // Nobody returns before the file is durable (a rank that exits right after a SIGTERM checkpoint
  // must not let its launcher stop rank 0 mid-write), and everybody learns whether it worked.
  int64_t ok = error.empty() ? 1 : 0;
  if (impl_->size() > 1) ok = util::broadcast_int64(*impl_->pg, ok, 0);
  if (!error.empty()) throw DataError(error);
  if (!ok) throw DataError("rank 0 failed to write the checkpoint of global step " +
                           std::to_string(progress.global_step) + " (its log says why)");
  return written;
}

CheckpointInfo Checkpointer::load(const std::string& path, torch::nn::Module& model,
                                  torch::optim::Optimizer* optimizer) {
  auto ck = open_checkpoint(path);
  load_model(*ck, model);
  if (optimizer) {
    torch::serialize::InputArchive opt_archive;
    if (!ck->archive.try_read("optimizer", opt_archive))
      throw DataError("checkpoint " + path + " holds no optimizer state, but the trainer has an optimizer");
    try {
      optimizer->load(opt_archive);
    } catch (const std::exception& e) {
      throw DataError("checkpoint " + path + ": the optimizer state does not fit this optimizer: " + e.what());
    }
    // The archive was read onto the CPU; a CUDA run's optimizer steps with its state on the GPU.
    auto* zero = dynamic_cast<ZeroRedundancyOptimizer*>(optimizer);
    detail::move_optimizer_state_to_parameters(zero ? zero->local_optimizer() : *optimizer);
  }
  c10::IValue rng;
  if (!ck->archive.try_read("rng", rng) || !rng.isTensorList())
    throw DataError("checkpoint " + path + ": 'rng' is missing");
  auto blobs = rng.toTensorList();
  int rank = impl_->rank();
  if (ck->info.world_size != impl_->size()) {
    DDP_LOG(WARN) << "checkpoint " << path << " was saved by " << ck->info.world_size << " ranks, this run has "
                  << impl_->size() << ": the random streams will differ from the saved run (the rest of the epoch's "
                  << "samples goes to the new ranks with TrainingProgress::change_world_size)";
  }
  if (rank < static_cast<int>(blobs.size())) {
    at::Tensor t = blobs.get(rank).contiguous();
    std::string blob(static_cast<const char*>(t.data_ptr()), static_cast<size_t>(t.nbytes()));
    detail::restore_rng_states(blob, impl_->tracked, options_.cuda_rng(), "checkpoint " + path);
  } else {
    DDP_LOG(WARN) << "checkpoint " << path << " holds no RNG state for rank " << rank
                  << "; its generators keep their current state";
  }
  const bool same_world = ck->info.world_size == impl_->size();
  for (const auto& s : impl_->states) {
    c10::IValue entry;
    if (!ck->archive.try_read("state." + s.name, entry)) {
      DDP_LOG(WARN) << "checkpoint " << path << " holds no '" << s.name << "' state (saved without it); it starts fresh";
      continue;
    }
    if (!entry.isTensorList() || entry.toTensorList().size() == 0)
      throw DataError("checkpoint " + path + ": 'state." + s.name + "' is not a list of per-rank tensors");
    auto per_rank = entry.toTensorList();
    const int from = same_world && rank < static_cast<int>(per_rank.size()) ? rank : 0;
    s.load(rank_state_from(per_rank.get(from), "checkpoint " + path + ": 'state." + s.name + "' of rank " +
                                                   std::to_string(from)),
           same_world);
  }
  DDP_LOG(INFO) << "resumed from " << path << ": " << ck->info.progress.describe();
  return ck->info;
}

std::optional<CheckpointInfo> Checkpointer::resume(const std::string& policy, torch::nn::Module& model,
                                                   torch::optim::Optimizer* optimizer) {
  if (policy.empty()) throw ConfigError("resume policy is empty: expected auto, none or a checkpoint file");
  const bool automatic = policy == "auto";
  const std::string& dir = options_.dir();
  if (policy == "none") {
    if (impl_->rank() == 0 && !dir.empty()) detail::retire_checkpoints_after(dir, kFresh);
    DDP_LOG(INFO) << "starting fresh (--resume none)";
    return std::nullopt;
  }
  // Rank 0 decides which file (by global step), everyone loads it.
  int64_t choice = kFresh;
  std::exception_ptr failure;
  if (impl_->rank() == 0) {
    try {
      if (automatic) {
        if (!dir.empty()) {
          detail::remove_stale_temporaries(dir);
          if (auto latest = find_latest_valid_checkpoint(dir))
            choice = *detail::checkpoint_step_from_name(latest->substr(latest->rfind('/') + 1));
        }
      } else {
        choice = read_checkpoint_info(policy).progress.global_step;
      }
      if (!dir.empty()) detail::retire_checkpoints_after(dir, choice);
    } catch (const std::exception&) {
      // Tell the others before failing, so they fail too instead of waiting in a collective.
      failure = std::current_exception();
      choice = kRankZeroFailed;
    }
  }
  if (impl_->size() > 1) choice = util::broadcast_int64(*impl_->pg, choice, 0);
  if (failure) std::rethrow_exception(failure);
  if (choice == kRankZeroFailed)
    throw DataError("rank 0 found no usable checkpoint for --resume " + policy + " (its log says why)");
  if (choice == kFresh) {
    DDP_LOG(INFO) << "no checkpoint" << (dir.empty() ? " folder given" : " in " + dir) << ": starting fresh";
    return std::nullopt;
  }
  std::string path = automatic ? dir + "/" + checkpoint_file_name(choice) : policy;
  return load(path, model, optimizer);
}

CheckpointInfo read_checkpoint_info(const std::string& path) { return open_checkpoint(path)->info; }

std::optional<std::string> find_latest_valid_checkpoint(const std::string& dir) {
  auto files = detail::checkpoint_files(dir);
  if (files.empty()) return std::nullopt;
  std::string problems;
  for (auto it = files.rbegin(); it != files.rend(); ++it) {
    try {
      read_checkpoint_info(it->path);
      return it->path;
    } catch (const DataError& e) {
      DDP_LOG(WARN) << "skipping unusable checkpoint: " << e.what();
      problems += std::string("\n  ") + e.what();
    }
  }
  throw DataError("none of the " + std::to_string(files.size()) + " checkpoints in " + dir + " is usable:" + problems);
}

}  // namespace ddp
