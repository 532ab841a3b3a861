// ddp::DistributedSamplerAdapter inside a real torch::data loader.
#include <ddp/distributed_sampler_adapter.h>
#include <ddp/errors.h>
#include <gtest/gtest.h>
#include <torch/data.h>
#include <torch/serialize.h>

#include <sstream>

namespace {

/// Example i is a tensor holding i, so a batch tells which indices the loader asked for.
struct IndexDataset : torch::data::datasets::Dataset<IndexDataset, torch::Tensor> {
  explicit IndexDataset(size_t n) : n(n) {}
  torch::Tensor get(size_t i) override { return torch::tensor(static_cast<int64_t>(i)); }
  torch::optional<size_t> size() const override { return n; }
  size_t n;
};

std::vector<int64_t> drain(torch::data::StatelessDataLoader<IndexDataset, ddp::DistributedSamplerAdapter>& loader) {
  std::vector<int64_t> got;
  for (auto& batch : loader)
    for (auto& t : batch) got.push_back(t.item<int64_t>());
  return got;
}

TEST(DistributedSamplerAdapter, LoaderYieldsTheSamplersIndicesPerEpoch) {
  auto sampler = std::make_shared<ddp::DistributedSampler>(37, 3, 1, true, 9);
  auto loader = torch::data::make_data_loader(IndexDataset(37), ddp::DistributedSamplerAdapter(sampler),
                                              torch::data::DataLoaderOptions().batch_size(4));
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    sampler->set_epoch(epoch);
    EXPECT_EQ(drain(*loader), sampler->indices()) << "epoch " << epoch;
  }
  // Resuming mid-epoch through the shared sampler.
  sampler->set_epoch(2);
  const auto full = sampler->indices();
  sampler->set_start_index(5);
  EXPECT_EQ(drain(*loader), std::vector<int64_t>(full.begin() + 5, full.end()));
}

TEST(DistributedSamplerAdapter, SaveAndLoadResumeAtThePosition) {
  auto sampler = std::make_shared<ddp::DistributedSampler>(50, 2, 0, true, 1);
  sampler->set_epoch(6);
  ddp::DistributedSamplerAdapter adapter(sampler);
  auto first = adapter.next(7).value();
  EXPECT_EQ(first.size(), 7u);
  EXPECT_EQ(adapter.position(), 7);
  std::stringstream buf;
  {
    torch::serialize::OutputArchive out;
    adapter.save(out);
    out.save_to(buf);
  }
  auto other = std::make_shared<ddp::DistributedSampler>(50, 2, 0, true, 1);
  ddp::DistributedSamplerAdapter resumed(other);
  torch::serialize::InputArchive in;
  in.load_from(buf);
  resumed.load(in);
  EXPECT_EQ(other->epoch(), 6);
  EXPECT_EQ(resumed.next(100).value(), adapter.next(100).value());
  EXPECT_FALSE(resumed.next(1).has_value());

  // A different partition cannot take this state.
  auto wrong = std::make_shared<ddp::DistributedSampler>(50, 4, 0, true, 1);
  ddp::DistributedSamplerAdapter wrong_adapter(wrong);
  torch::serialize::InputArchive in2;
  buf.seekg(0);
  in2.load_from(buf);
  EXPECT_THROW(wrong_adapter.load(in2), ddp::ConfigError);
}

TEST(DistributedSamplerAdapter, ResetWithNewSizeRepartitions) {
  auto sampler = std::make_shared<ddp::DistributedSampler>(10, 2, 1, false);
  ddp::DistributedSamplerAdapter adapter(sampler);
  adapter.reset(20);
  EXPECT_EQ(sampler->size(), 20);
  EXPECT_EQ(adapter.next(100).value().size(), 10u);
}

}  // namespace
