// The test harness's free_port (tests/support/free_port.cpp): the port each multi-process test
// gives its store. Under `ctest -j`, a port the kernel can hand out (the ephemeral range) was
// taken by another test's socket between the pick and the store's bind (stop 32's CI,
// GlooShm.HierarchicalInterleavedRanks). So: never in the ephemeral range, never twice in one
// process, and never one that another live test process holds.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "support/multiprocess.h"

namespace {

constexpr int kPorts = 20;

std::pair<int, int> ephemeral_range() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int first = 32768, last = 60999;
  in >> first >> last;
  return {first, last};
}

DDP_TEST_WORKER(print_free_ports) {
  for (int i = 0; i < kPorts; ++i) std::cout << ddp::testing::free_port() << "\n";
  return 0;
}

TEST(FreePort, OutsideTheEphemeralRangeAndNeverHeldTwice) {
  const auto [first, last] = ephemeral_range();
  std::set<int> mine;
  for (int i = 0; i < kPorts; ++i) {
    const int port = ddp::testing::free_port();
    EXPECT_TRUE(port < first || port > last) << port << " is in the ephemeral range " << first << "-" << last;
    EXPECT_TRUE(mine.insert(port).second) << port << " was handed out twice";
  }
  // Another test process, while this one still holds its ports, gets none of them, even when it
  // tries one of them first.
  ddp::testing::WorkerOptions o;
  o.env["DDP_TEST_FREE_PORT_FIRST_TRY"] = std::to_string(*mine.begin());
  auto results = ddp::testing::run_workers("print_free_ports", 1, o);
  ASSERT_EQ(results[0].status, 0) << results[0].output;
  std::istringstream out(results[0].output);
  int port = 0, count = 0;
  while (out >> port) {
    ++count;
    EXPECT_EQ(mine.count(port), 0u) << port << " went to a second process while the first held it";
  }
  EXPECT_EQ(count, kPorts) << results[0].output;
}

}  // namespace
