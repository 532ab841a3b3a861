// A user's trainer built against the installed ddp: a one-process group (no environment set),
// DistributedDataParallel around a module, a DistributedSampler and one optimizer step.
#include <ddp/checkpoint_flags.h>  // header-only, brings cxxopts: the package must find it
#include <ddp/ddp.h>
#include <torch/torch.h>

#include <iostream>

int main() {
  try {
    auto pg = ddp::init_process_group(ddp::InitOptions().backend("gloo"));

    torch::nn::Linear net(4, 2);
    ddp::DistributedDataParallel model(net, pg);
    torch::optim::SGD opt(net->parameters(), 0.1);
    ddp::DistributedSampler sampler(8, pg->size(), pg->rank(), /*shuffle=*/true, /*seed=*/0);
    sampler.set_epoch(1);
    if (sampler.indices().size() != 8) throw std::runtime_error("sampler gave the wrong count");

    auto loss = model(torch::ones({3, 4})).pow(2).sum();
    loss.backward();
    if (!net->weight.grad().defined()) throw std::runtime_error("no gradient after backward");
    opt.step();

    std::vector<at::Tensor> t = {torch::full({4}, 3.0f)};
    pg->allreduce(t)->wait();
    if (pg->size() != 1 || t[0].sum().item<float>() != 12.0f) throw std::runtime_error("allreduce result");
    cxxopts::Options cli("consumer");
    ddp::CheckpointFlags::add_to(cli);
    // The installed ddp/version.h and the installed libddp agree, and so do the header and the CMake
    // package on NCCL (CONSUMER_EXPECT_NCCL comes from ddp_WITH_NCCL).
    if (std::string(ddp::version()) != DDP_VERSION_STRING) throw std::runtime_error("libddp/header version mismatch");
    if (DDP_WITH_NCCL != CONSUMER_EXPECT_NCCL) throw std::runtime_error("ddp_WITH_NCCL and DDP_WITH_NCCL disagree");
    std::cout << "consumer ok: ddp " << ddp::version() << ", " << ddp::world().describe() << "\n";
    return 0;
  } catch (const std::exception& e) {
    return ddp::report_and_exit_code(e);
  }
}
