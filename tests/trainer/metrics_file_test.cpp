// The --metrics-file writer and the JSON and bar helpers both trainers use.
#include <ddp/errors.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "trainer/metrics_file.h"
#include "trainer/progress_line.h"
#include "util/json.h"

namespace fs = std::filesystem;
using ddp::trainer::MetricsFile;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("ddp-metrics-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST(MetricsFile, CreatesItsFolderAndAppendsOneLinePerRecord) {
  const fs::path dir = fresh_dir("create");
  const fs::path path = dir / "models" / "job" / "metrics.json";  // none of these folders exist yet
  {
    MetricsFile f(path.string());
    ASSERT_TRUE(f.enabled());
    f.append(R"({"type":"train","step":1})");
    f.append(R"({"type":"eval","step":2})");
    // Flushed as written: a run killed now keeps both lines.
    EXPECT_EQ(read_all(path), "{\"type\":\"train\",\"step\":1}\n{\"type\":\"eval\",\"step\":2}\n");
  }
  {
    MetricsFile again(path.string());  // a resumed run appends
    again.append("{}");
  }
  EXPECT_EQ(read_all(path), "{\"type\":\"train\",\"step\":1}\n{\"type\":\"eval\",\"step\":2}\n{}\n");
  fs::remove_all(dir);
}

TEST(MetricsFile, EmptyPathIsDisabled) {
  MetricsFile f("");
  EXPECT_FALSE(f.enabled());
  f.append("{}");  // no file, no error
}

TEST(MetricsFile, UnopenablePathIsAConfigErrorNamingIt) {
  const fs::path dir = fresh_dir("blocked");
  fs::create_directories(dir);
  std::ofstream(dir / "a-file") << "x";
  const std::string path = (dir / "a-file" / "metrics.json").string();  // a file where a folder should be
  try {
    MetricsFile f(path);
    ADD_FAILURE() << "opened " << path;
  } catch (const ddp::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--metrics-file '" + path + "'"), std::string::npos) << e.what();
    EXPECT_EQ(e.exit_code(), 2);
  }
  fs::remove_all(dir);
}

TEST(MetricsFile, JsonHelpers) {
  using ddp::trainer::json_number;
  using ddp::util::json_quote;
  EXPECT_EQ(json_number(0.5), "0.5");
  EXPECT_EQ(json_number(1234567.0), "1.23457e+06");
  EXPECT_EQ(json_number(std::nan("")), "null");
  EXPECT_EQ(json_number(INFINITY), "null");
  EXPECT_EQ(json_quote("ETT - Abnormal"), "\"ETT - Abnormal\"");
  EXPECT_EQ(json_quote("a\"b\\c\nd\te\x01"), "\"a\\\"b\\\\c\\nd\\te\\u0001\"");
}

TEST(ProgressLine, BarCells) {
  using ddp::trainer::bar_cells;
  EXPECT_EQ(bar_cells(0.0, 4), "[....]");
  EXPECT_EQ(bar_cells(0.5, 4), "[##..]");
  EXPECT_EQ(bar_cells(1.0, 4), "[####]");
  EXPECT_EQ(bar_cells(2.0, 4), "[####]");   // clamped
  EXPECT_EQ(bar_cells(-1.0, 4), "[....]");
  EXPECT_EQ(bar_cells(0.5).size(), 32u);    // 30 cells and the brackets
}

TEST(ProgressLine, PlainModeNeverDraws) {
  ddp::trainer::ProgressLine plain("plain");
  EXPECT_FALSE(plain.bar());
  ddp::trainer::ProgressLine bar("bar");
  EXPECT_TRUE(bar.bar());
}
