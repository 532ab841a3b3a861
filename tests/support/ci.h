#pragma once
// Skips that CI must not accept: the C++ side of tests/support/ci.py.
//
// A test that cannot run here for a missing privilege or tool skips on a developer's machine; with
// CI=true (set by GitHub Actions, GitLab and most CI systems) a skip would be a pass that checked
// nothing, so it fails instead, saying what is missing. Only GPU tests on a machine without a GPU
// skip in CI (they use GTEST_SKIP directly).
//
//   if (!have_ipv6_loopback()) DDP_SKIP_OR_FAIL_IN_CI("no IPv6 loopback on this machine");

#include <gtest/gtest.h>

namespace ddp::testing {

/// True when the environment variable CI is "true" or "1" (case-insensitive).
bool in_ci();

}  // namespace ddp::testing

/// Ends the test: a skip normally, a failure under CI=true; `missing` says what is missing.
#define DDP_SKIP_OR_FAIL_IN_CI(missing)                                              \
  do {                                                                              \
    if (::ddp::testing::in_ci()) GTEST_FAIL() << "CI=true, and this test cannot run here: " << missing; \
    GTEST_SKIP() << missing;                                                        \
  } while (0)
