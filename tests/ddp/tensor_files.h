#pragma once
// A tensor exchange format both LibTorch and Python read without either's serializer:
//   <dir>/<stem>.txt  one line per tensor: "name dtype offset numel dim0 dim1 ..."
//   <dir>/<stem>.bin  the tensors' bytes, little-endian, contiguous, back to back
// dtype is float32 or int64 (what our models and data use). tests/ddp/python/tensor_files.py is
// the Python side.

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

namespace ddp::testing {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

void write_tensors(const std::string& dir, const std::string& stem, const NamedTensors& tensors);
NamedTensors read_tensors(const std::string& dir, const std::string& stem);
/// The tensor called `name` in `tensors`; std::runtime_error naming it when there is none.
at::Tensor find_tensor(const NamedTensors& tensors, const std::string& name);

}  // namespace ddp::testing
