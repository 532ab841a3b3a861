// The one reporter both trainers use: progress lines, the timestamped metric line on stdout, the JSON
// lines of --metrics-file and of --katib-metrics-file, in the formats the trainers' tests, the docs
// and Katib's collectors rely on (tests/trainer/katib_collector_test.py parses real trainer output).
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ddp/checkpoint.h>
#include <unistd.h>

#include <filesystem>
#include <cmath>
#include <fstream>
#include <regex>
#include <string>

#include "trainer/interval_meter.h"
#include "trainer/json_record.h"
#include "trainer/reporter.h"
#include "trainer/run_eta.h"

namespace fs = std::filesystem;
using namespace ddp::trainer;

namespace {

fs::path fresh_file(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("ddp-reporter-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d / "metrics.jsonl";
}

std::string file_text(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TrainPoint point() {
  TrainPoint p;
  p.epoch = 2;
  p.epochs = 3;
  p.global_step = 40;
  p.step_in_epoch = 10;
  p.steps_in_epoch = 20;
  p.samples_in_epoch = 640;
  p.samples_per_epoch = 1280;
  p.loss = 0.5;
  p.images_per_sec = 1234.5;
  return p;
}

}  // namespace

TEST(JsonRecord, FieldsInOrderCompactWithNulls) {
  JsonRecord r;
  r.string("type", "eval").integer("step", -3).number("loss", 0.25).number("auc", std::optional<double>());
  r.numbers("per_class", std::vector<double>{1, 0.5}).numbers("column", {std::optional<double>(0.5), std::nullopt});
  r.strings("names", {"a\"b"}).number("nan", std::nan(""));
  EXPECT_EQ(r.str(), R"({"type":"eval","step":-3,"loss":0.25,"auc":null,"per_class":[1,0.5],"column":[0.5,null],)"
                     R"("names":["a\"b"],"nan":null})");
  JsonRecord head;
  head.integer("a", 1);
  EXPECT_EQ(head.append(JsonRecord()).append(JsonRecord().integer("b", 2)).str(), R"({"a":1,"b":2})");
  EXPECT_EQ(JsonRecord().str(), "{}");
}

TEST(Reporter, TrainIntervalsEvaluationsAndSummaryInTheMetricsFile) {
  const fs::path path = fresh_file("records");
  const fs::path katib = path.parent_path() / "katib.jsonl";
  std::string line;
  {
    double now = 100;
    Reporter r(ReporterOptions()
                   .enabled(true)
                   .progress("plain")
                   .metrics_file(path.string())
                   .katib_metrics_file(katib.string())
                   .clock([&now] { return now; }));
    r.start(30);
    now = 112.5;
    r.train_interval(point());
    EvalPoint e;
    e.epoch = 2;
    e.global_step = 40;
    e.katib = {{"eval_loss", 0.25}, {"accuracy", 0.875}, {"lr", 0.001, "%.6g"}};
    e.fields.number("eval_loss", 0.25).integer("total", 100);
    testing::internal::CaptureStdout();
    r.evaluation(e);
    line = testing::internal::GetCapturedStdout();
    r.summary(JsonRecord().integer("steps", 40));
  }
  // The metric line: an RFC 3339 timestamp (UTC, milliseconds) as its first word, then the pairs.
  std::smatch m;
  ASSERT_TRUE(std::regex_match(line, m, std::regex(R"((\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (.*)\n)"))) << line;
  const std::string ts = m[1];
  EXPECT_EQ(m[2].str(), "epoch=2 eval_loss=0.250000 accuracy=0.875000 lr=0.001");
  EXPECT_EQ(file_text(path),
            R"({"type":"train","step":40,"epoch":2,"train_loss":0.5,"images_per_sec":1234.5,"elapsed_s":12.5,"eta_s":null})"
            "\n"
            R"({"type":"eval","step":40,"epoch":2,"eval_loss":0.25,"total":100})"
            "\n"
            R"({"type":"summary","steps":40})"
            "\n");
  // Katib's JSON format: string values and the line's timestamp under "timestamp".
  EXPECT_EQ(file_text(katib), R"({"timestamp":")" + ts +
                                 R"(","epoch":"2","eval_loss":"0.250000","accuracy":"0.875000","lr":"0.001"})"
                                 "\n");
  fs::remove_all(path.parent_path());
}

TEST(Reporter, NonFiniteMetricsAreLeftOffTheLineAndTheKatibFileWithAWarning) {
  const fs::path path = fresh_file("nan");
  const fs::path katib = path.parent_path() / "katib.jsonl";
  std::string out, err;
  {
    Reporter r(ReporterOptions().progress("plain").metrics_file(path.string()).katib_metrics_file(katib.string()));
    EvalPoint e;
    e.epoch = 1;
    e.katib = {{"eval_loss", std::nan("")}, {"accuracy", 0.5}, {"train_loss", INFINITY}};
    e.fields.number("eval_loss", std::nan(""));
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();
    r.evaluation(e);
    out = testing::internal::GetCapturedStdout();
    err = testing::internal::GetCapturedStderr();
  }
  EXPECT_NE(out.find(" epoch=1 accuracy=0.500000\n"), std::string::npos) << out;
  EXPECT_NE(err.find("eval_loss is nan at epoch 1: left off the metric line"), std::string::npos) << err;
  EXPECT_NE(err.find("train_loss is inf at epoch 1"), std::string::npos) << err;
  const std::string k = file_text(katib);
  EXPECT_NE(k.find(R"(,"epoch":"1","accuracy":"0.500000"})"), std::string::npos) << k;
  EXPECT_EQ(k.find("eval_loss"), std::string::npos) << k;
  EXPECT_NE(file_text(path).find(R"("eval_loss":null)"), std::string::npos) << "the metrics file keeps null";
  fs::remove_all(path.parent_path());
}

TEST(Reporter, ADisabledReporterWritesNothing) {
  const fs::path path = fresh_file("disabled");
  {
    Reporter r(ReporterOptions().enabled(false).progress("bar").metrics_file(path.string()).katib_metrics_file(path.string() + ".katib"));
    EXPECT_FALSE(r.enabled());
    testing::internal::CaptureStdout();
    r.train_interval(point());
    r.evaluation(EvalPoint());
    r.summary(JsonRecord().integer("steps", 1));
    EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path.string() + ".katib"));
}

TEST(Reporter, PlainProgressLinesCountSamplesOrSteps) {
  double now = 0;
  const RunEta::Clock clock = [&now] { return now; };
  testing::internal::CaptureStderr();
  {
    Reporter r(ReporterOptions().progress("plain").clock(clock));
    now = 83;
    r.train_interval(point());
  }
  Reporter(ReporterOptions().progress("plain").count(ProgressCount::kSteps).rate_decimals(1).clock(clock))
      .train_interval(point());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("Train Epoch: 2 [640/1280 (50%)] Loss: 0.500000 (1234 images/s) elapsed 1:23 eta ?\n"),
            std::string::npos) << err;
  EXPECT_NE(err.find("Train Epoch: 2 [10/20 (50%)] Loss: 0.500000 (1234.5 images/s) elapsed 0:00 eta ?\n"),
            std::string::npos) << err;
}

// Elapsed from start(), the ETA from the mean rate since the first point, on the line (bar and plain)
// and in the train records; --max-steps shortens the run.
TEST(Reporter, ElapsedAndEtaOnTheLinesAndInTheRecords) {
  const fs::path path = fresh_file("eta");
  double now = 0;
  std::string err;
  {
    Reporter r(ReporterOptions().progress("bar").metrics_file(path.string()).clock([&now] { return now; }));
    now = 1000;
    r.start(30);
    TrainPoint p = point();  // epoch 2 of 3, step 10 of 20: 30 steps left
    p.global_step = 30;
    testing::internal::CaptureStderr();
    now = 1010;
    r.train_interval(p);  // the first point: no rate yet
    p.global_step = 40;
    p.step_in_epoch = 20;  // 20 steps left
    now = 1015;            // 10 steps in 5 s since the first point: 10 s left
    r.train_interval(p);
    err = testing::internal::GetCapturedStderr();
  }
  EXPECT_NE(err.find("images/s elapsed 0:10 eta ?  "), std::string::npos) << err;
  EXPECT_NE(err.find("images/s elapsed 0:15 eta 0:10  "), std::string::npos) << err;
  const std::string records = file_text(path);
  EXPECT_NE(records.find(R"("step":30,"epoch":2,"train_loss":0.5,"images_per_sec":1234.5,)"
                         R"("elapsed_s":10,"eta_s":null})"),
            std::string::npos)
      << records;
  EXPECT_NE(records.find(R"("step":40,"epoch":2,"train_loss":0.5,"images_per_sec":1234.5,)"
                         R"("elapsed_s":15,"eta_s":10})"),
            std::string::npos)
      << records;
  fs::remove_all(path.parent_path());
  // --max-steps 45: 5 steps left, not 20.
  now = 0;
  Reporter capped(ReporterOptions().progress("plain").max_steps(45).clock([&now] { return now; }));
  TrainPoint p = point();
  p.global_step = 30;
  testing::internal::CaptureStderr();
  now = 10;
  capped.train_interval(p);
  p.global_step = 40;
  now = 20;  // 10 steps in 10 s
  capped.train_interval(p);
  err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("elapsed 0:20 eta 0:05\n"), std::string::npos) << err;
}

TEST(RunEta, MeanRateSinceTheFirstPoint) {
  double now = 50;
  RunEta eta([&now] { return now; });
  now = 100;
  eta.start();
  now = 130;  // a slow first interval (start-up): not part of the rate
  RunTime t = eta.at(/*global_step=*/10, /*steps_left=*/90);
  EXPECT_DOUBLE_EQ(t.elapsed_s, 30);
  EXPECT_FALSE(t.eta_s) << "one point has no rate";
  now = 135;  // 10 steps in 5 s
  t = eta.at(20, 80);
  EXPECT_DOUBLE_EQ(t.elapsed_s, 35);
  ASSERT_TRUE(t.eta_s);
  EXPECT_DOUBLE_EQ(*t.eta_s, 40);
  now = 155;  // a slow interval: 10 steps in 20 s; the mean since the first point is 20 in 25 s
  t = eta.at(30, 70);
  ASSERT_TRUE(t.eta_s);
  EXPECT_DOUBLE_EQ(*t.eta_s, 87.5) << "the last interval's rate alone would say 140";
  EXPECT_DOUBLE_EQ(*eta.at(30, 0).eta_s, 0) << "nothing left";
  // A resume: elapsed and the rate start again.
  now = 1000;
  eta.start();
  now = 1001;
  t = eta.at(31, 69);
  EXPECT_DOUBLE_EQ(t.elapsed_s, 1);
  EXPECT_FALSE(t.eta_s) << "the first point after start() again";
  now = 1002;
  EXPECT_FALSE(eta.at(31, 69).eta_s) << "no step since the first point: no rate";
}

TEST(RunEta, DurationsAsMinutesOrHours) {
  EXPECT_EQ(format_duration(0), "0:00");
  EXPECT_EQ(format_duration(5), "0:05");
  EXPECT_EQ(format_duration(83), "1:23");
  EXPECT_EQ(format_duration(296.4), "4:56");
  EXPECT_EQ(format_duration(59.6), "1:00");  // rounded, carried into the minutes
  EXPECT_EQ(format_duration(3599.4), "59:59");
  EXPECT_EQ(format_duration(3599.5), "1:00:00");
  EXPECT_EQ(format_duration(3723), "1:02:03");
  EXPECT_EQ(format_duration(100 * 3600 + 61), "100:01:01");
  EXPECT_EQ(format_duration(-3), "0:00");
  EXPECT_EQ(format_duration(INFINITY), "?");
  EXPECT_EQ(format_duration(std::nan("")), "?");
}

TEST(TrainPoint, StepsLeftToTheLastEpochOrToMaxSteps) {
  TrainPoint p = point();  // epoch 2 of 3, step 10 of 20, global step 40
  EXPECT_EQ(steps_left(p, 0), 10 + 20);
  EXPECT_EQ(steps_left(p, 1000), 30) << "a --max-steps beyond the epochs changes nothing";
  EXPECT_EQ(steps_left(p, 45), 5);
  EXPECT_EQ(steps_left(p, 40), 0);
  p.epoch = 3;
  p.step_in_epoch = 20;
  EXPECT_EQ(steps_left(p, 0), 0);
}

TEST(IntervalMeter, MeanLossOverTheIntervalThenStartsAgain) {
  IntervalMeter meter(at::TensorOptions().dtype(at::kDouble));
  meter.add(at::scalar_tensor(1.0), 8);
  meter.add(at::scalar_tensor(2.0, at::kFloat), 8);  // converted to the sum's dtype
  TrainPoint p = meter.take(point(), /*world_size=*/2);
  EXPECT_DOUBLE_EQ(p.loss, 1.5);
  EXPECT_GT(p.images_per_sec, 0);
  EXPECT_EQ(p.global_step, 40) << "the rest of the point is kept";
  meter.add(at::scalar_tensor(4.0), 8);
  EXPECT_DOUBLE_EQ(meter.take(point(), 2).loss, 4.0);
}

TEST(TrainPoint, ComesFromTheProgressAndTheEpochShape) {
  ddp::TrainingProgress progress;
  progress.epoch = 2;  // 0-based: the third epoch
  progress.global_step = 25;
  progress.step_in_epoch = 5;
  progress.samples_in_epoch = 320;
  const TrainPoint p = train_point(progress, /*epochs=*/4, /*steps_in_epoch=*/10, /*samples_per_epoch=*/640);
  EXPECT_EQ(p.epoch, 3);  // 1-based, as printed
  EXPECT_EQ(p.epochs, 4);
  EXPECT_EQ(p.global_step, 25);
  EXPECT_EQ(p.step_in_epoch, 5);
  EXPECT_EQ(p.steps_in_epoch, 10);
  EXPECT_EQ(p.samples_in_epoch, 320);
  EXPECT_EQ(p.samples_per_epoch, 640);
  EXPECT_EQ(p.loss, 0.0);  // the interval's: IntervalMeter::take fills it
}
