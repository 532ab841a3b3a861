#pragma once
// One client connection as the server sees it, and the request handler that consumes its bytes.

#include <string>
#include <vector>

#include "ddp/store/server_state.h"
#include "ddp/store/socket.h"
#include "ddp/store/wire.h"

namespace ddp::store {

struct Connection {
  enum class Stage {
    kHello,    ///< the server has a token and this client has not presented it yet
    kDialect,  ///< first request not seen yet: VALIDATE (c10d 2.x) or anything else (c10d 1.x)
    kReady,
  };

  ConnId id = 0;
  Fd fd;
  std::string peer;
  Stage stage = Stage::kDialect;
  Dialect dialect = Dialect::kLegacy;
  Bytes in;           ///< received bytes; in[in_pos..] not parsed yet
  size_t in_pos = 0;
  Bytes out;          ///< replies; out[out_pos..] not sent yet
  size_t out_pos = 0;
  bool epollout = false;  ///< EPOLLOUT registered
  bool closing = false;   ///< close after this loop iteration
  /// When bytes last arrived with none unparsed before them: the start of the request being read.
  /// The hello deadline closes a first request only once it has been under way for hello_timeout
  /// (a c10d 1.x client writes one request in several send() calls).
  Clock::time_point request_started{};

  size_t unparsed() const { return in.size() - in_pos; }
  size_t unsent() const { return out.size() - out_pos; }
};

/// The budgets request handling enforces (TCPStoreOptions; docs/STORE.md).
struct RequestLimits {
  uint64_t max_stored_bytes = 1ull << 30;            ///< keys + values (+ queued items), all clients
  uint64_t max_output_bytes = kMaxBufferedOutput;    ///< unread replies of one connection
};

/// What request handling needs from the server.
struct RequestContext {
  StoreState& state;
  const std::string& token;          ///< empty: no token required
  std::vector<ConnId>& woken;        ///< connections whose WAIT completed
  RequestLimits limits{};
};

/// Parses and executes one request from conn.in[in_pos..], appending any reply to conn.out.
/// kNeedMore: nothing consumed. kInvalid: *error says why; the connection must be closed.
ParseStatus handle_request(Connection& conn, RequestContext& ctx, std::string* error);

}  // namespace ddp::store
