// ddp::comm_hooks::powersgd against torch's powerSGD_hook, hook to hook: the workers behind
// DistributedDataParallel.PowerSGDHookMatchesPyTorchsAndResumesExactly (ddp_test.cpp).
//
// powersgd_hook_prepare (1 process) writes gradients for 6 steps x 2 ranks x 2 buckets; the test
// runs tests/ddp/python/powersgd_reference.py (2 ranks), which calls torch's hook on them; then
// powersgd_hook_compare (2 ranks) calls ours. The buckets mix what the ResNet-18 parity test does
// not: matrices of one shape separated by others (torch orders them by shape group), 1-D and 3-D
// gradients, matrices too small to compress. Three configurations: rank 1 with error feedback and
// warm start; rank 2 with neither (a new random Q every step) and a Gram-Schmidt epsilon; rank 3
// (QR) with min_compression_rate 1 and a later start.
//
// What must hold, bit for bit, on each rank: every bucket every step equals torch's, and so do the
// final step count and element counters, for a state that was saved after step 3
// (state_tensors), dropped, and loaded into a new state (load_state_tensors) before step 4. And,
// so that this can fail: a new state NOT loaded at step 4 gives something else at step 4 or 5.
//
// powersgd_state_errors (1 process): bad options and malformed saved state are ConfigError /
// DataError naming the option or the entry, and the save/load round trip keeps every tensor.
#include <ddp/errors.h>
#include <ddp/init.h>
#include <ddp/powersgd_hook.h>

#include <torch/torch.h>

#include <cstdlib>
#include <iostream>
#include <sstream>

#include "support/multiprocess.h"
#include "tensor_files.h"

namespace {

using ddp::comm_hooks::PowerSGDOptions;
using ddp::comm_hooks::PowerSGDState;
using ddp::testing::find_tensor;
using ddp::testing::NamedTensors;

constexpr int kHookSteps = 6;
constexpr int kHookResumeAt = 4;
// Per bucket, the gradients' shapes, in bucket order.
const std::vector<std::vector<std::vector<int64_t>>> kHookShapes = {
    {{16, 12}, {5}, {4, 5}, {16, 12}, {6, 2, 4}, {16, 12}},
    {{24, 10}, {7}, {10, 30}, {24, 10}},
};

// The same names and options as CONFIGS in powersgd_reference.py.
std::vector<std::pair<std::string, PowerSGDOptions>> configs() {
  return {
      {"rank1", PowerSGDOptions().matrix_approximation_rank(1).start_iter(2)},
      {"rank2_cold", PowerSGDOptions()
                         .matrix_approximation_rank(2)
                         .start_iter(2)
                         .use_error_feedback(false)
                         .warm_start(false)
                         .orthogonalization_epsilon(1e-8)
                         .random_seed(7)},
      {"rank3_qr",
       PowerSGDOptions().matrix_approximation_rank(3).start_iter(3).min_compression_rate(1).random_seed(12345)},
  };
}

std::string grad_name(int step, int rank, size_t bucket, size_t i) {
  std::ostringstream s;
  s << "g" << step << "_" << rank << "_" << bucket << "_" << i;
  return s.str();
}

std::string dir() {
  const char* d = std::getenv("DDP_PARITY_DIR");
  if (!d) throw std::runtime_error("DDP_PARITY_DIR is not set");
  return d;
}

DDP_TEST_WORKER(powersgd_hook_prepare) {
  torch::manual_seed(46);
  NamedTensors grads;
  for (int step = 0; step < kHookSteps; ++step)
    for (int rank = 0; rank < 2; ++rank)
      for (size_t b = 0; b < kHookShapes.size(); ++b)
        for (size_t i = 0; i < kHookShapes[b].size(); ++i)
          grads.emplace_back(grad_name(step, rank, b, i), torch::randn(kHookShapes[b][i]));
  ddp::testing::write_tensors(dir(), "powersgd_grads", grads);
  return 0;
}

// One step: each bucket through the hook, in order, then DDP's wait for each, in order.
std::vector<at::Tensor> run_step(ddp::CommHook& hook, const NamedTensors& grads, int step, int rank) {
  std::vector<ddp::CommFuture> futures;
  for (size_t b = 0; b < kHookShapes.size(); ++b) {
    std::vector<at::Tensor> flat;
    for (size_t i = 0; i < kHookShapes[b].size(); ++i) flat.push_back(find_tensor(grads, grad_name(step, rank, b, i)).reshape({-1}));
    at::Tensor buffer = torch::cat(flat);
    std::vector<at::Tensor> views;
    int64_t at = 0;
    for (const auto& shape : kHookShapes[b]) {
      const int64_t n = c10::multiply_integers(shape);
      views.push_back(buffer.narrow(0, at, n).view(shape));
      at += n;
    }
    ddp::GradBucket bucket(b, b + 1 == kHookShapes.size(), buffer, views, {});
    futures.push_back(hook(bucket));
  }
  std::vector<at::Tensor> out;
  for (auto& f : futures) out.push_back(f.wait().clone());
  return out;
}

DDP_TEST_WORKER(powersgd_hook_compare) {
  auto pg = ddp::init_process_group();
  torch::set_num_threads(1);
  const NamedTensors grads = ddp::testing::read_tensors(dir(), "powersgd_grads");
  const NamedTensors torch_out = ddp::testing::read_tensors(dir(), "powersgd_out_rank" + std::to_string(pg->rank()));
  int failures = 0;
  auto fail = [&](const std::string& what) {
    ++failures;
    std::cerr << "rank " << pg->rank() << " FAILED: " << what << std::endl;
  };
  for (const auto& [name, options] : configs()) {
    auto state = std::make_shared<PowerSGDState>(pg, options);
    ddp::CommHook hook = ddp::comm_hooks::powersgd(state);
    auto control = std::make_shared<PowerSGDState>(pg, options);  // the not-loaded state
    ddp::CommHook control_hook = ddp::comm_hooks::powersgd(control);
    bool control_differs = false;
    for (int step = 0; step < kHookSteps; ++step) {
      if (step == kHookResumeAt) {
        const auto saved = state->state_tensors();
        state = std::make_shared<PowerSGDState>(pg, options);
        state->load_state_tensors(saved);
        hook = ddp::comm_hooks::powersgd(state);
      }
      const auto ours = run_step(hook, grads, step, pg->rank());
      std::vector<at::Tensor> fresh;
      if (step >= kHookResumeAt) fresh = run_step(control_hook, grads, step, pg->rank());
      for (size_t b = 0; b < ours.size(); ++b) {
        const std::string key = name + "_" + std::to_string(step) + "_" + std::to_string(b);
        const at::Tensor theirs = find_tensor(torch_out, key);
        if (!torch::equal(ours[b], theirs))
          fail(key + " differs from torch's hook: max |diff| " +
               std::to_string((ours[b] - theirs).abs().max().item<double>()));
        if (!fresh.empty() && !torch::equal(fresh[b], theirs)) control_differs = true;
      }
    }
    const auto stats = state->compression_stats();
    const at::Tensor theirs = find_tensor(torch_out, name + "_stats");
    const std::vector<int64_t> ours = {state->iter(), stats.numel_before, stats.numel_after};
    if (!torch::equal(torch::tensor(ours), theirs))
      fail(name + " iter/numel before/after " + std::to_string(ours[0]) + " " + std::to_string(ours[1]) + " " +
           std::to_string(ours[2]) + " differ from torch's");
    if (!(stats.numel_after > 0 && stats.numel_after < stats.numel_before))
      fail(name + " compressed nothing (" + std::to_string(stats.numel_before) + " -> " +
           std::to_string(stats.numel_after) + ")");
    if (!control_differs) fail(name + ": a new state, not loaded, gave torch's steps 4-5 too (the resume check cannot fail)");
  }
  std::cerr << "rank " << pg->rank() << ": " << configs().size() << " configurations, " << failures << " failure(s)"
            << std::endl;
  return failures == 0 ? 0 : 1;
}

}  // namespace

namespace {

// Bad options and bad saved state, one process: each is a ConfigError or DataError naming what is
// wrong, never a crash or a silent default.
template <typename E, typename F>
void expect_error(F&& f, const std::string& needle, int& failures) {
  try {
    f();
  } catch (const E& e) {
    if (std::string(e.what()).find(needle) != std::string::npos) return;
    std::cerr << "FAILED: the error does not name '" << needle << "': " << e.what() << std::endl;
    ++failures;
    return;
  } catch (const std::exception& e) {
    std::cerr << "FAILED: wrong error type for '" << needle << "': " << e.what() << std::endl;
    ++failures;
    return;
  }
  std::cerr << "FAILED: no error for '" << needle << "'" << std::endl;
  ++failures;
}

DDP_TEST_WORKER(powersgd_state_errors) {
  auto pg = ddp::init_process_group();
  int failures = 0;
  using ddp::ConfigError;
  using ddp::DataError;
  expect_error<ConfigError>([&] { PowerSGDState(nullptr); }, "process group is null", failures);
  expect_error<ConfigError>([&] { PowerSGDState(pg, PowerSGDOptions().matrix_approximation_rank(0)); },
                            "matrix_approximation_rank", failures);
  expect_error<ConfigError>([&] { PowerSGDState(pg, PowerSGDOptions().start_iter(1)); }, "start_iter", failures);
  // Without error feedback and warm start, compression may start at once (torch allows it too).
  PowerSGDState(pg, PowerSGDOptions().start_iter(0).use_error_feedback(false).warm_start(false));
  expect_error<ConfigError>([&] { ddp::comm_hooks::powersgd(nullptr); }, "state is null", failures);

  // A real state after two compressed steps of one bucket, to break piece by piece.
  auto state = std::make_shared<PowerSGDState>(pg, PowerSGDOptions().start_iter(2).matrix_approximation_rank(2));
  ddp::CommHook hook = ddp::comm_hooks::powersgd(state);
  auto step = [&](ddp::CommHook& h, const std::vector<int64_t>& shape) {
    at::Tensor buffer = torch::randn({c10::multiply_integers(shape)});
    ddp::GradBucket bucket(0, true, buffer, {buffer.view(shape)}, {});
    return h(bucket).wait();
  };
  for (int i = 0; i < 4; ++i) step(hook, {16, 12});
  const auto saved = state->state_tensors();
  auto without = [&](const std::string& name) {
    NamedTensors out;
    for (const auto& e : saved)
      if (e.first != name) out.push_back(e);
    return out;
  };
  auto replaced = [&](const std::string& name, at::Tensor t) {
    NamedTensors out = saved;
    for (auto& e : out)
      if (e.first == name) e.second = t;
    return out;
  };
  auto fresh = [&] { return std::make_shared<PowerSGDState>(pg, PowerSGDOptions().start_iter(2).matrix_approximation_rank(2)); };
  expect_error<DataError>([&] { fresh()->load_state_tensors(without("powersgd.counters")); }, "'powersgd.counters'", failures);
  expect_error<DataError>([&] { fresh()->load_state_tensors(without("powersgd.rng")); }, "'powersgd.rng'", failures);
  expect_error<DataError>([&] { fresh()->load_state_tensors(replaced("powersgd.counters", torch::zeros({2}, torch::kLong))); },
                          "'powersgd.counters'", failures);
  expect_error<DataError>([&] { fresh()->load_state_tensors(replaced("powersgd.rng", torch::zeros({10}, torch::kLong))); },
                          "'powersgd.rng'", failures);
  expect_error<DataError>(
      [&] { fresh()->load_state_tensors(replaced("powersgd.rng", torch::full({625}, int64_t{1} << 33, torch::kLong))); },
      "out of range", failures);
  {
    NamedTensors bad = saved;
    bad.emplace_back("powersgd.q.x1", torch::zeros({3}));
    expect_error<DataError>([&] { fresh()->load_state_tensors(bad); }, "'powersgd.q.x1'", failures);
    bad.back() = {"powersgd.q.7", torch::zeros({3, 3})};
    expect_error<DataError>([&] { fresh()->load_state_tensors(bad); }, "'powersgd.q.7'", failures);
  }
  // A state that loads but belongs to another bucket layout: the hook names the bucket.
  {
    auto other = fresh();
    other->load_state_tensors(saved);
    ddp::CommHook h = ddp::comm_hooks::powersgd(other);
    expect_error<DataError>([&] { step(h, {8, 12}); }, "bucket 0", failures);
  }
  // The round trip keeps every tensor; without error feedback the errors are left out.
  {
    auto copy = fresh();
    copy->load_state_tensors(saved);
    const auto again = copy->state_tensors();
    bool same = again.size() == saved.size();
    for (size_t i = 0; same && i < saved.size(); ++i)
      same = again[i].first == saved[i].first && torch::equal(again[i].second, saved[i].second);
    if (!same) {
      std::cerr << "FAILED: state_tensors -> load_state_tensors -> state_tensors changed the state" << std::endl;
      ++failures;
    }
    auto no_error = fresh();
    no_error->load_state_tensors(saved, /*keep_error_feedback=*/false);
    for (const auto& e : no_error->state_tensors())
      if (e.first.rfind("powersgd.error.", 0) == 0) {
        std::cerr << "FAILED: keep_error_feedback=false kept " << e.first << std::endl;
        ++failures;
      }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

namespace {

// Registered fc3, fc1, fc2 but run fc1 -> fc2 -> fc3: DDP's initial buckets (reverse registration
// order) differ from the ones it rebuilds to (gradient arrival order: fc3, fc2, fc1).
struct ShuffledMlpImpl : torch::nn::Module {
  ShuffledMlpImpl() {
    fc3 = register_module("fc3", torch::nn::Linear(32, 10));
    fc1 = register_module("fc1", torch::nn::Linear(20, 32));
    fc2 = register_module("fc2", torch::nn::Linear(32, 32));
  }
  torch::Tensor forward(torch::Tensor x) { return fc3(torch::relu(fc2(torch::relu(fc1(x))))); }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};
TORCH_MODULE(ShuffledMlp);

// A run of `steps` DDP steps with PowerSGD, from `init` (parameters), optionally continuing a saved
// hook state and bucket layout. Returns the parameters, and fills the state and layout at the end.
struct PowerSGDRun {
  std::vector<at::Tensor> params;
  NamedTensors state;
  std::vector<std::vector<int64_t>> buckets;
};

PowerSGDRun run_powersgd_steps(const std::shared_ptr<ddp::ProcessGroup>& pg, const std::vector<at::Tensor>& init,
                               int first_step, int steps, const PowerSGDRun* resume, bool restore_buckets) {
  ShuffledMlp net;
  {
    torch::NoGradGuard g;
    auto p = net->parameters();
    for (size_t i = 0; i < p.size(); ++i) p[i].copy_(init[i]);
  }
  // Tiny buckets: one per parameter, six in all.
  ddp::DistributedDataParallel model(net, pg, ddp::DistributedDataParallelOptions().bucket_cap_mb(1e-6).first_bucket_cap_mb(1e-6));
  auto state = std::make_shared<PowerSGDState>(pg, PowerSGDOptions().start_iter(2));
  if (resume) {
    state->load_state_tensors(resume->state);
    if (restore_buckets) model.set_bucket_indices(resume->buckets);
  }
  model.register_comm_hook(ddp::comm_hooks::powersgd(state));
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1));  // no optimizer state to carry
  for (int s = first_step; s < first_step + steps; ++s) {
    torch::manual_seed(100 * s + pg->rank());
    auto x = torch::randn({6, 20});
    auto y = torch::randint(0, 10, {6});
    opt.zero_grad();
    torch::nn::functional::cross_entropy(model(x), y).backward();
    opt.step();
  }
  PowerSGDRun out;
  for (const auto& p : net->parameters()) out.params.push_back(p.detach().clone());
  out.state = state->state_tensors();
  out.buckets = model.bucket_indices();
  return out;
}

// PowerSGD's state is per bucket, so a resumed run must meet the buckets the saved run had rebuilt
// to: with the saved layout (set_bucket_indices) 4 + 2 steps equal 6 steps bit for bit; without
// it the resumed DDP starts on its initial buckets, and the state no longer fits them.
DDP_TEST_WORKER(powersgd_resume_needs_the_bucket_layout) {
  auto pg = ddp::init_process_group();
  torch::set_num_threads(1);
  torch::manual_seed(50);
  std::vector<at::Tensor> init;
  for (const auto& p : ShuffledMlp()->parameters()) init.push_back(p.detach().clone());
  const PowerSGDRun whole = run_powersgd_steps(pg, init, 0, 6, nullptr, false);
  const PowerSGDRun first = run_powersgd_steps(pg, init, 0, 4, nullptr, false);
  const PowerSGDRun rest = run_powersgd_steps(pg, first.params, 4, 2, &first, true);
  int failures = 0;
  for (size_t i = 0; i < whole.params.size(); ++i) {
    if (torch::equal(whole.params[i], rest.params[i])) continue;
    ++failures;
    std::cerr << "rank " << pg->rank() << " FAILED: parameter " << i << " after 4 + 2 steps differs from 6 steps by "
              << (whole.params[i] - rest.params[i]).abs().max().item<double>() << std::endl;
  }
  // The layout really changed in the first run (else the check above proves nothing), and without
  // it the state meets the initial buckets.
  ShuffledMlp probe;
  ddp::DistributedDataParallel fresh(probe, pg, ddp::DistributedDataParallelOptions().bucket_cap_mb(1e-6).first_bucket_cap_mb(1e-6));
  if (fresh.bucket_indices() == first.buckets) {
    ++failures;
    std::cerr << "FAILED: the rebuilt buckets equal the initial ones; the test cannot see a lost layout" << std::endl;
  }
  bool failed_without_layout = false;
  try {
    const PowerSGDRun lost = run_powersgd_steps(pg, first.params, 4, 2, &first, false);
    for (size_t i = 0; i < whole.params.size(); ++i) failed_without_layout |= !torch::equal(whole.params[i], lost.params[i]);
  } catch (const std::exception& e) {  // thrown in the hook, on autograd's thread, rethrown by backward()
    failed_without_layout = std::string(e.what()).find("saved") != std::string::npos;
    std::cerr << "rank " << pg->rank() << " without the layout: " << e.what() << std::endl;
  }
  if (!failed_without_layout) {
    ++failures;
    std::cerr << "FAILED: resuming without the bucket layout gave the uninterrupted result too" << std::endl;
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
