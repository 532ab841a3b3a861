// The training run. One Trainer per rank; every rank runs the same steps in the same order.
//
// Where the state of the run lives (what a checkpoint saves and --resume restores):
//   progress_   epoch, step in epoch, global step, samples consumed this epoch (ddp::TrainingProgress)
//   sampler_    this rank's shuffled indices; set_epoch + set_start_index(progress_.samples_in_epoch)
//   the RNG     torch's default CPU generator, seeded once from --seed before the model is built;
//               augmentation uses a counter-based RNG keyed by (seed, epoch, sample), so it needs no
//               state beyond progress_
//   stop_       the stop vote (SIGTERM on any rank), polled after every optimizer step
#include "train.h"

#include <ddp/checkpoint.h>
#include <ddp/distributed_data_parallel.h>
#include <ddp/distributed_sampler.h>
#include <ddp/logging.h>
#include <ddp/process_group.h>
#include <ddp/signals.h>

#include <torch/torch.h>

#include <chrono>

#include "data/cifar/cifar_dataset.h"
#include "data/cifar/cifar_loader.h"
#include "evaluate.h"
#include "models/model_factory.h"
#include "trainer/comm_hook_choice.h"
#include "trainer/optimizer_choice.h"
#include "trainer/interval_meter.h"
#include "trainer/reporter.h"
#include "trainer/session.h"
#include "trainer/step_end.h"

namespace train_cifar10 {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

using Model = std::shared_ptr<ddp::models::Classifier>;

class Trainer {
 public:
  Trainer(const Options& o, const ddp::trainer::Session& session, ddp::data::cifar::Cifar10Data data, Model net)
      : o_(o),
        pg_(session.pg),
        device_(session.device),
        data_(std::move(data)),
        model_(std::move(net), pg_, ddp::DistributedDataParallelOptions().static_graph(o.runtime.static_graph())),
        optimizer_(ddp::trainer::make_optimizer(o.runtime.zero(), model_.module()->parameters(), pg_,
                                                [&o](std::vector<torch::optim::OptimizerParamGroup> groups) {
                                                  return std::make_unique<torch::optim::SGD>(
                                                      std::move(groups), torch::optim::SGDOptions(o.lr).momentum(o.momentum));
                                                })),
        sampler_(data_.train.size(), pg_->size(), pg_->rank(), /*shuffle=*/true, o.seed),
        train_loader_(data_.train, ddp::data::cifar::CifarLoaderOptions()
                                       .batch_size(o.batch_size)
                                       .workers(o.workers)
                                       .prefetch(o.prefetch)
                                       .device(device_)
                                       .augment(ddp::data::cifar::CifarAugment().enabled(o.augment).seed(static_cast<uint64_t>(o.seed)))),
        test_loader_(data_.test, ddp::data::cifar::CifarLoaderOptions()
                                     .batch_size(o.test_batch_size)
                                     .workers(o.workers)
                                     .prefetch(2)
                                     .device(device_)),
        test_indices_(test_indices(data_.test.size(), pg_->size(), pg_->rank())),
        steps_per_epoch_(train_loader_.batches_for(sampler_.num_samples())),
        reporter_(ddp::trainer::ReporterOptions()
                      .enabled(pg_->rank() == 0)
                      .metrics_file(o.runtime.metrics_file())
                      .tensorboard_dir(o.runtime.tensorboard_dir())
                      .katib_metrics_file(o.runtime.katib_metrics_file())
                      .progress(o.runtime.progress())
                      .max_steps(o.runtime.max_steps())),
        checkpointer_(o.checkpoint.options(), pg_),
        comm_hook_(o.runtime.comm_hook(), pg_, checkpointer_) {
    comm_hook_.install(model_);
  }

  /// Resume, the epoch loop, the final save. The exit code.
  int run() {
    const auto run_start = Clock::now();
    if (auto resumed = checkpointer_.resume(o_.checkpoint.resume, *model_.module(), optimizer_.get())) {
      progress_ = resumed->progress;
      // An elastic job resumed at another size: the rest of the epoch goes to the ranks there are now.
      progress_.change_world_size(resumed->world_size, pg_->size(), sampler_.size());
    }
    reporter_.start(progress_.global_step);
    bool out_of_steps = false;
    while (progress_.epoch < o_.epochs && !out_of_steps) {
      const auto epoch_start = Clock::now();
      const EpochEnd end = train_epoch();
      if (end == EpochEnd::kStopSignal) return ddp::stop_exit_code();
      out_of_steps = end == EpochEnd::kOutOfSteps;
      end_epoch(epoch_start, out_of_steps);
    }
    finish(run_start);
    return 0;
  }

 private:
  enum class EpochEnd { kDone, kOutOfSteps, kStopSignal };

  /// The optimizer steps of one epoch (from progress_, so a resumed epoch continues mid-way).
  EpochEnd train_epoch() {
    sampler_.set_epoch(progress_.epoch);
    sampler_.set_epoch_offset(progress_.epoch_offset);
    sampler_.set_start_index(progress_.samples_in_epoch);
    train_loader_.start_epoch(progress_.epoch, sampler_.indices(), /*first_batch=*/0);
    model_.module()->train();
    ddp::trainer::IntervalMeter interval(at::TensorOptions().device(device_));
    while (auto batch = train_loader_.next()) {
      const int64_t n = batch->images.size(0);
      interval.add(step(batch->images, batch->labels), n);
      progress_.step_done(n);
      trained_images_ += n * pg_->size();
      const bool last_step = progress_.step_in_epoch == steps_per_epoch_;
      const bool out_of_steps = o_.runtime.max_steps() > 0 && progress_.global_step >= o_.runtime.max_steps();
      if (progress_.step_in_epoch % o_.runtime.log_interval() == 0 || last_step || out_of_steps) {
        auto point = ddp::trainer::train_point(progress_, o_.epochs, steps_per_epoch_, sampler_.num_samples());
        point.lr = o_.lr;  // constant: the seed's SGD has no schedule
        reporter_.train_interval(interval.take(point, pg_->size()));
      }
      if (ddp::trainer::checkpoint_or_stop(stop_, checkpointer_, *model_.module(), optimizer_.get(), progress_))
        return EpochEnd::kStopSignal;
      if (out_of_steps) return EpochEnd::kOutOfSteps;
    }
    return EpochEnd::kDone;
  }

  /// One optimizer step; the loss (not synchronised).
  at::Tensor step(const at::Tensor& images, const at::Tensor& labels) {
    optimizer_->zero_grad();
    at::Tensor loss = torch::nn::functional::cross_entropy(model_(images), labels);
    loss.backward();
    optimizer_->step();
    return loss;
  }

  /// Evaluate, report, and (unless --max-steps ended the run mid-epoch) checkpoint the next epoch's start.
  void end_epoch(Clock::time_point epoch_start, bool out_of_steps) {
    const double epoch_train_seconds = seconds_since(epoch_start);
    train_seconds_ += epoch_train_seconds;
    const int64_t epoch_images = progress_.samples_in_epoch * pg_->size();
    last_ = evaluate();
    reporter_.evaluation(eval_point(last_, progress_.epoch + 1, progress_.global_step,
                                    epoch_images / std::max(1e-9, epoch_train_seconds), seconds_since(epoch_start)));
    if (!out_of_steps) {
      progress_.next_epoch();
      checkpointer_.save(*model_.module(), optimizer_.get(), progress_, {{"test_accuracy", std::to_string(last_.accuracy())}});
    }
  }

  EvalCounts evaluate() {
    auto& net = model_.module();
    net->eval();
    const int64_t chunk = device_.is_cpu() ? 250 : o_.test_batch_size;
    EvalCounts c = evaluate_split([&](const at::Tensor& x) { return net->forward(x); }, test_loader_, test_indices_, *pg_,
                                  device_, chunk);
    net->train();
    if (c.total != data_.test.size())
      throw std::logic_error("evaluation counted " + std::to_string(c.total) + " test images, the set has " +
                             std::to_string(data_.test.size()));
    return c;
  }

  /// model.pt on rank 0, every rank waits for it, then the summary record and line.
  void finish(Clock::time_point run_start) {
    if (pg_->rank() == 0) ddp::trainer::save_model(*model_.module(), o_.runtime.model_dir());
    pg_->barrier()->wait();  // every rank ends after the model is on disk
    const double total_seconds = seconds_since(run_start);
    reporter_.summary(ddp::trainer::JsonRecord()
                          .integer("steps", progress_.global_step)
                          .integer("world_size", pg_->size())
                          .integer("trained_images", trained_images_)
                          .number("train_seconds", train_seconds_)
                          .number("total_seconds", total_seconds)
                          .number("images_per_sec", trained_images_ / std::max(1e-9, total_seconds))
                          .number("accuracy", last_.accuracy())
                          .number("eval_loss", last_.mean_loss()));
    if (pg_->rank() == 0) {
      DDP_LOG(INFO) << "done: " << progress_.global_step << " steps, " << trained_images_ << " images in " << total_seconds
                    << " s (" << static_cast<int64_t>(trained_images_ / std::max(1e-9, total_seconds))
                    << " images/s end to end), test accuracy " << last_.accuracy();
    }
  }

  const Options& o_;
  std::shared_ptr<ddp::ProcessGroup> pg_;
  c10::Device device_;
  ddp::data::cifar::Cifar10Data data_;
  ddp::DistributedDataParallel<Model> model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;  // SGD, sharded with --zero
  ddp::DistributedSampler sampler_;
  ddp::data::cifar::CifarLoader train_loader_;
  ddp::data::cifar::CifarLoader test_loader_;
  std::vector<int64_t> test_indices_;
  int64_t steps_per_epoch_;
  ddp::TrainingProgress progress_;
  ddp::trainer::Reporter reporter_;
  ddp::Checkpointer checkpointer_;
  ddp::trainer::CommHookChoice comm_hook_;  // registers its state with checkpointer_ before resume
  ddp::StopVote stop_{*pg_};
  EvalCounts last_;
  int64_t trained_images_ = 0;  // all ranks
  double train_seconds_ = 0;
};

}  // namespace

int train(const Options& o) {
  const auto start = Clock::now();
  const ddp::trainer::DeviceChoice device = ddp::trainer::choose_device(o.runtime);
  const ddp::trainer::Session session =
      ddp::trainer::start_session(o.runtime, device, "train_cifar10",
                                  ", model " + o.model + ", batch " + std::to_string(o.batch_size) + " per rank, " +
                                      std::to_string(o.epochs) + " epochs");
  ddp::data::cifar::Cifar10Data data = ddp::data::cifar::load_cifar10(o.runtime.data_dir());
  if (session.rank0()) {
    DDP_LOG(INFO) << "data ready in " << seconds_since(start) << " s; model will be saved to " << o.runtime.model_dir()
                  << "/model.pt";
  }
  torch::manual_seed(static_cast<uint64_t>(o.seed));  // same initial weights everywhere (DDP broadcasts rank 0's anyway)
  Model net = ddp::models::make_model(ddp::models::ModelOptions(o.model)
                                              .in_channels(3)
                                              .num_classes(10)
                                              .small_images(true)
                                              .sync_bn_group(o.sync_bn ? session.pg : nullptr))
                  .module;
  net->to(session.device);
  return Trainer(o, session, std::move(data), net).run();
}

}  // namespace train_cifar10
