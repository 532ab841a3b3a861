#pragma once
// The few LibTorch autograd internals the reducer touches, behind one small interface so that the
// differences between LibTorch 1.13 and 2.x stay in autograd_compat.cpp.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_set>
#include <vector>

namespace torch {
namespace autograd {
struct Node;
}  // namespace autograd
}  // namespace torch

namespace ddp::detail::autograd_compat {

using Node = torch::autograd::Node;

/// The leaf's gradient accumulator (created when missing). The tensor only holds it weakly: keep
/// the returned pointer alive for hooks on it to survive.
std::shared_ptr<Node> grad_accumulator(const at::Tensor& leaf);

/// Runs `on_ready` each time `accumulator` has accumulated a gradient into .grad (a post hook).
/// Returns a key for remove_grad_ready_hook.
uintptr_t add_grad_ready_hook(Node& accumulator, std::function<void()> on_ready);
void remove_grad_ready_hook(Node& accumulator, uintptr_t key);

/// Runs `on_gradient` each time backward computes the gradient of `output` (a tensor with a
/// grad_fn; others are skipped). The hook lives as long as the tensor's graph.
void add_output_gradient_hook(const at::Tensor& output, std::function<void()> on_gradient);

/// Queues `callback` to run when the current backward pass (graph task) ends. Only valid from
/// inside backward (e.g. from a grad-ready hook).
void queue_end_of_backward_callback(std::function<void()> callback);

/// Every autograd node reachable from the outputs' gradient edges (their grad_fn, or their
/// accumulator for leaves), gradient accumulators included.
std::unordered_set<const Node*> reachable_nodes(const std::vector<at::Tensor>& outputs);

}  // namespace ddp::detail::autograd_compat
