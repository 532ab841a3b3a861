// What is particular to ranks that share a host: which transport the group picked (from its log
// line), the hierarchical path (some ranks kept on TCP with DDP_SHM=0 make two "hosts" on this
// machine), bit-identical results on every rank, the segment being an anonymous memfd that no
// crash leaves behind, and a bad DDP_SHM. The collectives themselves are tested by every other test
// of this binary: plain names run over shared memory, "tcp." names with DDP_SHM=0.
#include <ddp/errors.h>
#include <ddp/process_group.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "gloo_test_util.h"

using namespace ddp::testing;

namespace {

// The whole binary runs a second time with DDP_SHM=0 (the "tcp." tests).
bool tcp_variant() {
  const char* v = std::getenv("DDP_SHM");
  return v && std::string(v) == "0";
}

WorkerOptions logged() {
  WorkerOptions o = gloo_worker_options();
  o.env["DDP_LOG_LEVEL"] = "INFO";
  return o;
}

const WorkerResult& of_rank(const std::vector<WorkerResult>& results, int r) {
  for (const auto& x : results)
    if (x.rank == r) return x;
  throw std::runtime_error("no result for rank " + std::to_string(r));
}

std::set<std::string> dev_shm_entries() {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) names.insert(e.path().filename());
  return names;
}

}  // namespace

// A group, and an exact allreduce of every rank's pattern of `elements` floats over it.
int make_group_and_allreduce(int64_t elements, const std::string& what) {
  auto pg = make_test_group();
  std::vector<at::Tensor> t = {rank_pattern(rank(), {elements}, at::kFloat)};
  pg->allreduce(t)->wait();
  check_equal(t[0], pattern(world() * (world() + 1) / 2.0, {elements}, at::kFloat), what);
  return 0;
}

DDP_TEST_WORKER(shm_ready) { return make_group_and_allreduce(1000, "allreduce"); }

TEST(GlooShm, LogNamesTheTransport) {
  auto results = run_workers("shm_ready", 3, logged());
  expect_all_succeeded(results);
  for (const auto& r : results)
    EXPECT_TRUE(contains(r.output, tcp_variant() ? "transport: tcp (DDP_SHM=0)"
                                                 : "transport: shared memory (ranks 0,1,2 on this host)\n"))
        << "rank " << r.rank << ":\n" << r.output;
}

// Rank 2 of 4 stays on TCP: hosts {0,1,3} and {2}; every collective of the matrix goes through
// the hierarchical path (within the host, between leaders 0 and 2, within the host again).
TEST(GlooShm, HierarchicalAllCollectives) {
  WorkerOptions o = logged();
  o.per_rank_env[2]["DDP_SHM"] = "0";
  auto results = run_workers("all_collectives", 4, o);
  expect_all_succeeded(results);
  if (tcp_variant()) return;
  for (int r : {0, 1, 3})
    EXPECT_TRUE(contains(of_rank(results, r).output,
                         "transport: shared memory (ranks 0,1,3 on this host) + tcp between 2 hosts"))
        << of_rank(results, r).output;
  EXPECT_TRUE(contains(of_rank(results, 2).output, "transport: tcp (DDP_SHM=0)")) << of_rank(results, 2).output;
}

// Interleaved: rank 1 of 3 on TCP, so the shared-memory host is ranks {0,2}, not contiguous.
TEST(GlooShm, HierarchicalInterleavedRanks) {
  WorkerOptions o = logged();
  o.per_rank_env[1]["DDP_SHM"] = "0";
  auto results = run_workers("all_collectives", 3, o);
  expect_all_succeeded(results);
  if (!tcp_variant())
    EXPECT_TRUE(contains(of_rank(results, 0).output, "transport: shared memory (ranks 0,2 on this host) + tcp"))
        << of_rank(results, 0).output;
}

// Random floats (sums that round): every rank must hold the same bits afterwards, over several
// pieces of the segment and an odd element count.
DDP_TEST_WORKER(identical_bits) {
  auto pg = make_test_group();
  at::manual_seed(rank() + 1);
  for (int64_t n : {7, 100003, 1000003}) {
    std::vector<at::Tensor> t = {at::randn({n}, at::kFloat)};
    pg->allreduce(t)->wait();
    std::vector<at::Tensor> all;
    for (int r = 0; r < world(); ++r) all.push_back(at::empty({n}, at::kFloat));
    pg->allgather(all, t[0])->wait();
    for (int r = 0; r < world(); ++r)
      check(at::equal(all[r], t[0]), "rank " + std::to_string(r) + " holds other bits than rank " +
                                         std::to_string(rank()) + " after an allreduce of " + std::to_string(n));
  }
  return 0;
}
TEST(GlooShm, RanksGetIdenticalBits) { expect_all_succeeded(run_workers("identical_bits", 3, gloo_worker_options())); }

// The segment is an unnamed memfd: every rank maps "/memfd:ddp-gloo-shm (deleted)", nothing
// appears in /dev/shm, and ranks killed with SIGKILL leave nothing there either.
DDP_TEST_WORKER(killed_with_segment) {
  auto pg = make_test_group();
  pg->barrier()->wait();
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (contains(line, "ddp-gloo-shm")) std::fprintf(stderr, "mapped: %s\n", line.c_str());
  std::fflush(stderr);
  pg->barrier()->wait();
  raise(SIGKILL);
  return 1;
}
TEST(GlooShm, SegmentIsAnonymousAndGoneAfterSigkill) {
  const auto before = dev_shm_entries();
  auto results = run_workers("killed_with_segment", 3, gloo_worker_options());
  for (const auto& r : results) {
    EXPECT_EQ(r.status, 128 + SIGKILL) << r.output;
    if (!tcp_variant()) {
      EXPECT_TRUE(contains(r.output, "/memfd:ddp-gloo-shm (deleted)")) << r.output;
    } else {
      EXPECT_FALSE(contains(r.output, "mapped:")) << r.output;
    }
  }
  EXPECT_EQ(dev_shm_entries(), before);
}

// Rank 0, the host's leader, may not create files over 64 KiB (RLIMIT_FSIZE applies to a memfd's
// size too), so it cannot make the segment: every rank stays on TCP, says why, and computes right.
DDP_TEST_WORKER(leader_cannot_create) {
  if (rank() == 0) {
    std::signal(SIGXFSZ, SIG_IGN);  // the limit is then EFBIG instead of a signal
    rlimit small{64 << 10, 64 << 10};
    check(setrlimit(RLIMIT_FSIZE, &small) == 0, "setrlimit");
  }
  return make_group_and_allreduce(300007, "allreduce over the fallback");
}
TEST(GlooShm, SegmentThatCannotBeMadeFallsBackToTcp) {
  auto results = run_workers("leader_cannot_create", 3, logged());
  expect_all_succeeded(results);
  for (const auto& r : results) {
    std::string want = tcp_variant()  ? "transport: tcp (DDP_SHM=0)"
                       : r.rank == 0 ? "transport: tcp (shared memory unavailable: ftruncate to "
                                     : "transport: tcp (rank 0 could not create the shared memory: ftruncate to ";
    EXPECT_TRUE(contains(r.output, want)) << "rank " << r.rank << " lacks '" << want << "':\n" << r.output;
  }
}

DDP_TEST_WORKER(bad_switch) {
  try {
    make_test_group();
    check(false, "a group was made with DDP_SHM=yes");
  } catch (const ddp::ConfigError& e) {
    check(contains(e.what(), "DDP_SHM is 'yes'"), std::string("message names the variable: ") + e.what());
  }
  return 0;
}
TEST(GlooShm, BadSwitchIsAConfigError) {
  WorkerOptions o = gloo_worker_options();
  o.env["DDP_SHM"] = "yes";
  expect_all_succeeded(run_workers("bad_switch", 1, o));
}
