// Construction-time checks and broadcasts between ranks.
#include "ddp/reducer/model_sync.h"

#include <ddp/errors.h>

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>

#include <map>
#include <sstream>

#include "util/collectives.h"

namespace ddp::detail {
namespace {

std::string describe(const std::string& name, const at::Tensor& p) {
  std::ostringstream s;
  s << name << " " << p.sizes() << " " << p.scalar_type();
  return s.str();
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

void verify_same_parameters(ProcessGroup& pg, const std::vector<std::string>& names,
                            const std::vector<at::Tensor>& params) {
  std::string mine;
  for (size_t i = 0; i < params.size(); ++i) mine += describe(names[i], params[i]) + "\n";
  const auto all = util::allgather_bytes(pg, mine);
  const auto reference = split_lines(all[0]);

  // First difference of each rank that differs from rank 0; report the earliest one in detail.
  std::vector<int> differing;
  size_t first_index = SIZE_MAX;
  int first_rank = -1;
  for (int r = 1; r < pg.size(); ++r) {
    if (all[r] == all[0]) continue;
    differing.push_back(r);
    const auto lines = split_lines(all[r]);
    size_t i = 0;
    while (i < lines.size() && i < reference.size() && lines[i] == reference[i]) ++i;
    if (i < first_index) {
      first_index = i;
      first_rank = r;
    }
  }
  if (differing.empty()) return;

  const auto other = split_lines(all[first_rank]);
  auto at = [](const std::vector<std::string>& lines, size_t i) {
    return i < lines.size() ? "'" + lines[i] + "'" : std::string("no parameter");
  };
  std::ostringstream m;
  m << "DistributedDataParallel: the model differs across ranks; rank";
  m << (differing.size() > 1 ? "s " : " ");
  for (size_t k = 0; k < differing.size(); ++k) m << (k ? ", " : "") << differing[k];
  m << (differing.size() > 1 ? " differ" : " differs") << " from rank 0. First difference: parameter #"
    << first_index << " is " << at(reference, first_index) << " on rank 0 but " << at(other, first_index)
    << " on rank " << first_rank << " (rank 0 has " << reference.size() << " parameters, rank "
    << first_rank << " has " << other.size() << " parameters). Every rank must build the same model.";
  throw ConfigError(m.str());
}

void broadcast_coalesced(ProcessGroup& pg, const std::vector<at::Tensor>& tensors, int root,
                         int64_t chunk_bytes) {
  at::NoGradGuard no_grad;
  // Group per (device type, dtype), keeping order inside a group. The device index is left out
  // of the key on purpose: rank r's cuda:r must sort like rank 0's cuda:0.
  std::map<std::pair<int, int>, std::vector<at::Tensor>> groups;
  for (const auto& t : tensors) {
    if (!t.defined() || t.numel() == 0) continue;
    groups[{static_cast<int>(t.device().type()), static_cast<int>(t.scalar_type())}].push_back(t.detach());
  }
  // Issue every chunk, then wait: the chunks queue up behind each other in the process group
  // instead of paying a round trip each.
  struct Chunk {
    std::vector<at::Tensor> sent, originals;
    WorkPtr work;
  };
  std::vector<Chunk> chunks;
  for (auto& [key, group] : groups) {
    size_t i = 0;
    while (i < group.size()) {
      Chunk chunk;
      int64_t bytes = 0;
      while (i < group.size() &&
             (chunk.sent.empty() || (group[i].device() == chunk.sent.front().device() &&
                                     bytes + static_cast<int64_t>(group[i].nbytes()) <= chunk_bytes))) {
        const at::Tensor& t = group[i++];
        bytes += static_cast<int64_t>(t.nbytes());
        chunk.originals.push_back(t);
        chunk.sent.push_back(t.is_contiguous() ? t : t.contiguous());
      }
      chunk.work = pg.broadcast(chunk.sent, root);
      chunks.push_back(std::move(chunk));
    }
  }
  for (auto& chunk : chunks) {
    chunk.work->wait();
    for (size_t k = 0; k < chunk.sent.size(); ++k)
      if (!chunk.sent[k].is_same(chunk.originals[k])) chunk.originals[k].copy_(chunk.sent[k]);
  }
}

}  // namespace ddp::detail
