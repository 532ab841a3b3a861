// DistributedSamplerAdapter: the torch::data face of DistributedSampler.
#include <ddp/distributed_sampler_adapter.h>
#include <ddp/errors.h>

#include <torch/serialize/archive.h>

#include <string>

namespace ddp {

DistributedSamplerAdapter::DistributedSamplerAdapter(std::shared_ptr<DistributedSampler> sampler)
    : sampler_(std::move(sampler)) {
  if (!sampler_) throw ConfigError("DistributedSamplerAdapter: the sampler is null");
  reset();
}

void DistributedSamplerAdapter::reset(torch::optional<size_t> new_size) {
  if (new_size && static_cast<int64_t>(*new_size) != sampler_->size()) {
    DistributedSampler::State state{sampler_->epoch(), 0};
    *sampler_ = DistributedSampler(static_cast<int64_t>(*new_size), sampler_->num_replicas(),
                                   sampler_->rank(), sampler_->shuffle(), sampler_->seed(),
                                   sampler_->drop_last());
    sampler_->load_state(state);
  }
  indices_ = sampler_->indices();
  next_ = 0;
}

torch::optional<std::vector<size_t>> DistributedSamplerAdapter::next(size_t batch_size) {
  if (next_ >= indices_.size()) return torch::nullopt;
  const size_t end = std::min(indices_.size(), next_ + batch_size);
  std::vector<size_t> batch(indices_.begin() + next_, indices_.begin() + end);
  next_ = end;
  return batch;
}

void DistributedSamplerAdapter::save(torch::serialize::OutputArchive& archive) const {
  auto put = [&](const char* key, int64_t v) {
    archive.write(std::string("ddp_sampler/") + key, c10::IValue(v));
  };
  put("epoch", sampler_->epoch());
  put("position", position());
  put("epoch_offset", sampler_->epoch_offset());
  put("size", sampler_->size());
  put("num_replicas", sampler_->num_replicas());
  put("rank", sampler_->rank());
}

void DistributedSamplerAdapter::load(torch::serialize::InputArchive& archive) {
  auto get = [&](const char* key) {
    c10::IValue v;
    archive.read(std::string("ddp_sampler/") + key, v);
    return v.toInt();
  };
  const int64_t size = get("size"), replicas = get("num_replicas"), rank = get("rank");
  if (size != sampler_->size() || replicas != sampler_->num_replicas() || rank != sampler_->rank())
    throw ConfigError("DistributedSamplerAdapter: saved for size " + std::to_string(size) +
                      ", num_replicas " + std::to_string(replicas) + ", rank " +
                      std::to_string(rank) + " but this sampler has size " +
                      std::to_string(sampler_->size()) + ", num_replicas " +
                      std::to_string(sampler_->num_replicas()) + ", rank " +
                      std::to_string(sampler_->rank()));
  // epoch_offset: written since elastic resumes (issue 26); absent in older archives, where it was 0.
  c10::IValue offset;
  const bool has_offset = archive.try_read("ddp_sampler/epoch_offset", offset);
  sampler_->load_state({get("epoch"), get("position"), has_offset ? offset.toInt() : 0});
  reset();
}

}  // namespace ddp
