// main() of every test executable: GoogleTest, or a registered worker when started as one.
#include <gtest/gtest.h>

#include <cstdlib>

#include "support/multiprocess.h"

int main(int argc, char** argv) {
  if (const char* worker = std::getenv("DDP_TEST_WORKER")) {
    std::string name = worker;
    unsetenv("DDP_TEST_WORKER");  // processes the worker starts are not workers themselves
    return ddp::testing::run_registered_worker(name);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
