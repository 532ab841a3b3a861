#include "ddp/checkpoint/rng_state.h"

#include <ATen/Context.h>
#include <ATen/Functions.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <ddp/errors.h>
#include <ddp/logging.h>

#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "util/little_endian.h"
#include "util/numbers.h"

namespace ddp::detail {
namespace {

constexpr char kRngMagic[8] = {'D', 'D', 'P', 'R', 'N', 'G', '1', '\n'};

std::string state_bytes(at::Generator& gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  at::Tensor state = gen.get_state().contiguous();
  return std::string(static_cast<const char*>(state.data_ptr()), static_cast<size_t>(state.nbytes()));
}

void set_state_bytes(at::Generator& gen, const std::string& bytes) {
  at::Tensor state = at::empty({static_cast<int64_t>(bytes.size())}, at::TensorOptions().dtype(at::kByte));
  std::memcpy(state.data_ptr(), bytes.data(), bytes.size());
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

// The CUDA generators worth saving: devices this process has a context on (touching the others
// would create contexts on GPUs that belong to other ranks).
std::vector<std::pair<std::string, at::Generator>> cuda_generators() {
  std::vector<std::pair<std::string, at::Generator>> out;
  if (!at::hasCUDA()) return out;
  const auto& hooks = at::detail::getCUDAHooks();
  int n = hooks.getNumGPUs();
  for (int i = 0; i < n; ++i) {
    if (!hooks.hasPrimaryContext(i)) continue;
    at::Generator gen = at::globalContext().defaultGenerator(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(i)));
    out.emplace_back("cuda:" + std::to_string(i), gen);
  }
  return out;
}

std::vector<std::pair<std::string, at::Generator>> all_generators(const NamedGenerators& tracked,
                                                                  bool include_cuda) {
  std::vector<std::pair<std::string, at::Generator>> gens;
  gens.emplace_back("cpu", at::globalContext().defaultGenerator(at::kCPU));
  if (include_cuda)
    for (auto& g : cuda_generators()) gens.push_back(g);
  for (auto& [name, gen] : tracked) gens.emplace_back("gen:" + name, gen);
  return gens;
}

}  // namespace

std::string capture_rng_states(const NamedGenerators& tracked, bool include_cuda) {
  auto gens = all_generators(tracked, include_cuda);
  std::string out(kRngMagic, sizeof kRngMagic);
  util::append_le(out, gens.size(), 4);
  for (auto& [name, gen] : gens) {
    std::string state = state_bytes(gen);
    util::append_le(out, name.size(), 4);
    out += name;
    util::append_le(out, state.size(), 8);
    out += state;
  }
  return out;
}

void restore_rng_states(const std::string& blob, const NamedGenerators& tracked, bool include_cuda,
                        const std::string& source) {
  size_t at = 0;
  auto fail = [&](const std::string& why) {
    return DataError(source + ": RNG states are malformed (" + why + " at byte " + std::to_string(at) + ")");
  };
  auto take = [&](size_t n) {
    if (blob.size() - at < n) throw fail("truncated");
    std::string s = blob.substr(at, n);
    at += n;
    return s;
  };
  auto take_u = [&](int bytes) {
    return util::read_le(take(static_cast<size_t>(bytes)), 0, bytes);
  };
  if (take(sizeof kRngMagic) != std::string(kRngMagic, sizeof kRngMagic)) throw fail("bad magic");
  uint64_t count = take_u(4);
  std::map<std::string, std::string> states;
  for (uint64_t i = 0; i < count; ++i) {
    std::string name = take(take_u(4));
    states[name] = take(take_u(8));
  }
  if (at != blob.size()) throw fail("trailing bytes");

  auto restore = [&](const std::string& name, at::Generator gen, const std::string& state) {
    try {
      set_state_bytes(gen, state);
    } catch (const std::exception& e) {
      throw DataError(source + ": cannot restore generator '" + name + "': " + e.what());
    }
  };
  for (auto& [name, state] : states) {
    if (name == "cpu") {
      restore(name, at::globalContext().defaultGenerator(at::kCPU), state);
    } else if (name.rfind("cuda:", 0) == 0) {
      // Restored on the device it came from, creating its context if needed (this rank used it).
      const std::optional<long long> index = util::to_int(name.substr(5), 0, 1023);  // nullopt: not ours to use
      if (include_cuda && index && at::hasCUDA() && *index < at::detail::getCUDAHooks().getNumGPUs()) {
        at::Device device(at::kCUDA, static_cast<c10::DeviceIndex>(*index));
        restore(name, at::globalContext().defaultGenerator(device), state);
      } else if (include_cuda) {
        DDP_LOG(WARN) << source << " holds the state of " << name << ", which this process cannot use; skipped";
      }
    }
  }
  for (auto& [name, gen] : tracked) {
    auto it = states.find("gen:" + name);
    if (it == states.end()) {
      DDP_LOG(WARN) << source << " holds no state for generator '" << name
                    << "'; it keeps its current state (the run may not repeat exactly)";
    } else {
      restore(name, gen, it->second);
    }
  }
}

}  // namespace ddp::detail
