// gather_rows: ranks with different numbers of rows (0 included) all receive every row, in rank order.
#include "data/ranzcr/gather.h"
#include "support/multiprocess.h"

#include <ddp/init.h>
#include <ddp/process_group.h>
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <iostream>

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
}  // namespace

DDP_TEST_WORKER(gather_unequal_rows) {
  auto pg = ddp::init_process_group(ddp::InitOptions().backend("gloo").device(c10::Device(c10::kCPU)));
  for (auto dtype : {at::kFloat, at::kLong}) {
    at::Tensor all = ddp::ranzcr::gather_rows(*pg, rows_for(pg->rank(), dtype));
    std::vector<at::Tensor> parts;
    for (int r = 0; r < pg->size(); ++r) parts.push_back(rows_for(r, dtype));
    at::Tensor expected = at::cat(parts, 0);
    if (!at::equal(all, expected)) {
      std::cerr << "rank " << pg->rank() << " got\n" << all << "\nexpected\n" << expected << std::endl;
      return 1;
    }
  }
  // Nobody has a row: an empty result, no hang.
  at::Tensor none = ddp::ranzcr::gather_rows(*pg, at::zeros({0, 4}));
  if (none.size(0) != 0) return 1;
  return 0;
}

TEST(RanzcrGather, UnequalRowCountsAcrossThreeRanks) {
  auto results = ddp::testing::run_workers("gather_unequal_rows", 3);
  ddp::testing::expect_all_succeeded(results);
}
