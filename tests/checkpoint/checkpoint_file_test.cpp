// The checkpoint envelope: CRC32C, header checks, atomic write, folder bookkeeping.
#include <ddp/checkpoint.h>
#include <ddp/errors.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ddp/checkpoint/checkpoint_dir.h"
#include "ddp/checkpoint/checkpoint_file.h"
#include "util/crc32c.h"
#include "support/multiprocess.h"

namespace fs = std::filesystem;
using namespace ddp;

namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Crc32c, KnownVectors) {
  // The check value of CRC-32C (iSCSI), and RFC 3720's 32 zero bytes.
  EXPECT_EQ(util::crc32c("123456789", 9), 0xE3069283u);
  std::string zeros(32, '\0');
  EXPECT_EQ(util::crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(util::crc32c("", 0), 0u);
  // Continuing a computation equals one pass, at every split point (covers the 8-byte loop and tail).
  std::string text = "The quick brown fox jumps over the lazy dog, twice over.";
  uint32_t whole = util::crc32c(text.data(), text.size());
  for (size_t split = 0; split <= text.size(); ++split)
    EXPECT_EQ(util::crc32c(text.data() + split, text.size() - split, util::crc32c(text.data(), split)), whole);
}

TEST(CheckpointFile, RoundTripAndEveryKindOfDamage) {
  std::string payload = "payload bytes that stand for a torch archive";
  std::string file = ddp::detail::make_checkpoint_header(payload) + payload;
  EXPECT_EQ(ddp::detail::verified_payload("x", file), payload);

  // Every single flipped bit anywhere in the file is caught.
  for (size_t i = 0; i < file.size(); ++i) {
    std::string bad = file;
    bad[i] ^= 0x10;
    EXPECT_NE(error_of([&] { ddp::detail::verified_payload("f.ddpckpt", bad); }), "") << "flip at byte " << i;
  }
  std::string flipped = file;
  flipped[ddp::detail::kCheckpointHeaderSize + 3] ^= 1;
  EXPECT_NE(error_of([&] { ddp::detail::verified_payload("f.ddpckpt", flipped); }).find("payload checksum mismatch"),
            std::string::npos);
  std::string header_flip = file;
  header_flip[17] ^= 1;
  EXPECT_NE(error_of([&] { ddp::detail::verified_payload("f.ddpckpt", header_flip); }).find("header checksum"),
            std::string::npos);
  // Truncation anywhere.
  for (size_t len : {size_t(0), size_t(5), ddp::detail::kCheckpointHeaderSize, file.size() - 1}) {
    std::string msg = error_of([&] { ddp::detail::verified_payload("f.ddpckpt", file.substr(0, len)); });
    EXPECT_NE(msg.find("truncated"), std::string::npos) << len << ": " << msg;
    EXPECT_NE(msg.find("f.ddpckpt"), std::string::npos) << msg;
  }
  EXPECT_NE(error_of([&] { ddp::detail::verified_payload("f", file + "x"); }).find("unexpected bytes"), std::string::npos);
  EXPECT_NE(error_of([&] { ddp::detail::verified_payload("f", std::string(40, 'z')); }).find("bad magic"),
            std::string::npos);
}

TEST(CheckpointDir, NamesSortAndParse) {
  EXPECT_EQ(checkpoint_file_name(1041), "ckpt-000000001041.ddpckpt");
  EXPECT_EQ(ddp::detail::checkpoint_step_from_name("ckpt-000000001041.ddpckpt"), 1041);
  EXPECT_EQ(ddp::detail::checkpoint_step_from_name("ckpt-1041.ddpckpt"), std::nullopt);  // not canonical
  EXPECT_EQ(ddp::detail::checkpoint_step_from_name("ckpt-000000001041.ddpckpt.stale"), std::nullopt);
  EXPECT_EQ(ddp::detail::checkpoint_step_from_name(".ckpt-000000001041.ddpckpt.tmp-12"), std::nullopt);
  EXPECT_EQ(ddp::detail::checkpoint_step_from_name("ckpt-00000000x041.ddpckpt"), std::nullopt);
  EXPECT_LT(checkpoint_file_name(99), checkpoint_file_name(100));  // names sort by step
}

TEST(CheckpointDir, StaleTemporariesOfDeadWritersAreRemoved) {
  std::string dir = ddp::testing::make_temp_dir("ckpt-tmp");
  // pid 2^22+1 is above the default pid_max of most systems; our own pid is alive.
  std::string dead = dir + "/.ckpt-000000000005.ddpckpt.tmp-4194305";
  std::string alive = dir + "/.ckpt-000000000006.ddpckpt.tmp-" + std::to_string(getppid());
  std::ofstream(dead) << "partial";
  std::ofstream(alive) << "partial";
  ddp::detail::remove_stale_temporaries(dir);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(alive));
  fs::remove_all(dir);
}
