// The TORCHELASTIC_ERROR_FILE record (src/util/error_file.h): written as torch's @record writes it,
// read in both shapes torch's ProcessFailure reads, bad records refused with their file named.
// Whether torch itself reads what we write is tests/launcher/error_file_torch_test.py.
#include "util/error_file.h"

#include <ddp/errors.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/multiprocess.h"

using ddp::util::ErrorRecord;
using ddp::util::error_record_json;
using ddp::util::parse_error_file;

TEST(ErrorFile, WritesTorchsShapeAndReadsItBack) {
  ErrorRecord r;
  r.message = "ddp::ConfigError: --lr: 'x' is not a number";
  r.callstack = "line one\nline \"two\"";
  r.timestamp = 1765050000;
  EXPECT_EQ(error_record_json(r),
            "{\"message\": {\"message\": \"ddp::ConfigError: --lr: 'x' is not a number\", \"extraInfo\": "
            "{\"py_callstack\": \"line one\\nline \\\"two\\\"\", \"timestamp\": \"1765050000\"}}}");
  ErrorRecord back = parse_error_file(error_record_json(r), "e.json");
  EXPECT_EQ(back.message, r.message);
  EXPECT_EQ(back.callstack, r.callstack);
  EXPECT_EQ(back.timestamp, r.timestamp);
  EXPECT_FALSE(back.error_code);
  EXPECT_FALSE(back.old_shape);
  r.error_code = 137;
  EXPECT_NE(error_record_json(r).find(", \"errorCode\": 137}}"), std::string::npos) << error_record_json(r);
  EXPECT_EQ(parse_error_file(error_record_json(r), "e.json").error_code, 137);
}

// Python's json.load reads UTF-8 only: stray bytes in a message must not make the record unreadable.
TEST(ErrorFile, BytesThatAreNotUtf8AreReplaced) {
  ErrorRecord r;
  r.message = std::string("bad \xff\xfe value \xc3\xa9 \xed\xa0\x80 end");
  r.timestamp = 1;
  ErrorRecord back = parse_error_file(error_record_json(r), "e.json");
  EXPECT_EQ(back.message, "bad \xef\xbf\xbd\xef\xbf\xbd value \xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd end");
}

// torch's ProcessFailure also reads {"message": "<text>", "timestamp": N}; a launcher copies it as it is.
TEST(ErrorFile, ReadsTheOldShapeAndCopiesItUnchanged) {
  const std::string text = "{\"message\": \"Signal 9\", \"timestamp\": 1765050000}";
  ErrorRecord r = parse_error_file(text, "e.json");
  EXPECT_TRUE(r.old_shape);
  EXPECT_EQ(r.message, "Signal 9");
  EXPECT_EQ(r.timestamp, 1765050000);
  r.error_code = 2;
  EXPECT_EQ(error_record_json(r), text);
}

TEST(ErrorFile, BadRecordsAreConfigErrorsNamingTheFile) {
  for (const char* text : {"", "{", "[]", "{\"other\": 1}", "{\"message\": {\"message\": 3}}",
                           "{\"message\": {\"message\": \"x\"}}",
                           "{\"message\": {\"message\": \"x\", \"extraInfo\": {\"timestamp\": \"soon\"}}}",
                           "{\"message\": {\"message\": \"x\", \"extraInfo\": {\"timestamp\": \"1\"}, \"errorCode\": \"2\"}}"}) {
    try {
      parse_error_file(text, "/w/error.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const ddp::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("/w/error.json"), std::string::npos) << e.what();
    }
  }
}

TEST(ErrorFile, ReadingAMissingFileIsNothingAndAFolderIsRefused) {
  const std::string dir = ddp::testing::make_temp_dir("error-file");
  EXPECT_FALSE(ddp::util::read_error_file(dir + "/none.json"));
  EXPECT_THROW(ddp::util::read_error_file(dir), ddp::ConfigError);
  ErrorRecord r;
  r.message = "m";
  r.timestamp = 5;
  ddp::util::write_error_file(dir + "/e.json", error_record_json(r));
  auto back = ddp::util::read_error_file(dir + "/e.json");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->message, "m");
  std::filesystem::remove_all(dir);
}
