// Collectives that do not match across ranks (a program bug): different element counts, dtypes,
// roots or kinds of collective. Real processes over loopback. Every rank must end with a
// ddp::ConfigError that names the collective, both descriptions and the ranks, within the group
// timeout: never std::terminate in Gloo's event-loop thread, never a silently wrong result.
#include <ddp/errors.h>
#include <ddp/process_group.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <thread>

#include "gloo_test_util.h"

using namespace ddp::testing;

namespace {

// Runs the mismatched collective `what` and checks the error every rank must get. `odd` is the rank
// whose call differs; `mine` and `theirs` are texts the message must hold (each side's description).
int expect_mismatch(const std::function<void(ddp::ProcessGroup&)>& what, const std::vector<std::string>& must_name) {
  auto pg = make_test_group(std::chrono::seconds(20));
  pg->barrier()->wait();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    what(*pg);
    check(false, "the mismatched collective succeeded on rank " + std::to_string(rank()));
  } catch (const ddp::ConfigError& e) {
    const std::string msg = e.what();
    std::fprintf(stderr, "rank %d: ConfigError after %.3f s: %s\n", rank(), seconds_since(t0), msg.c_str());
    check(seconds_since(t0) < 10, "the mismatch was found within 10 s, not by the 20 s timeout");
    check(contains(msg, "do not match") || contains(msg, "does not match"), "says it is a mismatch: " + msg);
    for (const auto& part : must_name) check(contains(msg, part), "message names '" + part + "': " + msg);
    check(e.exit_code() == ddp::kExitConfig, "permanent: exit code 2");
  }
  // The group is unusable afterwards and says why (the same permanent class).
  try {
    pg->barrier()->wait();
    check(false, "barrier succeeded after a mismatched collective");
  } catch (const ddp::ConfigError& e) {
    check(contains(e.what(), "unusable"), std::string("later op says the group is unusable: ") + e.what());
  }
  return 0;
}

at::Tensor floats(int64_t n) { return at::ones({n}); }

}  // namespace

// 2 ranks, small (the direct allreduce): rank 0 10 floats, rank 1 12.
DDP_TEST_WORKER(allreduce_count_small) {
  return expect_mismatch(
      [](ddp::ProcessGroup& pg) {
        std::vector<at::Tensor> t = {floats(rank() == 0 ? 10 : 12)};
        pg.allreduce(t)->wait();
      },
      {"allreduce #1", "rank 0", "rank 1", "10 elements", "12 elements"});
}

// Large enough for the ring (above the 4 MiB direct limit), 2 elements apart.
DDP_TEST_WORKER(allreduce_count_ring) {
  return expect_mismatch(
      [](ddp::ProcessGroup& pg) {
        std::vector<at::Tensor> t = {floats(rank() == 1 ? (3 << 20) + 2 : 3 << 20)};
        pg.allreduce(t)->wait();
      },
      {"allreduce #1", "3145728 elements", "3145730 elements"});
}

// Same element count, different dtypes (float32 on rank 0, float64 on rank 1: twice the bytes).
DDP_TEST_WORKER(allreduce_dtype) {
  return expect_mismatch(
      [](ddp::ProcessGroup& pg) {
        std::vector<at::Tensor> t = {at::ones({16}, rank() == 0 ? at::kFloat : at::kDouble)};
        pg.allreduce(t)->wait();
      },
      {"allreduce #1", "Float", "Double"});
}

DDP_TEST_WORKER(broadcast_count) {
  return expect_mismatch(
      [](ddp::ProcessGroup& pg) {
        std::vector<at::Tensor> t = {floats(rank() == 0 ? 10 : 12)};
        pg.broadcast(t)->wait();
      },
      {"broadcast #1", "10 elements", "12 elements"});
}

DDP_TEST_WORKER(broadcast_root) {
  return expect_mismatch(
      [](ddp::ProcessGroup& pg) {
        std::vector<at::Tensor> t = {floats(10)};
        pg.broadcast(t, ddp::BroadcastOptions().root(rank() == 0 ? 0 : 1))->wait();
      },
      {"broadcast #1", "root 0", "root 1"});
}

DDP_TEST_WORKER(allgather_count) {
  return expect_mismatch(
      [](ddp::ProcessGroup& pg) {
        const int64_t n = rank() == 0 ? 10 : 12;
        std::vector<at::Tensor> out;
        for (int i = 0; i < pg.size(); ++i) out.push_back(floats(n));
        pg.allgather(out, floats(n))->wait();
      },
      {"allgather #1", "10 elements", "12 elements"});
}

// Different collectives at the same point: one rank allreduces, the others broadcast.
DDP_TEST_WORKER(different_kinds) {
  return expect_mismatch(
      [](ddp::ProcessGroup& pg) {
        std::vector<at::Tensor> t = {floats(10)};
        if (rank() == 0) pg.allreduce(t)->wait();
        else pg.broadcast(t)->wait();
      },
      {"#1", "allreduce", "broadcast"});
}

// 3 ranks, only rank 2 differs: rank 1 (which matches its ring neighbour rank 0) must know too.
DDP_TEST_WORKER(three_ranks_one_differs) {
  return expect_mismatch(
      [](ddp::ProcessGroup& pg) {
        std::vector<at::Tensor> t = {floats(rank() == 2 ? 12 : 10)};
        pg.allreduce(t)->wait();
      },
      {"allreduce #1", "rank 2", "12 elements", "10 elements"});
}

// ---- a slow rank after the others have left ----------------------------------------------------
// Over TCP each rank sends its signature and then posts its operation's receives. A rank stalled in
// between finds the connections of the faster ranks already closed: they saw every signature,
// threw the mismatch and left in order. The signatures they sent before leaving have arrived, so
// the slow rank must still report the mismatch, not the loss of a peer (PeerError, exit 200).
// Rank 1 is stalled on purpose, its I/O thread left running: its tensor lies on a page it may not
// read yet, so packing it (the operation thread's first touch of the data, after the signature left)
// faults, and the fault handler holds that thread until ranks 0 and 2 have left, then another
// 500 ms in which Gloo's I/O thread reads their goodbyes and closed connections. Before the fix
// the receive was posted on a closed connection and rank 1 ended with a PeerError every run.
namespace {

constexpr size_t kStallPage = 4096;
void* g_stall_page = nullptr;
char g_left_marker[2][512];

// SIGSEGV handler: only async-signal-safe calls (access, nanosleep, mprotect).
void hold_until_the_others_left(int, siginfo_t* info, void*) {
  auto* at = static_cast<char*>(info->si_addr);
  auto* page = static_cast<char*>(g_stall_page);
  if (page == nullptr || at < page || at >= page + kStallPage) {
    signal(SIGSEGV, SIG_DFL);  // a real crash: the faulting access repeats and ends the process
    return;
  }
  const timespec ms{0, 1000000};
  for (int i = 0; i < 60000 && (access(g_left_marker[0], F_OK) != 0 || access(g_left_marker[1], F_OK) != 0); ++i)
    nanosleep(&ms, nullptr);
  const timespec settle{0, 500000000};
  nanosleep(&settle, nullptr);
  mprotect(g_stall_page, kStallPage, PROT_READ | PROT_WRITE);
}

void touch(const std::string& path) { std::fclose(std::fopen(path.c_str(), "w")); }

void wait_for_file(const std::string& path, const std::string& what) {
  const auto t0 = std::chrono::steady_clock::now();
  while (!std::filesystem::exists(path)) {
    check(seconds_since(t0) < 90, what);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

DDP_TEST_WORKER(slow_rank_sees_the_mismatch_after_the_others_left) {
  const std::string dir = env_or("DDP_STALL_DIR", "");
  check(!dir.empty(), "DDP_STALL_DIR is set");
  const std::string rank1_done = dir + "/done.1";
  if (rank() != 1) {
    // Ranks 0 (the store's host) and 2 (the odd one) find the mismatch at once and leave.
    const int status = expect_mismatch(
        [](ddp::ProcessGroup& pg) {
          std::vector<at::Tensor> t = {floats(rank() == 2 ? 12 : 10)};
          pg.allreduce(t)->wait();
        },
        {"allreduce #1", "rank 2", "12 elements", "10 elements"});
    touch(dir + "/left." + std::to_string(rank()));
    wait_for_file(rank1_done, "rank 1 finished within 90 s");
    return status;
  }
  struct Done {  // however rank 1 ends, the others stop waiting for it
    std::string path;
    ~Done() { touch(path); }
  } done{rank1_done};
  std::snprintf(g_left_marker[0], sizeof g_left_marker[0], "%s/left.0", dir.c_str());
  std::snprintf(g_left_marker[1], sizeof g_left_marker[1], "%s/left.2", dir.c_str());
  g_stall_page = mmap(nullptr, kStallPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  check(g_stall_page != MAP_FAILED, "mmap a page");
  struct sigaction sa {};
  sa.sa_sigaction = hold_until_the_others_left;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  check(sigaction(SIGSEGV, &sa, nullptr) == 0, "install the SIGSEGV handler");
  at::Tensor stalled = at::from_blob(g_stall_page, {10}, at::kFloat);
  stalled.fill_(1);
  const auto t0 = std::chrono::steady_clock::now();
  const int status = expect_mismatch(
      [&stalled](ddp::ProcessGroup& pg) {
        check(mprotect(g_stall_page, kStallPage, PROT_NONE) == 0, "protect the page");
        std::vector<at::Tensor> t = {stalled};
        pg.allreduce(t)->wait();
      },
      {"allreduce #1", "rank 2", "12 elements", "10 elements"});
  // The case under test happened: rank 1's operation waited for the others to leave.
  check(std::filesystem::exists(dir + "/left.0") && std::filesystem::exists(dir + "/left.2"),
        "ranks 0 and 2 had left before rank 1 reported the mismatch");
  std::fprintf(stderr, "rank 1: stalled, then reported the mismatch %.3f s after the call\n", seconds_since(t0));
  return status;
}

TEST(GlooMismatch, AllreduceCountSmall) { expect_all_succeeded(run_workers("allreduce_count_small", 2, gloo_worker_options())); }
TEST(GlooMismatch, AllreduceCountRing) { expect_all_succeeded(run_workers("allreduce_count_ring", 2, gloo_worker_options())); }
TEST(GlooMismatch, AllreduceDtype) { expect_all_succeeded(run_workers("allreduce_dtype", 2, gloo_worker_options())); }
TEST(GlooMismatch, BroadcastCount) { expect_all_succeeded(run_workers("broadcast_count", 2, gloo_worker_options())); }
TEST(GlooMismatch, BroadcastRoot) { expect_all_succeeded(run_workers("broadcast_root", 2, gloo_worker_options())); }
TEST(GlooMismatch, AllgatherCount) { expect_all_succeeded(run_workers("allgather_count", 2, gloo_worker_options())); }
TEST(GlooMismatch, DifferentKinds) { expect_all_succeeded(run_workers("different_kinds", 2, gloo_worker_options())); }
TEST(GlooMismatch, ThreeRanksOneDiffers) {
  expect_all_succeeded(run_workers("three_ranks_one_differs", 3, gloo_worker_options()));
}
TEST(GlooMismatch, ASlowRankReportsItAfterTheOthersLeft) {
  const std::string dir = make_temp_dir("gloo-stall");
  WorkerOptions o = gloo_worker_options();
  o.env["DDP_STALL_DIR"] = dir;
  o.env["DDP_SHM"] = "0";  // the receives posted after the signature are TCP's (shared memory checks first)
  expect_all_succeeded(run_workers("slow_rank_sees_the_mismatch_after_the_others_left", 3, o));
  std::filesystem::remove_all(dir);
}
