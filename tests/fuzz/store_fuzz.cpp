// Fuzz target: bytes a client sends to the store server, through the server's request handling
// (token hello, dialect detection, every c10d 1.x and 2.x query) and its key-value state, as the
// event loop drives them but without sockets: a Connection is fed the bytes and its replies are
// collected. The input's first byte picks the server's mode; the rest is the byte stream.
//   mode bit 0: the server has a token ("t0k3n"); bits 1..7: the stream arrives in chunks of that
//   many bytes (0: all at once), and the client reads its replies after each chunk.
// Contract: handle_request never throws and never crashes: malformed bytes end in kInvalid (the
// loop closes the connection with the reason), a partial request in kNeedMore. Every budget of the
// resource model (docs/STORE.md) holds after each request: stored bytes and unread replies.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ddp/store/server_connection.h"

namespace {

using namespace ddp::store;

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "store fuzz: invariant broken: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string token = (mode & 1) ? "t0k3n" : "";
  const size_t chunk = mode >> 1;
  ++data;
  --size;

  StoreState state;
  std::vector<ConnId> woken;
  RequestContext ctx{state, token, woken, {}};
  ctx.limits.max_stored_bytes = 32 * 1024;  // small budgets, so inputs of a few KB reach them
  ctx.limits.max_output_bytes = 16 * 1024;
  Connection conn;
  conn.id = 7;
  conn.stage = token.empty() ? Connection::Stage::kDialect : Connection::Stage::kHello;

  size_t fed = 0;
  while (fed < size) {
    size_t n = chunk == 0 ? size - fed : std::min(chunk, size - fed);
    conn.in.insert(conn.in.end(), data + fed, data + fed + n);
    fed += n;
    std::string error;
    bool closed = false;
    while (conn.unparsed() > 0) {
      size_t before = conn.in_pos;
      ParseStatus s = handle_request(conn, ctx, &error);
      if (state.stored_bytes() > ctx.limits.max_stored_bytes) broken("stored bytes over the budget");
      if (conn.unsent() > ctx.limits.max_output_bytes) broken("unread replies over the budget");
      if (s == ParseStatus::kNeedMore) {
        if (conn.in_pos != before) broken("kNeedMore consumed bytes");
        break;
      }
      if (s == ParseStatus::kInvalid) {
        if (error.empty()) broken("kInvalid without a reason");
        closed = true;
        break;
      }
      if (conn.in_pos > conn.in.size()) broken("parsed past the input");
    }
    if (closed) break;
    if (chunk != 0) {  // the client read everything it was sent
      conn.out.clear();
      conn.out_pos = 0;
    }
  }
  // The connection goes away: its WAIT is forgotten, as the server's close does.
  state.cancel_wait(conn.id);
  if (state.waiting_connections() != 0) broken("a WAIT outlived its connection");
  return 0;
}
