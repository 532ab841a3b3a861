// State dicts as torch.save writes them, read with LibTorch's pickle reader (it understands the zip
// archive of torch.save >= 1.6 and the OrderedDict a state_dict is).
#include "models/state_dict.h"

#include <ddp/errors.h>

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/nn/module.h>

#include <ATen/ATen.h>

#include <set>
#include <sstream>

#include "util/files.h"

namespace ddp::models {
namespace {

std::string shape_str(const at::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

std::string join(const std::vector<std::string>& names, size_t max_names = 8) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < max_names; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > max_names) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

}  // namespace

std::string LoadStateDictReport::summary() const {
  std::ostringstream s;
  s << loaded.size() << " tensors loaded";
  if (!adapted.empty()) s << ", " << join(adapted) << " averaged over input channels";
  if (!kept.empty()) s << ", kept initialised: " << join(kept);
  if (!unexpected.empty()) s << ", ignored from file: " << join(unexpected);
  return s.str();
}

std::map<std::string, at::Tensor> read_state_dict(const std::string& path) {
  const std::string file = util::read_file(path);
  const std::vector<char> bytes(file.begin(), file.end());  // pickle_load's argument type
  if (bytes.empty()) throw ddp::DataError("weights file '" + path + "' is empty");
  c10::IValue value;
  try {
    value = torch::jit::pickle_load(bytes);
  } catch (const std::exception& e) {
    throw ddp::DataError("weights file '" + path +
                         "' is not a torch.save() archive of a state_dict: " + e.what());
  }
  if (!value.isGenericDict()) {
    throw ddp::DataError("weights file '" + path + "' holds a " + value.tagKind() +
                         ", expected a dict of name -> tensor (torch.save(model.state_dict()))");
  }
  std::map<std::string, at::Tensor> out;
  for (const auto& entry : value.toGenericDict()) {
    if (!entry.key().isString() || !entry.value().isTensor()) {
      throw ddp::DataError("weights file '" + path + "' has an entry that is not string -> tensor (" +
                           entry.key().tagKind() + " -> " + entry.value().tagKind() + ")");
    }
    out.emplace(entry.key().toStringRef(), entry.value().toTensor());
  }
  return out;
}

std::vector<char> state_dict_archive(const std::vector<std::pair<std::string, at::Tensor>>& entries) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [name, tensor] : entries) dict.insert(name, tensor.detach().cpu().contiguous());
  // torch::pickle_save would tag the dict with its key and value types
  // (torch.jit._pickle.restore_type_tag), a global that PyTorch >= 2.6's torch.load refuses by
  // default (weights_only=True). Untagged, the pickle holds only a dict and the tensors' rebuild
  // calls, which every torch.load accepts; the archive around it is pickle_save's.
  std::vector<char> pickle;
  torch::jit::Pickler pickler([&](const char* b, size_t n) { pickle.insert(pickle.end(), b, b + n); },
                              /*tensor_table=*/nullptr, /*type_renamer=*/nullptr, /*memoized_class_types=*/nullptr,
                              /*get_tensor_id=*/nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(c10::IValue(dict));
  pickler.stop();
  std::vector<char> archive;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t n) {
    const char* b = static_cast<const char*>(data);
    archive.insert(archive.end(), b, b + n);
    return n;
  });
  torch::jit::writeArchiveAndTensors("data", pickle.data(), pickle.size(), pickler.tensorData(), writer);
  writer.writeEndOfFile();
  return archive;
}

void write_state_dict(const std::vector<std::pair<std::string, at::Tensor>>& entries, const std::string& path) {
  std::vector<char> bytes = state_dict_archive(entries);
  // A reader never sees half a file.
  const auto slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) util::make_dirs(path.substr(0, slash));
  util::write_file_atomically(path, {std::string_view(bytes.data(), bytes.size())});
}

void write_state_dict(const std::map<std::string, at::Tensor>& entries, const std::string& path) {
  write_state_dict(std::vector<std::pair<std::string, at::Tensor>>(entries.begin(), entries.end()), path);
}

std::vector<std::pair<std::string, at::Tensor>> state_dict_in_order(const torch::nn::Module& module) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& p : module.named_parameters(/*recurse=*/true)) out.emplace_back(p.key(), p.value());
  for (const auto& b : module.named_buffers(/*recurse=*/true)) out.emplace_back(b.key(), b.value());
  return out;
}

std::map<std::string, at::Tensor> state_dict_of(torch::nn::Module& module) {
  std::map<std::string, at::Tensor> out;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) out.emplace(item.key(), item.value());
  for (const auto& item : module.named_buffers(/*recurse=*/true)) out.emplace(item.key(), item.value());
  return out;
}

LoadStateDictReport load_state_dict(torch::nn::Module& module, const std::string& path,
                                    const LoadStateDictOptions& options) {
  const std::map<std::string, at::Tensor> file = read_state_dict(path);
  std::map<std::string, at::Tensor> mine = state_dict_of(module);
  auto is_head = [&](const std::string& name) {
    return !options.head_prefix().empty() && name.rfind(options.head_prefix(), 0) == 0;
  };

  LoadStateDictReport report;
  std::vector<std::string> missing;
  // Check everything first, so a bad file leaves the module untouched.
  std::vector<std::pair<at::Tensor, at::Tensor>> copies;  // destination, source
  for (auto& [name, dest] : mine) {
    auto it = file.find(name);
    if (it == file.end()) {
      if (is_head(name)) {
        report.kept.push_back(name);
      } else {
        missing.push_back(name);
      }
      continue;
    }
    at::Tensor src = it->second;
    if (src.sizes() == dest.sizes()) {
      copies.emplace_back(dest, src);
      report.loaded.push_back(name);
    } else if (is_head(name)) {
      report.kept.push_back(name + " (file " + shape_str(src) + ", model " + shape_str(dest) + ")");
    } else if (name == options.stem_name() && src.dim() == 4 && dest.dim() == 4 && dest.size(1) == 1 &&
               src.size(0) == dest.size(0) && src.size(2) == dest.size(2) && src.size(3) == dest.size(3)) {
      copies.emplace_back(dest, src.mean(1, /*keepdim=*/true));
      report.adapted.push_back(name);
    } else {
      throw ddp::DataError("weights file '" + path + "': entry '" + name + "' has shape " +
                           shape_str(src) + " but the model's is " + shape_str(dest));
    }
  }
  if (!missing.empty()) {
    throw ddp::DataError("weights file '" + path + "' lacks " + std::to_string(missing.size()) +
                         " entries of the model: " + join(missing) +
                         " (is it a state_dict of the same architecture?)");
  }
  for (const auto& [name, tensor] : file) {
    if (!mine.count(name)) report.unexpected.push_back(name);
  }
  if (!report.unexpected.empty() && !options.allow_unexpected()) {
    throw ddp::DataError("weights file '" + path + "' has entries the model does not: " +
                         join(report.unexpected) + " (is it a state_dict of the same architecture?)");
  }
  torch::NoGradGuard no_grad;
  for (auto& [dest, src] : copies) dest.copy_(src.to(dest.dtype()));
  return report;
}

}  // namespace ddp::models
