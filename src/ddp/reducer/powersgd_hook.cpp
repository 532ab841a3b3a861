// PowerSGD comm hook (include/ddp/powersgd_hook.h). Each step mirrors torch's powerSGD_hook (read in
// torch 1.13.1 and 2.6.0, torch/distributed/algorithms/ddp_comm_hooks/powerSGD_hook.py; the
// algorithm is the same in both) down to the ATen call, so the floating-point results are the
// same: the grouping of matrices by shape, the order Q is drawn in, Gram-Schmidt up to rank 2 and
// QR above it, where the division by the world size happens.
#include <ddp/errors.h>
#include <ddp/powersgd_hook.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <random>
#include <sstream>

namespace ddp {
namespace comm_hooks {

namespace {

// numpy's legacy RandomState(seed).randint(1_000_000_000): MT19937 seeded as std::mt19937 is, and
// a masked rejection draw (numpy's bounded_masked_uint32: the low 30 bits, redrawn while above
// the bound). torch's hook seeds LibTorch's generator with it whenever it draws new Qs.
uint32_t numpy_randint_1e9(std::mt19937& mt) {
  constexpr uint32_t kMax = 999999999, kMask = (1u << 30) - 1;
  uint32_t v;
  do v = static_cast<uint32_t>(mt()) & kMask;
  while (v > kMax);
  return v;
}

// torch's _orthogonalize_gram_schmidt on a batch of matrices [batch, n, r], in place.
void orthogonalize_gram_schmidt(at::Tensor& m, double epsilon) {
  const int64_t cols = m.size(2);
  for (int64_t i = 0; i < cols; ++i) {
    at::Tensor col = m.narrow(2, i, 1);
    // torch.norm(col, dim=1, keepdim=True): frobenius_norm in 1.13, linalg.vector_norm in 2.x;
    // bit-identical to each other in both versions (checked on the hook's shapes).
    at::Tensor norm = at::linalg_vector_norm(col, 2, at::IntArrayRef{1}, /*keepdim=*/true);
    if (epsilon == 0)
      col.div_(norm);
    else
      col.div_(norm.add(epsilon));
    if (i + 1 < cols) {
      at::Tensor rest = m.narrow(2, i + 1, cols - i - 1);
      rest.sub_(at::sum(col.mul(rest), at::IntArrayRef{1}, /*keepdim=*/true).mul(col));
    }
  }
}

// torch's _orthogonalize: Gram-Schmidt for rank <= 2 or half precision, QR (in place) otherwise.
void orthogonalize(at::Tensor& m, double epsilon) {
  const int64_t rank = m.size(2);
  if (rank <= 2 || m.scalar_type() == at::kHalf || m.scalar_type() == at::kBFloat16) {
    orthogonalize_gram_schmidt(m, epsilon);
    return;
  }
  at::Tensor r = at::empty({m.size(0), rank, rank}, m.options());
  at::linalg_qr_out(m, r, m, "reduced");
}

// One compressed matrix of a bucket: a view of the bucket shaped [1, rows, cols], and its P and Q
// (views into the bucket's P and Q memory).
struct Compressed {
  at::Tensor matrix, p, q;
};

struct BucketMemory {
  at::Tensor error, p, q;
};

}  // namespace

struct PowerSGDState::Impl {
  std::shared_ptr<ProcessGroup> pg;
  PowerSGDOptions options;
  std::mutex mutex;
  std::mt19937 rng;
  int64_t iter = 0;
  int64_t numel_before = 0, numel_after = 0;
  std::map<size_t, BucketMemory> buckets;

  void count_step(const GradBucket& bucket) {
    if (bucket.is_last()) ++iter;
  }

  CommFuture plain_allreduce(GradBucket& bucket);
  static CommFuture compress(const std::shared_ptr<Impl>& self, GradBucket& bucket);
};

PowerSGDState::PowerSGDState(std::shared_ptr<ProcessGroup> pg, PowerSGDOptions options)
    : impl_(std::make_shared<Impl>()) {
  if (!pg) throw ConfigError("PowerSGDState: the process group is null");
  if (options.matrix_approximation_rank() < 1)
    throw ConfigError("PowerSGDState: matrix_approximation_rank must be >= 1, got " +
                      std::to_string(options.matrix_approximation_rank()));
  if ((options.use_error_feedback() || options.warm_start()) && options.start_iter() <= 1)
    throw ConfigError("PowerSGDState: start_iter must be > 1 with error feedback or warm start (DDP rebuilds its "
                      "buckets after the first step), got " + std::to_string(options.start_iter()));
  if (!(options.min_compression_rate() >= 0))
    throw ConfigError("PowerSGDState: min_compression_rate must be >= 0");
  impl_->pg = std::move(pg);
  impl_->options = options;
  impl_->rng.seed(options.random_seed());
}

PowerSGDState::~PowerSGDState() = default;

const PowerSGDOptions& PowerSGDState::options() const { return impl_->options; }

int64_t PowerSGDState::iter() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->iter;
}

PowerSGDCompressionStats PowerSGDState::compression_stats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  PowerSGDCompressionStats s;
  s.numel_before = impl_->numel_before;
  s.numel_after = impl_->numel_after;
  s.rate = s.numel_after > 0 ? static_cast<double>(s.numel_before) / static_cast<double>(s.numel_after) : 0;
  return s;
}

CommFuture PowerSGDState::Impl::plain_allreduce(GradBucket& bucket) {
  // torch's default _allreduce_fut: divide first, then sum.
  at::Tensor buffer = bucket.buffer();
  buffer.div_(pg->size());
  std::vector<at::Tensor> t = {buffer};
  WorkPtr work = pg->allreduce(t, AllreduceOptions().op(ReduceOp::kSum));
  return CommFuture(work, [buffer] { return buffer; });
}

// Called with self->mutex held.
CommFuture PowerSGDState::Impl::compress(const std::shared_ptr<Impl>& self, GradBucket& bucket) {
  const PowerSGDOptions& options = self->options;
  at::Tensor input = bucket.buffer();
  const size_t index = bucket.index();
  BucketMemory& memory = self->buckets[index];
  // State restored from a checkpoint is on the CPU; the bucket may be on a GPU.
  for (at::Tensor* t : {&memory.error, &memory.p, &memory.q})
    if (t->defined() && t->device() != input.device()) *t = t->to(input.device());
  if (memory.error.defined() && memory.error.numel() != input.numel())
    throw DataError("PowerSGD: the saved error of bucket " + std::to_string(index) + " has " +
                    std::to_string(memory.error.numel()) + " elements, the bucket " + std::to_string(input.numel()) +
                    " (state from another model or bucket layout)");
  at::Tensor input_copy;
  if (options.use_error_feedback()) {
    if (memory.error.defined())
      input.add_(memory.error);
    else
      memory.error = at::zeros({input.numel()}, input.options());
    input_copy = input.clone();
  }

  // Which gradients are worth compressing, in bucket order.
  std::vector<at::Tensor> to_compress, uncompressed;
  int64_t p_size = 0, q_size = 0;
  for (const at::Tensor& g : bucket.gradients()) {
    if (g.dim() == 0) {
      uncompressed.push_back(g);
      self->numel_before += 1;
      self->numel_after += 1;
      continue;
    }
    at::Tensor matrix = g.view({g.size(0), -1});
    const int64_t n = matrix.size(0), m = matrix.size(1);
    const int64_t r = std::min({n, m, options.matrix_approximation_rank()});
    const int64_t before = n * m, after = (n + m) * r;
    self->numel_before += before;
    if (static_cast<double>(after) * options.min_compression_rate() < static_cast<double>(before)) {
      to_compress.push_back(matrix);
      p_size += n * r;
      q_size += m * r;
      self->numel_after += after;
    } else {
      uncompressed.push_back(g);
      self->numel_after += before;
    }
  }
  at::Tensor uncompressed_memory;
  if (!uncompressed.empty()) {
    std::vector<at::Tensor> flat;
    for (const at::Tensor& t : uncompressed) flat.push_back(t.reshape({-1}));
    uncompressed_memory = at::cat(flat);
  }

  bool randomize_q = false;
  if (!options.warm_start() || !memory.p.defined()) {
    randomize_q = true;
    memory.p = at::empty({p_size}, input.options());
    memory.q = at::empty({q_size}, input.options());
  } else if (memory.p.numel() != p_size || memory.q.numel() != q_size) {
    throw DataError("PowerSGD: the saved P and Q of bucket " + std::to_string(index) + " have " +
                    std::to_string(memory.p.numel()) + " and " + std::to_string(memory.q.numel()) +
                    " elements, the bucket needs " + std::to_string(p_size) + " and " + std::to_string(q_size) +
                    " (state from another model, bucket layout or rank)");
  }

  // torch walks the matrices grouped by shape, groups in the order their shape first appears
  // (a dict of lists): that order lays out P and Q and draws the random Qs.
  std::vector<std::pair<std::vector<int64_t>, std::vector<at::Tensor>>> by_shape;
  for (const at::Tensor& matrix : to_compress) {
    std::vector<int64_t> shape = matrix.sizes().vec();
    auto it = std::find_if(by_shape.begin(), by_shape.end(), [&](const auto& e) { return e.first == shape; });
    if (it == by_shape.end()) {
      by_shape.emplace_back(shape, std::vector<at::Tensor>{});
      it = std::prev(by_shape.end());
    }
    it->second.push_back(matrix);
  }
  auto parts = std::make_shared<std::vector<Compressed>>();
  int64_t p_at = 0, q_at = 0;
  for (const auto& group : by_shape) {
    for (const at::Tensor& matrix : group.second) {
      const int64_t n = matrix.size(0), m = matrix.size(1);
      const int64_t r = std::min({n, m, options.matrix_approximation_rank()});
      parts->push_back({matrix.unsqueeze(0), memory.p.narrow(0, p_at, n * r).view({1, n, r}),
                        memory.q.narrow(0, q_at, m * r).view({1, m, r})});
      p_at += n * r;
      q_at += m * r;
    }
  }

  if (!randomize_q) {
    for (Compressed& c : *parts) orthogonalize(c.q, options.orthogonalization_epsilon());
  } else {
    // torch: fork_rng; torch.manual_seed(rng.randint(1e9)); q.copy_(torch.randn(q.shape)) per Q on
    // the CPU. A fresh generator with that seed draws the same numbers without touching the global
    // one.
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(numpy_randint_1e9(self->rng));
    for (Compressed& c : *parts) {
      c.q.copy_(at::randn(c.q.sizes(), gen, at::TensorOptions().dtype(input.scalar_type())));
      orthogonalize(c.q, options.orthogonalization_epsilon());
    }
  }
  for (Compressed& c : *parts) at::bmm_out(c.p, c.matrix, c.q);

  WorkPtr uncompressed_work;
  if (uncompressed_memory.defined()) {
    std::vector<at::Tensor> t = {uncompressed_memory};
    uncompressed_work = self->pg->allreduce(t, AllreduceOptions().op(ReduceOp::kSum));
  }
  std::vector<at::Tensor> p_list = {memory.p};
  WorkPtr p_work = self->pg->allreduce(p_list, AllreduceOptions().op(ReduceOp::kSum));

  // The rest runs when DDP waits for this bucket, in bucket order on every rank, so the Q
  // allreduces are issued in the same order everywhere.
  return CommFuture(p_work, [self, input, q_memory = memory.q, input_copy, index, parts, uncompressed, uncompressed_memory,
                             uncompressed_work, bucket_is_last = bucket.is_last()] {
    const PowerSGDOptions& options = self->options;
    const int world = self->pg->size();
    if (uncompressed_work) {
      uncompressed_work->wait();
      uncompressed_memory.div_(world);
      int64_t at = 0;
      for (const at::Tensor& t : uncompressed) {
        t.copy_(uncompressed_memory.narrow(0, at, t.numel()).view_as(t));
        at += t.numel();
      }
    }
    for (Compressed& c : *parts) orthogonalize(c.p, options.orthogonalization_epsilon());
    for (Compressed& c : *parts) at::bmm_out(c.q, c.matrix.transpose(1, 2), c.p);
    std::vector<at::Tensor> q_list = {q_memory};
    self->pg->allreduce(q_list, AllreduceOptions().op(ReduceOp::kSum))->wait();
    q_memory.div_(world);
    for (Compressed& c : *parts) at::bmm_out(c.matrix, c.p, c.q.transpose(1, 2));
    std::lock_guard<std::mutex> lock(self->mutex);
    BucketMemory& memory = self->buckets[index];
    if (options.use_error_feedback()) memory.error = input_copy.sub(input);
    // Without warm start torch drops every P and Q here, so each bucket draws a new Q next step.
    if (!options.warm_start()) memory.p = memory.q = at::Tensor();
    if (bucket_is_last) ++self->iter;
    return input;
  });
}

CommHook powersgd(std::shared_ptr<PowerSGDState> state) {
  if (!state) throw ConfigError("comm_hooks::powersgd: the state is null");
  std::shared_ptr<PowerSGDState::Impl> impl = state->impl_;
  return [impl](GradBucket& bucket) {
    at::NoGradGuard no_grad;
    std::lock_guard<std::mutex> lock(impl->mutex);
    if (impl->iter < impl->options.start_iter()) {
      impl->count_step(bucket);
      return impl->plain_allreduce(bucket);
    }
    return PowerSGDState::Impl::compress(impl, bucket);
  };
}

// ---- checkpoint state --------------------------------------------------------------------------

namespace {

// The generator's textual representation as numbers: its 624 state words, and in libstdc++ the
// position within them (625 numbers).
at::Tensor rng_tensor(const std::mt19937& mt) {
  std::ostringstream text;
  text << mt;
  std::vector<int64_t> words;
  std::istringstream in(text.str());
  for (int64_t w; in >> w;) words.push_back(w);
  return at::tensor(words);
}

const at::Tensor& entry(const std::vector<std::pair<std::string, at::Tensor>>& tensors, const std::string& name) {
  for (const auto& e : tensors)
    if (e.first == name) return e.second;
  throw DataError("PowerSGD state: no entry '" + name + "'");
}

}  // namespace

std::vector<std::pair<std::string, at::Tensor>> PowerSGDState::state_tensors() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  std::vector<std::pair<std::string, at::Tensor>> out;
  out.emplace_back("powersgd.counters",
                   at::tensor(std::vector<int64_t>{impl_->iter, impl_->numel_before, impl_->numel_after}));
  out.emplace_back("powersgd.rng", rng_tensor(impl_->rng));
  for (const auto& [index, memory] : impl_->buckets) {
    const std::string b = std::to_string(index);
    if (memory.error.defined()) out.emplace_back("powersgd.error." + b, memory.error.cpu().clone());
    if (memory.p.defined()) out.emplace_back("powersgd.p." + b, memory.p.cpu().clone());
    if (memory.q.defined()) out.emplace_back("powersgd.q." + b, memory.q.cpu().clone());
  }
  return out;
}

void PowerSGDState::load_state_tensors(const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                                       bool keep_error_feedback) {
  const at::Tensor counters = entry(tensors, "powersgd.counters");
  const at::Tensor rng = entry(tensors, "powersgd.rng");
  if (counters.scalar_type() != at::kLong || counters.numel() != 3)
    throw DataError("PowerSGD state: 'powersgd.counters' is not 3 int64 values");
  if (rng.scalar_type() != at::kLong || rng.dim() != 1 || rng.numel() < 624 || rng.numel() > 625)
    throw DataError("PowerSGD state: 'powersgd.rng' is not 624 or 625 int64 values");
  std::ostringstream text;
  const at::Tensor words = rng.contiguous();
  for (int64_t i = 0; i < words.numel(); ++i) {
    const int64_t w = words.data_ptr<int64_t>()[i];
    if (w < 0 || w > 0xFFFFFFFFLL) throw DataError("PowerSGD state: 'powersgd.rng' holds a word out of range");
    text << (i ? " " : "") << w;
  }
  std::mt19937 mt;
  std::istringstream in(text.str());
  in >> mt;
  if (!in) throw DataError("PowerSGD state: 'powersgd.rng' is not a generator state");

  std::map<size_t, BucketMemory> buckets;
  const std::string prefixes[] = {"powersgd.error.", "powersgd.p.", "powersgd.q."};
  for (const auto& [name, value] : tensors) {
    for (int k = 0; k < 3; ++k) {
      const std::string& prefix = prefixes[k];
      if (name.compare(0, prefix.size(), prefix) != 0) continue;
      const std::string digits = name.substr(prefix.size());
      if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos)
        throw DataError("PowerSGD state: '" + name + "' does not end in a bucket number");
      if (value.dim() != 1) throw DataError("PowerSGD state: '" + name + "' is not a flat tensor");
      BucketMemory& m = buckets[std::stoul(digits)];
      if (k == 0 && !keep_error_feedback) continue;
      (k == 0 ? m.error : k == 1 ? m.p : m.q) = value.clone();
    }
  }
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const int64_t* c = counters.contiguous().data_ptr<int64_t>();
  impl_->iter = c[0];
  impl_->numel_before = c[1];
  impl_->numel_after = c[2];
  impl_->rng = mt;
  impl_->buckets = std::move(buckets);
}

}  // namespace comm_hooks
}  // namespace ddp
