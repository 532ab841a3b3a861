#pragma once
// TFRecord framing, the container of TensorBoard event files: each record is
//   uint64 length (little-endian) | uint32 masked CRC32C of those 8 bytes | data | uint32 masked CRC32C of data
// with mask(crc) = ((crc >> 15) | (crc << 17)) + 0xa282ead8 (tensorboard/summary/writer/record_writer.py).
// No LibTorch here: the fuzz target `tfevents` builds these parsers alone.
//
//   std::string bytes = frame_record(event_bytes);            // append to the file
//   RecordScan scan = split_records(file_bytes, path);        // every CRC checked; a torn tail reported
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::trainer::tensorboard {

/// Bytes of a record's header (length + its CRC) and footer (the data's CRC).
constexpr size_t kRecordHeaderBytes = 12;
constexpr size_t kRecordFooterBytes = 4;
/// A record longer than this is not one of ours and not one TensorBoard would want to load here
/// (an event holding a scalar is ~60 bytes; a graph may be MBs).
constexpr uint64_t kMaxRecordBytes = uint64_t{256} << 20;

/// CRC32C of `size` bytes with TFRecord's mask applied.
uint32_t masked_crc32c(const void* data, size_t size);

/// `data` framed as one record.
std::string frame_record(std::string_view data);

struct RecordScan {
  std::vector<std::string_view> records;  ///< the data of each complete record, views into the scanned bytes
  size_t complete_bytes = 0;              ///< bytes covered by `records` (where a writer could go on)
  /// Empty, or why the bytes after complete_bytes are no record: the last record is incomplete, as a
  /// writer killed in the middle of a write leaves it (e.g. "7 bytes of a record header").
  std::string torn_tail;
};

/// Splits a whole file's bytes into records. A length whose CRC does not match, a length above
/// kMaxRecordBytes or data whose CRC does not match is a DataError naming `name` and the offset:
/// the file is damaged, not torn. A last record cut short is not an error: RecordScan::torn_tail.
RecordScan split_records(std::string_view bytes, const std::string& name);

}  // namespace ddp::trainer::tensorboard
