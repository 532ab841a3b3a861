#include <ddp/logging.h>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "util/rfc3339.h"

namespace ddp {
namespace {

LogLevel parse_level(const char* value, bool* ok) {
  *ok = true;
  if (!value || !*value) return LogLevel::kInfo;
  std::string v(value);
  for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v == "debug" || v == "trace") return LogLevel::kDebug;
  if (v == "info") return LogLevel::kInfo;
  if (v == "warn" || v == "warning") return LogLevel::kWarn;
  if (v == "error") return LogLevel::kError;
  if (v == "off" || v == "none") return LogLevel::kOff;
  *ok = false;
  return LogLevel::kInfo;
}

std::atomic<int> g_level{-1};
std::atomic<int> g_rank{-1};

const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO ";
    case LogLevel::kWarn: return "WARN ";
    case LogLevel::kError: return "ERROR";
    default: return "";
  }
}

}  // namespace

LogLevel log_level() {
  int l = g_level.load(std::memory_order_relaxed);
  if (l >= 0) return static_cast<LogLevel>(l);
  static std::once_flag once;
  std::call_once(once, [] {
    bool ok;
    const char* raw = std::getenv("DDP_LOG_LEVEL");
    LogLevel parsed = parse_level(raw, &ok);
    int expected = -1;
    g_level.compare_exchange_strong(expected, static_cast<int>(parsed));
    if (!ok)
      log_line(LogLevel::kWarn, std::string("DDP_LOG_LEVEL='") + raw +
                                    "' is not one of debug|info|warn|error|off; using info");
  });
  return static_cast<LogLevel>(g_level.load());
}

void set_log_level(LogLevel level) { g_level = static_cast<int>(level); }
void set_log_rank(int rank) { g_rank = rank; }
bool log_enabled(LogLevel level) { return level != LogLevel::kOff && level >= log_level(); }

void log_line(LogLevel level, const std::string& message) {
  // Milliseconds: lines from several ranks and threads are ordered by merging logs, and one second
  // holds many steps of a small model.
  std::string line = util::rfc3339_now();
  int rank = g_rank.load();
  line += rank >= 0 ? " [ddp rank " + std::to_string(rank) + "] " : " [ddp] ";
  line += level_name(level);
  line += " ";
  line += message;
  if (line.empty() || line.back() != '\n') line += '\n';
  // One write(2) so concurrent lines stay whole.
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(2, p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace ddp
