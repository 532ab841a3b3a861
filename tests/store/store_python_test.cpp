// Wire compatibility with PyTorch's c10d TCPStore, both directions, through /usr/bin/python3
// (Debian 12's python3-torch 1.13; Debian 13's 2.6 in the trixie suite; pip's torch on the GPU
// check, whose server is the libuv one). These tests fail, not skip, when torch cannot be imported.
#include <ddp/errors.h>
#include <ddp/store.h>
#include <gtest/gtest.h>

#include <iostream>
#include <regex>
#include <thread>

#include "store_test_util.h"
#include "support/subprocess.h"

using namespace std::chrono_literals;
using ddp::testing::bytes_text;
using ddp::testing::Subprocess;

namespace {

const std::string kScripts = std::string(DDP_SOURCE_DIR) + "/tests/store/python/";

/// The scripts exit 3 with PYTHON_TORCH_MISSING when torch cannot be imported: say so loudly.
void expect_script_ok(Subprocess& p, int status) {
  std::string out = p.output();
  ASSERT_EQ(out.find("PYTHON_TORCH_MISSING"), std::string::npos)
      << "these tests need PyTorch importable from " << DDP_PYTHON << ":\n" << out;
  EXPECT_EQ(status, 0) << out;
}

/// Waits for the script to print "PORT <n>"; returns n (0 when it exited or took too long).
int wait_for_port(Subprocess& p, std::chrono::seconds timeout) {
  std::regex re("PORT ([0-9]+)");
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch m;
    std::string out = p.output();
    if (std::regex_search(out, m, re)) return std::stoi(m[1]);
    if (!p.running()) return 0;
    std::this_thread::sleep_for(50ms);
  }
  return 0;
}

ddp::Store::Bytes bytes(std::initializer_list<uint8_t> b) { return ddp::Store::Bytes(b); }

// (a) PyTorch hosts the store; our client does every op and PyTorch checks what it wrote.
TEST(PythonInterop, OurClientAgainstPyTorchServer) {
  Subprocess py({DDP_PYTHON, kScripts + "c10d_server.py"});
  int port = wait_for_port(py, 90s);
  if (port == 0) expect_script_ok(py, py.wait(10s));
  ASSERT_GT(port, 0) << "python server did not start:\n" << py.output();
  {
    // Which PyTorch and which of its servers (classic, or libuv on torch >= 2.4 built with it).
    std::smatch m;
    const std::string banner = py.output();
    if (std::regex_search(banner, m, std::regex("torch (\\S+) server (\\S+)"))) {
      RecordProperty("torch", m[1].str());
      RecordProperty("c10d_server", m[2].str());
      std::cout << "c10d TCPStore server: torch " << m[1] << ", " << m[2] << " backend" << std::endl;
    }
  }

  auto s = ddp::testing::connect_client(port, 10s);
  EXPECT_EQ(s->get_string("py/hello"), "from python");
  EXPECT_EQ(s->get("py/bytes"), bytes({0, 1, 2, 255}));
  EXPECT_EQ(s->add("py/counter", 5), 15);
  s->set("cpp/set", "from c++");
  s->set("cpp/binary", bytes({0, 200, 0, 7}));
  EXPECT_EQ(s->add("cpp/counter", 40), 40);
  EXPECT_EQ(s->add("cpp/counter", 2), 42);
  EXPECT_EQ(bytes_text(s->compare_set("cpp/cas", {}, {'f', 'i', 'r', 's', 't'})), "first");
  EXPECT_EQ(bytes_text(s->compare_set("cpp/cas", {'x'}, {'y'})), "first");
  EXPECT_EQ(bytes_text(s->compare_set("cpp/cas", {'f', 'i', 'r', 's', 't'}, {'s', 'e', 'c', 'o', 'n', 'd'})), "second");
  EXPECT_EQ(bytes_text(s->compare_set("cpp/missing", {'e'}, {'d'})), "e");
  EXPECT_TRUE(s->check({"py/hello", "cpp/set"}));
  EXPECT_FALSE(s->check({"cpp/missing"}));
  s->wait({"py/hello", "cpp/counter"}, 2s);
  s->set("cpp/deleted", "x");
  EXPECT_TRUE(s->delete_key("cpp/deleted"));
  EXPECT_FALSE(s->delete_key("cpp/deleted"));
  EXPECT_EQ(s->num_keys(), 7);  // py/hello py/bytes py/counter cpp/set cpp/binary cpp/counter cpp/cas

  // Timeouts against a 1.13 server (no CANCEL_WAIT there): the client drops the connection and
  // reconnects on the next call.
  s->set_timeout(300ms);
  EXPECT_THROW(s->get("never"), ddp::TimeoutError);
  EXPECT_THROW(s->wait({"never", "py/hello"}, 200ms), ddp::TimeoutError);
  s->set_timeout(10s);
  s->set("cpp/after-timeout", "still works");

  std::shared_ptr<ddp::Store> shared(std::move(s));
  ddp::PrefixStore prefixed("group", shared);
  prefixed.set("inner", "prefixed");

  shared->set("cpp/done", "1");
  expect_script_ok(py, py.wait(60s));
}

// (b) We host the store; PyTorch's client does every op and checks what we wrote, and we check
// what it wrote.
TEST(PythonInterop, PyTorchClientAgainstOurServer) {
  auto server = ddp::TCPStoreServer::start(0, "");
  auto s = ddp::testing::connect_client(server->port(), 60s);
  s->set("cpp/hello", "from c++");
  s->set("cpp/bytes", bytes({255, 0, 9}));
  EXPECT_EQ(s->add("cpp/counter", 7), 7);

  Subprocess py({DDP_PYTHON, kScripts + "c10d_client.py", std::to_string(server->port())});
  // The script parks in get("cpp/late") after announcing itself: answer it.
  auto start = std::chrono::steady_clock::now();
  while (!s->check({"py/waiting"}) && py.running() && ddp::testing::elapsed_ms(start) < 90000)
    std::this_thread::sleep_for(20ms);
  if (!s->check({"py/waiting"})) {
    expect_script_ok(py, py.wait(10s));
    FAIL() << "the python client never reached its blocking get:\n" << py.output();
  }
  s->set("cpp/late", "late value");
  expect_script_ok(py, py.wait(90s));
  if (HasFatalFailure() || HasNonfatalFailure()) return;

  EXPECT_EQ(s->get_string("py/set"), "from python");
  EXPECT_EQ(s->get("py/binary"), bytes({1, 0, 254}));
  EXPECT_EQ(s->get_string("cpp/counter"), "10");
  EXPECT_EQ(s->add("py/counter", 0), -4);
  EXPECT_EQ(s->get_string("py/cas"), "second");
  EXPECT_FALSE(s->check({"py/absent", "py/to-delete"}));
  EXPECT_EQ(s->get_string("py/done"), "1");
}

}  // namespace
