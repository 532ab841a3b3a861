#include "ddp/gloo/failure.h"

#include "ddp/gloo/exchange.h"

#include <gloo/common/error.h>

#include <cctype>
#include <regex>

namespace ddp::gloo_backend {

void PeerDirectory::add(int rank, std::string gloo_str, std::string readable) {
  entries_.push_back({rank, std::move(gloo_str), std::move(readable)});
}

namespace {

// Where `needle` occurs in `text` as a whole address: "[1.2.3.4]:123" must not match inside
// "[1.2.3.4]:1234".
bool contains_address(const std::string& text, const std::string& needle) {
  if (needle.empty()) return false;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) {
    size_t end = pos + needle.size();
    if (end >= text.size() || !std::isdigit(static_cast<unsigned char>(text[end]))) return true;
  }
  return false;
}

}  // namespace

int PeerDirectory::find_in(const std::string& message) const {
  // Gloo's printed form first; then the readable "1.2.3.4:port" against the message with IPv4
  // brackets dropped, because Gloo versions print an address differently (some append a sequence
  // number to the port) while the host and port stay the same.
  for (const auto& entry : entries_)
    if (contains_address(message, entry.gloo_str)) return entry.rank;
  static const std::regex bracketed_ipv4(R"(\[([0-9]+\.[0-9]+\.[0-9]+\.[0-9]+)\])");
  const std::string plain = std::regex_replace(message, bracketed_ipv4, "$1");
  for (const auto& entry : entries_)
    if (contains_address(plain, entry.readable)) return entry.rank;
  return -1;
}

std::string PeerDirectory::readable(int rank) const {
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
    if (it->rank == rank) return it->readable;
  return "";
}

std::string strip_gloo_location(const std::string& message) {
  static const std::regex location(R"(\[[^\]\s]+\.(cc|cpp|h):[0-9]+\] )");
  return std::regex_replace(message, location, "");
}

namespace {

std::string where(const FailureContext& ctx) {
  return ctx.op + " failed on rank " + std::to_string(ctx.rank) + " of " + std::to_string(ctx.size);
}

std::string peer_text(int peer, const PeerDirectory& peers) {
  std::string addr = peers.readable(peer);
  return "rank " + std::to_string(peer) + (addr.empty() ? "" : " (" + addr + ")");
}

bool is_timeout_message(const std::string& m) {
  return m.find("Timed out") != std::string::npos || m.find("timed out") != std::string::npos ||
         m.find("Timeout") != std::string::npos || m.find("timeout") != std::string::npos;
}

}  // namespace

std::exception_ptr translate_failure(std::exception_ptr error, const FailureContext& ctx,
                                     const PeerDirectory& peers) {
  try {
    std::rethrow_exception(error);
  } catch (const ddp::Error&) {
    return error;
  } catch (const TransportFailure& e) {
    if (e.kind == TransportFailure::Kind::kTimeout)
      return std::make_exception_ptr(TimeoutError(
          where(ctx) + ": " + e.what() + " (that rank, or one it waits for, has not issued this operation, is stuck, "
          "or issued a different one)"));
    std::string who = e.peer >= 0 ? "peer " + peer_text(e.peer, peers) : std::string("a peer");
    return std::make_exception_ptr(PeerError(
        where(ctx) + ": lost the connection to " + who + ": it closed the connection or died (gloo: " + e.what() + ")",
        ctx.rank, e.peer));
  } catch (const ::gloo::IoException& e) {
    std::string gloo_msg = strip_gloo_location(e.what());
    int peer = peers.find_in(gloo_msg);
    if (peer < 0) peer = ctx.tracked_peer;
    if (is_timeout_message(gloo_msg)) {
      std::string who = peer >= 0 ? peer_text(peer, peers)
                                  : std::string("a peer (one that has not issued this operation, is stuck, or "
                                                "issued a different operation)");
      return std::make_exception_ptr(TimeoutError(
          where(ctx) + ": no progress within the " + std::to_string(ctx.timeout_ms) + " ms timeout waiting for " +
          who + " (gloo: " + gloo_msg + ")"));
    }
    std::string who = peer >= 0 ? "peer " + peer_text(peer, peers) : std::string("a peer");
    return std::make_exception_ptr(PeerError(
        where(ctx) + ": lost the connection to " + who + ": it closed the connection or died (gloo: " + gloo_msg + ")",
        ctx.rank, peer));
  } catch (const std::exception& e) {
    return std::make_exception_ptr(Error(where(ctx) + ": " + strip_gloo_location(e.what()), kExitInternal));
  } catch (...) {
    return std::make_exception_ptr(Error(where(ctx) + ": unknown exception", kExitInternal));
  }
}

GroupFailure GroupFailure::from(std::exception_ptr error) {
  GroupFailure f;
  try {
    std::rethrow_exception(error);
  } catch (const PeerError& e) {
    f = {Kind::kPeer, e.what(), e.peer(), e.exit_code()};
  } catch (const TimeoutError& e) {
    f = {Kind::kTimeout, e.what(), -1, e.exit_code()};
  } catch (const StoreError& e) {
    f = {Kind::kStore, e.what(), -1, e.exit_code()};
  } catch (const ConfigError& e) {
    f = {Kind::kConfig, e.what(), -1, e.exit_code()};
  } catch (const ddp::Error& e) {
    f = {Kind::kOther, e.what(), -1, e.exit_code()};
  } catch (const std::exception& e) {
    f = {Kind::kOther, e.what(), -1, kExitInternal};
  } catch (...) {
    f = {Kind::kOther, "unknown exception", -1, kExitInternal};
  }
  return f;
}

std::exception_ptr GroupFailure::later_op_error(const std::string& op, int rank) const {
  std::string msg = op + " on rank " + std::to_string(rank) +
                    ": the gloo process group is unusable after an earlier failure; create a new one "
                    "(restart the job). Earlier failure: " +
                    message;
  switch (kind) {
    case Kind::kPeer:
      return std::make_exception_ptr(PeerError(msg, rank, peer));
    case Kind::kTimeout:
      return std::make_exception_ptr(TimeoutError(msg));
    case Kind::kStore:
      return std::make_exception_ptr(StoreError(msg, exit_code));
    case Kind::kConfig:  // a mismatched collective: still the program's bug, still permanent
      return std::make_exception_ptr(ConfigError(msg));
    case Kind::kOther:
      break;
  }
  return std::make_exception_ptr(Error(msg, exit_code));
}

}  // namespace ddp::gloo_backend
