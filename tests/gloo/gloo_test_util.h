#pragma once
// Shared helpers for the Gloo process-group tests: how workers reach the store, build a group,
// make rank-dependent data and check results exactly.

#include <ddp/process_group.h>
#include <ddp/process_group_gloo.h>
#include <ddp/store.h>

#include <ATen/ATen.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

#include "support/multiprocess.h"

namespace ddp::testing {

/// This worker's RANK and WORLD_SIZE as the multiprocess harness set them (0 and 1 outside a worker).
int rank();
int world();

bool contains(const std::string& text, const std::string& part);

/// Worker options for a gloo test.
WorkerOptions gloo_worker_options();

/// A TCP store on MASTER_ADDR:MASTER_PORT (default 127.0.0.1), hosted by rank 0.
std::shared_ptr<Store> worker_store();

/// A gloo group over loopback for this worker (RANK / WORLD_SIZE from the environment).
std::shared_ptr<ProcessGroup> make_test_group(std::chrono::milliseconds timeout = std::chrono::seconds(60));
/// Another group on an existing store (rank 0 hosts one server per port), with `options` (bound to loopback
/// unless GLOO_SOCKET_IFNAME / DDP_SOCKET_IFNAME name an interface).
std::shared_ptr<ProcessGroup> make_test_group(std::shared_ptr<Store> store, GlooOptions options);

/// Element i of rank r's data: (r + 1) * (i % 7 + 1), as `dtype`, shaped `sizes`.
at::Tensor rank_pattern(int rank, at::IntArrayRef sizes, at::ScalarType dtype);
/// The pattern with multiplier `scale` (double, before conversion).
at::Tensor pattern(double scale, at::IntArrayRef sizes, at::ScalarType dtype);

/// Throws std::runtime_error with `what` when `ok` is false (a worker then exits non-zero).
void check(bool ok, const std::string& what);
/// Exact equality (dtype, shape and values); the message names `what` and the first mismatch.
void check_equal(const at::Tensor& actual, const at::Tensor& expected, const std::string& what);

double seconds_since(std::chrono::steady_clock::time_point t0);

/// A clock reading through a file, for comparing times across processes: steady_clock is
/// CLOCK_MONOTONIC, one clock for every process on the machine.
void write_time(const std::string& path);
std::chrono::steady_clock::time_point read_time(const std::string& path);

}  // namespace ddp::testing
