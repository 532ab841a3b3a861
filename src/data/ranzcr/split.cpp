#include "data/ranzcr/split.h"

#include "data/ranzcr/random.h"

#include <ddp/errors.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <unordered_map>

namespace ddp::data::ranzcr {
namespace {

// Distinct patients in sorted order (a stable starting point for the seeded shuffle) and, for each,
// the indices of its images.
std::vector<std::pair<std::string, std::vector<int64_t>>> group_by_patient(const std::vector<Record>& records) {
  std::map<std::string, std::vector<int64_t>> groups;
  for (size_t i = 0; i < records.size(); ++i) groups[records[i].patient_id].push_back(static_cast<int64_t>(i));
  return {groups.begin(), groups.end()};
}

Split assemble(const std::vector<std::pair<std::string, std::vector<int64_t>>>& patients,
               const std::vector<bool>& is_val) {
  Split s;
  for (size_t p = 0; p < patients.size(); ++p) {
    auto& side = is_val[p] ? s.val : s.train;
    side.insert(side.end(), patients[p].second.begin(), patients[p].second.end());
  }
  std::sort(s.train.begin(), s.train.end());
  std::sort(s.val.begin(), s.val.end());
  return s;
}

}  // namespace

Split split_by_patient(const std::vector<Record>& records, double val_fraction, uint64_t seed) {
  if (!(val_fraction >= 0.0 && val_fraction < 1.0)) {
    throw ddp::ConfigError("--val-fraction must be in [0, 1), got " + std::to_string(val_fraction));
  }
  auto patients = group_by_patient(records);
  const size_t n = patients.size();
  size_t n_val = static_cast<size_t>(std::llround(val_fraction * static_cast<double>(n)));
  if (val_fraction > 0 && n_val == 0) n_val = 1;
  if (val_fraction > 0 && n_val >= n) {
    throw ddp::ConfigError("--val-fraction " + std::to_string(val_fraction) + " leaves no training patient (" +
                           std::to_string(n) + " patients in all)");
  }
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  Rng rng(seed);
  rng.shuffle(order);
  std::vector<bool> is_val(n, false);
  for (size_t i = 0; i < n_val; ++i) is_val[order[i]] = true;
  return assemble(patients, is_val);
}

Split kfold_by_patient(const std::vector<Record>& records, int folds, int fold, uint64_t seed) {
  if (folds < 2) throw ddp::ConfigError("--folds must be >= 2, got " + std::to_string(folds));
  if (fold < 0 || fold >= folds) {
    throw ddp::ConfigError("--fold must be in [0, " + std::to_string(folds) + "), got " + std::to_string(fold));
  }
  auto patients = group_by_patient(records);
  const size_t n = patients.size();
  if (n < static_cast<size_t>(folds)) {
    throw ddp::ConfigError("--folds " + std::to_string(folds) + " needs at least as many patients, found " +
                           std::to_string(n));
  }
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  Rng rng(seed);
  rng.shuffle(order);
  // Biggest patients first (stable: ties keep the shuffled order), each into the lightest fold.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return patients[a].second.size() > patients[b].second.size(); });
  std::vector<size_t> fold_images(folds, 0);
  std::vector<bool> is_val(n, false);
  for (size_t p : order) {
    const size_t lightest = static_cast<size_t>(
        std::min_element(fold_images.begin(), fold_images.end()) - fold_images.begin());
    fold_images[lightest] += patients[p].second.size();
    is_val[p] = static_cast<int>(lightest) == fold;
  }
  return assemble(patients, is_val);
}

}  // namespace ddp::data::ranzcr
