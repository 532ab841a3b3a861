#pragma once
// What every model the trainers build is: a module that maps a batch of images to class logits.
// The trainers hold models through this interface (models/model_factory.h builds them by name), so
// one trainer body serves every architecture. It registers nothing itself: parameter and buffer
// names stay the concrete model's (Python's state_dict keys).
//
//   std::shared_ptr<ddp::models::Classifier> net = ...;
//   at::Tensor logits = net->forward(images);   // [N, C, H, W] -> [N, classes]

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

namespace ddp::models {

class Classifier : public torch::nn::Module {
 public:
  virtual at::Tensor forward(const at::Tensor& images) = 0;
};

}  // namespace ddp::models
