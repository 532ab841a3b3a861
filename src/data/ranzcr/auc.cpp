#include "data/ranzcr/auc.h"

#include <ddp/errors.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

namespace ddp::data::ranzcr {

std::optional<double> roc_auc(const float* scores, const float* targets, size_t n, size_t stride) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  for (size_t i = 0; i < n; ++i) {
    const float s = scores[i * stride], t = targets[i * stride];
    if (!std::isfinite(s)) {
      throw ddp::DataError("AUC: prediction " + std::to_string(i) + " is " + std::to_string(s) +
                           " (did training diverge?)");
    }
    if (t != 0.f && t != 1.f) {
      throw ddp::DataError("AUC: target " + std::to_string(i) + " is " + std::to_string(t) + ", expected 0 or 1");
    }
  }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return scores[a * stride] < scores[b * stride]; });
  // Walk groups of equal scores from the lowest: each positive beats every negative below its group
  // and half of the negatives inside it.
  double wins = 0.0;
  int64_t negatives_below = 0, positives = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    int64_t pos = 0, neg = 0;
    const float s = scores[order[i] * stride];
    for (; j < n && scores[order[j] * stride] == s; ++j) (targets[order[j] * stride] == 1.f ? pos : neg)++;
    wins += static_cast<double>(pos) * (static_cast<double>(negatives_below) + 0.5 * static_cast<double>(neg));
    negatives_below += neg;
    positives += pos;
    i = j;
  }
  if (positives == 0 || negatives_below == 0) return std::nullopt;
  return wins / (static_cast<double>(positives) * static_cast<double>(negatives_below));
}

AucReport column_aucs(const std::vector<float>& probabilities, const std::vector<float>& targets, int columns) {
  if (columns <= 0 || probabilities.size() != targets.size() || probabilities.size() % columns != 0) {
    throw ddp::DataError("AUC: " + std::to_string(probabilities.size()) + " predictions and " +
                         std::to_string(targets.size()) + " targets do not form rows of " +
                         std::to_string(columns) + " columns");
  }
  const size_t n = probabilities.size() / columns;
  AucReport r;
  double sum = 0.0;
  for (int c = 0; c < columns; ++c) {
    auto auc = roc_auc(probabilities.data() + c, targets.data() + c, n, static_cast<size_t>(columns));
    r.per_column.push_back(auc);
    if (auc) {
      sum += *auc;
      ++r.columns_used;
    } else {
      r.single_class.push_back(c);
    }
  }
  r.mean = r.columns_used ? sum / r.columns_used : std::numeric_limits<double>::quiet_NaN();
  return r;
}

}  // namespace ddp::data::ranzcr
