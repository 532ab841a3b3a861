#include "ddp/store/wire.h"

#include <cctype>
#include <limits>

namespace ddp::store {
namespace {

// Index = legacy byte; the ops c10d 1.x/2.0 servers know.
constexpr Op kLegacyOps[] = {Op::kSet,      Op::kCompareSet, Op::kGet,       Op::kAdd,
                             Op::kCheck,    Op::kWait,       Op::kNumKeys,   Op::kWatchKey,
                             Op::kDeleteKey, Op::kAppend,    Op::kMultiGet,  Op::kMultiSet,
                             Op::kCancelWait};
// Index = v2 byte (c10d >= 2.1; PING from 2.3/2.4, QUEUE_* and LIST_KEYS later).
constexpr Op kV2Ops[] = {Op::kValidate,  Op::kSet,       Op::kCompareSet, Op::kGet,
                         Op::kAdd,       Op::kCheck,     Op::kWait,       Op::kNumKeys,
                         Op::kDeleteKey, Op::kAppend,    Op::kMultiGet,   Op::kMultiSet,
                         Op::kCancelWait, Op::kPing,     Op::kQueuePush,  Op::kQueuePop,
                         Op::kQueueLen,  Op::kListKeys};

template <size_t N>
std::optional<uint8_t> find_code(const Op (&table)[N], Op op) {
  for (size_t i = 0; i < N; ++i)
    if (table[i] == op) return static_cast<uint8_t>(i);
  return std::nullopt;
}

}  // namespace

const char* dialect_name(Dialect d) { return d == Dialect::kLegacy ? "c10d-1.x" : "c10d-2.x"; }

const char* op_name(Op op) {
  switch (op) {
    case Op::kValidate: return "VALIDATE";
    case Op::kSet: return "SET";
    case Op::kCompareSet: return "COMPARE_SET";
    case Op::kGet: return "GET";
    case Op::kAdd: return "ADD";
    case Op::kCheck: return "CHECK";
    case Op::kWait: return "WAIT";
    case Op::kNumKeys: return "GETNUMKEYS";
    case Op::kWatchKey: return "WATCH_KEY";
    case Op::kDeleteKey: return "DELETE_KEY";
    case Op::kAppend: return "APPEND";
    case Op::kMultiGet: return "MULTI_GET";
    case Op::kMultiSet: return "MULTI_SET";
    case Op::kCancelWait: return "CANCEL_WAIT";
    case Op::kPing: return "PING";
    case Op::kQueuePush: return "QUEUE_PUSH";
    case Op::kQueuePop: return "QUEUE_POP";
    case Op::kQueueLen: return "QUEUE_LEN";
    case Op::kListKeys: return "LIST_KEYS";
  }
  return "?";
}

std::optional<uint8_t> op_code(Dialect dialect, Op op) {
  return dialect == Dialect::kLegacy ? find_code(kLegacyOps, op) : find_code(kV2Ops, op);
}

std::optional<Op> op_from_code(Dialect dialect, uint8_t code) {
  if (dialect == Dialect::kLegacy) {
    if (code < sizeof kLegacyOps / sizeof kLegacyOps[0]) return kLegacyOps[code];
  } else if (code < sizeof kV2Ops / sizeof kV2Ops[0]) {
    return kV2Ops[code];
  }
  return std::nullopt;
}

ParseStatus Reader::field(uint64_t limit, const char* what, const uint8_t** begin, uint64_t* n) {
  const size_t start = pos_;
  ParseStatus s = u64(*n);
  if (s != ParseStatus::kOk) return s;
  if (*n > limit)
    return fail(std::string(what) + " of " + std::to_string(*n) + " bytes exceeds the limit of " +
                std::to_string(limit));
  if (available() < *n) {
    pos_ = start;
    return ParseStatus::kNeedMore;
  }
  *begin = data_ + pos_;
  pos_ += *n;
  return ParseStatus::kOk;
}

ParseStatus Reader::str(std::string& out, uint64_t limit) {
  const uint8_t* begin = nullptr;
  uint64_t n = 0;
  ParseStatus s = field(limit, "key", &begin, &n);
  if (s == ParseStatus::kOk) out.assign(reinterpret_cast<const char*>(begin), n);
  return s;
}

ParseStatus Reader::bytes(Bytes& out, uint64_t limit) {
  const uint8_t* begin = nullptr;
  uint64_t n = 0;
  ParseStatus s = field(limit, "value", &begin, &n);
  if (s == ParseStatus::kOk) out.assign(begin, begin + n);
  return s;
}

std::optional<int64_t> parse_counter(const Bytes& value) {
  size_t i = 0;
  while (i < value.size() && std::isspace(value[i])) ++i;
  bool negative = false;
  if (i < value.size() && (value[i] == '+' || value[i] == '-')) negative = value[i++] == '-';
  if (i >= value.size() || !std::isdigit(value[i])) return std::nullopt;
  // Accumulate as a negative number so INT64_MIN parses.
  int64_t acc = 0;
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  for (; i < value.size() && std::isdigit(value[i]); ++i) {
    int digit = value[i] - '0';
    if (acc < (kMin + digit) / 10) return std::nullopt;
    acc = acc * 10 - digit;
  }
  if (!negative) {
    if (acc == kMin) return std::nullopt;
    return -acc;
  }
  return acc;
}

}  // namespace ddp::store
