// The server's resource model (docs/STORE.md) against misbehaving raw-socket clients: each limit
// closes the offending connection with a logged reason while the host survives and well-behaved
// clients keep working. The host is a real child process, so "the host died" is seen as its exit.
#include <ddp/errors.h>
#include <ddp/store.h>
#include <gtest/gtest.h>

#include <thread>

#include "store_test_util.h"
#include "support/multiprocess.h"
#include "support/subprocess.h"

using namespace std::chrono_literals;
using ddp::testing::connect_client;
using ddp::testing::RawSocket;
using ddp::testing::Subprocess;
using ddp::testing::u32le;
using ddp::testing::u64le;
using ddp::testing::wire_str;
using ddp::testing::kValidate;

namespace {

/// A store host process: serves on $MASTER_PORT (limits from $STORE_TEST_*), until key "stop" is set.
DDP_TEST_WORKER(store_host) {
  auto env_u64 = [](const char* name, uint64_t fallback) {
    const char* v = std::getenv(name);
    return v ? std::strtoull(v, nullptr, 10) : fallback;
  };
  ddp::TCPStoreOptions o;
  o.host("127.0.0.1").port(ddp::testing::env_int("MASTER_PORT", 0)).is_server(true).token("");
  o.max_stored_bytes(env_u64("STORE_TEST_MAX_STORED", o.max_stored_bytes()));
  o.max_connection_input_bytes(env_u64("STORE_TEST_MAX_INPUT", o.max_connection_input_bytes()));
  o.max_connection_output_bytes(env_u64("STORE_TEST_MAX_OUTPUT", o.max_connection_output_bytes()));
  o.max_connections(static_cast<int>(env_u64("STORE_TEST_MAX_CONNECTIONS", o.max_connections())));
  o.hello_timeout(std::chrono::milliseconds(env_u64("STORE_TEST_HELLO_MS", o.hello_timeout().count())));
  ddp::TCPStore s(o.timeout(std::chrono::minutes(2)));
  s.wait({"stop"});
  return 0;
}

/// Starts a store host process and waits until it serves.
struct Host {
  int port = ddp::testing::free_port();
  Subprocess proc;
  explicit Host(std::map<std::string, std::string> env = {})
      : proc({ddp::testing::self_exe()}, with_defaults(std::move(env), port)) {
    connect_client(port, 20s)->set("up", "1");
  }
  static std::map<std::string, std::string> with_defaults(std::map<std::string, std::string> env, int port) {
    env["DDP_TEST_WORKER"] = "store_host";
    env["MASTER_PORT"] = std::to_string(port);
    env["DDP_STORE_TOKEN"] = ddp::testing::kUnset;
    return env;
  }
  /// Still running, and a fresh well-behaved client can set and get.
  void expect_serving(const std::string& tag) {
    ASSERT_TRUE(proc.running()) << "the store host died: status " << proc.wait(0ms) << "\n" << proc.output();
    auto s = connect_client(port, 5s);
    s->set("alive/" + tag, tag);
    EXPECT_EQ(s->get_string("alive/" + tag), tag);
  }
  int stop() {
    connect_client(port, 5s)->set("stop", "1");
    return proc.wait(30s);
  }
};

// The probe from issue 12: one MULTI_GET naming a 1 MiB value 131072 times asked for a 128 GiB
// reply, which the server built before checking its size: std::bad_alloc, the host died (134).
TEST(StoreLimits, MultiGetOfAHugeReplyClosesOnlyThatClient) {
  Host host;
  auto good = connect_client(host.port, 10s);
  good->set("before", "1");
  RawSocket probe(host.port);
  std::string req = kValidate + std::string(1, '\x01') + wire_str("/k") + wire_str(std::string(1 << 20, 'x'));
  req += std::string(1, '\x0A') + u64le(131072);
  for (int i = 0; i < 131072; ++i) req += wire_str("/k");
  probe.send(req);
  EXPECT_TRUE(probe.closed_by_peer(20s));
  host.expect_serving("multiget");
  EXPECT_EQ(good->get_string("before"), "1");  // the well-behaved client's connection survived
  EXPECT_EQ(host.stop(), 0);
  EXPECT_NE(host.proc.output().find("reply of"), std::string::npos) << host.proc.output();
}

// Stored bytes: a client that would take the store past max_stored_bytes is closed before anything
// is stored; the bytes already there and everyone else's writes stay.
TEST(StoreLimits, StoredBytesBudgetClosesTheClientThatWouldExceedIt) {
  Host host({{"STORE_TEST_MAX_STORED", std::to_string(4u << 20)}});
  auto good = connect_client(host.port, 10s);
  RawSocket hog(host.port);
  const std::string three_mib(3u << 20, 'h');
  hog.send(kValidate + std::string(1, '\x01') + wire_str("/hog1") + wire_str(three_mib));
  good->wait({"hog1"}, 10s);
  hog.send(std::string(1, '\x01') + wire_str("/hog2") + wire_str(three_mib));
  EXPECT_TRUE(hog.closed_by_peer(10s));
  EXPECT_FALSE(good->check({"hog2"}));
  good->set("small", std::string(100 << 10, 's'));  // 100 KiB still fit, and replacing is fine
  good->set("small", std::string(200 << 10, 't'));
  EXPECT_EQ(good->get("small").size(), 200u << 10);
  RawSocket q(host.port);  // queues count too
  q.send(kValidate + std::string(1, '\x0E') + wire_str("/q") + wire_str(std::string(1u << 20, 'q')));
  EXPECT_TRUE(q.closed_by_peer(10s));
  EXPECT_TRUE(good->delete_key("hog1"));  // deleting gives the bytes back
  good->set("after-delete", std::string(2u << 20, 'a'));
  host.expect_serving("stored");
  EXPECT_EQ(host.stop(), 0);
  EXPECT_NE(host.proc.output().find("max_stored_bytes"), std::string::npos) << host.proc.output();
}

// Buffered input: a request larger than max_connection_input_bytes is dropped while it arrives.
TEST(StoreLimits, InputBudgetClosesAnOversizedRequest) {
  Host host({{"STORE_TEST_MAX_INPUT", std::to_string(1u << 20)}});
  auto good = connect_client(host.port, 10s);
  RawSocket big(host.port);
  bool sent = big.send(kValidate + std::string(1, '\x01') + wire_str("/big") + wire_str(std::string(2u << 20, 'b')));
  EXPECT_TRUE(!sent || big.closed_by_peer(10s));
  good->set("half", std::string(512u << 10, 'x'));
  EXPECT_EQ(good->get("half").size(), 512u << 10);
  EXPECT_FALSE(good->check({"big"}));
  host.expect_serving("input");
  EXPECT_EQ(host.stop(), 0);
  EXPECT_NE(host.proc.output().find("max_connection_input_bytes"), std::string::npos) << host.proc.output();
}

// Buffered output: one reply over max_connection_output_bytes is refused before it is built, and a
// client that sends GETs without reading the replies is closed once they pile up.
TEST(StoreLimits, OutputBudgetClosesNonReadersAndOversizedReplies) {
  Host host({{"STORE_TEST_MAX_OUTPUT", std::to_string(1u << 20)}});
  auto good = connect_client(host.port, 10s);
  good->set("v", std::string(600u << 10, 'v'));
  good->set("big", std::string(2u << 20, 'B'));
  RawSocket oversized(host.port);
  oversized.send(kValidate + std::string(1, '\x03') + wire_str("/big"));
  EXPECT_TRUE(oversized.closed_by_peer(10s));
  RawSocket deaf(host.port);  // 200 GETs of 600 KiB = 120 MB, never read: far past socket buffers
  std::string gets = kValidate;
  for (int i = 0; i < 200; ++i) gets += std::string(1, '\x03') + wire_str("/v");
  deaf.send(gets);
  EXPECT_TRUE(deaf.closed_by_peer(20s));
  EXPECT_EQ(good->get("v").size(), 600u << 10);
  host.expect_serving("output");
  EXPECT_EQ(host.stop(), 0);
  EXPECT_NE(host.proc.output().find("max_connection_output_bytes"), std::string::npos) << host.proc.output();
}

// The connection cap: connections past max_connections are closed at once; when some go, new
// clients get in again.
TEST(StoreLimits, ConnectionCapRefusesExtraConnections) {
  // The host's own client and `good` use 2 of the 8.
  Host host(std::map<std::string, std::string>{{"STORE_TEST_MAX_CONNECTIONS", "8"}});
  auto good = connect_client(host.port, 10s);
  std::vector<std::unique_ptr<RawSocket>> raws;
  for (int i = 0; i < 6; ++i) {
    raws.push_back(std::make_unique<RawSocket>(host.port));
    raws.back()->send(kValidate);
  }
  std::this_thread::sleep_for(200ms);
  RawSocket extra(host.port);
  EXPECT_TRUE(extra.closed_by_peer(5s));
  good->set("k", "v");  // connections the server holds keep working
  EXPECT_EQ(good->get_string("k"), "v");
  raws.clear();
  std::this_thread::sleep_for(200ms);
  host.expect_serving("cap");
  EXPECT_EQ(host.stop(), 0);
  EXPECT_NE(host.proc.output().find("max_connections"), std::string::npos) << host.proc.output();
}

// The hello deadline without a token: a connection that begins its first request and does not
// finish it is closed after hello_timeout. A silent one stays (torch 1.13's client connects and says
// nothing until its first operation; closing it broke the client with "Broken pipe"), and so does
// one that has spoken and then idles.
TEST(StoreLimits, HelloDeadlineClosesHalfOpenConnections) {
  Host host(std::map<std::string, std::string>{{"STORE_TEST_HELLO_MS", "500"}});
  auto good = connect_client(host.port, 10s);
  RawSocket silent(host.port);
  RawSocket half(host.port);
  half.send(std::string(1, '\0') + "\xCE\xF7");  // 3 of VALIDATE's 5 bytes
  RawSocket spoke(host.port);
  spoke.send(kValidate);
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(half.closed_by_peer(5s));
  EXPECT_LT(ddp::testing::elapsed_ms(start), 4000);
  std::this_thread::sleep_for(1s);  // well past the deadline
  EXPECT_FALSE(silent.closed_by_peer(100ms));
  EXPECT_FALSE(spoke.closed_by_peer(100ms));
  // The silent one can still start talking (a c10d 1.x client's first operation).
  silent.send(std::string(1, '\x06'));  // legacy GETNUMKEYS
  EXPECT_EQ(silent.recv(8, 3s).size(), 8u);
  good->set("k", "v");
  EXPECT_EQ(good->get_string("k"), "v");
  host.expect_serving("hello");
  EXPECT_EQ(host.stop(), 0);
  EXPECT_NE(host.proc.output().find("hello_timeout"), std::string::npos) << host.proc.output();
}

// PyTorch's own client (torch 1.13 here: it connects, plus a silent watch-key socket, and says
// nothing until its first operation) idles past hello_timeout and still works.
TEST(StoreLimits, IdleTorchClientOutlivesTheHelloDeadline) {
  Host host(std::map<std::string, std::string>{{"STORE_TEST_HELLO_MS", "300"}});
  const std::string script =
      "import datetime, os, sys, time, torch.distributed as dist\n"
      "sys.path.insert(0, os.environ['SUPPORT'])\n"
      "import torch_store  # use_libuv=False where torch lacks libuv (Debian 13's 2.6)\n"
      "s = dist.TCPStore('127.0.0.1', int(os.environ['PORT']), is_master=False,\n"
      "                  timeout=datetime.timedelta(seconds=10), **torch_store.tcpstore_kwargs())\n"
      "time.sleep(1.5)\n"
      "s.set('x', '1')\n"
      "assert s.get('x') == b'1'\n"
      "time.sleep(1)\n"
      "assert s.add('c', 2) == 2\n";
  Subprocess py({DDP_PYTHON, "-c", script},
                {{"PORT", std::to_string(host.port)}, {"SUPPORT", DDP_SOURCE_DIR "/tests/support"}});
  EXPECT_EQ(py.wait(60s), 0) << py.output();
  host.expect_serving("torch-idle");
  EXPECT_EQ(host.stop(), 0);
}

TEST(StoreLimits, HelloDeadlineClosesClientsWithoutTheToken) {
  auto server = ddp::TCPStoreServer::start(
      ddp::TCPStoreOptions().port(0).token("s3cret").hello_timeout(std::chrono::milliseconds(300)));
  RawSocket silent(server->port());
  RawSocket partial(server->port());
  partial.send("\xDD" "DDPT");  // the hello's start, never finished
  EXPECT_TRUE(silent.closed_by_peer(5s));
  EXPECT_TRUE(partial.closed_by_peer(5s));
  auto ok = connect_client(server->port(), 5s, "s3cret");
  std::this_thread::sleep_for(600ms);
  ok->set("k", "v");
  EXPECT_EQ(ok->get_string("k"), "v");
}

TEST(StoreLimits, BindAddressListensOnThatAddressOnly) {
  auto server = ddp::TCPStoreServer::start(ddp::TCPStoreOptions().port(0).token("").bind_address("127.0.0.1"));
  auto c = connect_client(server->port(), 5s);
  c->set("k", "v");
  EXPECT_EQ(c->get_string("k"), "v");
  // Not on ::1 (an all-interfaces server would accept there).
  ddp::TCPStoreOptions v6;
  v6.host("::1").port(server->port()).token("").connect_timeout(std::chrono::milliseconds(300));
  EXPECT_THROW(ddp::TCPStore{v6}, ddp::StoreError);
  try {
    ddp::TCPStoreServer::start(ddp::TCPStoreOptions().port(0).token("").bind_address("192.0.2.77"));
    FAIL() << "bound an address that is not local";
  } catch (const ddp::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("192.0.2.77"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ddp::TCPStoreServer::start(ddp::TCPStoreOptions().port(0).bind_address("no-such-host.invalid")),
               ddp::ConfigError);
}

}  // namespace
