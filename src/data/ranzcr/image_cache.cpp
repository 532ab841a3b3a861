#include "data/ranzcr/image_cache.h"

#include "data/ranzcr/image.h"

#include <ddp/errors.h>
#include <ddp/logging.h>

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <fstream>

#include "util/files.h"

namespace ddp::data::ranzcr {

// zlib's, not a table of our own: the same polynomial and bit order (so entries written by the
// table version that was here before stay valid), several bytes per iteration, and one CRC-32 less
// to maintain. crc32_z takes a size_t length: a large image needs no chunking into uInt pieces.
uint32_t crc32(const uint8_t* data, size_t size, uint32_t crc) {
  return static_cast<uint32_t>(::crc32_z(crc, data, size));
}

namespace {

constexpr char kMagic[8] = {'D', 'D', 'P', 'R', 'Z', 'C', '0', '1'};

#pragma pack(push, 1)
struct Header {
  char magic[8];
  uint32_t width;
  uint32_t height;
  uint64_t source_size;
  int64_t source_mtime_ns;
  uint32_t pixels_crc;
  uint8_t reserved[12];
};
#pragma pack(pop)
static_assert(sizeof(Header) == 48, "cache header is 48 bytes");

struct SourceStamp {
  uint64_t size;
  int64_t mtime_ns;
};

bool stat_source(const std::string& path, SourceStamp* stamp) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return false;
  stamp->size = static_cast<uint64_t>(st.st_size);
  stamp->mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  return true;
}

// The cached image when the entry exists and is valid for `stamp`; empty otherwise. `present` says
// whether a file was there at all (an invalid one is "rebuilt").
cv::Mat read_entry(const std::string& path, int size, const SourceStamp& stamp, bool* present) {
  std::ifstream in(path, std::ios::binary);
  *present = static_cast<bool>(in);
  if (!in) return {};
  Header h;
  if (!in.read(reinterpret_cast<char*>(&h), sizeof h)) return {};
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.width != static_cast<uint32_t>(size) ||
      h.height != static_cast<uint32_t>(size) || h.source_size != stamp.size ||
      h.source_mtime_ns != stamp.mtime_ns) {
    return {};
  }
  cv::Mat img(size, size, CV_8UC1);
  const size_t n = static_cast<size_t>(size) * size;
  if (!in.read(reinterpret_cast<char*>(img.data), static_cast<std::streamsize>(n))) return {};
  if (in.peek() != std::char_traits<char>::eof()) return {};  // trailing bytes: not ours
  if (crc32(img.data, n) != h.pixels_crc) return {};
  return img;
}

void write_entry(const std::string& path, const cv::Mat& img, const SourceStamp& stamp) {
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.width = static_cast<uint32_t>(img.cols);
  h.height = static_cast<uint32_t>(img.rows);
  h.source_size = stamp.size;
  h.source_mtime_ns = stamp.mtime_ns;
  const size_t n = static_cast<size_t>(img.cols) * img.rows;
  h.pixels_crc = crc32(img.data, n);
  // No fsync: an entry lost to a crash is decoded again, and a torn one fails its CRC check.
  util::write_file_atomically(path,
                              {std::string_view(reinterpret_cast<const char*>(&h), sizeof h),
                               std::string_view(reinterpret_cast<const char*>(img.data), n)},
                              util::Durability::kRenamed);
}

}  // namespace

ImageCache::ImageCache(const std::string& dir, int size) : dir_(dir + "/" + std::to_string(size)), size_(size) {
  util::make_dirs(dir_);
}

std::string ImageCache::entry_path(const std::string& uid) const { return dir_ + "/" + uid + ".u8"; }

cv::Mat ImageCache::load(const std::string& uid, const std::string& source) {
  SourceStamp stamp;
  if (!stat_source(source, &stamp)) throw ddp::DataError("cannot open image '" + source + "' (uid " + uid + ")");
  const std::string entry = entry_path(uid);
  bool present = false;
  cv::Mat img = read_entry(entry, size_, stamp, &present);
  if (!img.empty()) {
    ++hits_;
    return img;
  }
  if (present) {
    ++rebuilt_;
    DDP_LOG(WARN) << "cache entry '" << entry << "' is stale or damaged; rebuilding it from '" << source << "'";
  } else {
    ++misses_;
  }
  img = decode_resized(source, size_);
  // The image decoded fine; the cache only saves work. A full disk or an unwritable folder must not
  // turn good images into bad ones (with --skip-bad-images every image would become zeros), so the
  // failure is logged (the first one with its reason, then at 10, 100, 1000, ... failures) and the
  // decoded image is used.
  try {
    write_entry(entry, img, stamp);
  } catch (const ddp::DataError& e) {
    const int64_t failures = ++write_failures_;
    if (failures == 1) {
      DDP_LOG(WARN) << "image cache: " << e.what() << "; using the decoded image (further cache write failures are "
                    << "counted, logged at 10, 100, 1000, ...)";
    } else {
      int64_t p = 10;
      while (p < failures) p *= 10;
      if (p == failures) DDP_LOG(WARN) << "image cache: " << failures << " entries could not be written; latest: " << e.what();
    }
  }
  return img;
}

}  // namespace ddp::data::ranzcr
