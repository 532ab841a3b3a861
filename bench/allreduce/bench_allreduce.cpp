// Allreduce bandwidth of ddp's process group, one rank per process (start it like a torchrun
// worker: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT). Rank 0 prints one line per size:
//   <bytes> <iterations> <seconds per allreduce (slowest rank)>
// bench/allreduce/run.py runs it next to torch.distributed's Gloo and prints the table.
//
//   bench_allreduce --min-bytes 4096 --max-bytes 67108864 --seconds 0.5 --warmup 5 [--offset-bytes 0]
#include <ddp/errors.h>
#include <ddp/init.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

struct Args {
  long long min_bytes = 4096;
  long long max_bytes = 64ll << 20;
  double seconds = 0.5;  // target time per size (iterations are calibrated from the warmup)
  int warmup = 5;
  long long offset = 0;  // bytes: the tensor starts this far into its allocation (alignment studies)
  std::string backend = "gloo";
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string f = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw ddp::ConfigError(f + " needs a value");
      return argv[++i];
    };
    if (f == "--min-bytes") a.min_bytes = std::stoll(value());
    else if (f == "--max-bytes") a.max_bytes = std::stoll(value());
    else if (f == "--seconds") a.seconds = std::stod(value());
    else if (f == "--warmup") a.warmup = std::stoi(value());
    else if (f == "--backend") a.backend = value();
    else if (f == "--offset-bytes") a.offset = std::stoll(value());
    else throw ddp::ConfigError("unknown flag " + f + " (flags: --min-bytes --max-bytes --seconds --warmup --backend --offset-bytes)");
  }
  if (a.min_bytes < 4 || a.max_bytes < a.min_bytes || a.seconds <= 0 || a.warmup < 1 || a.offset < 0 || a.offset % 4 != 0)
    throw ddp::ConfigError("bad sizes, --seconds, --warmup or --offset-bytes (a multiple of 4)");
  return a;
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Seconds for `iters` back-to-back allreduces, each waited for, as the slowest rank saw it.
double timed(ddp::ProcessGroup& pg, std::vector<at::Tensor>& t, int iters) {
  pg.barrier()->wait();
  double t0 = now();
  for (int i = 0; i < iters; ++i) pg.allreduce(t)->wait();
  std::vector<at::Tensor> elapsed = {at::full({1}, now() - t0, at::kDouble)};
  pg.allreduce(elapsed, ddp::AllreduceOptions().op(ddp::ReduceOp::kMax))->wait();
  return elapsed[0].item<double>();
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Args args = parse(argc, argv);
    auto pg = ddp::init_process_group(ddp::InitOptions().backend(args.backend));
    for (long long bytes = args.min_bytes; bytes <= args.max_bytes; bytes *= 2) {
      std::vector<at::Tensor> t = {at::ones({(bytes + args.offset) / 4}, at::kFloat).narrow(0, args.offset / 4, bytes / 4)};
      double warm = timed(*pg, t, args.warmup) / args.warmup;
      // Every rank must run the same count: derive it from a value all ranks agree on.
      std::vector<at::Tensor> w = {at::full({1}, warm, at::kDouble)};
      pg->allreduce(w, ddp::AllreduceOptions().op(ddp::ReduceOp::kMax))->wait();
      int iters = std::clamp(static_cast<int>(args.seconds / std::max(w[0].item<double>(), 1e-7)), 5, 20000);
      double per_op = timed(*pg, t, iters) / iters;
      if (pg->rank() == 0) {
        std::printf("%lld %d %.9f\n", bytes, iters, per_op);
        std::fflush(stdout);
      }
    }
    return 0;
  } catch (const std::exception& e) {
    return ddp::report_and_exit_code(e);
  }
}
