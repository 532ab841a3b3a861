// The training loop: patient-grouped split, DDP model (--arch, models/model_factory.h), Adam,
// per-epoch validation with the Kaggle metric computed over every rank's predictions, checkpoints
// and graceful stop. One Trainer per rank; every rank runs the same steps in the same order.
//
// Where the state of the run lives (what a checkpoint saves and --resume restores): progress_
// (epoch, step, samples of the epoch), the sampler (set_epoch + set_start_index from progress_),
// torch's default generator (seeded from --seed before the model is built), the optimizer; the
// learning rate is a function of progress_ (schedule.h).
#include "train.h"

#include "amp.h"
#include "evaluate.h"
#include "schedule.h"

#include "data/ranzcr/loader.h"
#include "data/ranzcr/records.h"
#include "data/ranzcr/split.h"
#include "models/model_factory.h"
#include "trainer/comm_hook_choice.h"
#include "trainer/optimizer_choice.h"
#include "trainer/interval_meter.h"
#include "trainer/reporter.h"
#include "trainer/step_end.h"

#include <ddp/checkpoint.h>
#include <ddp/distributed_data_parallel.h>
#include <ddp/distributed_sampler.h>
#include <ddp/errors.h>
#include <ddp/logging.h>
#include <ddp/process_group.h>
#include <ddp/signals.h>

#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>
#include <torch/utils.h>

#include <chrono>
#include <set>

namespace train_ranzcr {
namespace {

using ddp::data::ranzcr::kNumLabels;
using Clock = std::chrono::steady_clock;
using Model = std::shared_ptr<ddp::models::Classifier>;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Mean binary cross-entropy over the valid rows (a row whose image could not be decoded counts 0).
at::Tensor masked_bce(const at::Tensor& logits, const at::Tensor& targets, const at::Tensor& valid, int64_t num_valid) {
  namespace F = torch::nn::functional;
  at::Tensor per = F::binary_cross_entropy_with_logits(
      logits.to(at::kFloat), targets, F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kNone));
  return (per * valid).sum() / static_cast<double>(std::max<int64_t>(1, num_valid * kNumLabels));
}

std::string describe_split(const std::vector<ddp::data::ranzcr::Record>& records, const ddp::data::ranzcr::Split& s) {
  auto patients = [&](const std::vector<int64_t>& idx) {
    std::set<std::string> p;
    for (auto i : idx) p.insert(records[static_cast<size_t>(i)].patient_id);
    return p.size();
  };
  return std::to_string(s.train.size()) + " training images (" + std::to_string(patients(s.train)) +
         " patients), " + std::to_string(s.val.size()) + " validation images (" + std::to_string(patients(s.val)) +
         " patients)";
}

// The labelled images, their patient-grouped split, and a loader for each side.
struct TrainData {
  std::shared_ptr<ddp::data::ranzcr::Dataset> dataset;
  int64_t missing = 0;  ///< images skipped up front (--skip-bad-images)
  ddp::data::ranzcr::Split split;
  std::unique_ptr<ddp::data::ranzcr::BatchLoader> train_loader, val_loader;
};

TrainData load_data(const Options& o, const ddp::trainer::Session& session) {
  TrainData d;
  d.dataset = std::make_shared<ddp::data::ranzcr::Dataset>(ddp::data::ranzcr::read_train_csv(o.csv), o.image_dir);
  d.missing = ddp::data::ranzcr::check_images_exist(*d.dataset, o.skip_bad_images);
  d.split = o.folds > 0 ? ddp::data::ranzcr::kfold_by_patient(d.dataset->records, o.folds, o.fold, o.split_seed)
                        : ddp::data::ranzcr::split_by_patient(d.dataset->records, o.val_fraction, o.split_seed);
  if (d.split.train.empty()) throw ddp::ConfigError("the split leaves no training image");
  if (session.rank0()) {
    DDP_LOG(INFO) << o.csv << ": " << describe_split(d.dataset->records, d.split)
                  << (o.folds > 0 ? ", fold " + std::to_string(o.fold) + " of " + std::to_string(o.folds) : "");
  }
  auto loader_options = ddp::data::ranzcr::LoaderOptions()
                            .batch_size(o.batch_size)
                            .image_size(o.image_size)
                            .workers(o.workers)
                            .prefetch_batches(o.prefetch)
                            .seed(o.seed)
                            .skip_bad_images(o.skip_bad_images)
                            .cache_dir(o.cache_dir)
                            .pin_memory(session.device.is_cuda());
  d.train_loader = std::make_unique<ddp::data::ranzcr::BatchLoader>(d.dataset, ddp::data::ranzcr::LoaderOptions(loader_options).augment(o.augment));
  d.val_loader = std::make_unique<ddp::data::ranzcr::BatchLoader>(d.dataset, loader_options);
  return d;
}

// The seeded model (--arch, --pretrained, --freeze-backbone, --sync-bn) on the session's device.
Model build_model(const Options& o, const ddp::trainer::Session& session) {
  torch::manual_seed(o.seed);
  auto built = ddp::models::make_model(ddp::models::ModelOptions(o.arch)
                                           .in_channels(1)
                                           .num_classes(kNumLabels)
                                           .pretrained(o.pretrained)
                                           .freeze_backbone(o.freeze_backbone)
                                           .sync_bn_group(o.sync_bn ? session.pg : nullptr));
  if (built.pretrained && session.rank0()) {
    DDP_LOG(INFO) << "--pretrained " << o.pretrained << ": " << built.pretrained->summary();
  }
  built.module->to(session.device);
  return built.module;
}

std::vector<at::Tensor> trainable_parameters(const Model& net) {
  std::vector<at::Tensor> trainable;
  for (auto& p : net->parameters()) {
    if (p.requires_grad()) trainable.push_back(p);
  }
  return trainable;
}

class Trainer {
 public:
  Trainer(const Options& o, const ddp::trainer::Session& session, bool amp)
      : o_(o),
        session_(session),
        pg_(*session.pg),
        amp_(amp),
        data_(load_data(o, session)),
        net_(build_model(o, session)),
        optimizer_(ddp::trainer::make_optimizer(o.runtime.zero(), trainable_parameters(net_), session.pg,
                                                [&o](std::vector<torch::optim::OptimizerParamGroup> groups) {
                                                  return std::make_unique<torch::optim::Adam>(
                                                      std::move(groups),
                                                      torch::optim::AdamOptions(o.lr).weight_decay(o.weight_decay));
                                                })),
        checkpointer_(o.checkpoint.options(), session.pg),
        comm_hook_(o.runtime.comm_hook(), session.pg, checkpointer_),
        metadata_{{"trainer", "train_ranzcr"}, {"arch", o.arch}, {"image_size", std::to_string(o.image_size)}} {}

  /// Resume, the epoch loop, the final save. The exit code.
  int run() {
    // The Checkpointer logs which file it resumed from (or why it starts fresh).
    if (auto resumed = checkpointer_.resume(o_.checkpoint.resume, *net_, optimizer_.get())) {
      progress_ = resumed->progress;
      // An elastic job resumed at another size: the rest of the epoch goes to the ranks there are now.
      progress_.change_world_size(resumed->world_size, pg_.size(), static_cast<int64_t>(data_.split.train.size()));
    }
    reporter_.start(progress_.global_step);
    ddp::DistributedDataParallel<Model> model(net_, session_.pg,
                                              ddp::DistributedDataParallelOptions().static_graph(o_.runtime.static_graph()));
    comm_hook_.install(model);
    ddp::DistributedSampler sampler(static_cast<int64_t>(data_.split.train.size()), pg_.size(), pg_.rank(),
                                    /*shuffle=*/true, static_cast<int64_t>(o_.seed));
    steps_per_epoch_ = (sampler.num_samples() + o_.batch_size - 1) / o_.batch_size;
    const LrSchedule schedule(o_, steps_per_epoch_);
    EpochMetrics last;
    bool out_of_steps = false;
    while (progress_.epoch < o_.epochs && !out_of_steps) {
      EpochMetrics m;
      const EpochEnd end = train_epoch(model, sampler, schedule, &m);
      if (end == EpochEnd::kStopSignal) return ddp::stop_exit_code();
      out_of_steps = end == EpochEnd::kOutOfSteps;
      validate(&m);
      // Unlike a --max-steps stop mid-epoch, a finished epoch checkpoints the next one's start.
      if (!out_of_steps) progress_.next_epoch();
      checkpointer_.save(*net_, optimizer_.get(), progress_, metadata_);
      m.global_step = progress_.global_step;
      report(m);
      last = m;
    }
    finish(last);
    return 0;
  }

 private:
  enum class EpochEnd { kDone, kOutOfSteps, kStopSignal };

  /// The optimizer steps of one epoch (from progress_, so a resumed epoch continues mid-way), and
  /// the epoch's training numbers in `m`.
  EpochEnd train_epoch(ddp::DistributedDataParallel<Model>& model, ddp::DistributedSampler& sampler,
                       const LrSchedule& schedule, EpochMetrics* m) {
    const int64_t epoch = progress_.epoch;
    sampler.set_epoch(epoch);
    sampler.set_epoch_offset(progress_.epoch_offset);
    sampler.set_start_index(progress_.samples_in_epoch);
    std::vector<int64_t> indices;
    for (int64_t pos : sampler.indices()) indices.push_back(data_.split.train[static_cast<size_t>(pos)]);
    data_.train_loader->start_epoch(std::move(indices), static_cast<uint64_t>(epoch));
    net_->train();
    const auto t0 = epoch_start_ = Clock::now();
    const double wait0 = data_.train_loader->wait_seconds();
    at::Tensor loss_sum = at::zeros({2}, at::TensorOptions(session_.device).dtype(at::kDouble));  // sum, rows
    int64_t images = 0;
    // Progress points: rank 0's mean loss and all ranks' images/s since the last point.
    ddp::trainer::IntervalMeter interval(at::TensorOptions(session_.device).dtype(at::kDouble));
    EpochEnd end = EpochEnd::kDone;
    ddp::data::ranzcr::Batch batch;
    while (data_.train_loader->next(&batch)) {
      const double lr = schedule.at(progress_);
      for (auto& group : optimizer_->param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
      const at::Tensor loss = step(model, batch, loss_sum);
      interval.add(loss, batch.images.size(0));
      images += batch.images.size(0);
      progress_.step_done(batch.images.size(0));
      const bool epoch_done = progress_.step_in_epoch == steps_per_epoch_;
      const bool out_of_steps = o_.runtime.max_steps() > 0 && progress_.global_step >= o_.runtime.max_steps();
      if (session_.rank0() && (progress_.global_step % o_.runtime.log_interval() == 0 || epoch_done || out_of_steps)) {
        auto point = ddp::trainer::train_point(progress_, o_.epochs, steps_per_epoch_, sampler.num_samples());
        point.lr = lr;
        reporter_.train_interval(interval.take(point, pg_.size()));  // one sync per point
      }
      if (ddp::trainer::checkpoint_or_stop(stop_, checkpointer_, *net_, optimizer_.get(), progress_, metadata_))
        return EpochEnd::kStopSignal;
      if (out_of_steps) {
        end = EpochEnd::kOutOfSteps;
        break;
      }
    }
    m->epoch = epoch + 1;
    m->lr = schedule.at(progress_);
    const double train_seconds = seconds_since(t0);
    m->images_per_sec = train_seconds > 0 ? static_cast<double>(images * pg_.size()) / train_seconds : 0;
    m->data_wait_s = data_.train_loader->wait_seconds() - wait0;
    std::vector<at::Tensor> sums = {loss_sum};
    pg_.allreduce(sums)->wait();
    at::Tensor totals = loss_sum.cpu();
    m->loss = totals[1].item<double>() > 0 ? totals[0].item<double>() / totals[1].item<double>() : 0.0;
    return end;
  }

  /// One optimizer step on `batch`; adds the loss times the valid rows to `loss_sum` (no sync).
  at::Tensor step(ddp::DistributedDataParallel<Model>& model, const ddp::data::ranzcr::Batch& batch, at::Tensor& loss_sum) {
    const bool pinned = batch.images.is_pinned();
    at::Tensor x = batch.images.to(session_.device, pinned);
    at::Tensor y = batch.targets.to(session_.device, pinned);
    at::Tensor valid = at::tensor(std::vector<float>(batch.valid.begin(), batch.valid.end()))
                           .unsqueeze(1)
                           .to(session_.device);
    optimizer_->zero_grad();
    at::Tensor logits;
    {
      AutocastScope autocast(amp_);
      logits = model(x);
    }
    at::Tensor loss = masked_bce(logits, y, valid, batch.num_valid);
    loss.backward();
    optimizer_->step();
    torch::NoGradGuard no_grad;
    loss_sum[0] += loss.detach().to(at::kDouble) * static_cast<double>(batch.num_valid);
    loss_sum[1] += static_cast<double>(batch.num_valid);
    return loss;
  }

  /// Validation on every rank with rank 0's BatchNorm statistics: the metrics into `m`.
  void validate(EpochMetrics* m) {
    std::vector<at::Tensor> buffers = net_->buffers();
    if (!buffers.empty() && pg_.size() > 1) pg_.broadcast(buffers, 0)->wait();
    if (!data_.split.val.empty()) {
      fill_validation_metrics(predict_all(net_, *data_.val_loader, data_.split.val, pg_, session_.device, amp_), m);
    }
    m->bad_images = data_.missing + data_.train_loader->bad_images() + data_.val_loader->bad_images();
    m->epoch_seconds = seconds_since(epoch_start_);  // training + validation
  }

  void report(const EpochMetrics& m) {
    reporter_.evaluation(eval_point(m));
    if (session_.rank0() && !m.single_class_columns.empty()) {
      std::string names;
      for (const auto& c : m.single_class_columns) names += (names.empty() ? "" : ", ") + c;
      DDP_LOG(WARN) << "ROC AUC undefined (one class in the validation set), left out of the mean: " << names;
    }
  }

  /// model.pt and the summary record on rank 0; every rank waits for them.
  void finish(const EpochMetrics& last) {
    if (session_.rank0()) {
      const std::string path = ddp::trainer::save_model(*net_, o_.runtime.model_dir());
      reporter_.summary(ddp::trainer::JsonRecord()
                            .integer("epochs", progress_.epoch)
                            .integer("steps", progress_.global_step)
                            .number("auc", last.auc)
                            .number("train_loss", last.loss)
                            .number("eval_loss", last.val_loss)
                            .string("model", path));
    }
    pg_.barrier()->wait();
  }

  const Options& o_;
  const ddp::trainer::Session& session_;
  ddp::ProcessGroup& pg_;
  const bool amp_;
  TrainData data_;
  Model net_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;  // Adam, sharded with --zero
  ddp::Checkpointer checkpointer_;
  ddp::trainer::CommHookChoice comm_hook_;  // registers its state with checkpointer_ before resume
  const std::map<std::string, std::string> metadata_;
  ddp::TrainingProgress progress_;
  int64_t steps_per_epoch_ = 0;
  Clock::time_point epoch_start_;
  ddp::trainer::Reporter reporter_{ddp::trainer::ReporterOptions()
                                       .enabled(session_.rank0())
                                       .progress(o_.runtime.progress())
                                       .metrics_file(o_.runtime.metrics_file())
                                       .tensorboard_dir(o_.runtime.tensorboard_dir())
                                       .katib_metrics_file(o_.runtime.katib_metrics_file())
                                       .count(ddp::trainer::ProgressCount::kSteps)
                                       .max_steps(o_.runtime.max_steps())
                                       .rate_decimals(1)};
  ddp::StopVote stop_{pg_};
};

}  // namespace

int train(const Options& o, const ddp::trainer::Session& session, bool amp) { return Trainer(o, session, amp).run(); }

}  // namespace train_ranzcr
