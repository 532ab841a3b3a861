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
