// DistributedDataParallel, multi-process: the worker side. Every worker runs several cases over one
// process group (each rank is a real process over loopback Gloo); ddp_test.cpp starts them.
//
// The reference for "correct" is always one process training the same initial model on the whole
// batch: N ranks on B/N samples each must end with the same parameters.
#include <ddp/distributed_data_parallel.h>
#include <ddp/errors.h>
#include <ddp/init.h>

#include <torch/torch.h>

#include <cstdlib>
#include <functional>
#include <iostream>
#include <sstream>

#include "support/multiprocess.h"
#include "tensor_files.h"
#include "test_models.h"

namespace {

using ddp::DistributedDataParallel;
using ddp::DistributedDataParallelOptions;
using ddp::ProcessGroup;
using ddp::testing::Cnn;
using ddp::testing::Mlp;
using Snapshot = std::vector<torch::Tensor>;

constexpr int64_t kBatch = 12;  // divisible by 2, 3 and 4 ranks
constexpr int kSteps = 10;

// ---- checks: collect failures, report them all, exit 1 ------------------------------------------
struct Checks {
  int failures = 0;
  int rank = 0;
  void expect(bool ok, const std::string& what) {
    if (ok) return;
    ++failures;
    std::cerr << "rank " << rank << " FAILED: " << what << std::endl;
  }
  void expect_close(double diff, double tol, const std::string& what) {
    std::ostringstream s;
    s << what << ": max abs diff " << diff << " (tolerance " << tol << ")";
    std::cerr << "rank " << rank << " " << s.str() << std::endl;
    expect(diff <= tol, s.str());
  }
  int result() const { return failures == 0 ? 0 : 1; }
};

// ---- data and models ------------------------------------------------------------------------------
struct Data {
  torch::Tensor x, y;
};

Data make_data(bool images, int64_t n, uint64_t seed) {
  torch::manual_seed(seed);
  Data d;
  d.x = images ? torch::randn({n, 3, 32, 32}) : torch::randn({n, 20});
  d.y = torch::randint(0, 10, {n});
  return d;
}

Data shard(const Data& d, const ProcessGroup& pg) {
  const int64_t per = d.x.size(0) / pg.size();
  return {d.x.narrow(0, pg.rank() * per, per), d.y.narrow(0, pg.rank() * per, per)};
}

/// Parameters and buffers, detached copies.
Snapshot snapshot(torch::nn::Module& m) {
  Snapshot s;
  for (auto& p : m.parameters()) s.push_back(p.detach().clone());
  for (auto& b : m.buffers()) s.push_back(b.detach().clone());
  return s;
}

double max_diff(const Snapshot& a, const Snapshot& b) {
  if (a.size() != b.size()) return 1e30;
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i)
    d = std::max(d, (a[i].to(torch::kDouble) - b[i].to(torch::kDouble)).abs().max().item<double>());
  return d;
}

// lr 0.01: with larger steps, ReLU / max-pool kinks occasionally amplify last-bit differences
// between two (equally right) summation orders over 10 steps (1 data seed in 30 at lr 0.05).
torch::optim::SGD make_sgd(torch::nn::Module& m) {
  return torch::optim::SGD(m.parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
}

/// Models whose ranks start different: DDP must broadcast rank 0's. The reference uses rank 0's.
template <typename Net>
Net make_net(int rank) {
  torch::manual_seed(1000 + rank);
  return Net();
}

template <typename Net>
Snapshot train_local(const Data& d, int steps = kSteps) {
  Net net = make_net<Net>(0);
  auto opt = make_sgd(*net);
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    torch::nn::functional::cross_entropy(net->forward(d.x), d.y).backward();
    opt.step();
  }
  return snapshot(*net);
}

template <typename Net>
Snapshot train_ddp(const std::shared_ptr<ProcessGroup>& pg, const Data& all,
                   DistributedDataParallelOptions options = {}, ddp::CommHook hook = nullptr,
                   int steps = kSteps) {
  Net net = make_net<Net>(pg->rank());
  DistributedDataParallel model(net, pg, options);
  if (hook) model.register_comm_hook(hook);
  auto opt = make_sgd(*net);
  const Data d = shard(all, *pg);
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model(d.x), d.y);
    loss.backward();
    opt.step();
  }
  return snapshot(*net);
}

std::string env(const char* name, const char* fallback = "") {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

// ---- N ranks on B/N samples == one process on B samples ------------------------------------------
DDP_TEST_WORKER(equivalence) {
  auto pg = ddp::init_process_group();
  Checks c{0, pg->rank()};
  const std::string n = std::to_string(pg->size());
  const Data mlp_data = make_data(false, kBatch, 7), cnn_data = make_data(true, kBatch, 8);
  c.expect_close(max_diff(train_ddp<Mlp>(pg, mlp_data), train_local<Mlp>(mlp_data)), 1e-5,
                 "MLP, " + n + " ranks vs 1 process");
  c.expect_close(max_diff(train_ddp<Cnn>(pg, cnn_data), train_local<Cnn>(cnn_data)), 1e-5,
                 "CNN, " + n + " ranks vs 1 process");
  return c.result();
}

// ---- options that must not change the result ----------------------------------------------------
DDP_TEST_WORKER(options_identical) {
  auto pg = ddp::init_process_group();
  Checks c{0, pg->rank()};
  const Data data = make_data(true, kBatch, 9);
  const Snapshot baseline = train_ddp<Cnn>(pg, data);
  // With 2 ranks every element is a + b however the buckets cut the gradients: bit-identical.
  for (double cap : {0.001, 0.01, 1.0, 1000.0}) {
    auto o = DistributedDataParallelOptions().bucket_cap_mb(cap).first_bucket_cap_mb(std::min(cap, 1.0));
    c.expect_close(max_diff(train_ddp<Cnn>(pg, data, o), baseline), 0.0,
                   "bucket_cap_mb " + std::to_string(cap));
  }
  c.expect_close(max_diff(train_ddp<Cnn>(pg, data, DistributedDataParallelOptions().gradient_as_bucket_view(true)),
                          baseline),
                 0.0, "gradient_as_bucket_view");
  c.expect_close(
      max_diff(train_ddp<Cnn>(pg, data,
                              DistributedDataParallelOptions().gradient_as_bucket_view(true).bucket_cap_mb(0.01)),
               baseline),
      0.0, "gradient_as_bucket_view with small buckets (rebuilt: grads move to new buckets)");
  c.expect_close(max_diff(train_ddp<Cnn>(pg, data, DistributedDataParallelOptions().overlap_communication(false)),
                          baseline),
                 0.0, "overlap_communication(false)");
  c.expect_close(max_diff(train_ddp<Cnn>(pg, data, DistributedDataParallelOptions().rebuild_buckets(false)), baseline),
                 0.0, "rebuild_buckets(false)");
  c.expect_close(max_diff(train_ddp<Cnn>(pg, data, {}, ddp::comm_hooks::allreduce(pg)), baseline), 0.0,
                 "comm_hooks::allreduce");
  return c.result();
}

// ---- comm hooks: compression within tolerance, user hooks called per bucket ----------------------
/// The averaged gradients of one DDP backward (same initial model and data on every call).
Snapshot one_step_grads(const std::shared_ptr<ProcessGroup>& pg, const Data& all, ddp::CommHook hook) {
  Cnn net = make_net<Cnn>(pg->rank());
  DistributedDataParallel model(net, pg);
  if (hook) model.register_comm_hook(hook);
  const Data d = shard(all, *pg);
  torch::nn::functional::cross_entropy(model(d.x), d.y).backward();
  Snapshot grads;
  for (auto& p : net->parameters()) grads.push_back(p.grad().clone());
  return grads;
}

/// Worst error of `got` relative to the largest gradient of each tensor (plus a float16
/// subnormal-sized floor).
double relative_error(const Snapshot& got, const Snapshot& exact) {
  double worst = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    const double scale = exact[i].abs().max().item<double>() + 1e-4;
    worst = std::max(worst, (got[i] - exact[i]).abs().max().item<double>() / scale);
  }
  return worst;
}

DDP_TEST_WORKER(comm_hooks) {
  auto pg = ddp::init_process_group();
  Checks c{0, pg->rank()};
  const Data data = make_data(true, kBatch, 10);
  // Compression: one rounding to the wire type, one after the sum (2^-11 for float16, 2^-8 for
  // bfloat16 relative), so each gradient is within ~2 roundings of the exact average.
  const Snapshot exact = one_step_grads(pg, data, nullptr);
  const double fp16 = relative_error(one_step_grads(pg, data, ddp::comm_hooks::fp16_compress(pg)), exact);
  const double bf16 = relative_error(one_step_grads(pg, data, ddp::comm_hooks::bf16_compress(pg)), exact);
  c.expect_close(fp16, 2.0 / 2048, "fp16_compress gradients vs exact (relative to each tensor's largest)");
  c.expect_close(bf16, 2.0 / 256, "bf16_compress gradients vs exact (relative to each tensor's largest)");
  // Compression must have happened (a hook that did nothing would be exact).
  c.expect(fp16 > 0 && bf16 > fp16, "compressed gradients differ from exact ones, bf16 more than fp16");
  // And it trains: the same 10 steps end close to the uncompressed run.
  const Snapshot baseline = train_ddp<Cnn>(pg, data);
  c.expect_close(max_diff(train_ddp<Cnn>(pg, data, {}, ddp::comm_hooks::fp16_compress(pg)), baseline), 1e-2,
                 "fp16_compress, 10 steps, vs uncompressed");

  // A user hook: counts buckets, reduces with the process group itself.
  auto calls = std::make_shared<int>(0);
  auto last_seen = std::make_shared<int>(0);
  ddp::CommHook counting = [pg, calls, last_seen](ddp::GradBucket& bucket) {
    ++*calls;
    if (bucket.is_last()) ++*last_seen;
    if (bucket.gradients().size() != bucket.parameters().size())
      throw std::runtime_error("bucket gradients and parameters differ in count");
    std::vector<at::Tensor> t = {bucket.buffer()};
    auto work = pg->allreduce(t);
    const double n = pg->size();
    return ddp::CommFuture(work, [t, n] { return t[0] / n; });  // a new tensor: DDP copies it in
  };
  auto options = DistributedDataParallelOptions().bucket_cap_mb(0.05).first_bucket_cap_mb(0.01);
  const Snapshot small_buckets = train_ddp<Cnn>(pg, data, options);
  const Snapshot hooked = train_ddp<Cnn>(pg, data, options, counting);
  c.expect_close(max_diff(hooked, small_buckets), 1e-6, "user hook (sum, then divide) vs built-in");
  c.expect(*calls >= 3 * kSteps, "user hook ran once per bucket per step (" + std::to_string(*calls) + " calls)");
  c.expect(*last_seen == kSteps, "exactly one bucket per step is_last() (" + std::to_string(*last_seen) + ")");
  return c.result();
}

// ---- no_sync: local accumulation, then one synchronized backward ---------------------------------
DDP_TEST_WORKER(no_sync) {
  auto pg = ddp::init_process_group();
  Checks c{0, pg->rank()};
  const Data data = make_data(false, 2 * kBatch, 11);  // two micro-batches per rank
  for (bool view : {false, true}) {
    Mlp net = make_net<Mlp>(pg->rank());
    DistributedDataParallel model(net, pg, DistributedDataParallelOptions().gradient_as_bucket_view(view));
    auto opt = make_sgd(*net);
    // Rank r's samples: micro-batch 0 = data[r*b, (r+1)*b), micro-batch 1 = data[(N+r)*b, ...).
    const int64_t b = kBatch / pg->size();
    for (int s = 0; s < 3; ++s) {
      opt.zero_grad();
      for (int micro = 0; micro < 2; ++micro) {
        const int64_t at = (micro * pg->size() + pg->rank()) * b;
        auto x = data.x.narrow(0, at, b), y = data.y.narrow(0, at, b);
        if (micro == 0) {
          auto guard = model.no_sync();
          (torch::nn::functional::cross_entropy(model(x), y) / 2).backward();
        } else {
          (torch::nn::functional::cross_entropy(model(x), y) / 2).backward();
        }
      }
      opt.step();
    }
    c.expect(model.stats().synced_iterations == 3, "one synchronized backward per step");
    const Snapshot reference = train_local<Mlp>(data, 3);  // one batch of all 2B samples
    c.expect_close(max_diff(snapshot(*net), reference), 1e-5,
                   std::string("no_sync accumulation vs one big batch") + (view ? " (gradient_as_bucket_view)" : ""));
  }
  return c.result();
}

// ---- unused parameters -----------------------------------------------------------------------------
// fc1 -> fc2 always; `extra` only on the ranks listed in use_extra; `unused` never.
struct BranchyImpl : torch::nn::Module {
  BranchyImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(20, 16));
    extra = register_module("extra", torch::nn::Linear(16, 16));
    unused = register_module("unused", torch::nn::Linear(16, 16));
    fc2 = register_module("fc2", torch::nn::Linear(16, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    auto h = torch::relu(fc1(x));
    if (use_extra) h = h + torch::relu(extra(h));
    return fc2(h);
  }
  bool use_extra = false;
  torch::nn::Linear fc1{nullptr}, extra{nullptr}, unused{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Branchy);

/// Forward output DDP cannot look into (an unknown type): unused parameters are then found at the
/// end of backward instead of from the graph.
struct Opaque {
  torch::Tensor logits;
};
struct OpaqueBranchyImpl : BranchyImpl {
  Opaque forward(torch::Tensor x) { return {BranchyImpl::forward(x)}; }
};
TORCH_MODULE(OpaqueBranchy);

DDP_TEST_WORKER(unused_parameters) {
  auto pg = ddp::init_process_group();
  Checks c{0, pg->rank()};
  const Data data = make_data(false, kBatch, 12);
  const Data mine = shard(data, *pg);
  auto extra_on = [](int rank) { return rank % 2 == 1; };  // odd ranks only

  // Reference: the mean over ranks of each rank's loss, each rank with its own path.
  torch::manual_seed(2000);
  Branchy ref;
  {
    auto opt = make_sgd(*ref);
    for (int s = 0; s < 3; ++s) {
      opt.zero_grad();
      torch::Tensor total = torch::zeros({});
      for (int r = 0; r < pg->size(); ++r) {
        ref->use_extra = extra_on(r);
        const int64_t per = kBatch / pg->size();
        total = total + torch::nn::functional::cross_entropy(ref(data.x.narrow(0, r * per, per)),
                                                             data.y.narrow(0, r * per, per));
      }
      (total / pg->size()).backward();
      opt.step();
    }
  }

  auto run = [&](auto net, const std::string& label) {
    net->use_extra = extra_on(pg->rank());
    DistributedDataParallel model(net, pg, DistributedDataParallelOptions().find_unused_parameters(true));
    auto opt = make_sgd(*net);
    for (int s = 0; s < 3; ++s) {
      opt.zero_grad();
      auto out = model(mine.x);
      torch::Tensor logits;
      if constexpr (std::is_same_v<decltype(out), torch::Tensor>) logits = out;
      else logits = out.logits;
      torch::nn::functional::cross_entropy(logits, mine.y).backward();
      // Used by some rank: the average (zeros from the others). Used by none: untouched.
      c.expect(net->extra->weight.grad().defined(), label + ": extra.weight has a gradient on every rank");
      c.expect(!net->unused->weight.grad().defined(), label + ": unused.weight's gradient stays undefined");
      opt.step();
    }
    Snapshot got = snapshot(*net), want = snapshot(*ref);
    c.expect_close(max_diff(got, want), 1e-5, label + " vs reference");
  };
  torch::manual_seed(2000 + pg->rank());
  run(Branchy(), "find_unused_parameters (graph search)");
  torch::manual_seed(2000 + pg->rank());
  run(OpaqueBranchy(), "find_unused_parameters (opaque output, found at end of backward)");
  return c.result();
}

/// Without find_unused_parameters: backward still completes on every rank (no hang), and the next
/// forward of a rank that missed gradients is an error naming the parameters.
DDP_TEST_WORKER(unused_parameters_error) {
  auto pg = ddp::init_process_group();
  Checks c{0, pg->rank()};
  const Data mine = shard(make_data(false, kBatch, 13), *pg);

  auto expect_error_at_next_forward = [&](DistributedDataParallel<Branchy>& model,
                                          const std::vector<std::string>& names, const std::string& label) {
    try {
      model(mine.x);
      c.expect(false, label + ": the next forward did not throw");
    } catch (const ddp::ConfigError& e) {
      const std::string what = e.what();
      std::cerr << "rank " << pg->rank() << " got the expected error: " << what << std::endl;
      c.expect(what.find("Expected to have finished reduction in the prior iteration") != std::string::npos,
               label + ": message says what went wrong");
      for (const auto& n : names) c.expect(what.find(n) != std::string::npos, label + ": message names " + n);
      c.expect(what.find("find_unused_parameters") != std::string::npos, label + ": message says how to fix it");
    }
  };

  {  // Every rank: `unused` never gets a gradient.
    torch::manual_seed(1);
    Branchy net;
    net->use_extra = true;
    DistributedDataParallel model(net, pg);
    torch::nn::functional::cross_entropy(model(mine.x), mine.y).backward();
    c.expect(net->fc1->weight.grad().defined(), "all ranks: backward completed with gradients");
    expect_error_at_next_forward(model, {"unused.weight", "unused.bias"}, "all ranks");
  }
  {  // Only rank 0 misses `extra`; the other ranks' backward must still complete.
    torch::manual_seed(1);
    Branchy net;
    net->use_extra = pg->rank() != 0;
    DistributedDataParallel model(net, pg);
    torch::nn::functional::cross_entropy(model(mine.x), mine.y).backward();
    c.expect(net->fc1->weight.grad().defined(), "rank 0 only: backward completed on this rank");
    if (pg->rank() == 0) expect_error_at_next_forward(model, {"extra.weight", "extra.bias"}, "rank 0 only");
  }
  pg->barrier()->wait();
  return c.result();
}

// ---- buffers ----------------------------------------------------------------------------------------
/// Each forward adds (rank + 1) to a buffer, so where the value came from is visible.
struct CounterImpl : torch::nn::Module {
  explicit CounterImpl(int rank) : rank(rank) {
    fc = register_module("fc", torch::nn::Linear(4, 2));
    count = register_buffer("count", torch::full({3}, 100.0 * (rank + 1)));
  }
  torch::Tensor forward(torch::Tensor x) {
    {
      torch::NoGradGuard g;
      count.add_(rank + 1);
    }
    return fc(x);
  }
  int rank;
  torch::nn::Linear fc{nullptr};
  torch::Tensor count;
};
TORCH_MODULE(Counter);

DDP_TEST_WORKER(buffers) {
  auto pg = ddp::init_process_group();
  Checks c{0, pg->rank()};
  const int r = pg->rank();
  for (bool broadcast : {true, false}) {
    Counter net(r);
    DistributedDataParallel model(net, pg, DistributedDataParallelOptions().broadcast_buffers(broadcast));
    c.expect(net->count[0].item<double>() == 100.0, "construction broadcasts rank 0's buffers");
    const int k = 4;
    for (int i = 0; i < k; ++i) model(torch::ones({2, 4})).sum().backward();
    // Broadcast before each forward: rank 0's value (100 + (k-1)) plus this rank's last step.
    const double want = broadcast ? 100.0 + (k - 1) + (r + 1) : 100.0 + k * (r + 1);
    c.expect(net->count[0].item<double>() == want,
             std::string("buffer after ") + std::to_string(k) + " forwards with broadcast_buffers(" +
                 (broadcast ? "true" : "false") + "): " + std::to_string(net->count[0].item<double>()) +
                 ", want " + std::to_string(want));
  }
  // BatchNorm: running statistics diverge with per-rank data, but every forward starts from rank
  // 0's. An evaluation forward (no update) leaves every rank with exactly rank 0's statistics.
  for (bool broadcast : {true, false}) {
    torch::manual_seed(3);
    Cnn bn_net(true);
    DistributedDataParallel model(bn_net, pg, DistributedDataParallelOptions().broadcast_buffers(broadcast));
    const Data mine = make_data(true, 4, 14 + r);  // different data per rank
    for (int i = 0; i < 2; ++i) model(mine.x).sum().backward();
    bn_net->eval();
    {
      torch::NoGradGuard no_grad;
      model(mine.x);
    }
    std::vector<torch::Tensor> all;
    for (int i = 0; i < pg->size(); ++i) all.push_back(torch::zeros_like(bn_net->bn1->running_mean));
    pg->allgather(all, bn_net->bn1->running_mean)->wait();
    bool same = true;
    for (int i = 1; i < pg->size(); ++i) same = same && torch::equal(all[i], all[0]);
    c.expect(same == broadcast, std::string("BatchNorm running_mean equal on all ranks after an eval forward: ") +
                                    (same ? "yes" : "no") + " with broadcast_buffers(" + (broadcast ? "true" : "false") + ")");
  }
  return c.result();
}

// ---- models that differ across ranks ----------------------------------------------------------------
struct WideImpl : torch::nn::Module {
  WideImpl(int64_t hidden, bool more) {
    fc1 = register_module("fc1", torch::nn::Linear(8, hidden));
    fc2 = register_module("fc2", torch::nn::Linear(hidden, 4));
    if (more) register_module("head", torch::nn::Linear(4, 4));
  }
  torch::Tensor forward(torch::Tensor x) { return fc2(fc1(x)); }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Wide);

DDP_TEST_WORKER(mismatch) {
  auto pg = ddp::init_process_group();
  Checks c{0, pg->rank()};
  auto expect_config_error = [&](Wide net, const std::vector<std::string>& needles, const std::string& label) {
    try {
      DistributedDataParallel model(net, pg);
      c.expect(false, label + ": no ConfigError");
    } catch (const ddp::ConfigError& e) {
      const std::string what = e.what();
      std::cerr << "rank " << pg->rank() << " " << label << ": " << what << std::endl;
      for (const auto& n : needles) c.expect(what.find(n) != std::string::npos, label + ": message names '" + n + "'");
    }
  };
  // Rank 1's fc1 is wider.
  expect_config_error(Wide(pg->rank() == 1 ? 17 : 16, false),
                      {"fc1.weight", "[16, 8]", "[17, 8]", "rank 1", "rank 0"}, "shape");
  // The last rank has one more layer.
  const int last = pg->size() - 1;
  expect_config_error(Wide(16, pg->rank() == last),
                      {"head.weight", "rank " + std::to_string(last), "4 parameters", "6 parameters"}, "count");
  // Same models: fine, also wrapped as a plain std::shared_ptr<Impl>.
  Wide same(16, false);
  DistributedDataParallel ok(same, pg);
  c.expect(ok.parameter_names().size() == 4, "identical models construct");
  auto impl = std::make_shared<WideImpl>(16, false);
  DistributedDataParallel raw(impl, pg);  // DistributedDataParallel<std::shared_ptr<WideImpl>>
  raw(torch::ones({2, 8})).sum().backward();
  c.expect(impl->fc1->weight.grad().defined(), "a shared_ptr<Impl> works as the module");
  return c.result();
}

// ---- bucket rebuild: rank 0's arrival order, everywhere -------------------------------------------
/// Two parallel branches whose backward order depends on which was computed first: rank 0 and the
/// other ranks compute them in opposite orders, so their gradients arrive in different orders.
struct TwoBranchImpl : torch::nn::Module {
  TwoBranchImpl() {
    p = register_module("p", torch::nn::Linear(20, 10));
    q = register_module("q", torch::nn::Linear(20, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    if (p_first) {
      auto a = p(x);
      return a + q(x);
    }
    auto b = q(x);
    return p(x) + b;
  }
  bool p_first = true;
  torch::nn::Linear p{nullptr}, q{nullptr};
};
TORCH_MODULE(TwoBranch);

DDP_TEST_WORKER(rebuild) {
  auto pg = ddp::init_process_group();
  Checks c{0, pg->rank()};
  const Data mine = shard(make_data(false, kBatch, 15), *pg);
  TwoBranch net;
  net->p_first = pg->rank() == 0;
  // Tiny buckets: one parameter each, so the bucket order is the parameter order.
  DistributedDataParallel model(net, pg, DistributedDataParallelOptions().bucket_cap_mb(0).first_bucket_cap_mb(0));
  const auto initial = model.bucket_indices();
  for (int s = 0; s < 3; ++s) torch::nn::functional::cross_entropy(model(mine.x), mine.y).backward();
  const auto rebuilt = model.bucket_indices();
  c.expect(model.stats().buckets_rebuilt, "buckets were rebuilt");
  // Registration: p.weight 0, p.bias 1, q.weight 2, q.bias 3. Initial: reverse registration order.
  c.expect(initial == std::vector<std::vector<int64_t>>{{3}, {2}, {1}, {0}}, "initial buckets in reverse order");
  // Rank 0 computed p first, so q's gradients arrived first there; every rank must use that order.
  std::ostringstream s;
  for (auto& b : rebuilt) s << b[0] << " ";
  std::cerr << "rank " << pg->rank() << " rebuilt order: " << s.str() << std::endl;
  c.expect(rebuilt.size() == 4 && rebuilt[0][0] >= 2 && rebuilt[1][0] >= 2,
           "rebuilt order is rank 0's (q's gradients first): " + s.str());
  // Identical on all ranks.
  torch::Tensor mine_order = torch::zeros({4}, torch::kLong);
  for (int i = 0; i < 4; ++i) mine_order[i] = rebuilt[i][0];
  std::vector<torch::Tensor> all;
  for (int r = 0; r < pg->size(); ++r) all.push_back(torch::zeros({4}, torch::kLong));
  pg->allgather(all, mine_order)->wait();
  for (int r = 0; r < pg->size(); ++r)
    c.expect(torch::equal(all[r], all[0]), "rank " + std::to_string(r) + "'s rebuilt buckets equal rank 0's");
  return c.result();
}

// ---- the module saves with plain keys ----------------------------------------------------------------
DDP_TEST_WORKER(save_module) {
  auto pg = ddp::init_process_group();
  Checks c{0, pg->rank()};
  Cnn net = make_net<Cnn>(pg->rank());
  DistributedDataParallel model(net, pg);  // CTAD: DistributedDataParallel<Cnn>
  const std::string path = ddp::testing::make_temp_dir("ddp-save") + "/model.pt";
  torch::save(model.module(), path);
  // A saved module is nested archives (conv1 -> weight); its flat names are what
  // torch.jit.load(path).state_dict() shows in Python.
  std::vector<std::string> names;
  std::function<void(torch::serialize::InputArchive&, const std::string&)> flatten =
      [&](torch::serialize::InputArchive& archive, const std::string& prefix) {
        for (const auto& key : archive.keys()) {
          torch::serialize::InputArchive sub;
          if (archive.try_read(key, sub))
            flatten(sub, prefix + key + ".");
          else
            names.push_back(prefix + key);
        }
      };
  torch::serialize::InputArchive archive;
  archive.load_from(path);
  flatten(archive, "");
  bool has_plain = false, has_prefix = false;
  for (const auto& k : names) {
    has_plain = has_plain || k == "conv1.weight";
    has_prefix = has_prefix || k.rfind("module", 0) == 0;
  }
  c.expect(names.size() == net->parameters().size(), "every parameter saved once");
  c.expect(has_plain && !has_prefix, "saved keys are plain (conv1.weight, no module. prefix)");
  Cnn loaded;
  torch::load(loaded, path);
  c.expect_close(max_diff(snapshot(*loaded), snapshot(*net)), 0.0, "reloaded module");
  return c.result();
}

// ---- against PyTorch's DistributedDataParallel -------------------------------------------------------
// parity_prepare (1 process) writes initial weights and data to $DDP_PARITY_DIR; the test then runs
// tests/ddp/python/ddp_reference.py on 2 ranks; parity_train (2 ranks) trains the same and compares
// with what Python wrote.
constexpr int kParitySteps = 5;
constexpr int64_t kParityBatch = 16;

DDP_TEST_WORKER(parity_prepare) {
  const std::string dir = env("DDP_PARITY_DIR");
  for (bool bn : {false, true}) {
    torch::manual_seed(bn ? 42 : 41);
    Cnn net(bn);
    ddp::testing::NamedTensors init;
    for (const auto& item : net->named_parameters()) init.emplace_back(item.key(), item.value());
    for (const auto& item : net->named_buffers()) init.emplace_back(item.key(), item.value());
    const std::string model = bn ? "cnn_bn" : "cnn";
    ddp::testing::write_tensors(dir, model + "_init", init);
  }
  torch::manual_seed(43);
  ddp::testing::NamedTensors data;
  for (int s = 0; s < kParitySteps; ++s) {
    data.emplace_back("x" + std::to_string(s), torch::randn({kParityBatch, 3, 32, 32}));
    data.emplace_back("y" + std::to_string(s), torch::randint(0, 10, {kParityBatch}));
  }
  ddp::testing::write_tensors(dir, "data", data);
  return 0;
}

DDP_TEST_WORKER(parity_train) {
  auto pg = ddp::init_process_group();
  Checks c{0, pg->rank()};
  torch::set_num_threads(1);
  const std::string dir = env("DDP_PARITY_DIR");
  auto data = ddp::testing::read_tensors(dir, "data");
  using ddp::testing::find_tensor;
  for (bool bn : {false, true}) {
    const std::string model_name = bn ? "cnn_bn" : "cnn";
    Cnn net(bn);
    auto init = ddp::testing::read_tensors(dir, model_name + "_init");
    {
      torch::NoGradGuard g;
      for (auto& item : net->named_parameters()) item.value().copy_(find_tensor(init, item.key()));
      for (auto& item : net->named_buffers()) item.value().copy_(find_tensor(init, item.key()));
    }
    DistributedDataParallel model(net, pg);
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
    const int64_t per = kParityBatch / pg->size();
    for (int s = 0; s < kParitySteps; ++s) {
      auto x = find_tensor(data, "x" + std::to_string(s)).narrow(0, pg->rank() * per, per);
      auto y = find_tensor(data, "y" + std::to_string(s)).narrow(0, pg->rank() * per, per);
      opt.zero_grad();
      torch::nn::functional::cross_entropy(model(x), y).backward();
      opt.step();
    }
    auto python = ddp::testing::read_tensors(dir, model_name + "_final_rank" + std::to_string(pg->rank()));
    double worst = 0;
    std::string worst_name;
    for (const auto& item : net->named_parameters()) {
      double d = (item.value() - find_tensor(python, item.key())).abs().max().item<double>();
      if (d >= worst) worst = d, worst_name = item.key();
    }
    for (const auto& item : net->named_buffers()) {
      double d = (item.value().to(torch::kDouble) - find_tensor(python, item.key()).to(torch::kDouble)).abs().max().item<double>();
      if (d >= worst) worst = d, worst_name = item.key();
    }
    c.expect((net->fc1->weight - find_tensor(init, "fc1.weight")).abs().max().item<double>() > 1e-4,
             model_name + ": training moved the weights (the comparison is not of two idle models)");
    c.expect(python.size() == net->named_parameters().size() + net->named_buffers().size(),
             model_name + ": Python wrote every parameter and buffer");
    // Exactly: both sides run the same LibTorch kernels on one thread, and a sum of two ranks'
    // gradients does not depend on the order it is taken in.
    c.expect_close(worst, 0.0, model_name + " vs torch.nn.parallel.DistributedDataParallel (worst: " + worst_name + ")");
  }
  return c.result();
}

}  // namespace
