#include "ddp/gloo/op_signature.h"

#include <ddp/errors.h>
#include <ddp/process_group.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <utility>

#include "ddp/gloo/exchange.h"

namespace ddp::gloo_backend {
namespace {

constexpr uint32_t kSignatureMagic = 0x5349474fu;  // "OGIS": a record that is not a signature is named as such
constexpr size_t kMaxDtypes = 8;

const char* kind_name(OpSignature::Kind k) {
  switch (k) {
    case OpSignature::Kind::kAllreduce: return "allreduce";
    case OpSignature::Kind::kBroadcast: return "broadcast";
    case OpSignature::Kind::kAllgather: return "allgather";
    case OpSignature::Kind::kReduceScatter: return "reduce_scatter";
    case OpSignature::Kind::kBarrier: return "barrier";
  }
  return "unknown collective";
}

void put(uint8_t* at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) at[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t get(const uint8_t* at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | at[i];
  return v;
}

// Ranks as "rank 2" or "ranks 0, 1".
std::string ranks_text(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

}  // namespace

void OpSignature::add_part(c10::ScalarType dtype, int64_t numel) {
  const auto n = static_cast<uint64_t>(numel);
  elements += n;
  bytes += n * c10::elementSize(dtype);
  // FNV-1a over (dtype, elements) of each part: groups cut differently move differently sized messages.
  auto mix = [this](uint64_t v) {
    for (int i = 0; i < 8; ++i) layout = (layout ^ ((v >> (8 * i)) & 0xFF)) * 0x100000001b3ull;
  };
  if (layout == 0) layout = 0xcbf29ce484222325ull;
  mix(static_cast<uint64_t>(dtype));
  mix(n);
  if (std::find(dtypes.begin(), dtypes.end(), dtype) == dtypes.end() && dtypes.size() < kMaxDtypes)
    dtypes.push_back(dtype);
}

std::string OpSignature::describe() const {
  std::ostringstream s;
  s << kind_name(kind);
  if (kind == Kind::kBarrier) return s.str();
  s << " (";
  if (kind == Kind::kAllreduce || kind == Kind::kReduceScatter)
    s << (reduce_op <= static_cast<uint8_t>(ReduceOp::kMax) ? to_string(static_cast<ReduceOp>(reduce_op)) : "op ?")
      << ", ";
  if (kind == Kind::kBroadcast) s << "root " << root << ", ";
  s << tensors << (tensors == 1 ? " tensor, " : " tensors, ") << elements << " elements";
  if (kind == Kind::kAllgather || kind == Kind::kReduceScatter) s << " per rank";
  for (size_t i = 0; i < dtypes.size(); ++i) s << (i == 0 ? ", " : "+") << c10::toString(dtypes[i]);
  s << ")";
  return s.str();
}

bool OpSignature::operator==(const OpSignature& o) const {
  // Not the tensor count: [a, b] on one rank and cat(a, b) on another fuse into the same messages.
  return kind == o.kind && reduce_op == o.reduce_op && root == o.root && elements == o.elements && bytes == o.bytes && layout == o.layout && dtypes == o.dtypes;
}

// Layout: 0 magic u32, 4 kind u8, 5 reduce op u8, 6 dtype count u8, 7 reserved, 8 root i32,
// 12 tensors u32, 16 elements u64, 24 bytes u64, 32 layout u64, 40 dtypes (8 x i8), 48-63 zero.
void encode(const OpSignature& s, uint8_t out[kOpSignatureBytes]) {
  std::memset(out, 0, kOpSignatureBytes);
  put(out, kSignatureMagic, 4);
  out[4] = static_cast<uint8_t>(s.kind);
  out[5] = s.reduce_op;
  out[6] = static_cast<uint8_t>(std::min(s.dtypes.size(), kMaxDtypes));
  put(out + 8, static_cast<uint32_t>(s.root), 4);
  put(out + 12, s.tensors, 4);
  put(out + 16, s.elements, 8);
  put(out + 24, s.bytes, 8);
  put(out + 32, s.layout, 8);
  for (size_t i = 0; i < out[6]; ++i) out[40 + i] = static_cast<uint8_t>(static_cast<int8_t>(s.dtypes[i]));
}

OpSignature decode(const uint8_t in[kOpSignatureBytes]) {
  if (get(in, 4) != kSignatureMagic || in[4] < 1 || in[4] > static_cast<uint8_t>(OpSignature::Kind::kBarrier) ||
      in[6] > kMaxDtypes)
    throw ConfigError("gloo: a peer sent a malformed collective signature (a different ddp version?)");
  OpSignature s;
  s.kind = static_cast<OpSignature::Kind>(in[4]);
  s.reduce_op = in[5];
  s.root = static_cast<int32_t>(get(in + 8, 4));
  s.tensors = static_cast<uint32_t>(get(in + 12, 4));
  s.elements = get(in + 16, 8);
  s.bytes = get(in + 24, 8);
  s.layout = get(in + 32, 8);
  for (size_t i = 0; i < in[6]; ++i) s.dtypes.push_back(static_cast<c10::ScalarType>(static_cast<int8_t>(in[40 + i])));
  return s;
}

void require_same_signatures(const std::vector<OpSignature>& by_member, const std::vector<int>& ranks, int my_rank,
                             const std::string& op_name) {
  // Distinct calls in rank order, each with its ranks.
  std::vector<std::pair<OpSignature, std::vector<int>>> calls;
  for (size_t m = 0; m < by_member.size(); ++m) {
    const OpSignature& s = by_member[m];
    auto it = std::find_if(calls.begin(), calls.end(), [&](const auto& c) { return c.first == s; });
    if (it == calls.end()) calls.push_back({s, {ranks[m]}});
    else it->second.push_back(ranks[m]);
  }
  if (calls.size() <= 1) return;
  std::string msg = op_name + " on rank " + std::to_string(my_rank) + " does not match across ranks: ";
  for (size_t i = 0; i < calls.size(); ++i) {
    std::string what = calls[i].first.describe();
    // Same description, different fused layout (e.g. contiguous on one rank, not on another).
    for (size_t j = 0; j < calls.size(); ++j)
      if (j != i && calls[j].first.describe() == what) what += " [layout " + std::to_string(calls[i].first.layout) + "]";
    msg += (i ? "; " : "") + ranks_text(calls[i].second) + " called " + what;
  }
  msg += ". Every rank must issue the same collectives in the same order with the same sizes, dtypes and roots "
         "(a program bug: no data was sent, and the group is now unusable)";
  throw ConfigError(msg);
}

SignatureCheck::SignatureCheck(const OpEnv& env, uint8_t slot_prefix, const OpSignature& mine, std::string op_name)
    : mine_(mine), op_name_(std::move(op_name)) {
  OpEnv own = env;
  own.gate = nullptr;  // this exchange is the gate
  ex_ = std::make_unique<Exchange>(own, slot_prefix);
  const int n = ex_->size(), rank = ex_->rank();
  if (n == 1) {
    state_ = State::kPassed;
    return;
  }
  all_.resize(kOpSignatureBytes * static_cast<size_t>(n));
  encode(mine_, all_.data() + kOpSignatureBytes * rank);
  buf_ = ex_->buffer(all_.data(), all_.size());
  for (int r = 0; r < n; ++r)
    if (r != rank) ex_->recv(buf_, r, kOpSignatureBytes * r, kOpSignatureBytes);
  for (int step = 1; step < n; ++step) ex_->send(buf_, (rank + step) % n, kOpSignatureBytes * rank, kOpSignatureBytes);
}

SignatureCheck::~SignatureCheck() = default;

void SignatureCheck::finish() {
  if (state_ == State::kPassed) return;
  if (state_ == State::kFailed) std::rethrow_exception(failure_);
  // Failing once is final: a later Exchange call must not wait on these buffers again.
  state_ = State::kFailed;
  try {
    const int n = ex_->size(), rank = ex_->rank();
    for (int r = 0; r < n; ++r)
      if (r != rank) ex_->wait_recv(buf_, r);
    // Our signature has left before anyone fails, so every rank can name every call.
    for (int step = 1; step < n; ++step) ex_->wait_send(buf_, (rank + step) % n);

    std::vector<OpSignature> all;
    std::vector<int> ranks;
    for (int r = 0; r < n; ++r) {
      all.push_back(r == rank ? mine_ : decode(all_.data() + kOpSignatureBytes * r));
      ranks.push_back(r);
    }
    require_same_signatures(all, ranks, rank, op_name_);
    state_ = State::kPassed;
  } catch (...) {
    failure_ = std::current_exception();
    throw;
  }
}

}  // namespace ddp::gloo_backend
