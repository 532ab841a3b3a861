#pragma once
// Train/validation splits grouped by PatientID: no patient has images on both sides.
//
//   auto split = ddp::data::ranzcr::split_by_patient(records, /*val_fraction=*/0.2, /*seed=*/1);
//   auto fold = ddp::data::ranzcr::kfold_by_patient(records, /*folds=*/5, /*fold=*/0, /*seed=*/1);
//   split.train, split.val: indices into records, ascending.

#include "data/ranzcr/records.h"

#include <cstdint>
#include <vector>

namespace ddp::data::ranzcr {

struct Split {
  std::vector<int64_t> train;
  std::vector<int64_t> val;
};

/// Shuffles the distinct patients with `seed` and puts round(val_fraction * patients) of them
/// (at least 1 when val_fraction > 0) in validation. ConfigError when val_fraction is outside
/// [0, 1) or there are too few patients for both sides to be non-empty.
Split split_by_patient(const std::vector<Record>& records, double val_fraction, uint64_t seed);

/// K folds of patients, balanced by image count (patients shuffled with `seed`, then the biggest
/// first into the fold with the fewest images); fold `fold` is validation, the rest training.
/// ConfigError when folds < 2, fold outside [0, folds) or fewer patients than folds.
Split kfold_by_patient(const std::vector<Record>& records, int folds, int fold, uint64_t seed);

}  // namespace ddp::data::ranzcr
