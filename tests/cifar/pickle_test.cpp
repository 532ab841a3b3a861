// The pickle subset reader against what Python writes: the Python-2 style files our generator makes,
// the same dict re-saved by Python 3 at protocols 2-5, and one file per defect.
#include <gtest/gtest.h>

#include <map>

#include "cifar_test_util.h"
#include "data/cifar/cifar_files.h"
#include "data/cifar/pickle_reader.h"
#include "data/cifar/pickle_writer.h"
#include "util/files.h"
#include "support/subprocess.h"

using cifar_test::expect_data_error;
using ddp::data::cifar::CifarRecords;
using ddp::data::cifar::parse_cifar_binary;
using ddp::data::cifar::parse_cifar_pickle;

namespace {

class PythonPickles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new cifar_test::TempDir("cifar-pickles");
    source_ = cifar_test::small_dataset() + "/cifar-10-batches-py/data_batch_2";
    ddp::testing::Subprocess py({DDP_PYTHON, std::string(DDP_SOURCE_DIR) + "/tests/cifar/python/make_pickle_variants.py",
                                 source_, dir_->path});
    int status = py.wait(std::chrono::seconds(60));
    ASSERT_EQ(status, 0) << py.output();
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static CifarRecords expected() { return parse_cifar_pickle(ddp::util::read_file_bytes(source_), source_); }
  static CifarRecords read(const std::string& rel) {
    std::string path = dir_->path + "/" + rel;
    return parse_cifar_pickle(ddp::util::read_file_bytes(path), path);
  }
  static cifar_test::TempDir* dir_;
  static std::string source_;
};
cifar_test::TempDir* PythonPickles::dir_ = nullptr;
std::string PythonPickles::source_;

void expect_same(const CifarRecords& a, const CifarRecords& b) {
  EXPECT_EQ(a.count, b.count);
  EXPECT_TRUE(a.pixels == b.pixels);
  EXPECT_TRUE(a.labels == b.labels);
}

}  // namespace

TEST_F(PythonPickles, ResavedByPython3AtEveryProtocol) {
  CifarRecords want = expected();
  EXPECT_EQ(want.count, 100);  // 500 training images over 5 batches
  for (std::string name : {"p2", "p3", "p4", "p5", "bytes_keys_p2", "bytes_keys_p3", "bytes_keys_p4", "labels_ndarray"}) {
    SCOPED_TRACE(name);
    expect_same(read("good/" + name), want);
  }
}

TEST_F(PythonPickles, EveryDefectIsADataErrorNamingIt) {
  const std::map<std::string, std::vector<std::string>> cases = {
      {"missing_data", {"missing key 'data'"}},
      {"missing_labels", {"missing key 'labels'"}},
      {"cifar100_labels", {"missing key 'labels'", "fine_labels"}},
      {"label_10", {"labels[0] is 10", "0-9"}},
      {"label_negative", {"labels[0] is -1"}},
      {"label_not_int", {"labels[0] is a str"}},
      {"labels_short", {"99 labels for 100 images"}},
      {"shape_4d", {"shape (100, 3, 32, 32)", "expected (n, 3072)"}},
      {"shape_1024", {"shape (100, 1024)"}},
      {"dtype_float32", {"dtype <f4", "uint8"}},
      {"fortran_order", {"Fortran"}},
      {"data_is_list", {"'data' is a list", "numpy array"}},
      {"not_a_dict", {"holds a list", "expected a dict"}},
      {"evil_global", {"posix.system", "never does"}},
  };
  for (const auto& [name, fragments] : cases) {
    SCOPED_TRACE(name);
    std::vector<std::string> with_path = fragments;
    with_path.push_back("bad/" + name);  // the message names the file
    expect_data_error([&] { read("bad/" + name); }, with_path);
  }
}

TEST(PickleReader, TruncatedAnywhereIsADataError) {
  const std::string path = cifar_test::small_dataset() + "/cifar-10-batches-py/test_batch";
  std::vector<uint8_t> bytes = ddp::util::read_file_bytes(path);
  // Cut inside the header, inside the pixel string, inside the label list, and just before STOP.
  for (size_t keep : {size_t{1}, size_t{40}, size_t{300}, bytes.size() / 2, bytes.size() - 200, bytes.size() - 1}) {
    SCOPED_TRACE(keep);
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + keep);
    expect_data_error([&] { parse_cifar_pickle(cut, "cut.pkl"); }, {"cut.pkl", "truncated"});
  }
  expect_data_error([&] { parse_cifar_pickle({}, "empty.pkl"); }, {"empty.pkl", "empty"});
}

TEST(PickleReader, UnknownOpcodeAndProtocolAreNamed) {
  const std::string path = cifar_test::small_dataset() + "/cifar-10-batches-py/test_batch";
  std::vector<uint8_t> bytes = ddp::util::read_file_bytes(path);
  std::vector<uint8_t> bad = bytes;
  bad[2] = 0xff;  // EMPTY_DICT -> not an opcode
  expect_data_error([&] { parse_cifar_pickle(bad, "op.pkl"); }, {"op.pkl", "offset 2", "unsupported pickle opcode 0xff"});
  bad = bytes;
  bad[2] = 'd';  // DICT (protocol 0) is a real opcode, just not one these files use
  expect_data_error([&] { parse_cifar_pickle(bad, "op.pkl"); }, {"unsupported pickle opcode 0x64 'd'"});
  bad = bytes;
  bad[1] = 1;
  expect_data_error([&] { parse_cifar_pickle(bad, "proto.pkl"); }, {"pickle protocol 1"});
  std::vector<uint8_t> text = {'h', 'e', 'l', 'l', 'o'};
  expect_data_error([&] { parse_cifar_pickle(text, "text.pkl"); }, {"text.pkl"});
}

TEST(PickleReader, ReadsWhatTheWriterWrites) {
  std::vector<uint8_t> pixels(3 * 3072);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7);
  std::string pk = ddp::data::cifar::cifar_batch_pickle("b", pixels.data(), 3, {1, 9, 0}, {"a.png", "b.png", "c.png"});
  CifarRecords r = parse_cifar_pickle(std::vector<uint8_t>(pk.begin(), pk.end()), "mem");
  EXPECT_EQ(r.count, 3);
  EXPECT_TRUE(r.pixels == pixels);
  EXPECT_EQ(r.labels, (std::vector<uint8_t>{1, 9, 0}));
  // The value tree keeps the other entries.
  auto root = ddp::data::cifar::pickle::load(reinterpret_cast<const uint8_t*>(pk.data()), pk.size(), "mem");
  ASSERT_NE(root->find("batch_label"), nullptr);
  EXPECT_EQ(root->find("batch_label")->text, "b");
  ASSERT_NE(root->find("filenames"), nullptr);
  EXPECT_EQ(root->find("filenames")->items.size(), 3u);
}

TEST(BinaryReader, RecordsAndDefects) {
  std::vector<uint8_t> bytes(2 * 3073, 5);
  bytes[0] = 3;
  bytes[3073] = 9;
  CifarRecords r = parse_cifar_binary(bytes, "ok.bin");
  EXPECT_EQ(r.count, 2);
  EXPECT_EQ(r.labels, (std::vector<uint8_t>{3, 9}));
  EXPECT_EQ(r.pixels.size(), 2u * 3072);

  std::vector<uint8_t> cut(bytes.begin(), bytes.end() - 1);
  expect_data_error([&] { parse_cifar_binary(cut, "cut.bin"); }, {"cut.bin", "6145 bytes", "3073-byte records", "truncated"});
  bytes[3073] = 10;
  expect_data_error([&] { parse_cifar_binary(bytes, "label.bin"); }, {"label.bin", "record 1", "label 10"});
  expect_data_error([&] { parse_cifar_binary({}, "empty.bin"); }, {"empty.bin", "empty"});
}

// Hostile structure is a DataError or a value, never a stack overflow: deep lists and tuples (the
// tree is freed by a flat loop over its arena), a list appended to itself through the memo (a cycle),
// and more values than any batch holds.
TEST(PickleReader, DeepNestingCyclesAndValueCountsAreNotCrashes) {
  auto load = [](const std::string& s) {
    return ddp::data::cifar::pickle::load(reinterpret_cast<const uint8_t*>(s.data()), s.size(), "hostile.pkl");
  };
  auto deep = load("\x80\x02" + std::string(1000000, ']') + std::string(999999, 'a') + ".");
  EXPECT_EQ(deep->kind, ddp::data::cifar::pickle::Kind::kList);
  deep.reset();
  auto tuples = load("\x80\x02N" + std::string(1000000, '\x85') + ".");
  EXPECT_EQ(tuples->kind, ddp::data::cifar::pickle::Kind::kTuple);
  tuples.reset();
  auto cycle = load(std::string("\x80\x02]q\x00h\x00" "a.", 9));
  ASSERT_EQ(cycle->items.size(), 1u);
  EXPECT_EQ(cycle->items[0], cycle.get());
  expect_data_error([&] { load("\x80\x02" + std::string(ddp::data::cifar::pickle::kMaxValues + 1, 'N') + "."); },
                    {"hostile.pkl", "more than 1048576 values"});
  std::vector<uint8_t> bytes(2000000, ']');
  bytes[0] = 0x80;
  bytes[1] = 2;
  expect_data_error([&] { parse_cifar_pickle(bytes, "lists.pkl"); }, {"lists.pkl", "more than 1048576 values"});
}
