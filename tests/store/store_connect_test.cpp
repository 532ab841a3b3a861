// Connecting: retry until the server appears, clear errors when it never does, IPv6.
#include <ddp/errors.h>
#include <ddp/store.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "store_test_util.h"
#include "support/ci.h"
#include "support/multiprocess.h"

using namespace std::chrono_literals;
using ddp::testing::elapsed_ms;

namespace {

// A worker started before its server: it must retry until the server listens.
DDP_TEST_WORKER(store_early_worker) {
  ddp::TCPStore s(ddp::TCPStoreOptions()
                      .host("localhost")
                      .port(ddp::testing::env_int("MASTER_PORT", 0))
                      .connect_timeout(60s)
                      .timeout(30s));
  s.set("early/joined", "yes");
  return s.get_string("early/ack") == "ok" ? 0 : 1;
}

TEST(StoreConnect, WorkerStartedBeforeTheServerJoins) {
  int port = ddp::testing::free_port();
  ddp::testing::Subprocess worker({ddp::testing::self_exe()},
                                  {{"DDP_TEST_WORKER", "store_early_worker"},
                                   {"MASTER_PORT", std::to_string(port)},
                                   {"DDP_LOG_LEVEL", "info"}});
  std::this_thread::sleep_for(5s);
  ASSERT_TRUE(worker.running()) << "the worker gave up before the server started:\n" << worker.output();
  auto server = ddp::TCPStoreServer::start(port, "");
  auto s = ddp::testing::connect_client(port, 30s);
  EXPECT_EQ(s->get_string("early/joined"), "yes");
  s->set("early/ack", "ok");
  EXPECT_EQ(worker.wait(30s), 0) << worker.output();
  EXPECT_NE(worker.output().find("attempts"), std::string::npos) << worker.output();
}

TEST(StoreConnect, RefusedUntilTheDeadlineSaysWhatItTried) {
  int port = ddp::testing::free_port();  // nothing listens there
  auto start = std::chrono::steady_clock::now();
  try {
    ddp::TCPStore s(ddp::TCPStoreOptions().host("127.0.0.1").port(port).connect_timeout(1500ms));
    FAIL() << "connected to a port nobody listens on";
  } catch (const ddp::StoreError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << what;
    EXPECT_NE(what.find("attempts"), std::string::npos) << what;
    EXPECT_NE(what.find("refused"), std::string::npos) << what;
    EXPECT_EQ(e.exit_code(), ddp::kExitStoreUnreachable);
  }
  auto took = elapsed_ms(start);
  EXPECT_GE(took, 1400);
  EXPECT_LT(took, 4000);
}

TEST(StoreConnect, UnresolvableHostRetriesThenFails) {
  auto start = std::chrono::steady_clock::now();
  try {
    ddp::TCPStore s(ddp::TCPStoreOptions().host("ddp-store-master.invalid").port(29500).connect_timeout(1s));
    FAIL() << "resolved a .invalid name";
  } catch (const ddp::StoreError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("ddp-store-master.invalid:29500"), std::string::npos) << what;
    EXPECT_NE(what.find("getaddrinfo"), std::string::npos) << what;
    EXPECT_NE(what.find("attempts"), std::string::npos) << what;
  }
  EXPECT_LT(elapsed_ms(start), 20000);  // a slow resolver may add its own timeout once
}

// An unresolvable MASTER_ADDR is retried until connect_timeout: the operator sees WARN lines saying
// what is retried and why (at most one per 30 s, not one per attempt) and an error naming the host.
TEST(StoreConnect, UnresolvableHostWarnsAtABoundedRateAndNamesTheHost) {
  ::testing::internal::CaptureStderr();
  std::string what;
  try {
    ddp::TCPStore s(ddp::TCPStoreOptions().host("ddp-store-master.invalid").port(29500).connect_timeout(2500ms));
  } catch (const ddp::StoreError& e) {
    what = e.what();
  }
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(what.find("'ddp-store-master.invalid' does not resolve"), std::string::npos) << what;
  size_t warns = 0;
  for (size_t p = log.find("WARN"); p != std::string::npos; p = log.find("WARN", p + 1)) ++warns;
  EXPECT_EQ(warns, 1u) << log;  // several attempts in 2.5 s, one line
  EXPECT_NE(log.find("cannot resolve store host 'ddp-store-master.invalid'"), std::string::npos) << log;
  EXPECT_NE(log.find("getaddrinfo"), std::string::npos) << log;
}

TEST(StoreConnect, BadPortIsImmediate) {
  EXPECT_THROW(ddp::TCPStore(ddp::TCPStoreOptions().port(70000).connect_timeout(10s)), ddp::StoreError);
  EXPECT_THROW(ddp::TCPStoreServer::start(-1, ""), ddp::StoreError);
}

bool have_ipv6_loopback() {
  int fd = ::socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

TEST(StoreConnect, ServerIsDualStack) {
  auto server = ddp::TCPStoreServer::start(0, "");
  auto v4 = ddp::testing::connect_client(server->port(), 5s);
  v4->set("k", "v4");
  if (!have_ipv6_loopback()) DDP_SKIP_OR_FAIL_IN_CI("no IPv6 loopback on this machine (IPv4 part passed)");
  ddp::TCPStore v6(ddp::TCPStoreOptions().host("::1").port(server->port()).connect_timeout(5s));
  EXPECT_EQ(v6.get_string("k"), "v4");
}

TEST(StoreConnect, PortInUseIsAClearError) {
  auto server = ddp::TCPStoreServer::start(0, "");
  try {
    ddp::TCPStoreServer::start(server->port(), "");
    FAIL() << "two servers on one port";
  } catch (const ddp::StoreError& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(server->port())), std::string::npos) << e.what();
  }
}

}  // namespace
