// SyncBatchNorm: the statistics of the whole group's batch, and the matching backward.
//
// Forward (training, group of 2+): every rank's per-channel (count, mean, biased variance) are
// allgathered in one message and combined exactly (the parallel-variance formula), rather than
// allreducing sums of x and x^2, which cancel badly in float. The normalisation and its backward
// are an autograd function of (input, weight, bias) with the group's mean and inverse standard
// deviation as constants; its backward allreduces the two per-channel sums that the input's
// gradient needs (sum of dy, sum of dy * (x - mean)) over the group, the same two PyTorch's
// SyncBatchNorm reduces. weight's and bias's gradients stay local sums, as in PyTorch:
// DistributedDataParallel averages them with the rest.
#include <ddp/sync_batch_norm.h>

#include <ddp/errors.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <sstream>
#include <utility>
#include <vector>

namespace ddp {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Keeps the group alive for as long as the graph that will run the backward's allreduce.
struct GroupCapsule : torch::CustomClassHolder {
  explicit GroupCapsule(std::shared_ptr<ProcessGroup> g) : group(std::move(g)) {}
  std::shared_ptr<ProcessGroup> group;
};

// Statistics are accumulated in float (double for double inputs), as PyTorch's kernels do.
at::ScalarType accumulate_type(const at::Tensor& input) {
  return input.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

// [C] -> [1, C, 1, ...] to broadcast over an input of `dim` dimensions.
at::Tensor per_channel(const at::Tensor& t, int64_t dim) {
  std::vector<int64_t> shape(static_cast<size_t>(dim), 1);
  shape[1] = t.numel();
  return t.view(shape);
}

// Every dimension but the channel's (1).
std::vector<int64_t> reduced_dims(int64_t dim) {
  std::vector<int64_t> dims = {0};
  for (int64_t d = 2; d < dim; ++d) dims.push_back(d);
  return dims;
}

struct GroupStats {
  at::Tensor mean;    // [C], accumulate type
  at::Tensor var;     // [C], biased
  double count = 0;   // values per channel over the whole group
};

// The whole group's per-channel mean and variance: one allgather of [mean, var, count] per rank.
GroupStats group_stats(const at::Tensor& input, ProcessGroup& group) {
  const int64_t channels = input.size(1);
  const auto acc = accumulate_type(input);
  const double local_count = channels ? static_cast<double>(input.numel() / channels) : 0.0;
  at::Tensor x = input.detach().to(acc);
  at::Tensor mean, var;
  if (local_count > 0) {
    mean = x.mean(reduced_dims(input.dim()));
    var = (x - per_channel(mean, input.dim())).pow(2).mean(reduced_dims(input.dim()));
  } else {  // an empty local batch still takes part, with weight 0
    mean = at::zeros({channels}, x.options());
    var = at::zeros({channels}, x.options());
  }
  at::Tensor mine = at::cat({mean, var, at::full({1}, local_count, x.options())});
  std::vector<at::Tensor> all;
  for (int r = 0; r < group.size(); ++r) all.push_back(at::empty_like(mine));
  group.allgather(all, mine)->wait();
  at::Tensor table = at::stack(all);  // [world, 2C + 1]
  at::Tensor means = table.narrow(1, 0, channels);
  at::Tensor vars = table.narrow(1, channels, channels);
  at::Tensor counts = table.narrow(1, 2 * channels, 1);  // [world, 1]
  GroupStats s;
  s.count = counts.sum().item<double>();
  if (s.count <= 1) {
    throw ConfigError("SyncBatchNorm: expected more than 1 value per channel when training, got " +
                      std::to_string(static_cast<int64_t>(s.count)) + " over the whole group (input " +
                      [&] { std::ostringstream o; o << input.sizes(); return o.str(); }() + " on this rank)");
  }
  s.mean = (counts * means).sum(0) / s.count;
  s.var = (counts * (vars + (means - s.mean).pow(2))).sum(0) / s.count;
  return s;
}

// y = (x - mean) * invstd * weight + bias, with the group's mean and invstd as constants.
struct SyncNormalize : torch::autograd::Function<SyncNormalize> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& bias, const at::Tensor& mean, const at::Tensor& invstd,
                            double count, std::shared_ptr<ProcessGroup> group) {
    const int64_t dim = input.dim();
    at::Tensor scale = invstd;
    if (weight.defined()) scale = scale * weight.to(invstd.scalar_type());
    at::Tensor shift = -mean * scale;
    if (bias.defined()) shift = shift + bias.to(invstd.scalar_type());
    at::Tensor out = (input.to(invstd.scalar_type()) * per_channel(scale, dim) + per_channel(shift, dim))
                         .to(input.scalar_type());
    ctx->save_for_backward({input, weight, mean, invstd});
    ctx->saved_data["count"] = count;
    ctx->saved_data["group"] = at::IValue::make_capsule(c10::make_intrusive<GroupCapsule>(std::move(group)));
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& input = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& mean = saved[2];
    const at::Tensor& invstd = saved[3];
    const double count = ctx->saved_data["count"].toDouble();
    const int64_t dim = input.dim();
    const auto acc = invstd.scalar_type();
    const auto dims = reduced_dims(dim);

    at::Tensor dy = grad_outputs[0].to(acc);
    at::Tensor xmu = input.to(acc) - per_channel(mean, dim);
    at::Tensor sum_dy = dy.sum(dims);
    at::Tensor sum_dy_xmu = (dy * xmu).sum(dims);

    at::Tensor grad_input, grad_weight, grad_bias;
    if (weight.defined() && ctx->needs_input_grad(1)) grad_weight = (sum_dy_xmu * invstd).to(weight.scalar_type());
    if (ctx->needs_input_grad(2)) grad_bias = sum_dy.to(weight.defined() ? weight.scalar_type() : acc);
    if (ctx->needs_input_grad(0)) {
      auto holder = c10::static_intrusive_pointer_cast<GroupCapsule>(ctx->saved_data["group"].toCapsule());
      std::vector<at::Tensor> sums = {at::cat({sum_dy, sum_dy_xmu})};
      holder->group->allreduce(sums)->wait();
      const int64_t channels = mean.numel();
      at::Tensor mean_dy = sums[0].narrow(0, 0, channels) / count;
      at::Tensor mean_dy_xmu = sums[0].narrow(0, channels, channels) / count;
      at::Tensor scale = weight.defined() ? invstd * weight.to(acc) : invstd;
      grad_input = ((dy - per_channel(mean_dy, dim) - xmu * per_channel(invstd * invstd * mean_dy_xmu, dim)) *
                    per_channel(scale, dim))
                       .to(input.scalar_type());
    }
    return {grad_input, grad_weight, grad_bias, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

SyncBatchNormImpl::SyncBatchNormImpl(const torch::nn::BatchNormOptions& options,
                                     std::shared_ptr<ProcessGroup> group)
    : options_(options), group_(std::move(group)) {
  if (options.num_features() < 1)
    throw ConfigError("SyncBatchNorm num_features must be >= 1, got " + std::to_string(options.num_features()));
  if (options.affine()) {
    weight = register_parameter("weight", at::ones({options.num_features()}));
    bias = register_parameter("bias", at::zeros({options.num_features()}));
  }
  if (options.track_running_stats()) {
    running_mean = register_buffer("running_mean", at::zeros({options.num_features()}));
    running_var = register_buffer("running_var", at::ones({options.num_features()}));
    num_batches_tracked = register_buffer("num_batches_tracked", at::zeros({}, at::kLong));
  }
}

at::Tensor SyncBatchNormImpl::forward(const at::Tensor& input) {
  if (input.dim() < 2 || input.size(1) != options_.num_features()) {
    std::ostringstream msg;
    msg << "SyncBatchNorm(" << options_.num_features() << ") expects input [N, " << options_.num_features()
        << ", ...], got " << input.sizes();
    throw ConfigError(msg.str());
  }
  // BatchNorm's rule for the running average's factor: momentum, or a cumulative average without one.
  double factor = 0.0;
  if (is_training() && options_.track_running_stats()) {
    num_batches_tracked.add_(1);
    factor = options_.momentum() ? *options_.momentum() : 1.0 / num_batches_tracked.item<double>();
  }
  const bool batch_stats = is_training() || !options_.track_running_stats();
  const bool sync = batch_stats && is_training() && group_ && group_->size() > 1;
  if (!sync) {
    return at::batch_norm(input, weight, bias, running_mean, running_var, batch_stats, factor, options_.eps(),
                          at::globalContext().userEnabledCuDNN());
  }
  GroupStats s = group_stats(input, *group_);
  if (options_.track_running_stats()) {  // s is computed from a detached input: no graph here
    running_mean.mul_(1 - factor).add_(s.mean.to(running_mean.scalar_type()), factor);
    running_var.mul_(1 - factor).add_((s.var * (s.count / (s.count - 1))).to(running_var.scalar_type()), factor);
  }
  at::Tensor invstd = (s.var + options_.eps()).rsqrt();
  return SyncNormalize::apply(input, weight, bias, s.mean, invstd, s.count, group_);
}

}  // namespace ddp
