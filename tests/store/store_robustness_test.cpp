// The server against bad input on raw sockets: it closes the offending connection only, never
// crashes, never buffers without bound, and keeps serving everyone else. Plus the token mode.
#include <ddp/errors.h>
#include <ddp/store.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "store_test_util.h"

using namespace std::chrono_literals;
using ddp::testing::connect_client;
using ddp::testing::RawSocket;
using ddp::testing::u32le;
using ddp::testing::u64le;
using ddp::testing::wire_str;
using ddp::testing::kValidate;

namespace {

int open_fds() {
  int n = 0;
  for (auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)entry;
    ++n;
  }
  return n;
}

long rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

/// The server still answers a well-behaved client.
void expect_serving(int port, const std::string& tag) {
  auto s = connect_client(port, 5s);
  s->set("alive/" + tag, tag);
  EXPECT_EQ(s->get_string("alive/" + tag), tag);
}

TEST(StoreServer, ClosesGarbageAndKeepsServing) {
  auto server = ddp::TCPStoreServer::start(0, "");
  auto good = connect_client(server->port(), 5s);
  good->set("before", "1");

  RawSocket http(server->port());
  http.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");  // 'G' is no c10d query type
  EXPECT_TRUE(http.closed_by_peer(3s));

  RawSocket unknown(server->port());
  unknown.send(kValidate + std::string(1, '\xC8'));  // query type 200
  EXPECT_TRUE(unknown.closed_by_peer(3s));

  RawSocket bad_magic(server->port());
  bad_magic.send(kValidate + std::string(1, '\0') + u32le(0x12345678));  // a second VALIDATE, wrong
  EXPECT_TRUE(bad_magic.closed_by_peer(3s));

  EXPECT_EQ(good->get_string("before"), "1");
  expect_serving(server->port(), "garbage");
}

TEST(StoreServer, RejectsHugeLengthPrefixesWithoutAllocating) {
  auto server = ddp::TCPStoreServer::start(0, "");
  long rss_before = rss_kib();
  const uint64_t k4GiB = 4ull << 30;

  RawSocket legacy_key(server->port());  // c10d 1.x SET with a 4 GiB key
  legacy_key.send(std::string(1, '\0') + u64le(k4GiB) + "abc");
  EXPECT_TRUE(legacy_key.closed_by_peer(3s));

  RawSocket v2_value(server->port());  // c10d 2.x SET with a 4 GiB value
  v2_value.send(kValidate + std::string(1, '\x01') + wire_str("key") + u64le(k4GiB) + "xyz");
  EXPECT_TRUE(v2_value.closed_by_peer(3s));

  RawSocket many_keys(server->port());  // WAIT naming 2^40 keys
  many_keys.send(kValidate + std::string(1, '\x06') + u64le(1ull << 40));
  EXPECT_TRUE(many_keys.closed_by_peer(3s));

  RawSocket max_u64(server->port());  // legacy GET of a key of length 2^64-1
  max_u64.send(std::string(1, '\x02') + u64le(~0ull));
  EXPECT_TRUE(max_u64.closed_by_peer(3s));

  EXPECT_LT(rss_kib() - rss_before, 64 * 1024) << "the server allocated for a bogus length";
  expect_serving(server->port(), "huge");
}

TEST(StoreServer, TruncatedRequestsDoNotBlockOthersOrLeakState) {
  auto server = ddp::TCPStoreServer::start(0, "");
  // Half a SET, connection kept open: the event loop must not wait for the rest.
  RawSocket slow(server->port());
  slow.send(kValidate + std::string(1, '\x01') + u64le(10) + "abc");
  expect_serving(server->port(), "while-truncated");
  // Half a SET, then close: nothing is stored.
  RawSocket gone(server->port());
  gone.send(kValidate + std::string(1, '\x01') + wire_str("/half") + u64le(100) + "only a bit");
  gone.close();
  auto s = connect_client(server->port(), 5s);
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(s->check({"half"}));
  // A complete SET followed by a close is applied (the close comes after the data).
  RawSocket complete(server->port());
  complete.send(kValidate + std::string(1, '\x01') + wire_str("/whole") + wire_str("v"));
  complete.close();
  s->wait({"whole"}, 5s);
  EXPECT_EQ(s->get_string("whole"), "v");
  // A client that dies while blocked in WAIT is forgotten; setting the key later is harmless.
  RawSocket waiter(server->port());
  waiter.send(kValidate + std::string(1, '\x06') + u64le(1) + wire_str("/later"));
  std::this_thread::sleep_for(50ms);
  waiter.close();
  std::this_thread::sleep_for(50ms);
  s->set("later", "x");
  expect_serving(server->port(), "after-truncated");
}

TEST(StoreServer, SurvivesRandomBytes) {
  auto server = ddp::TCPStoreServer::start(0, "");
  std::mt19937 rng(1234);
  for (int i = 0; i < 200; ++i) {
    RawSocket r(server->port());
    std::string junk(rng() % 200, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    // Half the time after a valid VALIDATE, so the 2.x parser sees the junk too.
    r.send((i % 2 ? kValidate : std::string()) + junk);
  }
  expect_serving(server->port(), "random");
}

TEST(StoreServer, AnswersPingAndC10dRawQueries) {
  auto server = ddp::TCPStoreServer::start(0, "");
  RawSocket r(server->port());
  r.send(kValidate + std::string(1, '\x0D') + u32le(0xABCD1234));  // PING
  EXPECT_EQ(r.recv(4, 3s), u32le(0xABCD1234));
  r.send(std::string(1, '\x04') + wire_str("/n") + u64le(5));  // 2.x ADD
  EXPECT_EQ(r.recv(8, 3s), u64le(5));
  r.send(std::string(1, '\x0B') + u64le(2) + wire_str("/a") + wire_str("1") + wire_str("/b") + wire_str("2"));  // MULTI_SET
  r.send(std::string(1, '\x0A') + u64le(2) + wire_str("/b") + wire_str("/a"));  // MULTI_GET
  EXPECT_EQ(r.recv(18, 3s), wire_str("2") + wire_str("1"));
  r.send(std::string(1, '\x09') + wire_str("/a") + wire_str("23"));  // APPEND
  r.send(std::string(1, '\x03') + wire_str("/a"));  // GET
  EXPECT_EQ(r.recv(11, 3s), wire_str("123"));
  r.send(std::string(1, '\x06') + u64le(1) + wire_str("/zzz"));  // WAIT, then CANCEL_WAIT
  r.send(std::string(1, '\x0C'));
  EXPECT_EQ(r.recv(1, 3s), std::string(1, '\x01'));  // WAIT_CANCELED
  r.send(std::string(1, '\x03') + wire_str("/missing"));  // GET of a missing key: empty
  EXPECT_EQ(r.recv(8, 3s), u64le(0));
  auto s = connect_client(server->port(), 5s);
  EXPECT_EQ(s->add("n", 1), 6);
}

TEST(StoreServer, ServesC10dQueuesAndListKeys) {
  auto server = ddp::TCPStoreServer::start(0, "");
  RawSocket a(server->port()), b(server->port()), c(server->port());
  a.send(kValidate + std::string(1, '\x06') + u64le(1) + wire_str("/q"));  // WAIT on the queue
  c.send(kValidate + std::string(1, '\x06') + u64le(1) + wire_str("/q"));  // a second waiter
  std::this_thread::sleep_for(50ms);
  b.send(kValidate + std::string(1, '\x0E') + wire_str("/q") + wire_str("x"));  // QUEUE_PUSH
  EXPECT_EQ(a.recv(1, 3s), std::string(1, '\0'));  // STOP_WAITING for the first waiter only
  EXPECT_EQ(c.recv(1, 300ms), "");
  b.send(std::string(1, '\x10') + wire_str("/q"));  // QUEUE_LEN
  EXPECT_EQ(b.recv(8, 3s), u64le(1));
  b.send(std::string(1, '\x0F') + wire_str("/q"));  // QUEUE_POP: length before, then the value
  EXPECT_EQ(b.recv(8 + 9, 3s), u64le(1) + wire_str("x"));
  b.send(std::string(1, '\x0F') + wire_str("/q"));  // empty: just the length
  EXPECT_EQ(b.recv(8, 3s), u64le(0));
  b.send(std::string(1, '\x0E') + wire_str("/q") + wire_str("y"));
  EXPECT_EQ(c.recv(1, 3s), std::string(1, '\0'));  // the next push wakes the second waiter
  b.send(std::string(1, '\x01') + wire_str("/k") + wire_str("v") + std::string(1, '\x11'));  // SET, LIST_KEYS
  EXPECT_EQ(b.recv(8 + 10, 3s), u64le(1) + wire_str("/k"));
}

TEST(StoreToken, AcceptsTheRightTokenAndRefusesOthers) {
  auto server = ddp::TCPStoreServer::start(0, "s3cret");
  auto ok = connect_client(server->port(), 5s, "s3cret");
  ok->set("k", "v");
  EXPECT_EQ(ok->get_string("k"), "v");

  auto start = std::chrono::steady_clock::now();
  try {
    connect_client(server->port(), 5s, "wrong");
    FAIL() << "a wrong token was accepted";
  } catch (const ddp::StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("token"), std::string::npos) << e.what();
  }
  EXPECT_LT(ddp::testing::elapsed_ms(start), 5000);
  // No token at all: the handshake's first bytes are c10d queries, which the server refuses.
  EXPECT_THROW(connect_client(server->port(), 5s, ""), ddp::StoreError);
  RawSocket c10d_like(server->port());
  c10d_like.send(std::string(1, '\x06'));  // c10d 1.x GETNUMKEYS
  EXPECT_TRUE(c10d_like.closed_by_peer(3s));
  EXPECT_EQ(ok->get_string("k"), "v");

  // A token presented to a server without one is accepted (the client just came prepared).
  auto open_server = ddp::TCPStoreServer::start(0, "");
  auto extra = connect_client(open_server->port(), 5s, "anything");
  extra->set("x", "y");
  EXPECT_EQ(extra->get_string("x"), "y");
}

TEST(StoreServer, BoundsWhatOneConnectionMayBuffer) {
  auto server = ddp::TCPStoreServer::start(0, "");
  // Three 40 MiB values in one MULTI_SET: each is legal, the request (120 MiB) is over the 80 MiB a
  // connection may buffer, so the server drops it instead of growing.
  std::string value(40u << 20, 'v');
  std::string req = kValidate + std::string(1, '\x0B') + u64le(3);
  for (int i = 0; i < 3; ++i) req += wire_str("/big" + std::to_string(i)) + wire_str(value);
  RawSocket r(server->port());
  bool sent_all = r.send(req);
  EXPECT_TRUE(!sent_all || r.closed_by_peer(5s));
  auto s = connect_client(server->port(), 5s);
  EXPECT_FALSE(s->check({"big0"}));
  // One 40 MiB value on its own is fine.
  s->set("one-big", value);
  EXPECT_EQ(s->get("one-big").size(), value.size());
}

TEST(StoreServer, ShutdownClosesEveryDescriptor) {
  int before = open_fds();
  {
    auto server = ddp::TCPStoreServer::start(0, "");
    std::vector<std::unique_ptr<ddp::TCPStore>> clients;
    for (int i = 0; i < 20; ++i) clients.push_back(connect_client(server->port(), 5s));
    clients[0]->set("k", "v");
    RawSocket raw(server->port());
    raw.send(kValidate);
    EXPECT_GT(open_fds(), before + 40);
    clients.clear();
  }
  EXPECT_EQ(open_fds(), before);
}

TEST(StoreServer, StopWakesBlockedClients) {
  auto server = ddp::TCPStoreServer::start(0, "");
  auto s = connect_client(server->port(), 30s);
  std::thread stopper([&] {
    std::this_thread::sleep_for(200ms);
    server->stop();
  });
  auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(s->get("never-set"), ddp::StoreError);
  EXPECT_LT(ddp::testing::elapsed_ms(start), 5000);
  stopper.join();
}

}  // namespace
