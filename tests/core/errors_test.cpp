#include <ddp/errors.h>
#include <gtest/gtest.h>

TEST(Errors, ExitCodeClasses) {
  EXPECT_EQ(ddp::exit_code_for(ddp::ConfigError("x")), 2);
  EXPECT_EQ(ddp::exit_code_for(ddp::DataError("x")), 2);
  EXPECT_EQ(ddp::exit_code_for(std::runtime_error("x")), 1);
  EXPECT_TRUE(ddp::is_retryable_exit_code(ddp::exit_code_for(ddp::PeerError("x", 0, 1))));
  EXPECT_TRUE(ddp::is_retryable_exit_code(ddp::exit_code_for(ddp::TimeoutError("x"))));
  EXPECT_TRUE(ddp::is_retryable_exit_code(ddp::exit_code_for(ddp::StoreError("x"))));
  EXPECT_FALSE(ddp::is_retryable_exit_code(ddp::exit_code_for(ddp::ConfigError("x"))));
  EXPECT_EQ(ddp::kExitTerminated, 143);
}
