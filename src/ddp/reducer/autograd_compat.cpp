// LibTorch autograd internals used by the reducer, for LibTorch 1.13 and 2.x.
//
// What differs between the versions (read from 1.13's headers here and 2.x's
// torch/csrc/autograd/{function.h,function_hook.h,variable.h,engine.h}):
//  * 2.x's FunctionPostHook grew a virtual compiled_args() (torch.compile's compiled autograd) whose
//    parameter type moved namespaces between 2.x minors. We do not override it: its default
//    reports "compiled_args nyi" should anyone run compiled autograd through a C++ DDP model, and
//    not overriding keeps one hook class valid for every version.
//  * 2.x's LambdaPostHook takes a second (compiled_args) callable; we use our own hook class, so the
//    constructor change does not reach us.
//  * Node::add_post_hook returns the hook's key (uintptr_t) and del_post_hook(key) removes it in
//    1.13 and 2.x alike; before 1.13 this file is not meant to compile (checked below).
//  * 2.x added tensor pre-hooks and a single "post accumulate grad" hook slot per leaf
//    (register_post_accumulate_grad_hook). That slot belongs to the user (one hook only), so on
//    every version we hook the accumulator node's post hooks instead, as PyTorch's C++ reducer does.
//  * grad_accumulator(), gradient_edge(), Node::next_edges() and Engine::queue_callback() kept
//    their signatures. queue_callback() queues on the calling thread's current graph task: from a
//    hook that runs inside a nested (reentrant) backward, that is the nested one, which ends first.
#include "ddp/reducer/autograd_compat.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/version.h>

#include <type_traits>

#if TORCH_VERSION_MAJOR < 1 || (TORCH_VERSION_MAJOR == 1 && TORCH_VERSION_MINOR < 13)
#error "ddp's reducer needs LibTorch 1.13 or newer (autograd hook keys, see autograd_compat.cpp)"
#endif

namespace ddp::detail::autograd_compat {
namespace {

namespace ag = torch::autograd;

class GradReadyHook final : public ag::FunctionPostHook {
 public:
  explicit GradReadyHook(std::function<void()> on_ready) : on_ready_(std::move(on_ready)) {}

  ag::variable_list operator()(const ag::variable_list& outputs,
                               const ag::variable_list& /*inputs*/) override {
    on_ready_();
    return outputs;  // an accumulator has no outputs to change
  }

 private:
  std::function<void()> on_ready_;
};

// The key type is part of the contract with del_post_hook on every supported version.
static_assert(std::is_same_v<decltype(std::declval<ag::Node&>().add_post_hook(
                                 std::unique_ptr<ag::FunctionPostHook>())),
                             uintptr_t>,
              "Node::add_post_hook must return the hook key (LibTorch >= 1.13)");

}  // namespace

std::shared_ptr<Node> grad_accumulator(const at::Tensor& leaf) {
  return ag::impl::grad_accumulator(leaf);
}

uintptr_t add_grad_ready_hook(Node& accumulator, std::function<void()> on_ready) {
  // Post hooks run right after the accumulator stored the gradient in .grad (1.13 and 2.x).
  return accumulator.add_post_hook(std::make_unique<GradReadyHook>(std::move(on_ready)));
}

void remove_grad_ready_hook(Node& accumulator, uintptr_t key) { accumulator.del_post_hook(key); }

void add_output_gradient_hook(const at::Tensor& output, std::function<void()> on_gradient) {
  if (!output.defined() || !output.requires_grad() || !output.grad_fn()) return;
  // Tensor::register_hook (public, the same in 1.13 and 2.x): a pre hook on the output's
  // grad_fn, so it runs in the backward that reaches the output, before that node.
  output.register_hook([on_gradient = std::move(on_gradient)](const at::Tensor&) { on_gradient(); });
}

void queue_end_of_backward_callback(std::function<void()> callback) {
  ag::Engine::get_default_engine().queue_callback(std::move(callback));
}

std::unordered_set<const Node*> reachable_nodes(const std::vector<at::Tensor>& outputs) {
  std::unordered_set<const Node*> seen;
  std::vector<Node*> stack;
  for (const auto& t : outputs) {
    if (!t.defined() || !t.requires_grad()) continue;
    auto edge = ag::impl::gradient_edge(t);
    if (edge.function && seen.insert(edge.function.get()).second) stack.push_back(edge.function.get());
  }
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const auto& next : node->next_edges()) {
      Node* fn = next.function.get();
      if (fn && seen.insert(fn).second) stack.push_back(fn);
    }
  }
  return seen;
}

}  // namespace ddp::detail::autograd_compat
