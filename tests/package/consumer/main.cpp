// Uses the installed ddp: a one-process group (no environment set) and an allreduce.
#include <ddp/ddp.h>
#include <torch/torch.h>

#include <iostream>

int main() {
  try {
    ddp::InitOptions options;
    options.backend = "gloo";
    auto pg = ddp::init_process_group(options);
    std::vector<at::Tensor> t = {torch::full({4}, 3.0f)};
    pg->allreduce(t)->wait();
    if (pg->size() != 1 || t[0].sum().item<float>() != 12.0f) {
      std::cerr << "unexpected result\n";
      return 1;
    }
    std::cout << "consumer ok: " << ddp::world().describe() << "\n";
    return 0;
  } catch (const std::exception& e) {
    return ddp::report_and_exit_code(e);
  }
}
