// The raw tensor exchange format (see tensor_files.h).
#include "tensor_files.h"

#include <ATen/Functions.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ddp::testing {

void write_tensors(const std::string& dir, const std::string& stem, const NamedTensors& tensors) {
  std::ofstream txt(dir + "/" + stem + ".txt"), bin(dir + "/" + stem + ".bin", std::ios::binary);
  int64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    at::Tensor t = tensor.detach().cpu().contiguous();
    const char* dtype = t.scalar_type() == at::kFloat ? "float32"
                        : t.scalar_type() == at::kLong ? "int64"
                                                       : nullptr;
    if (!dtype) throw std::runtime_error("write_tensors: unsupported dtype for " + name);
    txt << name << " " << dtype << " " << offset << " " << t.numel();
    for (int64_t d : t.sizes()) txt << " " << d;
    txt << "\n";
    bin.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
    offset += static_cast<int64_t>(t.nbytes());
  }
  if (!txt || !bin) throw std::runtime_error("write_tensors: cannot write " + dir + "/" + stem);
}

NamedTensors read_tensors(const std::string& dir, const std::string& stem) {
  std::ifstream txt(dir + "/" + stem + ".txt"), bin(dir + "/" + stem + ".bin", std::ios::binary);
  if (!txt || !bin) throw std::runtime_error("read_tensors: cannot open " + dir + "/" + stem);
  NamedTensors out;
  for (std::string line; std::getline(txt, line);) {
    std::istringstream in(line);
    std::string name, dtype;
    int64_t offset, numel;
    in >> name >> dtype >> offset >> numel;
    std::vector<int64_t> sizes;
    for (int64_t d; in >> d;) sizes.push_back(d);
    const auto type = dtype == "float32" ? at::kFloat : at::kLong;
    at::Tensor t = at::empty(sizes, at::TensorOptions().dtype(type));
    if (t.numel() != numel) throw std::runtime_error("read_tensors: bad line: " + line);
    bin.seekg(offset);
    bin.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
    if (!bin) throw std::runtime_error("read_tensors: truncated data for " + name);
    out.emplace_back(name, t);
  }
  return out;
}

at::Tensor find_tensor(const NamedTensors& tensors, const std::string& name) {
  for (const auto& [k, v] : tensors)
    if (k == name) return v;
  throw std::runtime_error("no tensor named " + name);
}

}  // namespace ddp::testing
