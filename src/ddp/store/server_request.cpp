// Request handling for the store server: token hello, dialect detection, then the c10d queries, one
// handler each, found through a dispatch table (kRoutes).
#include <algorithm>
#include <cstring>

#include "ddp/store/server_connection.h"

namespace ddp::store {
namespace {

#define DDP_TRY_PARSE(expr)                       \
  do {                                            \
    ParseStatus s_ = (expr);                      \
    if (s_ != ParseStatus::kOk) return s_;        \
  } while (0)

bool equal_constant_time(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

/// The stored-bytes budget: a mutation that would take an entry from `old_bytes` to `new_bytes`
/// must leave the store within max_stored_bytes. Checked before anything is stored.
ParseStatus fits_store(Reader& r, const RequestContext& ctx, uint64_t new_bytes, uint64_t old_bytes,
                       const char* op) {
  uint64_t stored = ctx.state.stored_bytes();
  uint64_t after = stored - std::min(stored, old_bytes) + new_bytes;
  if (new_bytes <= old_bytes || after <= ctx.limits.max_stored_bytes) return ParseStatus::kOk;
  return r.fail(std::string(op) + " of " + std::to_string(new_bytes) + " bytes would take the store to " +
                std::to_string(after) + " bytes, over its budget of " +
                std::to_string(ctx.limits.max_stored_bytes) + " (max_stored_bytes)");
}

/// The output budget: a reply of `reply_bytes` must fit beside the replies this connection has
/// not read yet. Checked before the reply is built, so an oversized one never exists.
ParseStatus fits_output(Reader& r, const Connection& conn, const RequestContext& ctx, uint64_t reply_bytes,
                        const char* op) {
  if (conn.unsent() + reply_bytes <= ctx.limits.max_output_bytes) return ParseStatus::kOk;
  return r.fail(std::string(op) + " reply of " + std::to_string(reply_bytes) + " bytes (" +
                std::to_string(conn.unsent()) + " unread before it) is over the per-connection budget of " +
                std::to_string(ctx.limits.max_output_bytes) + " (max_connection_output_bytes)");
}

ParseStatus read_keys(Reader& r, std::vector<std::string>& keys) {
  uint64_t n = 0;
  DDP_TRY_PARSE(r.u64(n));
  if (n > kMaxKeysPerRequest)
    return r.fail("request names " + std::to_string(n) + " keys, more than the limit of " +
                  std::to_string(kMaxKeysPerRequest));
  // Each key needs at least its 8-byte length: do not reserve for keys that cannot be there yet.
  if (r.available() < n * 8) return ParseStatus::kNeedMore;
  keys.resize(n);
  for (auto& k : keys) DDP_TRY_PARSE(r.str(k, kMaxKeyBytes));
  return ParseStatus::kOk;
}

/// A key and its value, the fields SET, APPEND and QUEUE_PUSH start with (a queue's name is its key).
ParseStatus read_key_value(Reader& r, std::string& key, Bytes& value) {
  DDP_TRY_PARSE(r.str(key, kMaxKeyBytes));
  return r.bytes(value, kMaxValueBytes);
}

/// The token hello: 0xDD "DDPT" u32 length, token.
ParseStatus parse_hello(Reader& r, std::string& token) {
  uint8_t b = 0;
  DDP_TRY_PARSE(r.u8(b));
  if (b != kHelloByte) return r.fail("client did not present the store token (first byte " + std::to_string(b) + ")");
  char magic[4];
  for (char& m : magic) {
    uint8_t c;
    DDP_TRY_PARSE(r.u8(c));
    m = static_cast<char>(c);
  }
  if (std::memcmp(magic, kHelloMagic, 4) != 0) return r.fail("malformed token hello");
  uint32_t n = 0;
  DDP_TRY_PARSE(r.u32(n));
  if (n > kMaxTokenBytes) return r.fail("token hello of " + std::to_string(n) + " bytes is too long");
  if (r.available() < n) return ParseStatus::kNeedMore;
  token.resize(n);
  for (char& c : token) {
    uint8_t x;
    DDP_TRY_PARSE(r.u8(x));
    c = static_cast<char>(x);
  }
  return ParseStatus::kOk;
}

// ---- one handler per query (c10d's server has one per query type too) --------------------------
// Each reads its request's fields from `r` and writes its reply, if any, into `w`. A request that
// breaks a limit fails through r.fail() before anything is stored or any reply is built.

ParseStatus on_validate(Connection&, Reader& r, RequestContext&, Writer&) {
  uint32_t magic = 0;  // a repeated VALIDATE is harmless when the magic is right
  DDP_TRY_PARSE(r.u32(magic));
  if (magic != kValidationMagic) return r.fail("VALIDATE with a wrong magic number");
  return ParseStatus::kOk;
}

ParseStatus on_set(Connection&, Reader& r, RequestContext& ctx, Writer&) {
  std::string key;
  Bytes value;
  DDP_TRY_PARSE(read_key_value(r, key, value));
  DDP_TRY_PARSE(fits_store(r, ctx, key.size() + value.size(), ctx.state.entry_bytes(key), "SET"));
  ctx.state.set(key, std::move(value), &ctx.woken);
  return ParseStatus::kOk;
}

ParseStatus on_compare_set(Connection& conn, Reader& r, RequestContext& ctx, Writer& w) {
  std::string key;
  Bytes expected, desired;
  DDP_TRY_PARSE(r.str(key, kMaxKeyBytes));
  DDP_TRY_PARSE(r.bytes(expected, kMaxValueBytes));
  DDP_TRY_PARSE(r.bytes(desired, kMaxValueBytes));
  DDP_TRY_PARSE(fits_store(r, ctx, key.size() + desired.size(), ctx.state.entry_bytes(key), "COMPARE_SET"));
  DDP_TRY_PARSE(fits_output(r, conn, ctx, 8 + std::max(expected.size(), desired.size()), "COMPARE_SET"));
  w.bytes(ctx.state.compare_set(key, expected, std::move(desired), &ctx.woken));
  return ParseStatus::kOk;
}

ParseStatus on_get(Connection& conn, Reader& r, RequestContext& ctx, Writer& w) {
  std::string key;
  DDP_TRY_PARSE(r.str(key, kMaxKeyBytes));
  const Bytes* v = ctx.state.get(key);
  DDP_TRY_PARSE(fits_output(r, conn, ctx, 8 + (v ? v->size() : 0), "GET"));
  w.bytes(v ? *v : Bytes{});  // a missing key reads as empty, as c10d's libuv server does
  return ParseStatus::kOk;
}

ParseStatus on_add(Connection& conn, Reader& r, RequestContext& ctx, Writer& w) {
  std::string key;
  int64_t delta = 0;
  DDP_TRY_PARSE(r.str(key, kMaxKeyBytes));
  DDP_TRY_PARSE(r.i64(delta));
  DDP_TRY_PARSE(fits_store(r, ctx, key.size() + 20, ctx.state.entry_bytes(key), "ADD"));  // <= 20 digits
  DDP_TRY_PARSE(fits_output(r, conn, ctx, 8, "ADD"));
  auto sum = ctx.state.add(key, delta, &ctx.woken);
  if (!sum) return r.fail("ADD to key '" + key + "' whose value is not an integer or overflows");
  w.i64(*sum);
  return ParseStatus::kOk;
}

ParseStatus on_check(Connection&, Reader& r, RequestContext& ctx, Writer& w) {
  std::vector<std::string> keys;
  DDP_TRY_PARSE(read_keys(r, keys));
  w.u8(static_cast<uint8_t>(ctx.state.check(keys) ? CheckResponse::kReady : CheckResponse::kNotReady));
  return ParseStatus::kOk;
}

ParseStatus on_wait(Connection& conn, Reader& r, RequestContext& ctx, Writer& w) {
  std::vector<std::string> keys;
  DDP_TRY_PARSE(read_keys(r, keys));
  if (ctx.state.wait(conn.id, keys)) w.u8(static_cast<uint8_t>(WaitResponse::kStopWaiting));
  return ParseStatus::kOk;
}

ParseStatus on_num_keys(Connection&, Reader&, RequestContext& ctx, Writer& w) {
  w.i64(ctx.state.num_keys());
  return ParseStatus::kOk;
}

ParseStatus on_delete_key(Connection&, Reader& r, RequestContext& ctx, Writer& w) {
  std::string key;
  DDP_TRY_PARSE(r.str(key, kMaxKeyBytes));
  w.i64(ctx.state.delete_key(key) ? 1 : 0);
  return ParseStatus::kOk;
}

ParseStatus on_append(Connection&, Reader& r, RequestContext& ctx, Writer&) {
  std::string key;
  Bytes value;
  DDP_TRY_PARSE(read_key_value(r, key, value));
  const Bytes* old = ctx.state.get(key);
  if (old && old->size() + value.size() > kMaxValueBytes)
    return r.fail("APPEND would grow key '" + key + "' past the value limit");
  uint64_t before = ctx.state.entry_bytes(key);
  DDP_TRY_PARSE(fits_store(r, ctx, (old ? before : key.size()) + value.size(), before, "APPEND"));
  ctx.state.append(key, value, &ctx.woken);
  return ParseStatus::kOk;
}

ParseStatus on_multi_get(Connection& conn, Reader& r, RequestContext& ctx, Writer& w) {
  std::vector<std::string> keys;
  DDP_TRY_PARSE(read_keys(r, keys));
  uint64_t reply = 0;  // at most 131072 x (8 + 64 MiB): no overflow
  for (const auto& k : keys) {
    const Bytes* v = ctx.state.get(k);
    reply += 8 + (v ? v->size() : 0);
  }
  DDP_TRY_PARSE(fits_output(r, conn, ctx, reply, "MULTI_GET"));
  w.buffer().reserve(reply);
  for (const auto& k : keys) {
    const Bytes* v = ctx.state.get(k);
    w.bytes(v ? *v : Bytes{});
  }
  return ParseStatus::kOk;
}

ParseStatus on_multi_set(Connection&, Reader& r, RequestContext& ctx, Writer&) {
  uint64_t n = 0;
  DDP_TRY_PARSE(r.u64(n));
  if (n > kMaxKeysPerRequest) return r.fail("MULTI_SET of " + std::to_string(n) + " keys is over the limit");
  if (r.available() < n * 16) return ParseStatus::kNeedMore;
  std::vector<std::pair<std::string, Bytes>> items(n);
  uint64_t total = 0;  // an upper bound: as if no key were replaced
  for (auto& [k, v] : items) {
    DDP_TRY_PARSE(r.str(k, kMaxKeyBytes));
    DDP_TRY_PARSE(r.bytes(v, kMaxValueBytes));
    total += k.size() + v.size();
  }
  DDP_TRY_PARSE(fits_store(r, ctx, total, 0, "MULTI_SET"));
  for (auto& [k, v] : items) ctx.state.set(k, std::move(v), &ctx.woken);
  return ParseStatus::kOk;
}

ParseStatus on_cancel_wait(Connection& conn, Reader&, RequestContext& ctx, Writer& w) {
  ctx.state.cancel_wait(conn.id);
  w.u8(static_cast<uint8_t>(WaitResponse::kWaitCanceled));
  return ParseStatus::kOk;
}

ParseStatus on_ping(Connection&, Reader& r, RequestContext&, Writer& w) {
  uint32_t nonce = 0;
  DDP_TRY_PARSE(r.u32(nonce));
  w.u32(nonce);
  return ParseStatus::kOk;
}

ParseStatus on_list_keys(Connection& conn, Reader& r, RequestContext& ctx, Writer& w) {
  auto keys = ctx.state.keys();
  uint64_t reply = 8;
  for (const auto& k : keys) reply += 8 + k.size();
  DDP_TRY_PARSE(fits_output(r, conn, ctx, reply, "LIST_KEYS"));
  w.i64(static_cast<int64_t>(keys.size()));
  for (const auto& k : keys) w.str(k);
  return ParseStatus::kOk;
}

ParseStatus on_queue_push(Connection&, Reader& r, RequestContext& ctx, Writer&) {
  std::string queue;
  Bytes value;
  DDP_TRY_PARSE(read_key_value(r, queue, value));
  DDP_TRY_PARSE(fits_store(r, ctx, queue.size() + value.size(), 0, "QUEUE_PUSH"));
  ctx.state.queue_push(queue, std::move(value), &ctx.woken);
  return ParseStatus::kOk;
}

ParseStatus on_queue_pop(Connection& conn, Reader& r, RequestContext& ctx, Writer& w) {
  std::string queue;  // reply: int64 length before the pop, then the value when there was one
  DDP_TRY_PARSE(r.str(queue, kMaxKeyBytes));
  DDP_TRY_PARSE(fits_output(r, conn, ctx, 16 + ctx.state.queue_front_bytes(queue), "QUEUE_POP"));
  auto [len, value] = ctx.state.queue_pop(queue);
  w.i64(len);
  if (value) w.bytes(*value);
  return ParseStatus::kOk;
}

ParseStatus on_queue_len(Connection&, Reader& r, RequestContext& ctx, Writer& w) {
  std::string queue;
  DDP_TRY_PARSE(r.str(queue, kMaxKeyBytes));
  w.i64(ctx.state.queue_len(queue));
  return ParseStatus::kOk;
}

using Handler = ParseStatus (*)(Connection&, Reader&, RequestContext&, Writer&);
struct Route {
  Op op;
  Handler handler;  ///< nullptr: a query this server does not serve
};

// The dispatch table, in wire.h's Op order so that an Op indexes it (checked below).
constexpr Route kRoutes[] = {
    {Op::kValidate, on_validate},   {Op::kSet, on_set},           {Op::kCompareSet, on_compare_set},
    {Op::kGet, on_get},             {Op::kAdd, on_add},           {Op::kCheck, on_check},
    {Op::kWait, on_wait},           {Op::kNumKeys, on_num_keys},  {Op::kWatchKey, nullptr},
    {Op::kDeleteKey, on_delete_key}, {Op::kAppend, on_append},    {Op::kMultiGet, on_multi_get},
    {Op::kMultiSet, on_multi_set},  {Op::kCancelWait, on_cancel_wait}, {Op::kPing, on_ping},
    {Op::kQueuePush, on_queue_push}, {Op::kQueuePop, on_queue_pop}, {Op::kQueueLen, on_queue_len},
    {Op::kListKeys, on_list_keys},
};
constexpr bool routes_follow_the_ops() {
  constexpr size_t n = sizeof(kRoutes) / sizeof(kRoutes[0]);
  if (n != static_cast<size_t>(Op::kListKeys) + 1) return false;
  for (size_t i = 0; i < n; ++i)
    if (static_cast<size_t>(kRoutes[i].op) != i) return false;
  return true;
}
static_assert(routes_follow_the_ops(), "kRoutes has one entry per Op of wire.h, in its order");

ParseStatus handle_query(Connection& conn, Reader& r, RequestContext& ctx) {
  uint8_t code = 0;
  DDP_TRY_PARSE(r.u8(code));
  auto op = op_from_code(conn.dialect, code);
  if (!op)
    return r.fail("unknown query type " + std::to_string(code) + " for a " +
                  dialect_name(conn.dialect) + " client");
  const Handler handler = kRoutes[static_cast<size_t>(*op)].handler;
  if (handler == nullptr) return r.fail(std::string("query ") + op_name(*op) + " is not supported by this server");
  Writer w;
  DDP_TRY_PARSE(handler(conn, r, ctx, w));
  Bytes& reply = w.buffer();
  if (conn.out.empty()) conn.out.swap(reply);  // a large reply is not copied a second time
  else conn.out.insert(conn.out.end(), reply.begin(), reply.end());
  return ParseStatus::kOk;
}

}  // namespace

ParseStatus handle_request(Connection& conn, RequestContext& ctx, std::string* error) {
  const uint8_t* data = conn.in.data() + conn.in_pos;
  Reader r(data, conn.unparsed());
  ParseStatus s = ParseStatus::kOk;
  bool hello = conn.stage == Connection::Stage::kHello ||
               (conn.stage == Connection::Stage::kDialect && r.available() > 0 && data[0] == kHelloByte);
  if (hello) {
    std::string token;
    s = parse_hello(r, token);
    if (s == ParseStatus::kOk) {
      // A server without a token accepts any hello: the client just came prepared.
      if (!ctx.token.empty() && !equal_constant_time(token, ctx.token)) {
        s = r.fail("client presented a wrong store token");
      } else {
        conn.stage = Connection::Stage::kDialect;
        conn.out.push_back(kHelloByte);
        conn.out.push_back(kHelloAccepted);
      }
    }
  } else if (conn.stage == Connection::Stage::kDialect) {
    if (r.available() == 0) return ParseStatus::kNeedMore;
    if (data[0] == 0) {
      if (r.available() < 5) return ParseStatus::kNeedMore;
      uint32_t magic;
      std::memcpy(&magic, data + 1, 4);
      if (magic == kValidationMagic) {
        conn.dialect = Dialect::kV2;
        conn.stage = Connection::Stage::kReady;
        conn.in_pos += 5;
        return ParseStatus::kOk;
      }
    }
    conn.dialect = Dialect::kLegacy;
    conn.stage = Connection::Stage::kReady;
    return ParseStatus::kOk;  // nothing consumed; the request is parsed on the next call
  } else {
    s = handle_query(conn, r, ctx);
  }
  if (s == ParseStatus::kOk) conn.in_pos += r.consumed();
  if (s == ParseStatus::kInvalid) *error = r.error();
  return s;
}

}  // namespace ddp::store
