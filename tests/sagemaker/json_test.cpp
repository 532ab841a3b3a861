// util/json.h: the one strict JSON reader (SageMaker's config files, SM_HOSTS).
#include <gtest/gtest.h>

#include <ddp/errors.h>

#include <string>

#include "util/json.h"

namespace {

using ddp::util::JsonValue;
using ddp::util::parse_json;
using Kind = JsonValue::Kind;

std::string error_of(const std::string& text, ddp::util::JsonLimits limits = {}) {
  try {
    parse_json(text, "doc.json", limits);
  } catch (const ddp::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Json, ReadsEveryKind) {
  const JsonValue v = parse_json(R"( {"a": [1, -2.5e3, 0], "b": true, "c": false, "d": null, "e": "x\"y\\z\/\n"} )", "t");
  ASSERT_TRUE(v.is(Kind::kObject));
  ASSERT_EQ(v.members().size(), 5u);
  const JsonValue& a = v.at("a", "t");
  ASSERT_EQ(a.array_items().size(), 3u);
  EXPECT_EQ(a.array_items()[1].text(), "-2.5e3");  // numbers keep their source text
  EXPECT_TRUE(v.at("b", "t").bool_value());
  EXPECT_FALSE(v.at("c", "t").bool_value());
  EXPECT_TRUE(v.at("d", "t").is(Kind::kNull));
  EXPECT_EQ(v.at("e", "t").string_value("e"), "x\"y\\z/\n");
  EXPECT_EQ(v.find("zz"), nullptr);
  EXPECT_EQ(v.members()[0].first, "a");  // file order
}

TEST(Json, DecodesUnicodeEscapesAndKeepsUtf8) {
  EXPECT_EQ(parse_json(R"("\u0041\u00e9\u20ac\ud83d\ude00")", "t").text(), "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  EXPECT_EQ(parse_json("\"\xc3\xa9\"", "t").text(), "\xc3\xa9");
}

TEST(Json, QuoteRoundTrips) {
  const std::string s = std::string("a\"b\\c\n\x01 d\xc3\xa9", 12);
  EXPECT_EQ(parse_json(ddp::util::json_quote(s), "t").text(), s);
  EXPECT_EQ(ddp::util::json_quote("algo-1"), "\"algo-1\"");
}

struct Bad {
  const char* text;
  const char* offset;  // "at offset N"
  const char* why;
};

// GoogleTest would print a Bad as its bytes (two pointers), which ctest's discovery puts in the
// test names: a name that changed with every build.
void PrintTo(const Bad& b, std::ostream* os) { *os << ::testing::PrintToString(std::string(b.text)); }

class JsonBad : public ::testing::TestWithParam<Bad> {};

TEST_P(JsonBad, NamesTheSourceTheOffsetAndTheReason) {
  const std::string msg = error_of(GetParam().text);
  EXPECT_NE(msg.find("doc.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::string("at offset ") + GetParam().offset + ":"), std::string::npos) << msg;
  EXPECT_NE(msg.find(GetParam().why), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(
    Table, JsonBad,
    ::testing::Values(Bad{"", "0", "unexpected end"}, Bad{"{\"a\":1,}", "7", "member name"},
                      Bad{"[1,]", "3", "expected a value"}, Bad{"{\"a\":1 \"b\":2}", "7", "expected ','"},
                      Bad{"{\"a\":1,\"a\":2}", "7", "duplicate member name \"a\""}, Bad{"01", "1", "leading zero"},
                      Bad{"1.", "2", "digit after '.'"}, Bad{"-", "1", "ends after '-'"}, Bad{"NaN", "0", "expected a value"},
                      Bad{"\"abc", "4", "unterminated string"}, Bad{"\"a\nb\"", "2", "control byte"},
                      Bad{"\"\\x\"", "2", "unknown escape"}, Bad{"\"\\u12g4\"", "5", "four hex digits"},
                      Bad{"\"\\udc00\"", "7", "lone low surrogate"}, Bad{"\"\\ud800x\"", "7", "high surrogate"},
                      Bad{"\"\xff\"", "1", "invalid UTF-8"}, Bad{"\"\xc0\xaf\"", "1", "invalid UTF-8"},
                      Bad{"\"\xed\xa0\x80\"", "1", "invalid UTF-8"}, Bad{"[1] 2", "4", "after the document"},
                      Bad{"// c\n{}", "0", "expected a value"}, Bad{"tru", "0", "expected a value"}));

TEST(Json, RefusesDeepNestingAndLargeDocuments) {
  std::string deep(65, '[');
  deep += std::string(65, ']');
  EXPECT_NE(error_of(deep).find("nested deeper than 64"), std::string::npos);
  std::string ok(64, '[');
  ok += std::string(64, ']');
  EXPECT_EQ(error_of(ok), "");
  EXPECT_NE(error_of(std::string(100, ' ') + "1", ddp::util::JsonLimits{50, 8}).find("more than the 50"),
            std::string::npos);
  // A million brackets: refused by the depth limit, not by the stack.
  EXPECT_NE(error_of(std::string(1000000, '[')).find("nested deeper"), std::string::npos);
}

TEST(Json, TypedAccessorsNameWhatIsWrong) {
  const JsonValue v = parse_json(R"({"n": 1})", "t");
  try {
    v.at("n", "cfg").string_value("cfg: n");
    FAIL();
  } catch (const ddp::ConfigError& e) {
    EXPECT_STREQ(e.what(), "cfg: n is a number, not a string");
  }
  try {
    v.at("missing", "cfg");
    FAIL();
  } catch (const ddp::ConfigError& e) {
    EXPECT_STREQ(e.what(), "cfg: \"missing\" is missing");
  }
}

}  // namespace
