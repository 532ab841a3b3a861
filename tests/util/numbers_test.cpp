#include <ddp/errors.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "util/numbers.h"

using ddp::util::parse_int;
using ddp::util::to_int;

namespace {

std::string config_error(const std::string& text, long long lo, long long hi) {
  try {
    parse_int("THING", text, lo, hi);
  } catch (const ddp::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Numbers, WholeDecimalIntegersInRange) {
  EXPECT_EQ(parse_int("X", "42", 0, 100), 42);
  EXPECT_EQ(parse_int("X", "-7", -10, 10), -7);
  EXPECT_EQ(parse_int("X", "+7", 0, 10), 7);
  EXPECT_EQ(parse_int("X", " 8\t\n", 0, 10), 8);  // YAML values carry blanks sometimes
  EXPECT_EQ(parse_int("X", "9223372036854775807", 0, std::numeric_limits<long long>::max()),
            std::numeric_limits<long long>::max());
  EXPECT_EQ(to_int("0", 0, 0), 0);
}

TEST(Numbers, EverythingElseIsRefusedWithTheNameAndValue) {
  EXPECT_EQ(config_error("", 0, 10), "THING='' is empty; expected an integer");
  EXPECT_EQ(config_error("  ", 0, 10), "THING='  ' is empty; expected an integer");
  for (const char* bad : {"12abc", "abc", "1.5", "0x10", "1e3", "- 5", "5 5", "-", "99999999999999999999"})
    EXPECT_EQ(config_error(bad, -100, 100), std::string("THING='") + bad + "' is not an integer") << bad;
  EXPECT_EQ(config_error("101", -100, 100), "THING='101' is out of range: expected -100..100");
  EXPECT_EQ(config_error("-101", -100, 100), "THING='-101' is out of range: expected -100..100");
  EXPECT_EQ(to_int("12abc", 0, 100), std::nullopt);
  EXPECT_EQ(to_int("101", 0, 100), std::nullopt);
  EXPECT_EQ(to_int("", 0, 100), std::nullopt);
}

namespace {

std::string real_error(const std::string& text, double lo, double hi) {
  try {
    ddp::util::parse_real("--lr", text, lo, hi);
  } catch (const ddp::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Numbers, WholeFiniteRealsInRange) {
  using ddp::util::parse_real;
  EXPECT_DOUBLE_EQ(parse_real("--lr", "1e-3", 0, 1), 1e-3);
  EXPECT_DOUBLE_EQ(parse_real("--lr", " 0.5 ", 0, 1), 0.5);
  EXPECT_DOUBLE_EQ(parse_real("--lr", "-2", -2, 0), -2.0);  // bounds are inclusive
  EXPECT_DOUBLE_EQ(parse_real("--lr", "7", 0, 10), 7.0);
  EXPECT_EQ(ddp::util::to_real("3.25"), 3.25);
}

TEST(Numbers, RealsRefusedWithTheNameAndValue) {
  for (const char* bad : {"", " ", "fast", "1.5x", "nan", "inf", "-inf", "0x1p3", "1e999", "1,5"})
    EXPECT_EQ(real_error(bad, -1e9, 1e9), std::string("--lr='") + bad + "' is not a number") << bad;
  EXPECT_EQ(real_error("2", 0, 1), "--lr='2' is out of range: expected 0..1");
  EXPECT_EQ(real_error("-0.5", 0, 1e6), "--lr='-0.5' is out of range: expected 0..1e+06");
  EXPECT_EQ(ddp::util::to_real("nan"), std::nullopt);
}
