// bench_ddp_step: what one training step costs with our DistributedDataParallel, next to the same
// step without communication, with our DDP's overlap turned off, and with PyTorch's own DDP
// (Debian's python3-torch), on the CIFAR CNN and a ResNet-18.
//
//   bench_ddp_step [--models=cnn,resnet18] [--nproc=2] [--rounds=3] [--passes=3] [--steps=5]
//                  [--warmup=2] [--batch-cnn=64] [--batch-resnet=16] [--threads=1] [--python=1]
//                  [--shm=1,0]
//
// The driver (this process) starts --nproc ranks of itself and, in turn, --nproc ranks of
// pytorch_ddp_step.py, once per round (so both sides see the same machine load); every rank uses
// --threads intra-op threads and 1 inter-op thread. Inside a rank every mode is built once, warmed
// up, then timed for --steps steps in each of --passes passes over all modes (so load drift touches
// every mode alike). A timed loop starts and ends with a barrier, so it waits for the slowest rank.
// Reported: the median over rounds of the median over passes of rank 0's mean step time.
//   allreduce alone        = the gradients' allreduce (25 MiB buckets) with nothing else running
//   exposed communication  = per step, what the rank that finished backward last waited for
//                            communication at the end of backward (DDP's own stats), averaged
//   hidden share           = 1 - exposed / allreduce alone
// Step-time differences against "local + barrier per step" are shown too: they also carry the CPU
// time communication takes from compute (loopback Gloo is CPU work, and 2 ranks x 1 thread already
// fill 2 cores). DDP_BENCH_VERBOSE=1 prints every pass of rank 0.
//
// --shm=1,0 runs our ranks once per listed DDP_SHM value in every round (shared memory between the
// ranks of this host, then TCP only: issue 16), each its own rows, plus a summary table against
// PyTorch DDP; rank 0's "transport: ..." log line of each is printed. Without --shm our ranks
// inherit the environment as it is, and the tables are as before.
#include <ddp/distributed_data_parallel.h>
#include <ddp/init.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_models.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

// ---- flags ------------------------------------------------------------------------------------------
struct Flags {
  std::vector<std::string> models = {"cnn", "resnet18"};
  int nproc = 2, rounds = 3, passes = 3, steps = 5, warmup = 2, threads = 1;
  int batch_cnn = 64, batch_resnet = 16;
  bool python = true;
  std::vector<std::string> shm;  ///< DDP_SHM values to run ours with; empty: the environment as it is
  std::string role = "driver";
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, sep);)
    if (!item.empty()) out.push_back(item);
  return out;
}

Flags parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto eq = a.find('=');
    if (a.rfind("--", 0) != 0 || eq == std::string::npos) {
      std::cerr << "bench_ddp_step: flags are --name=value, got '" << a << "'\n";
      std::exit(2);
    }
    std::string k = a.substr(2, eq - 2), v = a.substr(eq + 1);
    try {
      if (k == "models") f.models = split(v, ',');
      else if (k == "nproc") f.nproc = std::stoi(v);
      else if (k == "rounds") f.rounds = std::stoi(v);
      else if (k == "passes") f.passes = std::stoi(v);
      else if (k == "steps") f.steps = std::stoi(v);
      else if (k == "warmup") f.warmup = std::stoi(v);
      else if (k == "threads") f.threads = std::stoi(v);
      else if (k == "batch-cnn") f.batch_cnn = std::stoi(v);
      else if (k == "batch-resnet") f.batch_resnet = std::stoi(v);
      else if (k == "python") f.python = v != "0";
      else if (k == "shm") f.shm = split(v, ',');
      else if (k == "role") f.role = v;
      else throw std::invalid_argument("unknown flag");
    } catch (const std::exception&) {
      std::cerr << "bench_ddp_step: bad flag --" << k << "=" << v << "\n";
      std::exit(2);
    }
  }
  for (const auto& m : f.models)
    if (m != "cnn" && m != "resnet18") {
      std::cerr << "bench_ddp_step: --models takes cnn and/or resnet18, got '" << m << "'\n";
      std::exit(2);
    }
  for (const auto& v : f.shm)
    if (v != "0" && v != "1") {
      std::cerr << "bench_ddp_step: --shm takes DDP_SHM values 1 and/or 0, got '" << v << "'\n";
      std::exit(2);
    }
  return f;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// ---- one rank -----------------------------------------------------------------------------------------
/// One way of running a training step, with everything it needs kept alive between passes.
struct Mode {
  std::string name;
  std::function<void()> step;
  std::function<double()> last_wait_seconds;  ///< our DDP: this step's wait at the end of backward
};

template <typename Net>
void bench_model(const std::string& name, int64_t batch, const Flags& f,
                 const std::shared_ptr<ddp::ProcessGroup>& pg) {
  torch::manual_seed(0);
  auto x = torch::randn({batch, 3, 32, 32});
  auto y = torch::randint(0, 10, {batch});
  auto sgd_options = torch::optim::SGDOptions(0.01).momentum(0.9);
  std::vector<Mode> modes;

  for (bool sync : {false, true}) {  // local: no communication; local_sync: plus a barrier per step
    Net net;
    auto opt = std::make_shared<torch::optim::SGD>(net->parameters(), sgd_options);
    modes.push_back({sync ? "local_sync" : "local", [net, opt, x, y, pg, sync]() mutable {
                       opt->zero_grad();
                       torch::nn::functional::cross_entropy(net->forward(x), y).backward();
                       opt->step();
                       if (sync) pg->barrier()->wait();
                     }, nullptr});
  }
  const std::pair<const char*, ddp::DistributedDataParallelOptions> variants[] = {
      {"ddp", ddp::DistributedDataParallelOptions()},
      {"ddp_view", ddp::DistributedDataParallelOptions().gradient_as_bucket_view(true)},
      {"ddp_no_overlap", ddp::DistributedDataParallelOptions().overlap_communication(false)},
  };
  for (const auto& [mode, options] : variants) {
    Net net;
    auto model = std::make_shared<ddp::DistributedDataParallel<Net>>(net, pg, options);
    auto opt = std::make_shared<torch::optim::SGD>(net->parameters(), sgd_options);
    modes.push_back({mode, [model, opt, x, y] {
                       opt->zero_grad();
                       torch::nn::functional::cross_entropy((*model)(x), y).backward();
                       opt->step();
                     }, [model] { return model->stats().last_wait_seconds; }});
  }
  {  // the gradients' allreduce alone, in 25 MiB buckets
    Net net;
    int64_t numel = 0;
    for (auto& p : net->parameters()) numel += p.numel();
    const int64_t cap = (25ll << 20) / 4;
    auto buckets = std::make_shared<std::vector<at::Tensor>>();
    for (int64_t at = 0; at < numel; at += cap) buckets->push_back(torch::ones({std::min(cap, numel - at)}));
    modes.push_back({"allreduce", [pg, buckets] {
                       std::vector<ddp::WorkPtr> works;
                       for (auto& b : *buckets) {
                         std::vector<at::Tensor> one = {b};
                         works.push_back(pg->allreduce(one));
                       }
                       for (auto& w : works) w->wait();
                     }, nullptr});
  }

  // Passes over all modes, so drift in machine load touches every mode alike; median per mode.
  std::map<std::string, std::vector<double>> step_ms, waits;
  for (auto& m : modes)
    for (int i = 0; i < f.warmup; ++i) m.step();  // includes DDP's bucket rebuild
  for (int pass = 0; pass < f.passes; ++pass) {
    for (auto& m : modes) {
      pg->barrier()->wait();
      const auto t0 = Clock::now();
      for (int i = 0; i < f.steps; ++i) {
        m.step();
        if (m.last_wait_seconds) waits[m.name].push_back(m.last_wait_seconds() * 1000);
      }
      pg->barrier()->wait();
      step_ms[m.name].push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / f.steps);
      if (pg->rank() == 0 && std::getenv("DDP_BENCH_VERBOSE"))
        std::cerr << name << " pass " << pass << " " << m.name << ": " << step_ms[m.name].back() << " ms\n";
    }
  }
  // Exposed communication per step: what the rank that finished backward last waited. Faster
  // ranks also wait for that straggler, which is load imbalance, not communication.
  std::map<std::string, double> exposed_ms;
  for (auto& [mode, mine] : waits) {
    at::Tensor t = torch::tensor(mine, torch::kDouble);
    std::vector<at::Tensor> all;
    for (int r = 0; r < pg->size(); ++r) all.push_back(torch::zeros_like(t));
    pg->allgather(all, t)->wait();
    exposed_ms[mode] = torch::stack(all).amin(0).mean().item<double>();
  }
  if (pg->rank() == 0) {
    int64_t bytes = 0;
    Net probe;
    for (auto& p : probe->parameters()) bytes += p.numel() * 4;
    std::cout << "GRADIENTS model=" << name << " mb=" << bytes / 1e6 << std::endl;
    for (auto& m : modes)
      std::cout << "RESULT model=" << name << " impl=ours mode=" << m.name << " step_ms=" << median(step_ms[m.name])
                << " wait_ms=" << (exposed_ms.count(m.name) ? exposed_ms[m.name] : 0.0) << std::endl;
  }
}

int run_rank(const Flags& f) {
  torch::set_num_threads(f.threads);
  at::set_num_interop_threads(1);
  auto pg = ddp::init_process_group();
  for (const auto& m : f.models) {
    if (m == "cnn") bench_model<ddp::bench::CifarNet>("cnn", f.batch_cnn, f, pg);
    if (m == "resnet18") bench_model<ddp::bench::ResNet18>("resnet18", f.batch_resnet, f, pg);
  }
  return 0;
}

// ---- driver ---------------------------------------------------------------------------------------------
std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, n) : "bench_ddp_step";
}

int free_port() {
  // Ports in an unprivileged range, varied per run; a clash shows as a clear store error.
  return 20000 + static_cast<int>(getpid() % 20000);
}

std::string slurp_and_remove(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  std::remove(path.c_str());
  return s.str();
}

/// Runs `argv` as `nproc` ranks with `env` added; returns rank 0's stdout (exits on failure) and
/// sets `transport` to rank 0's "transport: ..." log line (empty when none).
std::string run_ranks(const std::vector<std::string>& argv, int nproc, int port, int threads,
                      const std::vector<std::pair<std::string, std::string>>& env, std::string& transport) {
  std::vector<pid_t> pids;
  const std::string out_path = "/tmp/bench_ddp_step." + std::to_string(getpid()) + ".out";
  // Every rank's stderr goes to a file (shown when a rank fails), so log lines do not cut into the progress line.
  const std::string err_base = "/tmp/bench_ddp_step." + std::to_string(getpid()) + ".err";  // the driver's pid
  auto err_path = [&err_base](int rank) { return err_base + std::to_string(rank); };
  for (int rank = 0; rank < nproc; ++rank) {
    pid_t pid = fork();
    if (pid == 0) {
      setenv("RANK", std::to_string(rank).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 1);
      setenv("MKL_NUM_THREADS", std::to_string(threads).c_str(), 1);
      for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
      if (rank == 0) {
        int fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        close(fd);
      } else {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        close(fd);
      }
      int fd = open(err_path(rank).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 2);
      close(fd);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execve(args[0], args.data(), environ);
      perror("execve");
      _exit(127);
    }
    pids.push_back(pid);
  }
  bool ok = true;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  const std::string out = slurp_and_remove(out_path);
  std::vector<std::string> errs;
  for (int rank = 0; rank < nproc; ++rank) errs.push_back(slurp_and_remove(err_path(rank)));
  if (!ok) {
    std::cerr << "\nbench_ddp_step: a rank of '" << argv[0] << "' failed; rank 0 wrote:\n" << out;
    for (int rank = 0; rank < nproc; ++rank) std::cerr << "rank " << rank << "'s stderr:\n" << errs[rank];
    std::exit(1);
  }
  const std::string& err = errs[0];
  transport.clear();
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);)
    if (auto at = line.find("transport:"); at != std::string::npos) transport = line.substr(at);
  return out;
}

/// results[model][impl/mode] -> one value per round.
using Results = std::map<std::string, std::map<std::string, std::vector<double>>>;

std::map<std::string, double> grad_mb;

/// Adds rank 0's RESULT lines to the results; `impl` (when not empty) replaces the line's impl name.
void collect(const std::string& output, Results& step, Results& wait, const std::string& impl = "") {
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("GRADIENTS ", 0) == 0) {
      auto model = line.substr(line.find("model=") + 6);
      model = model.substr(0, model.find(' '));
      grad_mb[model] = std::stod(line.substr(line.find("mb=") + 3));
    }
    if (line.rfind("RESULT ", 0) != 0) continue;
    std::map<std::string, std::string> kv;
    for (const auto& item : split(line.substr(7), ' ')) {
      auto eq = item.find('=');
      if (eq != std::string::npos) kv[item.substr(0, eq)] = item.substr(eq + 1);
    }
    const std::string key = (impl.empty() ? kv["impl"] : impl) + "/" + kv["mode"];
    step[kv["model"]][key].push_back(std::stod(kv["step_ms"]));
    wait[kv["model"]][key].push_back(std::stod(kv.count("wait_ms") ? kv["wait_ms"] : "0"));
  }
}

/// One set of our ranks per round: its key in the results, its environment, how the tables name it.
struct OursVariant {
  std::string impl;
  std::vector<std::pair<std::string, std::string>> env;
  std::string title;
};

int run_driver(const Flags& f, int argc, char** argv) {
  std::string models;
  for (const auto& m : f.models) models += (models.empty() ? "" : ",") + m;
  const std::vector<std::string> common = {
      "--models=" + models, "--steps=" + std::to_string(f.steps), "--warmup=" + std::to_string(f.warmup),
      "--passes=" + std::to_string(f.passes),
      "--threads=" + std::to_string(f.threads), "--batch-cnn=" + std::to_string(f.batch_cnn),
      "--batch-resnet=" + std::to_string(f.batch_resnet)};
  std::vector<std::string> ours = {self_exe(), "--role=rank"};
  ours.insert(ours.end(), common.begin(), common.end());
  std::vector<std::string> theirs = {DDP_PYTHON, std::string(DDP_BENCH_DIR) + "/pytorch_ddp_step.py"};
  theirs.insert(theirs.end(), common.begin(), common.end());

  std::vector<OursVariant> variants;
  for (const auto& v : f.shm) variants.push_back({"ours_shm" + v, {{"DDP_SHM", v}}, "DDP_SHM=" + v});
  if (variants.empty()) variants.push_back({"ours", {}, ""});
  // Every run of a round, in an order that rotates from round to round so load drift touches all alike.
  struct Run {
    std::string label, impl;
    const std::vector<std::string>* argv;
    std::vector<std::pair<std::string, std::string>> env;
  };
  std::vector<Run> runs;
  for (const auto& v : variants) runs.push_back({v.title.empty() ? "ours" : "ours " + v.title, v.impl, &ours, v.env});
  if (f.python) runs.push_back({"PyTorch", "", &theirs, {}});
  std::map<std::string, std::string> transports;  // impl -> rank 0's "transport:" line(s)

  std::cerr << "bench_ddp_step: " << f.nproc << " ranks, " << f.threads << " intra-op thread(s) per rank, "
            << f.rounds << " rounds of " << f.warmup << " warmup + " << f.steps << " timed steps\n";
  Results step, wait;
  int port = free_port();
  for (int round = 0; round < f.rounds; ++round) {
    std::cerr << "  round " << round + 1 << ":";
    for (size_t i = 0; i < runs.size(); ++i) {
      const Run& r = runs[(i + round) % runs.size()];
      std::cerr << (i ? ", " : " ") << r.label << std::flush;
      std::string transport;
      collect(run_ranks(*r.argv, f.nproc, port++, f.threads, r.env, transport), step, wait, r.impl);
      auto& seen = transports[r.impl];
      if (!transport.empty() && seen.find(transport) == std::string::npos) seen += (seen.empty() ? "" : "; ") + transport;
    }
    std::cerr << "\n";
  }
  for (const auto& v : variants)
    if (!transports[v.impl].empty() || !v.title.empty())
      std::cout << (v.title.empty() ? "ours" : "ours " + v.title) << ": "
                << (transports[v.impl].empty() ? "no 'transport:' line logged" : transports[v.impl]) << "\n";

  // A row per model and variant; the model cell names the variant when there are several.
  auto row_name = [](const std::string& m, const OursVariant& v) { return v.title.empty() ? m : m + " (" + v.title + ")"; };
  std::cout << std::fixed << std::setprecision(1);
  std::cout << "\nStep time (ms; median over rounds of the median over passes of the mean step)\n\n"
               "| model | local | local + barrier per step | our DDP | our DDP, grads as bucket views | "
               "our DDP, no overlap | PyTorch local | PyTorch local + barrier | PyTorch DDP | "
               "our DDP / PyTorch DDP |\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& m : f.models)
    for (const auto& v : variants) {
      auto& s = step[m];
      const std::string o = v.impl + "/";
      const double py_ddp = median(s["pytorch/ddp"]);
      std::cout << "| " << row_name(m, v) << " | " << median(s[o + "local"]) << " | " << median(s[o + "local_sync"])
                << " | " << median(s[o + "ddp"]) << " | " << median(s[o + "ddp_view"]) << " | "
                << median(s[o + "ddp_no_overlap"]) << " | ";
      if (f.python)
        std::cout << median(s["pytorch/local"]) << " | " << median(s["pytorch/local_sync"]) << " | " << py_ddp
                  << " | " << std::setprecision(2) << median(s[o + "ddp"]) / py_ddp << std::setprecision(1) << " |\n";
      else
        std::cout << "- | - | - | - |\n";
    }
  std::cout << "\nOur DDP's communication (ms; hidden = 1 - exposed / allreduce alone)\n\n"
               "| model | gradients | allreduce alone | exposed: wait after backward (last rank) | "
               "hidden behind backward | DDP step - local+barrier step | no-overlap step - local+barrier step | "
               "PyTorch: allreduce alone | PyTorch: DDP step - local+barrier step |"
               "\n|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& m : f.models)
    for (const auto& v : variants) {
      auto& s = step[m];
      const std::string o = v.impl + "/";
      const double base = median(s[o + "local_sync"]), ar = median(s[o + "allreduce"]),
                   exposed = median(wait[m][o + "ddp"]);
      const double hidden = ar > 0 ? std::max(0.0, std::min(1.0, 1.0 - exposed / ar)) * 100 : 0.0;
      std::cout << "| " << row_name(m, v) << " | " << std::setprecision(2) << grad_mb[m] << " MB | "
                << std::setprecision(1) << ar << " | " << exposed << " | " << std::setprecision(0) << hidden << "% | "
                << std::setprecision(1) << median(s[o + "ddp"]) - base << " | "
                << median(s[o + "ddp_no_overlap"]) - base << " | ";
      if (f.python)
        std::cout << median(s["pytorch/allreduce"]) << " | "
                  << median(s["pytorch/ddp"]) - median(s["pytorch/local_sync"]) << " |\n";
      else
        std::cout << "- | - |\n";
    }
  if (!f.shm.empty()) {
    // Issue 16's view: our DDP step per DDP_SHM value against PyTorch DDP's, as speed-ups (higher: ours faster).
    std::cout << "\nDDP step per DDP_SHM value (ms; speed-up = other's step time / this one's)\n\n| model |";
    for (const auto& v : variants) std::cout << " our DDP, " << v.title << " | allreduce alone, " << v.title << " |";
    if (f.python) std::cout << " PyTorch DDP | PyTorch allreduce alone |";
    for (const auto& v : variants)
      if (f.python) std::cout << " speed-up " << v.title << " vs PyTorch DDP |";
    if (variants.size() == 2) std::cout << " speed-up " << variants[0].title << " vs " << variants[1].title << " |";
    std::cout << "\n|---|";
    const size_t cols = 2 * variants.size() + (f.python ? 2 + variants.size() : 0) + (variants.size() == 2 ? 1 : 0);
    for (size_t i = 0; i < cols; ++i) std::cout << "---|";
    std::cout << "\n";
    for (const auto& m : f.models) {
      auto& s = step[m];
      std::cout << "| " << m << " |";
      for (const auto& v : variants)
        std::cout << " " << median(s[v.impl + "/ddp"]) << " | " << median(s[v.impl + "/allreduce"]) << " |";
      const double py_ddp = median(s["pytorch/ddp"]);
      if (f.python) std::cout << " " << py_ddp << " | " << median(s["pytorch/allreduce"]) << " |";
      std::cout << std::setprecision(2);
      for (const auto& v : variants)
        if (f.python) std::cout << " " << py_ddp / median(s[v.impl + "/ddp"]) << "x |";
      if (variants.size() == 2)
        std::cout << " " << median(s[variants[1].impl + "/ddp"]) / median(s[variants[0].impl + "/ddp"]) << "x |";
      std::cout << std::setprecision(1) << "\n";
    }
  }
  (void)argc;
  (void)argv;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags f = parse(argc, argv);
  try {
    return f.role == "rank" ? run_rank(f) : run_driver(f, argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "bench_ddp_step: " << e.what() << "\n";
    return 1;
  }
}
