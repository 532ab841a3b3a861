#include "model_export.h"

#include <ddp/errors.h>

#include <torch/nn/module.h>

#include "models/state_dict.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace train_cifar10 {
namespace {

void make_dirs(const std::string& dir) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
      throw ddp::DataError(partial + ": cannot create the model folder (" + std::strerror(errno) + ")");
  }
}

}  // namespace

void save_state_dict(const torch::nn::Module& module, const std::string& path) {
  // Python's state_dict order: parameters, then buffers, each in module order.
  std::vector<std::pair<std::string, at::Tensor>> state;
  for (const auto& p : module.named_parameters(/*recurse=*/true)) state.emplace_back(p.key(), p.value());
  for (const auto& b : module.named_buffers(/*recurse=*/true)) state.emplace_back(b.key(), b.value());
  std::vector<char> bytes = ddp::models::state_dict_archive(state);

  auto slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) make_dirs(path.substr(0, slash));
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw ddp::DataError(path + ": cannot write the model (" + std::strerror(errno) + ")");
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    throw ddp::DataError(path + ": writing the model failed (" + std::strerror(err) + ")");
  }
}

}  // namespace train_cifar10
