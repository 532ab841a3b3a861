#pragma once
// Minimal leveled logging to stderr, switched by DDP_LOG_LEVEL=debug|info|warn|error|off
// (default info). Lines carry a UTC timestamp with milliseconds and, once known, the rank:
//   2026-11-29T17:40:01.123Z [ddp rank 1] INFO  process group gloo ready (world 4)
//
//   DDP_LOG(INFO) << "joined store at " << host << ":" << port;

#include <ddp/export.h>
#include <sstream>
#include <string>

namespace ddp {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

/// Current threshold (from DDP_LOG_LEVEL on first use; a bad value is reported once and ignored).
DDP_API LogLevel log_level();
DDP_API void set_log_level(LogLevel level);
/// Rank shown in every line from now on (-1: none).
DDP_API void set_log_rank(int rank);
DDP_API bool log_enabled(LogLevel level);
/// Writes one line atomically (one write(2)), so lines from several threads do not interleave.
DDP_API void log_line(LogLevel level, const std::string& message);

namespace detail {
class LogMessage {
 public:
  explicit LogMessage(LogLevel level) : level_(level) {}
  ~LogMessage() { log_line(level_, stream_.str()); }
  std::ostringstream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};
}  // namespace detail
}  // namespace ddp

#define DDP_LOG_LEVEL_DEBUG ::ddp::LogLevel::kDebug
#define DDP_LOG_LEVEL_INFO ::ddp::LogLevel::kInfo
#define DDP_LOG_LEVEL_WARN ::ddp::LogLevel::kWarn
#define DDP_LOG_LEVEL_ERROR ::ddp::LogLevel::kError
#define DDP_LOG(level)                                   \
  if (!::ddp::log_enabled(DDP_LOG_LEVEL_##level)) {      \
  } else                                                 \
    ::ddp::detail::LogMessage(DDP_LOG_LEVEL_##level).stream()
