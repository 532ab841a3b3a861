#pragma once
// RFC 3339 timestamps in UTC, the one format for every line we stamp: log lines, the metric line and
// the Katib metrics file ("2026-12-01T23:16:11.123Z": milliseconds, Z). Katib's metrics collector
// parses a line's first word with Go's time.Parse(time.RFC3339Nano, ...), which takes 0 to 9 digits
// of fraction; milliseconds order the lines of several ranks merged into one log.
//
//   std::string ts = ddp::util::rfc3339_now();
//   size_t n = ddp::util::leading_rfc3339(line.data(), line.size());   // ts + ' ', or 0
#include <ctime>
#include <string>

namespace ddp::util {

/// `t` (CLOCK_REALTIME) as YYYY-MM-DDTHH:MM:SS.mmmZ.
std::string rfc3339_utc(const timespec& t);
/// The current time as rfc3339_utc.
std::string rfc3339_now();

/// When `data` starts with a timestamp Go's time.Parse(time.RFC3339Nano, ...) accepts
/// (YYYY-MM-DDTHH:MM:SS, optionally '.' and 1-9 digits, then Z or +hh:mm / -hh:mm; fields in range)
/// followed by one space: the length of both. Otherwise 0.
size_t leading_rfc3339(const char* data, size_t size);

}  // namespace ddp::util
