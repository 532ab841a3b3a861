// ZeroRedundancyOptimizer: the shard's optimizer, the step and its broadcasts, and the state's
// way to and from one whole-model file.
//
// Three optimizers of the wrapped type take part, all built by the user's factory:
//   local   over this rank's shard: the only one that steps and the only one that keeps state;
//   whole   over every parameter, never stepped: the options it gives the groups decide
//           param_groups(), and its save()/load() are the file format, so a ZeRO checkpoint is
//           exactly a plain one. It holds state only between consolidate_state_dict() and the
//           next step (on the rank consolidated to), or for a moment inside load();
//   per-rank temporaries, while consolidating, that read another rank's shard bytes onto this
//           rank's tensors (LibTorch's load() maps saved state to parameters by position, and
//           every rank knows every rank's shard in order).
// LibTorch keys state by the parameter's TensorImpl address (optimizer_state_key.h), the same in
// all three, so moving state between them is moving map entries.
#include <ddp/errors.h>
#include <ddp/process_group.h>
#include <ddp/zero_redundancy_optimizer.h>

#include <ATen/ATen.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/types.h>

#include <sstream>
#include <utility>

#include "ddp/optim/optimizer_state_key.h"
#include "ddp/optim/zero_partition.h"
#include "util/archive_bytes.h"
#include "util/collectives.h"

namespace ddp {

using torch::optim::Optimizer;
using torch::optim::OptimizerParamGroup;

namespace {

std::unique_ptr<Optimizer> build(const ZeroRedundancyOptimizer::OptimizerFactory& make,
                                 std::vector<OptimizerParamGroup> groups) {
  if (!make) throw ConfigError("ZeroRedundancyOptimizer: the optimizer factory is empty");
  std::unique_ptr<Optimizer> opt = make(std::move(groups));
  if (!opt) throw ConfigError("ZeroRedundancyOptimizer: the optimizer factory returned no optimizer");
  if (dynamic_cast<ZeroRedundancyOptimizer*>(opt.get()))
    throw ConfigError("ZeroRedundancyOptimizer: the optimizer factory returned a ZeroRedundancyOptimizer; "
                      "it must build the optimizer to shard (e.g. torch::optim::Adam)");
  return opt;
}

std::string describe(const at::Tensor& p) {
  std::ostringstream s;
  s << p.scalar_type() << " on " << p.device();
  return s.str();
}

}  // namespace

struct ZeroRedundancyOptimizer::Impl {
  std::shared_ptr<ProcessGroup> pg;
  OptimizerFactory make;
  std::unique_ptr<Optimizer> whole;
  std::unique_ptr<Optimizer> local;
  detail::ZeroPartition partition;
  std::vector<int> owners;                            // flat, group by group
  std::vector<std::vector<at::Tensor>> owned_by;      // per rank, its parameters in shard order
  std::vector<size_t> group_sizes;                    // to notice add_param_group
  bool consolidated = false;                          // whole holds the state (this rank)

  int rank() const { return pg->rank(); }
  int size() const { return pg->size(); }

  // Rank r's shard as parameter groups (this rank's tensors), with the whole optimizer's options.
  std::vector<OptimizerParamGroup> shard_groups(int r) const {
    std::vector<OptimizerParamGroup> groups;
    for (size_t g = 0; g < whole->param_groups().size(); ++g) {
      const auto& group = whole->param_groups()[g];
      std::vector<at::Tensor> params;
      for (size_t i : partition.shard[g][static_cast<size_t>(r)]) params.push_back(group.params()[i]);
      groups.emplace_back(std::move(params), group.options().clone());
    }
    return groups;
  }

  std::string local_state_bytes() const {
    torch::serialize::OutputArchive archive;
    local->save(archive);
    return util::archive_bytes(archive);
  }
};

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<OptimizerParamGroup> param_groups,
                                                 OptimizerFactory make_optimizer, std::shared_ptr<ProcessGroup> pg)
    : ZeroRedundancyOptimizer(build(make_optimizer, std::move(param_groups)), make_optimizer, std::move(pg)) {}

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<at::Tensor> params, OptimizerFactory make_optimizer,
                                                 std::shared_ptr<ProcessGroup> pg)
    : ZeroRedundancyOptimizer(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))},
                              std::move(make_optimizer), std::move(pg)) {}

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::unique_ptr<Optimizer> whole, OptimizerFactory make_optimizer,
                                                 std::shared_ptr<ProcessGroup> pg)
    : Optimizer(whole->param_groups(), whole->defaults().clone()), impl_(std::make_unique<Impl>()) {
  if (!pg) throw ConfigError("ZeroRedundancyOptimizer: no process group");
  impl_->pg = std::move(pg);
  impl_->make = std::move(make_optimizer);
  impl_->whole = std::move(whole);

  // One device and one dtype, as PyTorch's requires: a shard is broadcast as one flat tensor.
  const at::Tensor* first = nullptr;
  std::vector<std::vector<int64_t>> numels;
  size_t index = 0;
  for (const auto& group : param_groups()) {
    numels.emplace_back();
    impl_->group_sizes.push_back(group.params().size());
    for (const auto& p : group.params()) {
      if (!p.defined()) throw ConfigError("ZeroRedundancyOptimizer: parameter #" + std::to_string(index) + " is undefined");
      if (!first) first = &p;
      if (p.scalar_type() != first->scalar_type() || p.device() != first->device())
        throw ConfigError("ZeroRedundancyOptimizer: parameter #" + std::to_string(index) + " is " + describe(p) +
                          ", parameter #0 " + describe(*first) + "; every parameter must share one dtype and device");
      numels.back().push_back(p.numel());
      ++index;
    }
  }
  if (!first) throw ConfigError("ZeroRedundancyOptimizer: no parameters to optimize");

  impl_->partition = detail::zero_partition(numels, impl_->size());
  impl_->owned_by.resize(static_cast<size_t>(impl_->size()));
  for (size_t g = 0; g < numels.size(); ++g) {
    for (int owner : impl_->partition.owner[g]) impl_->owners.push_back(owner);
    for (int r = 0; r < impl_->size(); ++r)
      for (size_t i : impl_->partition.shard[g][static_cast<size_t>(r)])
        impl_->owned_by[static_cast<size_t>(r)].push_back(param_groups()[g].params()[i]);
  }
  impl_->local = build(impl_->make, impl_->shard_groups(impl_->rank()));
}

ZeroRedundancyOptimizer::~ZeroRedundancyOptimizer() = default;

at::Tensor ZeroRedundancyOptimizer::step(LossClosure closure) {
  Impl& im = *impl_;
  bool same = param_groups().size() == im.group_sizes.size();
  for (size_t g = 0; same && g < im.group_sizes.size(); ++g) same = param_groups()[g].params().size() == im.group_sizes[g];
  if (!same)
    throw ConfigError("ZeroRedundancyOptimizer: the parameter groups changed after construction; "
                      "add_param_group is not supported, construct it with every group");
  im.whole->state().clear();  // a consolidated snapshot is stale from here on
  im.consolidated = false;
  // Options (a learning-rate schedule) are set on param_groups(); the shard's optimizer steps.
  for (size_t g = 0; g < param_groups().size(); ++g)
    im.local->param_groups()[g].set_options(param_groups()[g].options().clone());
  at::Tensor loss = im.local->step(std::move(closure));

  // Every rank's shard, flat, from its owner: one broadcast per rank with parameters.
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> flats(static_cast<size_t>(im.size()));
  std::vector<WorkPtr> works(flats.size());
  for (int r = 0; r < im.size(); ++r) {
    const auto& params = im.owned_by[static_cast<size_t>(r)];
    if (params.empty()) continue;
    at::Tensor flat;
    if (r == im.rank()) {
      std::vector<at::Tensor> pieces;
      for (const auto& p : params) pieces.push_back(p.detach().reshape({-1}));
      flat = at::cat(pieces);
    } else {
      int64_t n = 0;
      for (const auto& p : params) n += p.numel();
      flat = at::empty({n}, params.front().options().requires_grad(false));
    }
    std::vector<at::Tensor> one{flat};
    works[static_cast<size_t>(r)] = im.pg->broadcast(one, r);
    flats[static_cast<size_t>(r)] = flat;
  }
  for (int r = 0; r < im.size(); ++r) {
    if (!works[static_cast<size_t>(r)]) continue;
    works[static_cast<size_t>(r)]->wait();
    if (r == im.rank()) continue;
    int64_t offset = 0;
    for (const auto& p : im.owned_by[static_cast<size_t>(r)]) {
      p.detach().copy_(flats[static_cast<size_t>(r)].narrow(0, offset, p.numel()).view(p.sizes()));
      offset += p.numel();
    }
  }
  return loss;
}

void ZeroRedundancyOptimizer::consolidate_state_dict(int to) {
  Impl& im = *impl_;
  if (to < 0 || to >= im.size())
    throw ConfigError("ZeroRedundancyOptimizer::consolidate_state_dict: rank " + std::to_string(to) +
                      " is not in the group of " + std::to_string(im.size()));
  for (size_t g = 0; g < param_groups().size(); ++g)
    im.whole->param_groups()[g].set_options(param_groups()[g].options().clone());
  im.whole->state().clear();
  im.consolidated = false;
  const std::string mine = im.local_state_bytes();
  std::vector<std::string> shards = im.size() > 1 ? util::allgather_bytes(*im.pg, mine) : std::vector<std::string>{mine};
  if (im.rank() != to) return;
  for (int r = 0; r < im.size(); ++r) {
    std::unique_ptr<Optimizer> reader = build(im.make, im.shard_groups(r));
    torch::serialize::InputArchive archive;
    util::archive_from_bytes(shards[static_cast<size_t>(r)], archive);
    reader->load(archive);
    for (auto& [key, state] : reader->state()) im.whole->state()[key] = std::move(state);
  }
  im.consolidated = true;
}

const Optimizer& ZeroRedundancyOptimizer::consolidated_optimizer() const {
  if (!impl_->consolidated)
    throw ConfigError("ZeroRedundancyOptimizer on rank " + std::to_string(impl_->rank()) +
                      ": the state is not consolidated here; call consolidate_state_dict(" +
                      std::to_string(impl_->rank()) + ") on every rank after the last step() first");
  return *impl_->whole;
}

void ZeroRedundancyOptimizer::save(torch::serialize::OutputArchive& archive) const {
  consolidated_optimizer().save(archive);
}

void ZeroRedundancyOptimizer::load(torch::serialize::InputArchive& archive) {
  Impl& im = *impl_;
  im.whole->state().clear();
  im.consolidated = false;
  im.whole->load(archive);
  im.local->state().clear();
  for (const auto& p : im.owned_by[static_cast<size_t>(im.rank())]) {
    auto found = im.whole->state().find(detail::optimizer_state_key(p));
    if (found != im.whole->state().end()) im.local->state()[found->first] = std::move(found->second);
  }
  im.whole->state().clear();
}

const std::vector<int>& ZeroRedundancyOptimizer::owners() const { return impl_->owners; }

Optimizer& ZeroRedundancyOptimizer::local_optimizer() { return *impl_->local; }
const Optimizer& ZeroRedundancyOptimizer::local_optimizer() const { return *impl_->local; }

}  // namespace ddp
