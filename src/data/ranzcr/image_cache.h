#pragma once
// Resized images stored once, read back instead of decoding the JPEG again (--cache-dir).
//
//   ddp::data::ranzcr::ImageCache cache("/data/cache", 224);
//   cv::Mat img = cache.load(uid, "/data/train/" + uid + ".jpg");   // decodes + stores on a miss
//
// Layout: <dir>/<size>/<uid>.u8 — a 48-byte header (magic "DDPRZC01", width, height, the source's
// size and mtime, CRC-32 of the pixels) then width*height raw uint8 pixels (lossless). An entry
// whose source changed, or whose header or checksum does not match, is rebuilt with a warning.
// Entries are written to a temporary name and renamed, so ranks sharing the folder never see a
// partial file. An entry that cannot be written (full disk, read-only folder) is a warning, never a
// bad image: the decoded image is used.

#include <opencv2/core/mat.hpp>

#include <atomic>
#include <cstdint>
#include <string>

namespace ddp::data::ranzcr {

/// CRC-32 (IEEE 802.3) of `size` bytes, continuing `crc`: zlib's crc32_z, the entries' checksum.
uint32_t crc32(const uint8_t* data, size_t size, uint32_t crc = 0);

class ImageCache {
 public:
  /// Creates <dir>/<size>/ when needed; DataError when it cannot.
  ImageCache(const std::string& dir, int size);

  /// The size x size grayscale image of `source`: from the cache when valid, else decoded (with
  /// decode_resized) and stored. DataError naming `source` when it is missing or undecodable.
  cv::Mat load(const std::string& uid, const std::string& source);

  /// Path of the entry for `uid`.
  std::string entry_path(const std::string& uid) const;

  int64_t hits() const { return hits_.load(); }
  int64_t misses() const { return misses_.load(); }
  int64_t rebuilt() const { return rebuilt_.load(); }  ///< invalid entries replaced
  /// Entries that could not be written (full disk, unwritable folder): the decoded image was used.
  int64_t write_failures() const { return write_failures_.load(); }

 private:
  std::string dir_;
  int size_;
  std::atomic<int64_t> hits_{0}, misses_{0}, rebuilt_{0}, write_failures_{0};
};

}  // namespace ddp::data::ranzcr
