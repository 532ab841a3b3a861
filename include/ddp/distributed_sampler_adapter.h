#pragma once
// ddp::DistributedSampler as a torch::data sampler, for torch::data::make_data_loader.
//
//   auto sampler = std::make_shared<ddp::DistributedSampler>(dataset.size().value(), pg->size(),
//                                                            pg->rank());
//   auto loader = torch::data::make_data_loader(std::move(dataset),
//                                               ddp::DistributedSamplerAdapter(sampler), options);
//   for (int64_t epoch = 0; epoch < epochs; ++epoch) {
//     sampler->set_epoch(epoch);             // the loader's begin() picks the new order up
//     for (auto& batch : *loader) { ... }
//   }
//
// The adapter shares the DistributedSampler, so epoch and start index stay under the caller's
// control after the loader took the adapter. reset() (called by the loader at each begin())
// recomputes this rank's list; reset(new_size) re-partitions a resized dataset. save()/load()
// store the epoch and how far this adapter got, so a Stateful loader resumes exactly.

#include <ddp/export.h>
#include <ddp/distributed_sampler.h>
#include <torch/data/samplers/base.h>

#include <memory>
#include <vector>

namespace ddp {

class DDP_API DistributedSamplerAdapter : public torch::data::samplers::Sampler<std::vector<size_t>> {
 public:
  explicit DistributedSamplerAdapter(std::shared_ptr<DistributedSampler> sampler);

  void reset(torch::optional<size_t> new_size = torch::nullopt) override;
  torch::optional<std::vector<size_t>> next(size_t batch_size) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

  /// Position in this rank's list for the current epoch (start index + indices handed out).
  int64_t position() const { return sampler_->start_index() + static_cast<int64_t>(next_); }
  DistributedSampler& sampler() { return *sampler_; }

 private:
  std::shared_ptr<DistributedSampler> sampler_;
  std::vector<int64_t> indices_;
  size_t next_ = 0;
};

}  // namespace ddp
