#pragma once
// Weights in and out of a module by name, in the format Python's `torch.save(model.state_dict(), f)`
// writes (a zip archive holding a pickled dict of name -> tensor) and `torch.load(f)` reads.
//
//   // Python: torch.save(converted_state_dict, "resnet18_1ch.pt")   (docs/RANZCR.md)
//   auto report = ddp::models::load_state_dict(*net, "resnet18_1ch.pt",
//                                              ddp::models::LoadStateDictOptions().head_prefix("fc."));
//   DDP_LOG(INFO) << report.summary();

#include <ATen/core/Tensor.h>
#include <torch/arg.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace torch::nn {
class Module;
}

namespace ddp::models {

struct LoadStateDictOptions {
  /// Names starting with this prefix form the head: when the file's head has other shapes
  /// (ImageNet's 1000 classes) or is absent, the module keeps its own initialisation.
  TORCH_ARG(std::string, head_prefix) = "fc.";
  /// Entry whose input channels may be adapted: a file with 3 (RGB) input channels loads into a
  /// module with 1 by averaging over the channel dimension (dim 1).
  TORCH_ARG(std::string, stem_name) = "conv1.weight";
  /// Ignore entries of the file the module does not have (default: DataError naming them).
  TORCH_ARG(bool, allow_unexpected) = false;
};

struct LoadStateDictReport {
  std::vector<std::string> loaded;      ///< copied as is
  std::vector<std::string> adapted;     ///< stem averaged over input channels
  std::vector<std::string> kept;        ///< head entries absent or of another shape: left as initialised
  std::vector<std::string> unexpected;  ///< in the file, not in the module (allow_unexpected only)
  std::string summary() const;
};

/// Reads a file written by torch.save(dict_of_tensors) (or save_state_dict below). DataError naming
/// the file when it is missing, unreadable or not a dict of string -> tensor.
std::map<std::string, at::Tensor> read_state_dict(const std::string& path);

/// The bytes of a torch.save() zip archive holding `entries` as a dict of name -> tensor (in this
/// order), copied to the CPU. torch.load reads it with weights_only=True (PyTorch 2.6's default) and
/// with weights_only=False, as do 1.x and read_state_dict.
std::vector<char> state_dict_archive(const std::vector<std::pair<std::string, at::Tensor>>& entries);

/// Writes `entries` (atomically, creating the folder) so that Python's torch.load and read_state_dict read them back,
/// in this order. DataError naming the file when it cannot be written.
void write_state_dict(const std::vector<std::pair<std::string, at::Tensor>>& entries, const std::string& path);
/// The same, in name order.
void write_state_dict(const std::map<std::string, at::Tensor>& entries, const std::string& path);

/// Every parameter and buffer of `module` in the order of Python's state_dict(): parameters, then
/// buffers, each in module order (what `torch.save(net.state_dict())` would write).
std::vector<std::pair<std::string, at::Tensor>> state_dict_in_order(const torch::nn::Module& module);

/// Every parameter and buffer of `module`, by its dotted name (Python's state_dict keys).
std::map<std::string, at::Tensor> state_dict_of(torch::nn::Module& module);

/// Copies the file's tensors into `module`'s parameters and buffers by name. Every non-head entry of
/// the module must be in the file with the same shape (DataError naming the entry, both shapes and
/// the file otherwise), except the stem adaptation and the head rules above.
LoadStateDictReport load_state_dict(torch::nn::Module& module, const std::string& path,
                                    const LoadStateDictOptions& options = LoadStateDictOptions());

}  // namespace ddp::models
