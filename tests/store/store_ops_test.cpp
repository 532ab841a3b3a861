// TCPStore operations against our server: every op, timeouts, concurrency, PrefixStore, processes.
#include <ddp/errors.h>
#include <ddp/store.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "store_test_util.h"
#include "support/multiprocess.h"

using namespace std::chrono_literals;
using ddp::Store;
using ddp::testing::connect_client;
using ddp::testing::bytes_text;
using ddp::testing::elapsed_ms;

namespace {

Store::Bytes bytes(const std::string& s) { return Store::Bytes(s.begin(), s.end()); }

TEST(TCPStore, EveryOperation) {
  auto server = ddp::TCPStoreServer::start(0, "");
  ASSERT_GT(server->port(), 0);
  auto s = connect_client(server->port());
  EXPECT_EQ(s->port(), server->port());
  EXPECT_EQ(s->host(), "127.0.0.1");

  EXPECT_EQ(s->num_keys(), 0);
  s->set("a", "alpha");
  EXPECT_EQ(s->get_string("a"), "alpha");
  s->set("a", bytes(std::string("\0\x01\xff", 3)));  // values are bytes, not strings
  EXPECT_EQ(bytes_text(s->get("a")), std::string("\0\x01\xff", 3));
  s->set("empty", Store::Bytes{});
  EXPECT_TRUE(s->get("empty").empty());

  EXPECT_EQ(s->add("n", 5), 5);
  EXPECT_EQ(s->add("n", -7), -2);
  EXPECT_EQ(s->get_string("n"), "-2");  // ASCII decimal, as c10d keeps it
  EXPECT_EQ(s->add("n", 0), -2);

  // compare_set, c10d semantics.
  EXPECT_EQ(bytes_text(s->compare_set("cs", bytes("x"), bytes("y"))), "x");  // missing, expected != "": not created
  EXPECT_FALSE(s->check({"cs"}));
  EXPECT_EQ(bytes_text(s->compare_set("cs", {}, bytes("first"))), "first");  // missing, expected "": created
  EXPECT_EQ(bytes_text(s->compare_set("cs", bytes("nope"), bytes("second"))), "first");
  EXPECT_EQ(bytes_text(s->compare_set("cs", bytes("first"), bytes("second"))), "second");
  EXPECT_EQ(s->get_string("cs"), "second");

  EXPECT_TRUE(s->check({"a", "n", "cs"}));
  EXPECT_FALSE(s->check({"a", "missing"}));
  EXPECT_TRUE(s->check({}));
  s->wait({"a", "n"}, 1s);  // present: returns at once

  EXPECT_EQ(s->num_keys(), 4);  // a, empty, n, cs
  EXPECT_TRUE(s->delete_key("a"));
  EXPECT_FALSE(s->delete_key("a"));
  EXPECT_FALSE(s->check({"a"}));
  EXPECT_EQ(s->num_keys(), 3);

  // Keys with odd bytes and a large value survive the round trip.
  std::string odd_key("k\0ey/with\nodd", 13);
  std::string big(3 * 1024 * 1024 + 17, 'z');
  s->set(odd_key, big);
  EXPECT_EQ(s->get_string(odd_key), big);
}

TEST(TCPStore, HostsItsOwnServerOnAFreePort) {
  ddp::TCPStore s(ddp::TCPStoreOptions().port(0).is_server(true).token("").timeout(5s));
  EXPECT_GT(s.port(), 0);
  s.set("k", "v");
  auto other = connect_client(s.port());
  EXPECT_EQ(other->get_string("k"), "v");
}

TEST(TCPStore, GetBlocksUntilAnotherClientSets) {
  auto server = ddp::TCPStoreServer::start(0, "");
  auto reader = connect_client(server->port());
  auto writer = connect_client(server->port());
  auto start = std::chrono::steady_clock::now();
  std::thread t([&] {
    std::this_thread::sleep_for(300ms);
    writer->set("late", "here");
  });
  EXPECT_EQ(reader->get_string("late"), "here");
  EXPECT_GE(elapsed_ms(start), 250);
  t.join();
  // wait() for several keys returns once the last one appears (set by add()).
  std::thread t2([&] {
    std::this_thread::sleep_for(100ms);
    writer->set("w1", "1");
    std::this_thread::sleep_for(100ms);
    writer->add("w2", 1);
  });
  reader->wait({"w1", "w2"}, 5s);
  EXPECT_TRUE(reader->check({"w1", "w2"}));
  t2.join();
}

TEST(TCPStore, GetAndWaitTimeOutNamingTheKeys) {
  auto server = ddp::TCPStoreServer::start(0, "");
  auto s = connect_client(server->port(), 400ms);
  auto start = std::chrono::steady_clock::now();
  try {
    s->get("never");
    FAIL() << "get of a missing key returned";
  } catch (const ddp::TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("store get of 'never'"), std::string::npos) << e.what();
    EXPECT_EQ(e.exit_code(), ddp::kExitTimeout);
  }
  auto took = elapsed_ms(start);
  EXPECT_GE(took, 380);
  EXPECT_LT(took, 3000);

  s->set("present", "1");
  start = std::chrono::steady_clock::now();
  try {
    s->wait({"present", "absent"}, 300ms);
    FAIL() << "wait for a missing key returned";
  } catch (const ddp::TimeoutError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("store wait of 'present', 'absent'"), std::string::npos) << what;
    auto missing = what.find("missing: ");
    ASSERT_NE(missing, std::string::npos) << what;
    EXPECT_NE(what.find("'absent'", missing), std::string::npos) << what;
    EXPECT_EQ(what.find("'present'", missing), std::string::npos) << what;
  }
  EXPECT_LT(elapsed_ms(start), 3000);
  // The connection is still in sync after a cancelled wait.
  s->set("after", "ok");
  EXPECT_EQ(s->get_string("after"), "ok");
  EXPECT_EQ(s->add("c", 2), 2);
}

TEST(TCPStore, LostServerIsAStoreErrorNamingHostAndPort) {
  auto server = ddp::TCPStoreServer::start(0, "");
  int port = server->port();
  auto s = connect_client(port);
  s->set("k", "v");
  server->stop();
  server->stop();  // idempotent
  try {
    s->add("k2", 1);
    FAIL() << "op on a stopped server succeeded";
  } catch (const ddp::StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos) << e.what();
  }
  EXPECT_THROW(s->num_keys(), ddp::StoreError);  // stays failed, quickly
}

TEST(TCPStore, OneStoreSharedByThreads) {
  auto server = ddp::TCPStoreServer::start(0, "");
  auto s = connect_client(server->port());
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        s->add("shared", 1);
        s->set("t" + std::to_string(t), std::to_string(i));
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(s->add("shared", 0), 1600);
  EXPECT_EQ(s->get_string("t3"), "199");
}

TEST(TCPStore, ServesManyConcurrentClients) {
  constexpr int kClients = 256;
  auto server = ddp::TCPStoreServer::start(0, "");
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  std::string first_error;
  std::mutex mu;
  for (int i = 0; i < kClients; ++i)
    threads.emplace_back([&, i] {
      try {
        auto s = connect_client(server->port(), 30s);
        s->set("client/" + std::to_string(i), std::to_string(i * 7));
        s->add("joined", 1);
        // Each client reads its neighbour's key: every get blocks until that thread has set it.
        int next = (i + 1) % kClients;
        if (s->get_string("client/" + std::to_string(next)) != std::to_string(next * 7)) ++failures;
        s->wait({"client/0", "client/" + std::to_string(kClients - 1)});
        s->add("done", 1);
        s->wait({"all-done"}, 30s);  // stay connected until every client is done
      } catch (const std::exception& e) {
        ++failures;
        std::lock_guard<std::mutex> lock(mu);
        first_error = e.what();
      }
    });
  auto checker = connect_client(server->port(), 30s);
  auto start = std::chrono::steady_clock::now();
  while (checker->add("done", 0) < kClients && failures == 0 && elapsed_ms(start) < 60000)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(checker->add("joined", 0), kClients);
  checker->set("all-done", "1");
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0) << first_error;
  EXPECT_EQ(checker->num_keys(), kClients + 3);
}

TEST(PrefixStore, PrefixesEveryKey) {
  auto server = ddp::TCPStoreServer::start(0, "");
  std::shared_ptr<ddp::Store> base = connect_client(server->port(), 2s);
  ddp::PrefixStore p("group1", base);
  ddp::PrefixStore nested("inner", std::make_shared<ddp::PrefixStore>("group1", base));
  p.set("k", "v");
  EXPECT_EQ(base->get_string("group1/k"), "v");
  EXPECT_EQ(p.get_string("k"), "v");
  EXPECT_EQ(p.add("n", 3), 3);
  EXPECT_EQ(base->get_string("group1/n"), "3");
  EXPECT_EQ(p.get_string("n"), "3");
  EXPECT_EQ(bytes_text(p.compare_set("c", {}, bytes("1"))), "1");
  EXPECT_EQ(base->get_string("group1/c"), "1");
  EXPECT_TRUE(p.check({"k", "n", "c"}));
  EXPECT_FALSE(base->check({"k"}));
  p.wait({"k"});
  nested.set("x", "y");
  EXPECT_EQ(base->get_string("group1/inner/x"), "y");
  EXPECT_TRUE(p.delete_key("k"));
  EXPECT_FALSE(base->check({"group1/k"}));
  EXPECT_EQ(p.num_keys(), base->num_keys());
  p.set_timeout(200ms);
  EXPECT_THROW(p.get("missing"), ddp::TimeoutError);
  EXPECT_THROW(p.wait({"missing"}, 100ms), ddp::TimeoutError);
}

// Ranks as processes: rank 0 hosts the server on MASTER_PORT, all ranks meet through it.
DDP_TEST_WORKER(store_rendezvous) {
  int rank = ddp::testing::env_int("RANK", -1);
  int world = ddp::testing::env_int("WORLD_SIZE", -1);
  ddp::TCPStore s(ddp::TCPStoreOptions()
                      .host(ddp::testing::env_or("MASTER_ADDR", ""))
                      .port(ddp::testing::env_int("MASTER_PORT", 0))
                      .is_server(rank == 0)
                      .timeout(30s)
                      .connect_timeout(30s));
  s.set("rank/" + std::to_string(rank), std::to_string(rank * rank));
  int64_t order = s.add("joined", 1);
  if (order < 1 || order > world) return 10;
  std::vector<std::string> keys;
  for (int r = 0; r < world; ++r) keys.push_back("rank/" + std::to_string(r));
  s.wait(keys);
  for (int r = 0; r < world; ++r)
    if (s.get_string("rank/" + std::to_string(r)) != std::to_string(r * r)) return 11;
  s.set("finished/" + std::to_string(rank), "1");
  if (rank == 0) {  // the server must outlive every client
    std::vector<std::string> finished;
    for (int r = 0; r < world; ++r) finished.push_back("finished/" + std::to_string(r));
    s.wait(finished);
    if (s.add("joined", 0) != world) return 12;
  }
  return 0;
}

TEST(TCPStore, RanksAsProcessesMeetThroughRankZero) {
  auto results = ddp::testing::run_workers("store_rendezvous", 4);
  ddp::testing::expect_all_succeeded(results);
}

}  // namespace
