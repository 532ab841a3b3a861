// ZeroRedundancyOptimizer's ranks: the workers behind zero_test.cpp.
//
// zero_matches_plain: one Mlp trained by two DDP replicas side by side on every rank, one stepped by
// ZeroRedundancyOptimizer and one by the plain optimizer over the same groups (SGD with momentum;
// Adam in two groups with their own learning rates, one changed mid-run through param_groups()).
// After every step every parameter must be torch::equal across the two, and the shard's state must
// be this rank's owners' share: summed over ranks, the plain optimizer's state, no more.
//
// zero_resume_*: checkpoints through ddp::Checkpointer. zero_resume_save trains 3 steps, saves, and
// goes on to step 6 (the uninterrupted run, written by rank 0). zero_resume_load starts from other
// weights, resumes the file and trains steps 4-6: equal to the uninterrupted run bit for bit; the
// same with the optimizer state left out must differ (the control that makes the test able to
// fail). zero_resume_other_world runs at 3 ranks on the 2-rank file: ZeRO and a plain Adam both
// resume it and must stay equal, so the file holds the whole state in the plain format.
//
// zero_parity_train: the C++ side of the comparison with PyTorch (python/zero_reference.py).
// zero_errors: misuse is a ConfigError naming what is wrong.
#include <ddp/checkpoint.h>
#include <ddp/distributed_data_parallel.h>
#include <ddp/errors.h>
#include <ddp/init.h>
#include <ddp/zero_redundancy_optimizer.h>

#include <torch/torch.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "ddp/tensor_files.h"
#include "ddp/test_models.h"
#include "support/multiprocess.h"

namespace {

using ddp::testing::Mlp;
using ddp::testing::NamedTensors;
using Groups = std::vector<torch::optim::OptimizerParamGroup>;
using Factory = ddp::ZeroRedundancyOptimizer::OptimizerFactory;

Factory sgd_factory() {
  return [](Groups groups) -> std::unique_ptr<torch::optim::Optimizer> {
    return std::make_unique<torch::optim::SGD>(std::move(groups),
                                               torch::optim::SGDOptions(0.05).momentum(0.9).weight_decay(1e-4));
  };
}
Factory adam_factory() {
  return [](Groups groups) -> std::unique_ptr<torch::optim::Optimizer> {
    return std::make_unique<torch::optim::Adam>(std::move(groups), torch::optim::AdamOptions(1e-2).weight_decay(1e-4));
  };
}

// Adam's groups: fc1 with its own learning rate, the rest on the defaults.
Groups two_groups(Mlp& net) {
  Groups groups;
  // LibTorch takes a group's options whole (Python fills the keys a group leaves out from the
  // defaults), so the weight decay is repeated here.
  groups.emplace_back(net->fc1->parameters(), std::make_unique<torch::optim::AdamOptions>(
                                                 torch::optim::AdamOptions(3e-3).weight_decay(1e-4)));
  std::vector<at::Tensor> rest = net->fc2->parameters();
  for (auto& p : net->fc3->parameters()) rest.push_back(p);
  groups.emplace_back(rest);
  return groups;
}

// This rank's batch of step `step` (any world size: a pure function of both).
std::pair<at::Tensor, at::Tensor> batch(int64_t step, int rank) {
  auto gen = at::detail::createCPUGenerator(static_cast<uint64_t>(1000 * step + rank + 1));
  return {at::randn({8, 20}, gen), at::randn({8, 10}, gen)};
}

template <typename Model>
void train_step(Model& model, torch::optim::Optimizer& opt, int64_t step, int rank) {
  auto [x, y] = batch(step, rank);
  opt.zero_grad();
  torch::mse_loss(model(x), y).backward();
  opt.step();
}

// The first parameter where `a` and `b` differ, or "".
std::string first_difference(Mlp& a, Mlp& b) {
  auto pa = a->named_parameters(), pb = b->named_parameters();
  for (const auto& item : pa)
    if (!torch::equal(item.value(), pb[item.key()])) return item.key();
  return "";
}

int64_t elements_owned(ddp::ZeroRedundancyOptimizer& zero, const std::vector<at::Tensor>& params, int rank) {
  int64_t n = 0;
  for (size_t i = 0; i < params.size(); ++i)
    if (zero.owners()[i] == rank) n += params[i].numel();
  return n;
}

int compare_run(const std::string& kind, const std::shared_ptr<ddp::ProcessGroup>& pg) {
  const int rank = pg->rank();
  torch::manual_seed(5);
  Mlp a, b;
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < a->parameters().size(); ++i) b->parameters()[i].copy_(a->parameters()[i]);
  }
  ddp::DistributedDataParallel da(a, pg), db(b, pg);
  const bool adam = kind == "adam";
  Factory make = adam ? adam_factory() : sgd_factory();
  std::unique_ptr<ddp::ZeroRedundancyOptimizer> zero =
      adam ? std::make_unique<ddp::ZeroRedundancyOptimizer>(two_groups(a), make, pg)
           : std::make_unique<ddp::ZeroRedundancyOptimizer>(a->parameters(), make, pg);
  std::unique_ptr<torch::optim::Optimizer> plain = adam ? make(two_groups(b)) : make({Groups{b->parameters()}});
  for (int64_t step = 0; step < 6; ++step) {
    if (step == 3)  // a schedule changes the learning rate through param_groups()
      for (auto* opt : {static_cast<torch::optim::Optimizer*>(zero.get()), plain.get()})
        opt->param_groups()[0].options().set_lr(opt->param_groups()[0].options().get_lr() / 2);
    train_step(da, *zero, step, rank);
    train_step(db, *plain, step, rank);
    const std::string diff = first_difference(a, b);
    if (!diff.empty()) {
      std::cerr << kind << ": after step " << step << " " << diff << " differs from the plain optimizer's\n";
      return 1;
    }
  }
  // The shard's state: per owned element, Adam 2 floats and SGD's momentum 1.
  std::vector<at::Tensor> params;
  for (const auto& g : zero->param_groups())
    for (const auto& p : g.params()) params.push_back(p);
  const int64_t per_element = (adam ? 2 : 1) * static_cast<int64_t>(sizeof(float));
  const int64_t mine = ddp::optimizer_state_bytes(*zero);
  if (mine != elements_owned(*zero, params, rank) * per_element) {
    std::cerr << kind << ": rank " << rank << " holds " << mine << " bytes of state for "
              << elements_owned(*zero, params, rank) << " owned elements\n";
    return 1;
  }
  at::Tensor total = torch::full({1}, static_cast<double>(mine), torch::kDouble);
  std::vector<at::Tensor> one{total};
  pg->allreduce(one)->wait();
  if (total.item<double>() != static_cast<double>(ddp::optimizer_state_bytes(*plain))) {
    std::cerr << kind << ": the shards hold " << total.item<double>() << " bytes in all, the plain optimizer "
              << ddp::optimizer_state_bytes(*plain) << "\n";
    return 1;
  }
  return 0;
}

DDP_TEST_WORKER(zero_matches_plain) {
  auto pg = ddp::init_process_group();
  for (const char* kind : {"sgd", "adam"})
    if (int rc = compare_run(kind, pg)) return rc;
  return 0;
}

std::string test_dir() {
  const char* d = std::getenv("DDP_ZERO_DIR");
  if (!d) throw std::runtime_error("DDP_ZERO_DIR is not set");
  return d;
}

NamedTensors named(Mlp& net) {
  NamedTensors out;
  for (const auto& item : net->named_parameters()) out.emplace_back(item.key(), item.value().detach().clone());
  return out;
}

bool equals_file(Mlp& net, const std::string& stem, std::string* diff) {
  const NamedTensors expected = ddp::testing::read_tensors(test_dir(), stem);
  for (const auto& item : net->named_parameters())
    if (!torch::equal(item.value(), ddp::testing::find_tensor(expected, item.key()))) {
      *diff = item.key();
      return false;
    }
  return true;
}

DDP_TEST_WORKER(zero_resume_save) {
  auto pg = ddp::init_process_group();
  torch::manual_seed(11);
  Mlp net;
  ddp::DistributedDataParallel model(net, pg);
  ddp::ZeroRedundancyOptimizer zero(two_groups(net), adam_factory(), pg);
  ddp::Checkpointer ckpt(ddp::CheckpointOptions().dir(test_dir() + "/ckpt"), pg);
  ddp::TrainingProgress progress;
  for (int64_t step = 0; step < 6; ++step) {
    train_step(model, zero, step, pg->rank());
    progress.step_done(8);
    if (step == 2) ckpt.save(*net, &zero, progress);
  }
  if (pg->rank() == 0) ddp::testing::write_tensors(test_dir(), "straight", named(net));
  return 0;
}

// Resumes the 2-rank file and trains steps 3-5; `with_optimizer` false loads the model only.
int resume_and_train(const std::shared_ptr<ddp::ProcessGroup>& pg, bool with_optimizer, Mlp& net) {
  ddp::DistributedDataParallel model(net, pg);
  ddp::ZeroRedundancyOptimizer zero(two_groups(net), adam_factory(), pg);
  ddp::Checkpointer ckpt(ddp::CheckpointOptions().dir(test_dir() + "/ckpt"), pg);
  auto info = ckpt.resume("auto", *net, with_optimizer ? &zero : nullptr);
  if (!info || info->progress.global_step != 3) {
    std::cerr << "the checkpoint of step 3 was not resumed\n";
    return 1;
  }
  for (int64_t step = 3; step < 6; ++step) train_step(model, zero, step, pg->rank());
  return 0;
}

DDP_TEST_WORKER(zero_resume_load) {
  auto pg = ddp::init_process_group();
  torch::manual_seed(12);  // other initial weights: everything must come from the file
  Mlp resumed, control;
  if (int rc = resume_and_train(pg, true, resumed)) return rc;
  std::string diff;
  if (!equals_file(resumed, "straight", &diff)) {
    std::cerr << "resumed run: " << diff << " differs from the uninterrupted run\n";
    return 1;
  }
  if (int rc = resume_and_train(pg, false, control)) return rc;
  if (equals_file(control, "straight", &diff)) {
    std::cerr << "the control without optimizer state equals the uninterrupted run: the test cannot fail\n";
    return 1;
  }
  return 0;
}

DDP_TEST_WORKER(zero_resume_other_world) {
  auto pg = ddp::init_process_group();  // 3 ranks on the 2-rank file
  torch::manual_seed(13);
  Mlp a, b;
  ddp::DistributedDataParallel da(a, pg), db(b, pg);
  ddp::ZeroRedundancyOptimizer zero(two_groups(a), adam_factory(), pg);
  std::unique_ptr<torch::optim::Optimizer> plain = adam_factory()(two_groups(b));
  ddp::Checkpointer ckpt(ddp::CheckpointOptions().dir(test_dir() + "/ckpt"), pg);
  ckpt.resume("auto", *a, &zero);
  ckpt.resume("auto", *b, plain.get());
  // The shards together hold the whole saved state (Adam: 2 floats per element of every parameter).
  at::Tensor total = torch::full({1}, static_cast<double>(ddp::optimizer_state_bytes(zero)), torch::kDouble);
  std::vector<at::Tensor> one{total};
  pg->allreduce(one)->wait();
  if (total.item<double>() != static_cast<double>(ddp::optimizer_state_bytes(*plain))) {
    std::cerr << "3 shards hold " << total.item<double>() << " bytes of the file's "
              << ddp::optimizer_state_bytes(*plain) << "\n";
    return 1;
  }
  for (int64_t step = 3; step < 6; ++step) {
    train_step(da, zero, step, pg->rank());
    train_step(db, *plain, step, pg->rank());
    const std::string diff = first_difference(a, b);
    if (!diff.empty()) {
      std::cerr << "3 ranks, step " << step << ": " << diff << " differs between ZeRO and plain Adam\n";
      return 1;
    }
  }
  return 0;
}

// What the test expects `f` to throw: a ConfigError whose message holds `needle`.
template <typename F>
bool config_error(const char* what, F&& f, const std::string& needle) {
  try {
    f();
  } catch (const ddp::ConfigError& e) {
    if (std::string(e.what()).find(needle) != std::string::npos) return true;
    std::cerr << what << ": the message does not name '" << needle << "': " << e.what() << "\n";
    return false;
  } catch (const std::exception& e) {
    std::cerr << what << ": not a ConfigError: " << e.what() << "\n";
    return false;
  }
  std::cerr << what << ": no error\n";
  return false;
}

DDP_TEST_WORKER(zero_errors) {
  auto pg = ddp::init_process_group();
  auto mixed = std::vector<at::Tensor>{torch::zeros({3}, torch::requires_grad()),
                                       torch::zeros({3}, torch::dtype(torch::kDouble).requires_grad(true))};
  bool ok = config_error("mixed dtypes", [&] { ddp::ZeroRedundancyOptimizer z(mixed, adam_factory(), pg); },
                         "parameter #1 is Double");
  ok &= config_error("no factory", [&] { ddp::ZeroRedundancyOptimizer z(std::vector<at::Tensor>{torch::zeros({3}, torch::requires_grad())}, nullptr, pg); },
                     "factory is empty");
  ok &= config_error("null optimizer", [&] {
    ddp::ZeroRedundancyOptimizer z(std::vector<at::Tensor>{torch::zeros({3}, torch::requires_grad())},
                                   [](Groups) -> std::unique_ptr<torch::optim::Optimizer> { return nullptr; }, pg);
  }, "returned no optimizer");
  ok &= config_error("no parameters", [&] { ddp::ZeroRedundancyOptimizer z(std::vector<at::Tensor>{}, adam_factory(), pg); },
                     "no parameters");
  Mlp net;
  ddp::ZeroRedundancyOptimizer zero(net->parameters(), adam_factory(), pg);
  ok &= config_error("bad rank", [&] { zero.consolidate_state_dict(pg->size()); }, "rank " + std::to_string(pg->size()));
  torch::serialize::OutputArchive out;
  ok &= config_error("save unconsolidated", [&] { zero.save(out); }, "consolidate_state_dict(" + std::to_string(pg->rank()) + ")");
  zero.add_param_group(torch::optim::OptimizerParamGroup({torch::zeros({2}, torch::requires_grad())}));
  ok &= config_error("add_param_group", [&] { zero.step(); }, "add_param_group is not supported");
  return ok ? 0 : 1;
}

// The comparison with torch.distributed.optim.ZeroRedundancyOptimizer: same initial weights and
// batches as python/zero_reference.py, which wrote each parameter's owner and final weights.
DDP_TEST_WORKER(zero_parity_prepare) {
  torch::manual_seed(21);
  Mlp net;
  ddp::testing::write_tensors(test_dir(), "init", named(net));
  NamedTensors data;
  for (int64_t step = 0; step < 6; ++step)
    for (int rank = 0; rank < 2; ++rank) {
      auto [x, y] = batch(step, rank);
      data.emplace_back("x" + std::to_string(step) + "_" + std::to_string(rank), x);
      data.emplace_back("y" + std::to_string(step) + "_" + std::to_string(rank), y);
    }
  ddp::testing::write_tensors(test_dir(), "data", data);
  return 0;
}

DDP_TEST_WORKER(zero_parity_train) {
  torch::set_num_threads(1);  // as the Python side: the same float order in every kernel
  auto pg = ddp::init_process_group();
  const int rank = pg->rank();
  for (const std::string kind : {"sgd", "adam"}) {
    Mlp net;
    {
      torch::NoGradGuard no_grad;
      const NamedTensors init = ddp::testing::read_tensors(test_dir(), "init");
      for (auto& item : net->named_parameters()) item.value().copy_(ddp::testing::find_tensor(init, item.key()));
    }
    ddp::DistributedDataParallel model(net, pg);
    const bool adam = kind == "adam";
    auto owned = adam ? std::make_unique<ddp::ZeroRedundancyOptimizer>(two_groups(net), adam_factory(), pg)
                      : std::make_unique<ddp::ZeroRedundancyOptimizer>(net->parameters(), sgd_factory(), pg);
    ddp::ZeroRedundancyOptimizer& zero = *owned;
    const NamedTensors torch_side = ddp::testing::read_tensors(test_dir(), kind + "_torch_rank" + std::to_string(rank));
    const at::Tensor owners = ddp::testing::find_tensor(torch_side, "owners");
    for (size_t i = 0; i < zero.owners().size(); ++i)
      if (owners[static_cast<int64_t>(i)].item<int64_t>() != zero.owners()[i]) {
        std::cerr << kind << ": parameter #" << i << " is rank " << zero.owners()[i] << "'s here, rank "
                  << owners[static_cast<int64_t>(i)].item<int64_t>() << "'s in torch\n";
        return 1;
      }
    for (int64_t step = 0; step < 6; ++step) {
      if (step == 3) zero.param_groups()[0].options().set_lr(zero.param_groups()[0].options().get_lr() / 2);
      train_step(model, zero, step, rank);
    }
    // Bit for bit where torch's Python optimizer rounds as LibTorch's does (SGD; Adam on torch 1.x),
    // else within 1e-6 (torch 2.x's Adam moves exp_avg with lerp_; python/zero_reference.py).
    const bool exact = ddp::testing::find_tensor(torch_side, "exact").item<int64_t>() == 1;
    for (const auto& item : net->named_parameters()) {
      const at::Tensor theirs = ddp::testing::find_tensor(torch_side, item.key());
      const double diff = (item.value() - theirs).abs().max().item<double>();
      if (exact ? !torch::equal(item.value(), theirs) : diff > 1e-6) {
        std::cerr << kind << ": " << item.key() << " differs from torch's ZeroRedundancyOptimizer run (max |diff| "
                  << diff << (exact ? ", bit for bit expected" : ", 1e-6 allowed") << ")\n";
        return 1;
      }
    }
  }
  return 0;
}

}  // namespace

namespace {

// The C++ half of the Python-format export: 3 steps of ZeRO Adam (and of plain Adam beside it) from
// the parity test's weights and batches, both states written with torch::pickle_save, then 3 more
// steps of ZeRO; python/zero_load_reference.py loads the file into torch and must end at our weights.
DDP_TEST_WORKER(zero_export_torch_state) {
  torch::set_num_threads(1);
  auto pg = ddp::init_process_group();
  const int rank = pg->rank();
  Mlp a, b;
  {
    torch::NoGradGuard no_grad;
    const NamedTensors init = ddp::testing::read_tensors(test_dir(), "init");
    for (Mlp* net : {&a, &b})
      for (auto& item : (*net)->named_parameters()) item.value().copy_(ddp::testing::find_tensor(init, item.key()));
  }
  ddp::DistributedDataParallel da(a, pg), db(b, pg);
  ddp::ZeroRedundancyOptimizer zero(two_groups(a), adam_factory(), pg);
  std::unique_ptr<torch::optim::Optimizer> plain = adam_factory()(two_groups(b));
  for (int64_t step = 0; step < 3; ++step) {
    train_step(da, zero, step, rank);
    train_step(db, *plain, step, rank);
  }
  zero.consolidate_state_dict(0);
  if (rank == 0) {
    for (const auto& [stem, opt] : {std::pair<std::string, torch::optim::Optimizer*>{"zero_state.pt", &zero},
                                    {"plain_state.pt", plain.get()}}) {
      const std::vector<char> bytes = torch::pickle_save(ddp::torch_state_dict(*opt));
      std::ofstream(test_dir() + "/" + stem, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    ddp::testing::write_tensors(test_dir(), "step3", named(a));
  }
  for (int64_t step = 3; step < 6; ++step) train_step(da, zero, step, rank);
  if (rank == 0) ddp::testing::write_tensors(test_dir(), "cpp_final", named(a));
  return 0;
}

}  // namespace
