// ROC AUC against scikit-learn's roc_auc_score on data with many ties.
#include "data/ranzcr/auc.h"
#include "data/ranzcr/random.h"
#include "support/multiprocess.h"
#include "support/subprocess.h"

#include <ddp/errors.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

using namespace ddp::data::ranzcr;

TEST(RanzcrAuc, SmallExamplesByHand) {
  // sklearn's docstring example: 0.75.
  const float s[] = {0.1f, 0.4f, 0.35f, 0.8f}, t[] = {0, 0, 1, 1};
  EXPECT_DOUBLE_EQ(*roc_auc(s, t, 4), 0.75);
  // All tied: 0.5. Perfect: 1. Inverted: 0.
  const float tied[] = {0.3f, 0.3f, 0.3f, 0.3f};
  EXPECT_DOUBLE_EQ(*roc_auc(tied, t, 4), 0.5);
  const float perfect[] = {0.1f, 0.2f, 0.8f, 0.9f}, inverted[] = {0.9f, 0.8f, 0.2f, 0.1f};
  EXPECT_DOUBLE_EQ(*roc_auc(perfect, t, 4), 1.0);
  EXPECT_DOUBLE_EQ(*roc_auc(inverted, t, 4), 0.0);
  // One tie across classes: positives {0.5, 0.9}, negatives {0.5, 0.1} -> (1 + 0.5 + 1 + 1) / 4.
  const float one_tie[] = {0.5f, 0.1f, 0.5f, 0.9f};
  const float one_tie_t[] = {0, 0, 1, 1};
  EXPECT_DOUBLE_EQ(*roc_auc(one_tie, one_tie_t, 4), 0.875);
  const float ones[] = {1, 1, 1, 1};
  EXPECT_FALSE(roc_auc(s, ones, 4).has_value());
  const float nan_scores[] = {0.1f, NAN, 0.2f, 0.3f};
  EXPECT_THROW(roc_auc(nan_scores, t, 4), ddp::DataError);
  const float bad_t[] = {0, 2, 1, 0};
  EXPECT_THROW(roc_auc(s, bad_t, 4), ddp::DataError);
  EXPECT_THROW(column_aucs({0.1f, 0.2f, 0.3f}, {0, 1, 0}, 2), ddp::DataError);
}

TEST(RanzcrAuc, MatchesScikitLearnOnDataWithTies) {
  const int n = 997, k = 11;
  Rng rng(42);
  std::vector<float> scores(n * k), targets(n * k);
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < k; ++c) {
      const float t = rng.uniform(0, 1) < 0.1 + 0.07 * c ? 1.f : 0.f;
      // Informative but noisy scores, quantised to 1/q so that many are equal (q small = more ties).
      const double q = 3 + 4 * c;
      double s = 0.5 * t + rng.uniform(0, 1) * (0.4 + 0.1 * c);
      s = std::floor(s * q) / q;
      targets[i * k + c] = t;
      scores[i * k + c] = static_cast<float>(s);
    }
  }
  for (int i = 0; i < n; ++i) targets[i * k + 3] = 0.f;     // column 3: a single class
  for (int i = 0; i < n; ++i) scores[i * k + 7] = 0.25f;    // column 7: every score tied
  const std::string dir = ddp::testing::make_temp_dir("ranzcr-auc");
  {
    std::ofstream out(dir + "/data.csv");
    char buf[32];
    for (int i = 0; i < n; ++i) {
      for (int c = 0; c < 2 * k; ++c) {
        // Print floats exactly (9 significant digits round-trip a float).
        std::snprintf(buf, sizeof buf, "%.9g", c < k ? scores[i * k + c] : targets[i * k + c - k]);
        out << (c ? "," : "") << buf;
      }
      out << "\n";
    }
  }
  ddp::testing::Subprocess py({DDP_PYTHON, std::string(DDP_SOURCE_DIR) + "/tests/ranzcr/sklearn_auc.py", dir + "/data.csv"});
  ASSERT_EQ(py.wait(std::chrono::seconds(60)), 0) << py.output();
  std::istringstream lines(py.output());
  AucReport ours = column_aucs(scores, targets, k);
  double sum = 0;
  int used = 0;
  for (int c = 0; c < k; ++c) {
    std::string line;
    ASSERT_TRUE(std::getline(lines, line)) << py.output();
    if (line == "single") {
      EXPECT_FALSE(ours.per_column[c].has_value()) << c;
      continue;
    }
    ASSERT_TRUE(ours.per_column[c].has_value()) << c;
    const double theirs = std::stod(line);
    EXPECT_NEAR(*ours.per_column[c], theirs, 1e-12) << "column " << c;
    sum += theirs;
    ++used;
  }
  EXPECT_EQ(ours.single_class, std::vector<int>{3});
  EXPECT_EQ(ours.columns_used, 10);
  EXPECT_EQ(used, 10);
  EXPECT_NEAR(ours.mean, sum / used, 1e-12);
  EXPECT_DOUBLE_EQ(*ours.per_column[7], 0.5);
}
