#include "trainer/tensorboard_record.h"

#include <ddp/errors.h>

#include "util/crc32c.h"

namespace ddp::trainer::tensorboard {
namespace {

constexpr uint32_t kMaskDelta = 0xa282ead8u;

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

uint64_t get_le(std::string_view bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return v;
}

}  // namespace

uint32_t masked_crc32c(const void* data, size_t size) {
  const uint32_t crc = util::crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + kMaskDelta;
}

std::string frame_record(std::string_view data) {
  std::string out;
  out.reserve(kRecordHeaderBytes + data.size() + kRecordFooterBytes);
  put_le(out, data.size(), 8);
  put_le(out, masked_crc32c(out.data(), 8), 4);
  out.append(data);
  put_le(out, masked_crc32c(data.data(), data.size()), 4);
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
    const uint64_t length = get_le(bytes, at, 8);
    if (get_le(bytes, at + 8, 4) != masked_crc32c(bytes.data() + at, 8))
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
    if (get_le(bytes, at + kRecordHeaderBytes + length, 4) != masked_crc32c(data.data(), data.size()))
      throw ddp::DataError(name + ": the data of the record at offset " + std::to_string(at) + " fails its CRC32C");
    scan.records.push_back(data);
    at += whole;
    scan.complete_bytes = at;
  }
  return scan;
}

}  // namespace ddp::trainer::tensorboard
