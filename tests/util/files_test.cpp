#include <ddp/errors.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/multiprocess.h"
#include "util/files.h"

namespace fs = std::filesystem;
using namespace ddp::util;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string data_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const ddp::DataError& e) {
    return e.what();
  }
  return "";
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

}  // namespace

TEST(Files, MakeDirsCreatesParentsAndAcceptsExistingFolders) {
  const std::string root = ddp::testing::make_temp_dir("util-dirs");
  make_dirs(root + "/a/b/c");
  EXPECT_TRUE(fs::is_directory(root + "/a/b/c"));
  make_dirs(root + "/a/b/c/");  // again, with a trailing slash
  make_dirs("");                // nothing to do
  std::ofstream(root + "/file") << "x";
  const std::string not_folder = data_error([&] { make_dirs(root + "/file"); });
  EXPECT_NE(not_folder.find(root + "/file"), std::string::npos) << not_folder;
  EXPECT_NE(not_folder.find("not a folder"), std::string::npos) << not_folder;
  const std::string below_file = data_error([&] { make_dirs(root + "/file/sub"); });
  EXPECT_NE(below_file.find(root + "/file/sub"), std::string::npos) << below_file;
  EXPECT_NE(below_file.find("Not a directory"), std::string::npos) << below_file;  // strerror(ENOTDIR)
  fs::remove_all(root);
}

TEST(Files, AtomicWriteLeavesOnlyTheFinalFile) {
  const std::string dir = ddp::testing::make_temp_dir("util-atomic");
  write_file_atomically(dir + "/a.bin", {"head", "body"});
  EXPECT_EQ(slurp(dir + "/a.bin"), "headbody");
  write_file_atomically(dir + "/a.bin", {"new"}, Durability::kRenamed);  // replaces
  EXPECT_EQ(slurp(dir + "/a.bin"), "new");
  write_file_atomically(dir + "/empty", {});
  EXPECT_EQ(slurp(dir + "/empty"), "");
  EXPECT_EQ(names_in(dir).size(), 2u);
  // The final name is a non-empty folder, so the rename fails: the error names the file, the step and
  // the reason, and no temporary is left behind.
  fs::create_directories(dir + "/blocked.bin/inner");
  const std::string msg = data_error([&] { write_file_atomically(dir + "/blocked.bin", {"h", "p"}); });
  EXPECT_NE(msg.find(dir + "/blocked.bin"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rename"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Is a directory"), std::string::npos) << msg;
  for (const auto& name : names_in(dir)) EXPECT_EQ(name.find(".tmp-"), std::string::npos) << name;
  // A missing folder fails at the first step.
  const std::string missing = data_error([&] { write_file_atomically(dir + "/no/such/file", {"x"}); });
  EXPECT_NE(missing.find("No such file or directory"), std::string::npos) << missing;
  fs::remove_all(dir);
}

TEST(Files, ThreadsWritingTheSamePathNeverShareATemporary) {
  const std::string dir = ddp::testing::make_temp_dir("util-threads");
  const std::string path = dir + "/shared";
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      const std::string mine(1 << 16, static_cast<char>('a' + t));
      for (int i = 0; i < 50; ++i) write_file_atomically(path, {mine}, Durability::kRenamed);
    });
  for (auto& t : threads) t.join();
  const std::string final_bytes = slurp(path);
  ASSERT_EQ(final_bytes.size(), 1u << 16);
  EXPECT_EQ(final_bytes, std::string(1 << 16, final_bytes[0]));  // one writer's whole file
  EXPECT_EQ(names_in(dir).size(), 1u);
  fs::remove_all(dir);
}

TEST(Files, TemporaryNamesCarryTheWriter) {
  const std::string tmp = temp_path_for("/x/y/model.pt");
  EXPECT_EQ(tmp.rfind("/x/y/.model.pt.tmp-" + std::to_string(::getpid()) + "-", 0), 0u) << tmp;
  EXPECT_EQ(temp_file_writer(fs::path(tmp).filename().string()), ::getpid());
  EXPECT_EQ(temp_path_for("plain").rfind(".plain.tmp-", 0), 0u);
  EXPECT_EQ(temp_file_writer(".ckpt-5.ddpckpt.tmp-4194305"), 4194305);  // written before the thread id
  EXPECT_EQ(temp_file_writer(".ckpt-5.ddpckpt.tmp-12-34"), 12);
  for (const char* other : {"ckpt-5.ddpckpt", ".ckpt-5.ddpckpt", ".a.tmp-", ".a.tmp-x", ".a.tmp-12-", ".a.tmp-0",
                            "a.tmp-12", ".a.tmp-12x"})
    EXPECT_EQ(temp_file_writer(other), std::nullopt) << other;
}

TEST(Files, ReadFileReadsAllOfItAndRefusesMoreThanItsLimit) {
  const std::string dir = ddp::testing::make_temp_dir("read-small");
  const std::string path = dir + "/f";
  std::ofstream(path) << std::string(70000, 'x') << "end";  // more than one read's buffer
  EXPECT_EQ(read_file(path, 70003), std::string(70000, 'x') + "end");
  try {
    read_file(path, 70002);
    ADD_FAILURE() << "a file over the limit was read";
  } catch (const ddp::DataError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": more than 70002 bytes"), std::string::npos) << e.what();
  }
  try {
    read_file(dir + "/none", 10);
    ADD_FAILURE() << "a missing file was read";
  } catch (const ddp::DataError& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/none: file not found"), std::string::npos) << e.what();
  }
  // An endless file costs at most the limit.
  EXPECT_THROW(read_file("/dev/zero", 1 << 20), ddp::DataError);
  fs::remove_all(dir);
}
