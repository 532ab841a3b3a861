#include "trainer/tensorboard_record.h"

#include <ddp/errors.h>

#include "util/crc32c.h"
#include "util/little_endian.h"

namespace ddp::trainer::tensorboard {
namespace {

constexpr uint32_t kMaskDelta = 0xa282ead8u;

}  // namespace

uint32_t masked_crc32c(const void* data, size_t size) {
  const uint32_t crc = util::crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + kMaskDelta;
}

std::string frame_record(std::string_view data) {
  std::string out;
  out.reserve(kRecordHeaderBytes + data.size() + kRecordFooterBytes);
  util::append_le(out, data.size(), 8);
  util::append_le(out, masked_crc32c(out.data(), 8), 4);
  out.append(data);
  util::append_le(out, masked_crc32c(data.data(), data.size()), 4);
  return out;
}

RecordScan split_records(std::string_view bytes, const std::string& name) {
  RecordScan scan;
  size_t at = 0;
  while (at < bytes.size()) {
    const size_t left = bytes.size() - at;
    if (left < kRecordHeaderBytes) {
      scan.torn_tail = std::to_string(left) + " bytes of a record header at offset " + std::to_string(at);
      break;
    }
    const uint64_t length = util::read_le(bytes, at, 8);
    if (util::read_le(bytes, at + 8, 4) != masked_crc32c(bytes.data() + at, 8))
      throw ddp::DataError(name + ": the length of the record at offset " + std::to_string(at) +
                           " fails its CRC32C (damaged file, or not a TFRecord file)");
    if (length > kMaxRecordBytes)
      throw ddp::DataError(name + ": the record at offset " + std::to_string(at) + " claims " + std::to_string(length) +
                           " bytes, more than the " + std::to_string(kMaxRecordBytes) + " allowed");
    const uint64_t whole = kRecordHeaderBytes + length + kRecordFooterBytes;
    if (whole > left) {
      scan.torn_tail = std::to_string(left) + " bytes of a " + std::to_string(whole) + "-byte record at offset " +
                       std::to_string(at);
      break;
    }
    const std::string_view data = bytes.substr(at + kRecordHeaderBytes, length);
    if (util::read_le(bytes, at + kRecordHeaderBytes + length, 4) != masked_crc32c(data.data(), data.size()))
      throw ddp::DataError(name + ": the data of the record at offset " + std::to_string(at) + " fails its CRC32C");
    scan.records.push_back(data);
    at += whole;
    scan.complete_bytes = at;
  }
  return scan;
}

}  // namespace ddp::trainer::tensorboard
