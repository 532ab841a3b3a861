#include "evaluate.h"

#include <ddp/distributed_sampler.h>
#include <ddp/errors.h>

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>

#include <cstdio>

namespace train_cifar10 {

std::vector<double> EvalCounts::per_class_accuracy() const {
  std::vector<double> out;
  for (size_t c = 0; c < class_total.size(); ++c)
    out.push_back(class_total[c] ? static_cast<double>(class_correct[c]) / static_cast<double>(class_total[c]) : 0);
  return out;
}

std::vector<int64_t> test_indices(int64_t size, int world_size, int rank) {
  ddp::DistributedSampler sampler(size, world_size, rank, /*shuffle=*/false);
  std::vector<int64_t> indices = sampler.indices();
  // Rank r's k-th index sits at position r + k * world_size of the padded list; positions >= size
  // are the padding (repeats of the first indices), which would count those images twice.
  const int64_t valid = rank < size ? (size - rank + world_size - 1) / world_size : 0;
  indices.resize(static_cast<size_t>(std::min<int64_t>(valid, static_cast<int64_t>(indices.size()))));
  return indices;
}

EvalCounts evaluate_split(const std::function<at::Tensor(const at::Tensor&)>& forward, ddp::data::cifar::CifarLoader& loader,
                          const std::vector<int64_t>& indices, ddp::ProcessGroup& pg, const c10::Device& device,
                          int64_t chunk) {
  constexpr int64_t kClasses = 10;
  // [correct, loss_sum, class_total x 10, class_correct x 10] in float64: exact for counts < 2^53.
  at::Tensor local = at::zeros({2 + 2 * kClasses}, at::TensorOptions().dtype(at::kDouble).device(device));
  at::Tensor correct = local.narrow(0, 0, 1), loss_sum = local.narrow(0, 1, 1);
  at::Tensor class_total = local.narrow(0, 2, kClasses), class_correct = local.narrow(0, 2 + kClasses, kClasses);
  int64_t seen = 0;
  {
    at::NoGradGuard no_grad;
    loader.start_epoch(0, indices);
    while (auto batch = loader.next()) {
      const int64_t n = batch->images.size(0);
      for (int64_t s = 0; s < n; s += chunk) {
        const int64_t m = std::min(chunk, n - s);
        at::Tensor x = batch->images.narrow(0, s, m), y = batch->labels.narrow(0, s, m);
        at::Tensor logits = forward(x);
        at::Tensor hit = logits.argmax(1).eq(y).to(at::kDouble);
        loss_sum.add_(torch::nn::functional::cross_entropy(
                          logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                          .to(at::kDouble));
        correct.add_(hit.sum());
        class_total.index_add_(0, y, at::ones({m}, local.options()));
        class_correct.index_add_(0, y, hit);
      }
      seen += n;
    }
  }
  if (seen != static_cast<int64_t>(indices.size()))
    throw std::logic_error("evaluation saw " + std::to_string(seen) + " images, expected " + std::to_string(indices.size()));
  // NCCL reduces device tensors; Gloo reduces host tensors (a CUDA run may use --backend gloo).
  std::vector<at::Tensor> tensors = {local.to(pg.device())};
  pg.allreduce(tensors)->wait();
  at::Tensor host = tensors[0].cpu();
  const double* v = host.data_ptr<double>();
  EvalCounts c;
  c.correct = static_cast<int64_t>(v[0]);
  c.loss_sum = v[1];
  for (int64_t k = 0; k < kClasses; ++k) {
    c.class_total.push_back(static_cast<int64_t>(v[2 + k]));
    c.class_correct.push_back(static_cast<int64_t>(v[2 + kClasses + k]));
    c.total += c.class_total.back();
  }
  return c;
}

ddp::trainer::EvalPoint eval_point(const EvalCounts& c, int64_t epoch, int64_t global_step, double train_images_per_sec,
                                   double epoch_seconds) {
  ddp::trainer::EvalPoint p;
  p.epoch = epoch;
  p.global_step = global_step;
  char line[256];
  std::snprintf(line, sizeof line, "Test set: Average loss: %.4f, Accuracy: %lld/%lld (%.2f%%), %.1f s, train %.0f images/s",
                c.mean_loss(), static_cast<long long>(c.correct), static_cast<long long>(c.total), 100.0 * c.accuracy(),
                epoch_seconds, train_images_per_sec);
  p.log_lines.push_back(line);
  p.katib = {{"eval_loss", c.mean_loss()}, {"accuracy", c.accuracy()}, {"images_per_sec", train_images_per_sec, "%.1f"}};
  p.fields.number("eval_loss", c.mean_loss())
      .number("accuracy", c.accuracy())
      .integer("correct", c.correct)
      .integer("total", c.total)
      .numbers("per_class_accuracy", c.per_class_accuracy())
      .number("images_per_sec", train_images_per_sec)
      .number("epoch_seconds", epoch_seconds);
  return p;
}

}  // namespace train_cifar10
