#pragma once
// Test-set evaluation split over ranks, with exact totals, and the evaluation point it reports.
//
// Each rank takes the indices Python's DistributedSampler(shuffle=False) would give it, minus the
// padding duplicates (the positions at or beyond the dataset size in the padded list), so every test
// image is counted exactly once. Per rank: correct, summed cross-entropy, per-class correct and
// totals; one allreduce(sum) makes them global.
//
//   EvalCounts c = evaluate_split(forward, loader, test_indices(n, world, rank), pg, device);

#include <ddp/process_group.h>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "data/cifar/cifar_loader.h"
#include "trainer/reporter.h"

namespace train_cifar10 {

struct EvalCounts {
  int64_t total = 0;
  int64_t correct = 0;
  double loss_sum = 0;
  std::vector<int64_t> class_total, class_correct;  ///< 10 each

  double accuracy() const { return total ? static_cast<double>(correct) / static_cast<double>(total) : 0; }
  double mean_loss() const { return total ? loss_sum / static_cast<double>(total) : 0; }
  std::vector<double> per_class_accuracy() const;
};

/// This rank's share of a test set of `size` images: DistributedSampler(shuffle=False) without
/// the padding duplicates. Over all ranks every index appears exactly once.
std::vector<int64_t> test_indices(int64_t size, int world_size, int rank);

/// Runs `forward` (logits for a batch; called under no-grad, in eval mode) over this rank's test
/// indices and reduces the counts over `pg`. Batches larger than `chunk` are fed in chunks (the
/// results do not depend on it; on CPU ~256 images at a time keep the activations in cache).
EvalCounts evaluate_split(const std::function<at::Tensor(const at::Tensor&)>& forward, ddp::data::cifar::CifarLoader& loader,
                          const std::vector<int64_t>& indices, ddp::ProcessGroup& pg, const c10::Device& device,
                          int64_t chunk);

/// The evaluation point of an epoch: the "Test set: ..." line, "epoch=N eval_loss=... accuracy=...
/// images_per_sec=..." for the metric line (docs/KUBEFLOW.md's vocabulary), and the eval record's
/// fields (eval_loss, accuracy, correct, total, per_class_accuracy,
/// images_per_sec: the epoch's training throughput, epoch_seconds: training + evaluation).
ddp::trainer::EvalPoint eval_point(const EvalCounts& c, int64_t epoch, int64_t global_step, double train_images_per_sec,
                                   double epoch_seconds);

}  // namespace train_cifar10
