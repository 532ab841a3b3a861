#pragma once
// ROC AUC per label column and their mean: the RANZCR CLiP (Kaggle) metric.
//
//   auto report = ddp::data::ranzcr::column_aucs(probabilities, targets, /*columns=*/11);
//   report.mean;               // mean over the columns that have both classes
//   report.single_class;       // columns left out of the mean (only 0s or only 1s in targets)
//
// AUC here is the probability that a random positive scores above a random negative, ties
// counting one half: exactly scikit-learn's roc_auc_score (trapezoidal ROC area) on the same data.

#include <optional>
#include <string>
#include <vector>

namespace ddp::data::ranzcr {

/// AUC of `n` scores against 0/1 targets read with a stride (column c of a row-major [n, k]
/// matrix: base + c, stride k). nullopt when the targets hold a single class. DataError on a
/// non-finite score (a diverged model) or a target other than 0/1.
std::optional<double> roc_auc(const float* scores, const float* targets, size_t n, size_t stride = 1);

struct AucReport {
  std::vector<std::optional<double>> per_column;  ///< nullopt: single class, excluded from the mean
  std::vector<int> single_class;                  ///< indices of those columns
  double mean = 0.0;                              ///< NaN when no column has both classes
  int columns_used = 0;
};

/// `probabilities` and `targets` are row-major [n, columns].
AucReport column_aucs(const std::vector<float>& probabilities, const std::vector<float>& targets, int columns);

}  // namespace ddp::data::ranzcr
