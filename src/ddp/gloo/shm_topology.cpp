#include "ddp/gloo/shm_topology.h"

#include <ddp/logging.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "ddp/gloo/shm_segment.h"

namespace ddp::gloo_backend {
namespace {

Store::Bytes bytes_of(const std::string& s) { return Store::Bytes(s.begin(), s.end()); }
std::string text_of(const Store::Bytes& b) { return std::string(b.begin(), b.end()); }

// "<boot id>/<netns device>:<netns inode>", or "" with `why` set when either cannot be read.
std::string host_name(std::string* why) {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string boot;
  if (!(in >> boot) || boot.empty()) {
    *why = "cannot read /proc/sys/kernel/random/boot_id";
    return "";
  }
  struct stat st {};
  if (::stat("/proc/self/ns/net", &st) != 0) {
    *why = "cannot stat /proc/self/ns/net";
    return "";
  }
  return boot + "/" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

std::string hex(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  return s;
}

struct Joined {
  SharedMemory memory;       // mapped when this rank joined its host's segment
  std::vector<int> members;  // this host's members (global ranks, ascending), this rank included
  std::string reason;        // why this rank stays on TCP
};

// The leader: creates the segment, hands it to every candidate that asks, then learns who joined.
Joined lead(Store& store, const std::string& key, int rank, const std::vector<int>& candidates, size_t piece_bytes,
            std::chrono::milliseconds timeout) {
  Joined j;
  std::vector<int> pending(candidates.begin() + 1, candidates.end());
  try {
    const uint64_t nonce = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
    j.memory = SharedMemory::create(ShmGroup::segment_bytes(static_cast<int>(candidates.size()), piece_bytes));
    ShmGroup::format(j.memory, static_cast<int>(candidates.size()), piece_bytes, nonce);
    FdListener listener("ddp-gloo-shm-" + hex(nonce));
    store.set(key + "/offer/" + std::to_string(rank), bytes_of(hex(nonce)));
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pending.empty() && std::chrono::steady_clock::now() < deadline) {
      int connection = -1, who = -1;
      try {
        who = listener.accept_rank(std::chrono::milliseconds(100), &connection);
        if (who >= 0) {
          auto it = std::find(pending.begin(), pending.end(), who);
          if (it == pending.end()) {
            ::close(connection);
            continue;
          }
          pending.erase(it);
          FdListener::send_fd(connection, j.memory.fd());
          continue;
        }
      } catch (const ShmUnavailable& e) {
        // That caller stays on TCP and says so under its joined key; the others go on.
        DDP_LOG(WARN) << "gloo shared memory: " << e.what();
        continue;
      }
      // Nobody called: a candidate that failed before connecting says so in the store.
      for (auto it = pending.begin(); it != pending.end();)
        it = store.check({key + "/joined/" + std::to_string(*it)}) ? pending.erase(it) : it + 1;
    }
    j.memory.close_fd();
  } catch (const ShmUnavailable& e) {
    store.set(key + "/offer/" + std::to_string(rank), bytes_of("!" + std::string(e.what())));
    j.memory = SharedMemory();
    j.reason = std::string("shared memory unavailable: ") + e.what();
    DDP_LOG(WARN) << "gloo: " << j.reason << "; the ranks of this host talk over TCP";
  }
  store.set(key + "/joined/" + std::to_string(rank), bytes_of(j.reason.empty() ? "1" : "0 " + j.reason));
  return j;
}

// Another candidate: asks the leader for the segment and checks it is the announced one.
Joined follow(Store& store, const std::string& key, int rank, int leader, std::chrono::milliseconds timeout) {
  Joined j;
  std::string offer = text_of(store.get(key + "/offer/" + std::to_string(leader)));
  if (!offer.empty() && offer[0] == '!') {
    j.reason = "rank " + std::to_string(leader) + " could not create the shared memory: " + offer.substr(1);
  } else {
    try {
      const uint64_t nonce = std::stoull(offer, nullptr, 16);
      j.memory = SharedMemory::attach(fetch_fd("ddp-gloo-shm-" + offer, rank, timeout));
      ShmGroup::verify(j.memory, nonce);
      j.memory.close_fd();
    } catch (const std::exception& e) {
      j.memory = SharedMemory();
      j.reason = std::string("shared memory unavailable: ") + e.what();
      DDP_LOG(WARN) << "gloo: " << j.reason << "; rank " << rank << " talks over TCP";
    }
  }
  store.set(key + "/joined/" + std::to_string(rank), bytes_of(j.reason.empty() ? "1" : "0 " + j.reason));
  return j;
}

}  // namespace

bool Topology::tcp_only() const {
  return std::all_of(hosts.begin(), hosts.end(), [](const auto& h) { return h.size() == 1; });
}

std::vector<int> Topology::leaders() const {
  std::vector<int> l;
  for (const auto& h : hosts) l.push_back(h.front());
  return l;
}

std::string Topology::describe() const {
  if (!local) return "tcp (" + tcp_reason + ")";
  std::string s = "shared memory (ranks " + rank_list(hosts[host]) + " on this host)";
  if (hosts.size() > 1) s += " + tcp between " + std::to_string(hosts.size()) + " hosts";
  return s;
}

Topology discover_topology(Store& store, const std::string& prefix, int rank, int size, bool enabled,
                           const std::string& disabled_reason, size_t piece_bytes, std::chrono::milliseconds timeout) {
  const std::string key = prefix + "/shm";
  std::string why = disabled_reason;
  std::string name = enabled ? host_name(&why) : "";
  // A rank that cannot or may not share memory publishes a name nobody else has.
  if (name.empty()) name = "none/" + std::to_string(rank);
  store.set(key + "/host/" + std::to_string(rank), bytes_of(name));
  std::vector<int> candidates;
  for (int r = 0; r < size; ++r)
    if (r == rank || text_of(store.get(key + "/host/" + std::to_string(r))) == name) candidates.push_back(r);

  Joined joined;
  if (candidates.size() < 2) {
    joined.reason = why.empty() ? "no other rank on this host" : why;
  } else if (candidates.front() == rank) {
    joined = lead(store, key, rank, candidates, piece_bytes, timeout);
  } else {
    joined = follow(store, key, rank, candidates.front(), timeout);
  }
  if (joined.reason.empty()) {
    for (int r : candidates)
      if (r == rank || text_of(store.get(key + "/joined/" + std::to_string(r))) == "1") joined.members.push_back(r);
    if (joined.members.size() < 2) joined.reason = "no other rank on this host could attach the shared memory";
  }
  if (!joined.reason.empty()) joined.members = {rank};

  // Every rank names its host by its lowest member; all ranks read the same table.
  store.set(key + "/leader/" + std::to_string(rank), bytes_of(std::to_string(joined.members.front())));
  std::map<int, std::vector<int>> by_leader;
  for (int r = 0; r < size; ++r)
    by_leader[r == rank ? joined.members.front() : std::stoi(text_of(store.get(key + "/leader/" + std::to_string(r))))]
        .push_back(r);
  Topology t;
  for (auto& [leader, ranks] : by_leader) {
    if (std::find(ranks.begin(), ranks.end(), rank) != ranks.end()) t.host = static_cast<int>(t.hosts.size());
    t.hosts.push_back(ranks);
  }
  if (t.hosts[t.host] != joined.members)
    throw ShmUnavailable("ranks disagree about who shares this host's memory (rank " + std::to_string(rank) +
                         " joined " + rank_list(joined.members) + ", the store says " + rank_list(t.hosts[t.host]) + ")");
  t.tcp_reason = joined.reason;
  if (joined.members.size() > 1) {
    int index = static_cast<int>(std::find(joined.members.begin(), joined.members.end(), rank) - joined.members.begin());
    t.local = std::make_unique<ShmGroup>(std::move(joined.memory), joined.members, index);
  }
  return t;
}

}  // namespace ddp::gloo_backend
