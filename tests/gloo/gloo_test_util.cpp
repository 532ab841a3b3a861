#include "gloo_test_util.h"

#include <ddp/process_group_gloo.h>

#include <fstream>
#include <sstream>
#include <utility>


namespace ddp::testing {

int rank() { return env_int("RANK", 0); }
int world() { return env_int("WORLD_SIZE", 1); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

WorkerOptions gloo_worker_options() {
  WorkerOptions o;
  o.timeout = std::chrono::seconds(90);
  return o;
}

std::shared_ptr<Store> worker_store() {
  // Rank 0 hosts the TCP store on MASTER_PORT, as init_process_group does. MASTER_ADDR is loopback under
  // run_workers; the multi-host rehearsal (tests/rehearsal/gloo_hosts.py) sets rank 0's pod address.
  return std::make_shared<TCPStore>(TCPStoreOptions()
                                        .host(env_or("MASTER_ADDR", "127.0.0.1"))
                                        .port(env_int("MASTER_PORT", 29500))
                                        .is_server(env_int("RANK", 0) == 0)
                                        .timeout(std::chrono::seconds(60))
                                        .connect_timeout(std::chrono::seconds(30))
                                        .token(""));
}

std::shared_ptr<ProcessGroup> make_test_group(std::chrono::milliseconds timeout) {
  GlooOptions options;
  options.timeout(timeout);
  return make_test_group(worker_store(), options);
}

std::shared_ptr<ProcessGroup> make_test_group(std::shared_ptr<Store> store, GlooOptions options) {
  // Loopback unless an interface is named (the rehearsal's pods reach each other through eth0 only).
  if (env_or("GLOO_SOCKET_IFNAME", "").empty() && env_or("DDP_SOCKET_IFNAME", "").empty())
    options.hostname("127.0.0.1");
  return make_gloo_process_group(std::move(store), env_int("RANK", 0), env_int("WORLD_SIZE", 1), options);
}

at::Tensor pattern(double scale, at::IntArrayRef sizes, at::ScalarType dtype) {
  int64_t n = 1;
  for (auto s : sizes) n *= s;
  // Tiling the 7 distinct values keeps 64 MiB patterns cheap to build.
  at::Tensor period = (at::arange(1, 8, at::kDouble) * scale).to(dtype);
  return period.repeat({(n + 6) / 7}).narrow(0, 0, n).reshape(sizes);
}

at::Tensor rank_pattern(int rank, at::IntArrayRef sizes, at::ScalarType dtype) {
  return pattern(rank + 1, sizes, dtype);
}

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("check failed: " + what);
}

void check_equal(const at::Tensor& actual, const at::Tensor& expected, const std::string& what) {
  check(actual.scalar_type() == expected.scalar_type(), what + ": dtype " + c10::toString(actual.scalar_type()) +
                                                            " != " + c10::toString(expected.scalar_type()));
  check(actual.sizes() == expected.sizes(), what + ": shape mismatch");
  if (at::equal(actual, expected)) return;
  at::Tensor diff = (actual.to(at::kDouble) != expected.to(at::kDouble)).reshape({-1}).nonzero();
  int64_t i = diff.numel() ? diff[0].item<int64_t>() : -1;
  std::ostringstream s;
  s << what << ": " << diff.numel() << " elements differ";
  if (i >= 0)
    s << "; first at flat index " << i << ": got " << actual.reshape({-1})[i].item<double>() << ", expected "
      << expected.reshape({-1})[i].item<double>();
  throw std::runtime_error(s.str());
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void write_time(const std::string& path) {
  std::ofstream(path) << std::chrono::steady_clock::now().time_since_epoch().count();
}

std::chrono::steady_clock::time_point read_time(const std::string& path) {
  std::ifstream in(path);
  std::chrono::steady_clock::rep ticks = 0;
  check(static_cast<bool>(in >> ticks), "a time in " + path);
  return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(ticks));
}

}  // namespace ddp::testing
