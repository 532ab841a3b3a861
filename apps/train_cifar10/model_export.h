#pragma once
// Saving the trained model so Python can use it.
//
// model.pt holds the module's parameters and buffers by their dotted names (conv1.weight, ...; no
// "module." prefix) as a dict of CPU tensors in the format of Python's torch.save, written with
// torch::pickle_save. In Python:
//   net = Net(); net.load_state_dict(torch.load("model.pt")); net.eval()
//
//   save_state_dict(*net, model_dir + "/model.pt");

#include <string>

namespace torch::nn {
class Module;
}

namespace train_cifar10 {

/// Writes atomically (temporary file + rename), creating the folder. DataError naming the path on
/// failure.
void save_state_dict(const torch::nn::Module& module, const std::string& path);

}  // namespace train_cifar10
