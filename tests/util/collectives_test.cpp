// The small collectives on real ranks over loopback (Gloo): the variable-length allgather with
// unequal row counts (0 included), bytes of different lengths, and the int64 helpers.
#include <ddp/init.h>
#include <ddp/process_group.h>
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <iostream>
#include <string>

#include "support/multiprocess.h"
#include "util/collectives.h"

namespace {

// Rank r holds rows_of(r) rows; row i of rank r is [r, i, r * 100 + i].
int64_t rows_of(int rank) { return rank == 1 ? 0 : 2 + 3 * rank; }

at::Tensor rows_for(int rank, at::ScalarType dtype) {
  at::Tensor t = at::empty({rows_of(rank), 3}, at::kDouble);
  for (int64_t i = 0; i < rows_of(rank); ++i) {
    t[i][0] = rank;
    t[i][1] = static_cast<double>(i);
    t[i][2] = rank * 100.0 + static_cast<double>(i);
  }
  return t.to(dtype);
}

// Rank r's bytes: r copies of 'a' + r, with a NUL in the middle for r >= 2 (bytes, not C strings).
std::string bytes_of(int rank) {
  std::string s(static_cast<size_t>(rank), static_cast<char>('a' + rank));
  if (rank >= 2) s[1] = '\0';
  return s;
}

int fail(const std::string& what) {
  std::cerr << what << std::endl;
  return 1;
}

}  // namespace

DDP_TEST_WORKER(util_collectives) {
  auto pg = ddp::init_process_group(ddp::InitOptions().backend("gloo").device(c10::Device(c10::kCPU)));
  const int me = pg->rank(), world = pg->size();
  for (auto dtype : {at::kFloat, at::kLong, at::kByte}) {
    at::Tensor all = ddp::util::allgather_rows(*pg, rows_for(me, dtype));
    std::vector<at::Tensor> parts;
    for (int r = 0; r < world; ++r) parts.push_back(rows_for(r, dtype));
    if (!at::equal(all, at::cat(parts, 0))) return fail("rank " + std::to_string(me) + ": wrong rows");
    auto by_rank = ddp::util::allgather_rows_by_rank(*pg, rows_for(me, dtype));
    for (int r = 0; r < world; ++r)
      if (!at::equal(by_rank[static_cast<size_t>(r)], parts[static_cast<size_t>(r)])) return fail("rows of rank " + std::to_string(r));
  }
  // Nobody has a row: an empty result of the right shape, no hang.
  at::Tensor none = ddp::util::allgather_rows(*pg, at::zeros({0, 4}));
  if (none.size(0) != 0 || none.size(1) != 4) return fail("empty rows");

  const auto bytes = ddp::util::allgather_bytes(*pg, bytes_of(me));
  if (static_cast<int>(bytes.size()) != world) return fail("bytes: count");
  for (int r = 0; r < world; ++r)
    if (bytes[static_cast<size_t>(r)] != bytes_of(r)) return fail("bytes of rank " + std::to_string(r));
  const auto empty = ddp::util::allgather_bytes(*pg, "");
  for (const auto& e : empty)
    if (!e.empty()) return fail("empty bytes");

  const auto ints = ddp::util::allgather_int64(*pg, 1000 + me);
  for (int r = 0; r < world; ++r)
    if (ints[static_cast<size_t>(r)] != 1000 + r) return fail("allgather_int64");
  if (ddp::util::broadcast_int64(*pg, me == 2 ? 77 : -1, /*root=*/2) != 77) return fail("broadcast_int64");
  if (ddp::util::allreduce_max_int64(*pg, me == 1 ? 5 : -3) != 5) return fail("allreduce_max_int64");
  return 0;
}

TEST(UtilCollectives, VariableLengthAllgatherAndSmallCollectivesOnThreeRanks) {
  auto results = ddp::testing::run_workers("util_collectives", 3);
  ddp::testing::expect_all_succeeded(results);
}
