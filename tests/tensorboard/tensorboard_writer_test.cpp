// The TensorBoard event-file code (src/trainer/tensorboard_*): TFRecord framing and its masked CRCs,
// the hand-encoded Events, the strict reader, and the writer's file naming, resume rule and failures.
// Known answers come from the real protobuf library and tests/tensorboard/tfevents.py's own CRC32C.
#include <ddp/errors.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "trainer/reporter.h"
#include "trainer/tensorboard_event.h"
#include "trainer/tensorboard_record.h"
#include "trainer/tensorboard_writer.h"

namespace tb = ddp::trainer::tensorboard;
namespace fs = std::filesystem;

namespace {

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void write_file(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/tb-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

std::vector<std::string> event_files(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<tb::Event> events_of(const std::string& path) {
  const std::string bytes = read_file(path);
  std::vector<tb::Event> out;
  for (auto r : tb::split_records(bytes, path).records) out.push_back(tb::parse_event(r));
  return out;
}

}  // namespace

TEST(TensorBoardRecord, MaskedCrcAndFramingMatchTensorFlow) {
  EXPECT_EQ(tb::masked_crc32c("123456789", 9), 0xc78ab0e5u);
  EXPECT_EQ(tb::masked_crc32c("", 0), 0xa282ead8u);
  EXPECT_EQ(hex(tb::frame_record("abc")), "0300000000000000b099490e6162636e57f121");
}

TEST(TensorBoardEvent, EncodingIsTheProtobufLibrarysAndParsesBack) {
  const std::string scalars = tb::encode_scalars(1.5, 300, {{"train/loss", 0.25f}});
  EXPECT_EQ(hex(scalars), "09000000000000f83f10ac022a130a110a0a747261696e2f6c6f7373150000803e");
  EXPECT_EQ(hex(tb::encode_session_start(2.0, 41)), "09000000000000004010293a020801");
  EXPECT_EQ(hex(tb::encode_file_version(3.0)), "0900000000000008401a0d627261696e2e4576656e743a32");
  const tb::Event e = tb::parse_event(scalars);
  EXPECT_EQ(e.wall_time, 1.5);
  EXPECT_EQ(e.step, 300);
  ASSERT_EQ(e.scalars.size(), 1u);
  EXPECT_EQ(e.scalars[0].tag, "train/loss");
  EXPECT_EQ(e.scalars[0].value, 0.25f);
  EXPECT_EQ(tb::parse_event(tb::encode_session_start(2.0, 41)).session_status, tb::kSessionStart);
  EXPECT_EQ(tb::parse_event(tb::encode_file_version(3.0)).file_version, std::string(tb::kFileVersion));
}

TEST(TensorBoardEvent, MalformedBytesAreDataErrors) {
  const std::string good = tb::encode_scalars(1.5, 300, {{"train/loss", 0.25f}});
  for (size_t cut = 1; cut < good.size(); ++cut) {
    // Every prefix but those ending after wall_time (9 bytes) or step (12) ends inside a field.
    if (cut == 9 || cut == 12) continue;
    EXPECT_THROW(tb::parse_event(good.substr(0, cut)), ddp::DataError) << cut;
  }
  EXPECT_THROW(tb::parse_event(std::string("\x08\x01", 2)), ddp::DataError);                  // wall_time as varint
  EXPECT_THROW(tb::parse_event(std::string("\x0b", 1)), ddp::DataError);                      // a group
  EXPECT_THROW(tb::parse_event(std::string("\x00\x00", 2)), ddp::DataError);                  // field 0
  EXPECT_THROW(tb::parse_event(std::string("\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11)), ddp::DataError);  // negative step
  EXPECT_NO_THROW(tb::parse_event(std::string("\xf8\x01\x05", 3)));                           // unknown field 31: skipped
}

TEST(TensorBoardRecord, TornTailIsReportedNotThrown) {
  const std::string first = tb::frame_record(tb::encode_file_version(1));
  const std::string second = tb::frame_record(tb::encode_scalars(2, 5, {{"a", 1}}));
  for (size_t keep = 1; keep < second.size(); ++keep) {
    const std::string bytes = first + second.substr(0, keep);
    const tb::RecordScan scan = tb::split_records(bytes, "f");
    EXPECT_EQ(scan.records.size(), 1u) << keep;
    EXPECT_EQ(scan.complete_bytes, first.size());
    EXPECT_FALSE(scan.torn_tail.empty()) << keep;
  }
  EXPECT_TRUE(tb::split_records(first + second, "f").torn_tail.empty());
}

TEST(TensorBoardRecord, DamageIsADataErrorNamingFileAndOffset) {
  const std::string first = tb::frame_record(tb::encode_file_version(1));
  const std::string good = first + tb::frame_record(tb::encode_scalars(2, 5, {{"a", 1}}));
  std::string bad_length = good;
  bad_length[first.size() + 1] ^= 1;
  std::string bad_data = good;
  bad_data[first.size() + 14] ^= 1;
  for (const auto& bytes : {bad_length, bad_data}) {
    try {
      tb::split_records(bytes, "events.x");
      FAIL() << "no error";
    } catch (const ddp::DataError& e) {
      EXPECT_NE(std::string(e.what()).find("events.x"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("offset " + std::to_string(first.size())), std::string::npos) << e.what();
    }
  }
  // A length with a valid CRC but beyond the limit is no record of ours (and not a torn tail).
  std::string huge(8, '\0');
  for (int i = 0; i < 8; ++i) huge[i] = static_cast<char>(((tb::kMaxRecordBytes + 1) >> (8 * i)) & 0xFF);
  const uint32_t crc = tb::masked_crc32c(huge.data(), 8);
  for (int i = 0; i < 4; ++i) huge.push_back(static_cast<char>((crc >> (8 * i)) & 0xFF));
  EXPECT_THROW(tb::split_records(huge, "f"), ddp::DataError);
}

TEST(TensorBoardWriter, WritesVersionStartAndScalarsInOrder) {
  TempDir d;
  const std::string dir = d.path + "/made/here";
  std::string path;
  {
    tb::EventFileWriter w(dir);
    path = w.path();
    w.start(0);
    w.scalars(10, {{"train/loss", 1.5f}, {"train/lr", 0.01f}});
    w.scalars(20, {{"train/loss", 1.25f}});
  }
  EXPECT_EQ(fs::path(path).parent_path().string(), dir);
  EXPECT_EQ(fs::path(path).filename().string().rfind("events.out.tfevents.", 0), 0u) << path;
  const auto events = events_of(path);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].file_version, std::string("brain.Event:2"));
  EXPECT_EQ(events[1].session_status, tb::kSessionStart);
  EXPECT_EQ(events[1].step, 1);
  EXPECT_EQ(events[2].step, 10);
  ASSERT_EQ(events[2].scalars.size(), 2u);
  EXPECT_EQ(events[2].scalars[1].tag, "train/lr");
  EXPECT_EQ(events[3].scalars[0].value, 1.25f);
}

TEST(TensorBoardWriter, ResumeStartsAfterTheStepAndSortsAfterEarlierFiles) {
  TempDir d;
  // An earlier attempt's file from "the future" (a clock ahead, or a restart in the same second),
  // holding steps 10 and 20 and a torn last record; the run resumes after step 10.
  const std::string earlier = d.path + "/events.out.tfevents.9999999990.host.1";
  write_file(earlier, tb::frame_record(tb::encode_file_version(1)) + tb::frame_record(tb::encode_session_start(1, 1)) +
                          tb::frame_record(tb::encode_scalars(1, 10, {{"train/loss", 2}})) +
                          tb::frame_record(tb::encode_scalars(1, 20, {{"train/loss", 3}})) +
                          tb::frame_record(tb::encode_scalars(1, 30, {{"train/loss", 4}})).substr(0, 9));
  const tb::EarlierRecords found = tb::read_earlier_records(d.path, "", 10);
  EXPECT_EQ(found.files, 1);
  EXPECT_EQ(found.superseded, 1);  // step 20; the torn step 30 is not a record
  EXPECT_EQ(found.kept_upto.at("train/loss"), 10);
  std::string path;
  {
    tb::EventFileWriter w(d.path);
    path = w.path();
    w.start(10);
    w.scalars(10, {{"train/loss", 9}, {"train/new", 1}});  // (train/loss, 10) exists: left out
    w.scalars(20, {{"train/loss", 5}});
  }
  EXPECT_EQ(event_files(d.path), (std::vector<std::string>{fs::path(earlier).filename().string(), fs::path(path).filename().string()}));
  EXPECT_EQ(fs::path(path).filename().string().rfind("events.out.tfevents.9999999991.", 0), 0u) << path;
  const auto events = events_of(path);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[1].step, 11);
  EXPECT_EQ(events[1].session_status, tb::kSessionStart);
  ASSERT_EQ(events[2].scalars.size(), 1u);
  EXPECT_EQ(events[2].scalars[0].tag, "train/new");
  EXPECT_EQ(events[3].step, 20);
}

TEST(TensorBoardWriter, DamagedEarlierFileIsAWarningNotAnError) {
  TempDir d;
  std::string bytes = tb::frame_record(tb::encode_file_version(1)) + tb::frame_record(tb::encode_scalars(1, 10, {{"x", 2}}));
  bytes[bytes.size() - 1] ^= 1;
  write_file(d.path + "/events.out.tfevents.0000000001.host.1", bytes);
  tb::EventFileWriter w(d.path);
  EXPECT_NO_THROW(w.start(0));
  w.scalars(1, {{"x", 1}});
  EXPECT_EQ(events_of(w.path()).size(), 3u);
}

TEST(TensorBoardWriter, UncreatableFolderIsAConfigErrorNamingTheFlag) {
  TempDir d;
  write_file(d.path + "/file", "x");
  try {
    tb::EventFileWriter w(d.path + "/file/tb");
    FAIL() << "no error";
  } catch (const ddp::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--tensorboard-dir " + d.path + "/file/tb"), std::string::npos) << e.what();
  }
}

TEST(TensorBoardWriter, FailedWriteIsAWarningAndEndsTheRecords) {
  TempDir d;
  tb::EventFileWriter w(d.path);
  w.start(0);
  // The file may not grow past its current size: the next write fails with EFBIG (SIGXFSZ ignored).
  const auto size = fs::file_size(w.path());
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit old_limit{};
  getrlimit(RLIMIT_FSIZE, &old_limit);
  rlimit limit = old_limit;
  limit.rlim_cur = size;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limit), 0);
  EXPECT_NO_THROW(w.scalars(1, {{"x", 1}}));
  setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NO_THROW(w.scalars(2, {{"x", 2}}));  // nothing more after a failure
  EXPECT_EQ(fs::file_size(w.path()), size);
}

TEST(TensorBoardReporter, TrainPointsAndKatibMetricsBecomeScalars) {
  TempDir d;
  {
    ddp::trainer::Reporter off(ddp::trainer::ReporterOptions().enabled(false).tensorboard_dir(d.path + "/off"));
    off.start(0);
  }
  EXPECT_FALSE(fs::exists(d.path + "/off"));  // other ranks write nothing
  {
    ddp::trainer::Reporter r(ddp::trainer::ReporterOptions().progress("plain").tensorboard_dir(d.path + "/on"));
    r.start(0);
    ddp::trainer::TrainPoint p;
    p.epoch = p.epochs = 1;
    p.global_step = p.step_in_epoch = p.steps_in_epoch = 4;
    p.loss = 0.5;
    p.lr = 0.01;
    p.images_per_sec = 1000;
    r.train_interval(p);
    ddp::trainer::EvalPoint e;
    e.epoch = 1;
    e.global_step = 4;
    e.katib = {{"loss", 0.25}, {"accuracy", 0.75}};
    r.evaluation(e);
  }
  const auto files = event_files(d.path + "/on");
  ASSERT_EQ(files.size(), 1u);
  const auto events = events_of(d.path + "/on/" + files[0]);
  ASSERT_EQ(events.size(), 4u);
  std::vector<std::pair<std::string, float>> got;
  for (size_t i = 2; i < 4; ++i) {
    EXPECT_EQ(events[i].step, 4);
    for (const auto& s : events[i].scalars) got.emplace_back(s.tag, s.value);
  }
  EXPECT_EQ(got, (std::vector<std::pair<std::string, float>>{{"train/loss", 0.5f},
                                                              {"train/lr", 0.01f},
                                                              {"train/images_per_sec", 1000.0f},
                                                              {"epoch/loss", 0.25f},
                                                              {"epoch/accuracy", 0.75f}}));
}
