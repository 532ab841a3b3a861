// DistributedDataParallelOptions::static_graph: the workers behind the StaticGraph tests in
// ddp_test.cpp. The model (StaticNet, mirrored in python/static_graph.py) has an unused layer and
// a layer, `shared`, whose gradient accumulator fires twice per backward: it runs once in the
// graph and once more inside Recompute, whose backward recomputes it and runs a nested backward
// through it (activation checkpointing's reentrant scheme). Applied twice in one graph instead
// (Mode::kInGraph), the same layer fires once: autograd sums both gradients before accumulating.
//
// static_graph_parity: 2 ranks, 5 SGD steps; every parameter and gradient equals torch's
//   DDP(static_graph=True) on the same model and data (python/static_graph_reference.py), bit for
//   bit, with several options; each step's gradients equal the average of the two shards'
//   gradients computed without DDP, and the accumulators fire 2 (shared), 0 (unused), 1 (others).
// static_graph_matches_dynamic: on Mode::kInGraph, which DDP without static_graph can reduce,
//   static_graph (find_unused_parameters off) gives what find_unused_parameters gives, bit for
//   bit, also with no_sync() and with join() on uneven inputs (also a rank that joins at once
//   and learns the graph 5 steps after the other); and kRecompute with static_graph
//   gives the same as kInGraph with find_unused_parameters, also with the head recomputed (the
//   first accumulation then happens inside a nested backward).
// static_graph_graph_changes: a graph that changes after the first iteration (a count goes 2 -> 1,
//   1 -> 2, or an unused layer gets used), on one rank only, is a ConfigError from backward on
//   every rank naming the parameter; the group and the model still work afterwards.
#include <ddp/comm_hooks.h>
#include <ddp/distributed_data_parallel.h>
#include <ddp/errors.h>
#include <ddp/init.h>

#include <torch/torch.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>

#include "support/multiprocess.h"
#include "tensor_files.h"

namespace {
// Named as well: test_ddp is a unity build, and the other workers' files have their own kSteps,
// Checks, ...
namespace static_graph_test {

using ddp::DistributedDataParallel;
using ddp::DistributedDataParallelOptions;
using ddp::testing::find_tensor;
using ddp::testing::NamedTensors;

// tanh(linear(x)) with no graph in forward; backward recomputes it with a graph and runs a nested
// backward through it, which accumulates into the layer's parameters (they are not inputs of
// this function, so the outer graph has no edge to them).
struct Recompute : torch::autograd::Function<Recompute> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x, torch::nn::Linear layer) {
    ctx->save_for_backward({x});
    ctx->saved_data["weight"] = layer->weight;
    ctx->saved_data["bias"] = layer->bias;
    return torch::tanh(torch::nn::functional::linear(x, layer->weight, layer->bias));
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad) {
    auto x = ctx->get_saved_variables()[0].detach().requires_grad_();
    torch::Tensor y;
    {
      torch::AutoGradMode on(true);
      y = torch::tanh(torch::nn::functional::linear(x, ctx->saved_data["weight"].toTensor(),
                                                    ctx->saved_data["bias"].toTensor()));
    }
    torch::autograd::backward({y}, {grad[0]});
    return {x.grad(), torch::Tensor()};
  }
};

enum class Mode { kRecompute, kInGraph };

struct StaticNetImpl : torch::nn::Module {
  StaticNetImpl() {
    inp = register_module("inp", torch::nn::Linear(8, 16));
    shared = register_module("shared", torch::nn::Linear(16, 16));
    unused = register_module("unused", torch::nn::Linear(16, 4));
    head = register_module("head", torch::nn::Linear(16, 4));
  }
  torch::Tensor forward(torch::Tensor x) {
    auto h = shared(torch::relu(inp(x)));
    h = mode == Mode::kRecompute ? Recompute::apply(h, shared) : torch::tanh(shared(h));
    torch::Tensor out;
    if (!recompute_head)
      out = head(h);
    else
      out = mode == Mode::kRecompute ? Recompute::apply(h, head) : torch::tanh(head(h));
    return use_unused ? out + unused(h) : out;
  }
  torch::nn::Linear inp{nullptr}, shared{nullptr}, unused{nullptr}, head{nullptr};
  Mode mode = Mode::kRecompute;
  bool use_unused = false;
  /// The head recomputed too: the first accumulation of a backward then happens inside a nested
  /// backward, whose end is not the end of the whole backward.
  bool recompute_head = false;
};
TORCH_MODULE(StaticNet);

constexpr int kSteps = 5;      // STEPS in python/static_graph_reference.py
constexpr int64_t kBatch = 8;  // 4 rows per rank of 2

struct Checks {
  int failures = 0;
  int rank = 0;
  void expect(bool ok, const std::string& what) {
    if (ok) return;
    ++failures;
    std::cerr << "rank " << rank << " FAILED: " << what << std::endl;
  }
  int result() const { return failures == 0 ? 0 : 1; }
};

std::string parity_dir() {
  const char* d = std::getenv("DDP_PARITY_DIR");
  if (!d) throw std::runtime_error("DDP_PARITY_DIR is not set");
  return d;
}

NamedTensors make_init() {
  torch::manual_seed(61);
  StaticNet net;
  NamedTensors init;
  for (const auto& item : net->named_parameters()) init.emplace_back(item.key(), item.value().detach().clone());
  return init;
}

NamedTensors make_data() {
  torch::manual_seed(62);
  NamedTensors data;
  for (int s = 0; s < kSteps + 2; ++s) {
    data.emplace_back("x" + std::to_string(s), torch::randn({kBatch, 8}));
    data.emplace_back("y" + std::to_string(s), torch::randint(0, 4, {kBatch}));
  }
  return data;
}

StaticNet make_net(const NamedTensors& init, Mode mode = Mode::kRecompute) {
  StaticNet net;
  net->mode = mode;
  torch::NoGradGuard g;
  for (auto& item : net->named_parameters()) item.value().copy_(find_tensor(init, item.key()));
  return net;
}

// Rank r's rows of batch s (train_step.py's split); rank -1: the whole batch.
std::pair<torch::Tensor, torch::Tensor> rows(const NamedTensors& data, int s, int rank, int world) {
  auto x = find_tensor(data, "x" + std::to_string(s)), y = find_tensor(data, "y" + std::to_string(s));
  const int64_t per = kBatch / world;
  return {x.narrow(0, rank * per, per), y.narrow(0, rank * per, per)};
}

torch::Tensor loss_of(const torch::Tensor& out, const torch::Tensor& y) {
  return torch::nn::functional::cross_entropy(out, y);
}

// Parameters and their gradients ("grad.<name>", only where defined), detached copies.
NamedTensors state_of(torch::nn::Module& net) {
  NamedTensors out;
  for (const auto& item : net.named_parameters()) out.emplace_back(item.key(), item.value().detach().clone());
  for (const auto& item : net.named_parameters())
    if (item.value().grad().defined()) out.emplace_back("grad." + item.key(), item.value().grad().clone());
  return out;
}

// Every tensor of `ours` equal to `theirs`'s (torch::equal), and the same set of names.
void expect_equal(Checks& c, const NamedTensors& ours, const NamedTensors& theirs, const std::string& label) {
  std::map<std::string, torch::Tensor> t(theirs.begin(), theirs.end());
  c.expect(ours.size() == theirs.size(), label + ": " + std::to_string(ours.size()) + " tensors here, " +
                                             std::to_string(theirs.size()) + " in the reference");
  for (const auto& [name, tensor] : ours) {
    auto it = t.find(name);
    if (it == t.end()) {
      c.expect(false, label + ": the reference has no " + name);
      continue;
    }
    if (torch::equal(tensor, it->second)) continue;
    std::ostringstream m;
    m << label << ": " << name << " differs, max |diff| "
      << (tensor.to(torch::kDouble) - it->second.to(torch::kDouble)).abs().max().item<double>();
    c.expect(false, m.str());
  }
}

// Counts the gradient accumulations of each parameter: a tensor hook on a leaf runs once per
// AccumulateGrad execution.
struct FireCounter {
  explicit FireCounter(torch::nn::Module& net) {
    for (const auto& item : net.named_parameters()) {
      auto* count = &counts[item.key()];
      item.value().register_hook([count](torch::Tensor) { ++*count; });
    }
  }
  void reset() {
    for (auto& [name, n] : counts) n = 0;
  }
  std::map<std::string, int> counts;
};

// The gradients of one step computed without DDP: each shard's on a copy of `net`, times 1/2,
// summed (the float operations DDP does for 2 ranks: multiply into the bucket, then a sum that
// does not depend on its order).
std::map<std::string, torch::Tensor> shard_average(StaticNet& net, const NamedTensors& data, int s) {
  std::map<std::string, torch::Tensor> sum;
  for (int r = 0; r < 2; ++r) {
    NamedTensors now;
    for (const auto& item : net->named_parameters()) now.emplace_back(item.key(), item.value().detach());
    StaticNet local = make_net(now, net->mode);
    auto [x, y] = rows(data, s, r, 2);
    loss_of(local(x), y).backward();
    for (const auto& item : local->named_parameters()) {
      if (!item.value().grad().defined()) continue;
      auto half = item.value().grad().mul(0.5);
      auto it = sum.find(item.key());
      if (it == sum.end())
        sum[item.key()] = half;
      else
        it->second = it->second + half;
    }
  }
  return sum;
}

DDP_TEST_WORKER(static_graph_prepare) {
  ddp::testing::write_tensors(parity_dir(), "sg_init", make_init());
  ddp::testing::write_tensors(parity_dir(), "sg_data", make_data());
  return 0;
}

DDP_TEST_WORKER(static_graph_parity) {
  auto pg = ddp::init_process_group();
  torch::set_num_threads(1);
  Checks c{0, pg->rank()};
  const NamedTensors init = ddp::testing::read_tensors(parity_dir(), "sg_init");
  const NamedTensors data = ddp::testing::read_tensors(parity_dir(), "sg_data");
  const NamedTensors torch_result =
      ddp::testing::read_tensors(parity_dir(), "sg_rank" + std::to_string(pg->rank()));

  struct Case {
    std::string name;
    DistributedDataParallelOptions options;
    bool comm_hook = false;
  };
  const auto base = DistributedDataParallelOptions().static_graph(true);
  const std::vector<Case> cases = {
      {"static_graph", base},
      {"+find_unused_parameters", DistributedDataParallelOptions(base).find_unused_parameters(true)},
      {"+gradient_as_bucket_view", DistributedDataParallelOptions(base).gradient_as_bucket_view(true)},
      {"+one bucket per parameter", DistributedDataParallelOptions(base).bucket_cap_mb(1e-6).first_bucket_cap_mb(1e-6)},
      {"+overlap_communication(false)", DistributedDataParallelOptions(base).overlap_communication(false)},
      {"+rebuild_buckets(false)", DistributedDataParallelOptions(base).rebuild_buckets(false)},
      {"+comm hook allreduce", base, true},
  };
  for (const auto& k : cases) {
    StaticNet net = make_net(init);
    DistributedDataParallel model(net, pg, k.options);
    if (k.comm_hook) model.register_comm_hook(ddp::comm_hooks::allreduce(pg));
    FireCounter fires(*net);
    const auto initial_buckets = model.bucket_indices();
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    for (int s = 0; s < kSteps; ++s) {
      auto [x, y] = rows(data, s, pg->rank(), pg->size());
      opt.zero_grad();
      fires.reset();
      auto out = model(x);
      // PyTorch rebuilds at the forward after its second iteration: the first is reduced only
      // at its end, so the second is the first with an arrival order.
      if (k.name == "+one bucket per parameter") {
        c.expect(model.stats().buckets_rebuilt == (s >= 2), k.name + ": rebuilt at step " + std::to_string(s) +
                                                                 " is " + std::to_string(model.stats().buckets_rebuilt));
        if (s == 2) {
          const auto rebuilt = model.bucket_indices();
          c.expect(rebuilt != initial_buckets, k.name + ": the rebuild changed the buckets");
          // The unused layer (parameters 4 and 5) goes last, after those that became ready.
          c.expect(rebuilt.size() == 8 && rebuilt[6] == std::vector<int64_t>{4} && rebuilt[7] == std::vector<int64_t>{5},
                   k.name + ": unused.weight and unused.bias are the last buckets after the rebuild");
        }
      }
      loss_of(out, y).backward();
      for (const auto& [name, n] : fires.counts) {
        const int expected = name.rfind("shared.", 0) == 0 ? 2 : name.rfind("unused.", 0) == 0 ? 0 : 1;
        c.expect(n == expected, k.name + ": step " + std::to_string(s) + ": " + name + " accumulated " +
                                    std::to_string(n) + " times, expected " + std::to_string(expected));
      }
      if (k.name == "static_graph") {
        // Against the shards' average without DDP (computed after backward: it runs its own).
        const auto reference = shard_average(net, data, s);
        for (const auto& item : net->named_parameters()) {
          auto it = reference.find(item.key());
          const auto& g = item.value().grad();
          if (it == reference.end()) {
            c.expect(!g.defined(), k.name + ": step " + std::to_string(s) + ": " + item.key() + " has a gradient");
            continue;
          }
          c.expect(g.defined() && torch::equal(g, it->second),
                   k.name + ": step " + std::to_string(s) + ": " + item.key() +
                       "'s gradient is not the shards' average computed without DDP");
        }
      }
      opt.step();
    }
    c.expect(!net->unused->weight.grad().defined(), k.name + ": the never-used layer got a gradient");
    expect_equal(c, state_of(*net), torch_result, k.name + " vs torch's DDP(static_graph=True)");
  }
  return c.result();
}

// ---- against DDP without static_graph -----------------------------------------------------------
struct Run {
  DistributedDataParallelOptions options;
  Mode mode = Mode::kInGraph;
  bool no_sync_first = false;  // each step: one micro-batch under no_sync(), then the other
  bool join = false;           // inside join(), rank 1 on rank1_steps of them
  bool recompute_head = false;
  int rank1_steps = kSteps - 2;
  int steps_after_join = 0;    // then this many on every rank, outside join()
};

NamedTensors train(const std::shared_ptr<ddp::ProcessGroup>& pg, const NamedTensors& init, const NamedTensors& data,
                   const Run& run) {
  StaticNet net = make_net(init, run.mode);
  net->recompute_head = run.recompute_head;
  DistributedDataParallel model(net, pg, run.options);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  const int steps = run.join && pg->rank() == 1 ? run.rank1_steps : kSteps;
  auto loop = [&](int first, int last) {
    for (int s = first; s < last; ++s) {
      opt.zero_grad();
      if (run.no_sync_first) {
        auto [x, y] = rows(data, s, pg->rank(), pg->size());
        {
          auto guard = model.no_sync();
          loss_of(model(x), y).backward();
        }
        auto [x2, y2] = rows(data, s + 1, pg->rank(), pg->size());
        loss_of(model(x2), y2).backward();
      } else {
        auto [x, y] = rows(data, s, pg->rank(), pg->size());
        loss_of(model(x), y).backward();
      }
      opt.step();
    }
  };
  if (run.join) {
    model.join([&] { loop(0, steps); });
    loop(kSteps - run.steps_after_join, kSteps);
  } else {
    loop(0, steps);
  }
  return state_of(*net);
}

DDP_TEST_WORKER(static_graph_matches_dynamic) {
  auto pg = ddp::init_process_group();
  torch::set_num_threads(1);
  Checks c{0, pg->rank()};
  const NamedTensors init = make_init(), data = make_data();
  {
    // Applied twice in one graph, `shared` accumulates once (so DDP without static_graph copes).
    StaticNet net = make_net(init, Mode::kInGraph);
    FireCounter fires(*net);
    auto [x, y] = rows(data, 0, 0, 1);
    loss_of(net(x), y).backward();
    c.expect(fires.counts["shared.weight"] == 1, "in-graph reuse: shared.weight accumulated " +
                                                     std::to_string(fires.counts["shared.weight"]) + " times, not once");
  }
  const auto dynamic = DistributedDataParallelOptions().find_unused_parameters(true);
  const auto fixed = DistributedDataParallelOptions().static_graph(true);
  struct Pair {
    std::string name;
    Run static_run, dynamic_run;
  };
  const std::vector<Pair> pairs = {
      {"plain", {fixed}, {dynamic}},
      {"no_sync", {fixed, Mode::kInGraph, true}, {dynamic, Mode::kInGraph, true}},
      {"join, uneven", {fixed, Mode::kInGraph, false, true}, {dynamic, Mode::kInGraph, false, true}},
      // Rank 1 joins at once and shadows 5 steps; its first own backward, 5 steps after rank 0's,
      // is the one that learns (with the same collectives as rank 0's later ones).
      {"join, rank 1 learns late", {fixed, Mode::kInGraph, false, true, false, 0, 2},
       {dynamic, Mode::kInGraph, false, true, false, 0, 2}},
      {"small buckets + gradient_as_bucket_view",
       {DistributedDataParallelOptions(fixed).bucket_cap_mb(1e-6).first_bucket_cap_mb(1e-6).gradient_as_bucket_view(true)},
       {dynamic}},
      // The nested backward computes what the in-graph reuse computes, in the same float
      // operations: the same gradients, bit for bit, reduced with and without static_graph.
      {"recompute vs in-graph", {fixed, Mode::kRecompute}, {dynamic}},
      // The same when the first gradient of each backward accumulates in a nested backward.
      {"recomputed head", {fixed, Mode::kRecompute, false, false, true}, {dynamic, Mode::kInGraph, false, false, true}},
  };
  for (const auto& p : pairs) {
    const NamedTensors a = train(pg, init, data, p.static_run);
    const NamedTensors b = train(pg, init, data, p.dynamic_run);
    c.expect(!torch::equal(find_tensor(a, "head.weight"), find_tensor(init, "head.weight")), p.name + ": trained");
    expect_equal(c, a, b, p.name + ": static_graph vs find_unused_parameters");
  }
  return c.result();
}

// ---- a graph that changes --------------------------------------------------------------------------
DDP_TEST_WORKER(static_graph_graph_changes) {
  auto pg = ddp::init_process_group();
  torch::set_num_threads(1);
  Checks c{0, pg->rank()};
  const NamedTensors init = make_init(), data = make_data();
  struct Change {
    std::string name;
    Mode learned_mode;
    int rank;                                 // the rank whose graph changes at step 2
    std::function<void(StaticNet&)> change;   // applied to that rank's model for step 2 only
    std::vector<std::string> named;           // in every rank's message
    std::string detail;                       // in the changing rank's message
  };
  const std::vector<Change> changes = {
      {"checkpointing off (2 -> 1)", Mode::kRecompute, 1, [](StaticNet& n) { n->mode = Mode::kInGraph; },
       {"'shared.weight'", "'shared.bias'"}, "1 time(s) in this backward on rank 1, but 2 time(s) in the first"},
      {"checkpointing on (1 -> 2)", Mode::kInGraph, 0, [](StaticNet& n) { n->mode = Mode::kRecompute; },
       {"'shared.weight'", "'shared.bias'"}, "2 time(s) in this backward on rank 0, but 1 time(s) in the first"},
      {"unused layer used (0 -> 1)", Mode::kRecompute, 1, [](StaticNet& n) { n->use_unused = true; },
       {"'unused.weight'", "'unused.bias'"}, "1 time(s) in this backward on rank 1, but 0 time(s) in the first"},
  };
  for (const auto& ch : changes) {
    StaticNet net = make_net(init, ch.learned_mode);
    DistributedDataParallel model(net, pg, DistributedDataParallelOptions().static_graph(true));
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1));
    int errors = 0;
    for (int s = 0; s < 4; ++s) {
      const bool changed = s == 2 && pg->rank() == ch.rank;
      if (changed) ch.change(net);
      auto [x, y] = rows(data, s, pg->rank(), pg->size());
      opt.zero_grad();
      bool threw = false;
      try {
        loss_of(model(x), y).backward();
        c.expect(s != 2, ch.name + ": step 2's backward did not throw");
      } catch (const std::exception& e) {
        threw = true;
        ++errors;
        const std::string what = e.what();
        std::cerr << "rank " << pg->rank() << " " << ch.name << ": step " << s << ": " << what << std::endl;
        c.expect(s == 2, ch.name + ": step " + std::to_string(s) + " threw");
        c.expect(dynamic_cast<const ddp::ConfigError*>(&e) != nullptr, ch.name + ": not a ddp::ConfigError");
        c.expect(what.find("static_graph: the autograd graph changed after the first iteration") != std::string::npos,
                 ch.name + ": the message says what went wrong");
        for (const auto& n : ch.named) c.expect(what.find(n) != std::string::npos, ch.name + ": the message names " + n);
        if (pg->rank() == ch.rank)
          c.expect(what.find(ch.detail) != std::string::npos, ch.name + ": the message says '" + ch.detail + "'");
        else
          c.expect(what.find("changed on 1 rank(s)") != std::string::npos, ch.name + ": the message says on how many ranks");
      }
      if (changed) {  // back to the learned graph for the remaining steps
        net->mode = ch.learned_mode;
        net->use_unused = false;
      }
      if (!threw) opt.step();  // no step on gradients that are not the average
    }
    // Changed back, the next steps ran without an error (asserted above), and the group works.
    c.expect(errors == 1, ch.name + ": " + std::to_string(errors) + " errors, expected exactly 1");
    std::vector<at::Tensor> t = {torch::ones({1})};
    pg->allreduce(t)->wait();
    c.expect(t[0].item<float>() == pg->size(), ch.name + ": the group still works");
  }
  return c.result();
}

}  // namespace static_graph_test
}  // namespace
