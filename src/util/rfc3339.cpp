#include "util/rfc3339.h"

#include <cstdio>

namespace ddp::util {
namespace {

// The value of `n` decimal digits at `p`, or -1 when one of them is not a digit.
int digits(const char* p, int n) {
  int v = 0;
  for (int i = 0; i < n; ++i) {
    if (p[i] < '0' || p[i] > '9') return -1;
    v = v * 10 + (p[i] - '0');
  }
  return v;
}

bool leap(int year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

int days_in_month(int year, int month) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && leap(year) ? 29 : kDays[month - 1];
}

}  // namespace

std::string rfc3339_utc(const timespec& t) {
  std::tm tm{};
  gmtime_r(&t.tv_sec, &tm);
  char buf[40];
  size_t len = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + len, sizeof buf - len, ".%03dZ", static_cast<int>(t.tv_nsec / 1000000));
  return buf;
}

std::string rfc3339_now() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return rfc3339_utc(now);
}

size_t leading_rfc3339(const char* data, size_t size) {
  // Go's time.Parse for RFC3339Nano: fixed-width fields in range (day within its month, second
  // below 60), a fraction of 1-9 digits after '.', then 'Z' or a numeric offset below 24:00.
  if (size < 20) return 0;
  const char* p = data;
  const int year = digits(p, 4), month = digits(p + 5, 2), day = digits(p + 8, 2);
  const int hour = digits(p + 11, 2), minute = digits(p + 14, 2), second = digits(p + 17, 2);
  if (year < 0 || p[4] != '-' || month < 1 || month > 12 || p[7] != '-' || day < 1 ||
      day > days_in_month(year, month) || p[10] != 'T' || hour < 0 || hour > 23 || p[13] != ':' || minute < 0 ||
      minute > 59 || p[16] != ':' || second < 0 || second > 59)
    return 0;
  size_t i = 19;
  if (i < size && p[i] == '.') {
    size_t n = 0;
    while (i + 1 + n < size && n < 10 && p[i + 1 + n] >= '0' && p[i + 1 + n] <= '9') ++n;
    if (n < 1 || n > 9) return 0;
    i += 1 + n;
  }
  if (i < size && p[i] == 'Z') {
    i += 1;
  } else if (i + 6 <= size && (p[i] == '+' || p[i] == '-')) {
    const int oh = digits(p + i + 1, 2), om = digits(p + i + 4, 2);
    if (oh < 0 || oh > 23 || p[i + 3] != ':' || om < 0 || om > 59) return 0;
    i += 6;
  } else {
    return 0;
  }
  return i < size && p[i] == ' ' ? i + 1 : 0;
}

}  // namespace ddp::util
