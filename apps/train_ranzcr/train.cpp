// The training loop: patient-grouped split, DDP ResNet, Adam, per-epoch validation with the
// Kaggle metric computed over every rank's predictions, checkpoints and graceful stop.
#include "amp.h"
#include "evaluate.h"
#include "report.h"
#include "schedule.h"
#include "session.h"

#include "data/ranzcr/auc.h"
#include "data/ranzcr/loader.h"
#include "data/ranzcr/records.h"
#include "data/ranzcr/split.h"
#include "models/resnet.h"
#include "models/state_dict.h"

#include <ddp/checkpoint.h>
#include <ddp/distributed_data_parallel.h>
#include <ddp/distributed_sampler.h>
#include <ddp/errors.h>
#include <ddp/init.h>
#include <ddp/logging.h>
#include <ddp/process_group.h>
#include <ddp/signals.h>

#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>
#include <torch/utils.h>

#include <chrono>
#include <cmath>
#include <set>

namespace train_ranzcr {
namespace {

using ddp::data::ranzcr::kNumLabels;
using Clock = std::chrono::steady_clock;

// Mean binary cross-entropy over the valid rows (a row whose image could not be decoded counts 0).
at::Tensor masked_bce(const at::Tensor& logits, const at::Tensor& targets, const at::Tensor& valid, int64_t num_valid) {
  namespace F = torch::nn::functional;
  at::Tensor per = F::binary_cross_entropy_with_logits(
      logits.to(at::kFloat), targets, F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kNone));
  return (per * valid).sum() / static_cast<double>(std::max<int64_t>(1, num_valid * kNumLabels));
}

double bce_of(const Predictions& p) {
  double sum = 0;
  int64_t n = 0;
  for (int64_t i = 0; i < p.rows(); ++i) {
    if (!p.valid[static_cast<size_t>(i)]) continue;
    for (int c = 0; c < kNumLabels; ++c) {
      const double x = p.logits[static_cast<size_t>(i * kNumLabels + c)], y = p.targets[static_cast<size_t>(i * kNumLabels + c)];
      sum += std::max(x, 0.0) - x * y + std::log1p(std::exp(-std::abs(x)));  // stable BCE with logits
      ++n;
    }
  }
  return n ? sum / n : 0.0;
}

void fill_validation_metrics(const Predictions& p, EpochMetrics* m) {
  std::vector<float> scores, targets;
  for (int64_t i = 0; i < p.rows(); ++i) {
    if (!p.valid[static_cast<size_t>(i)]) continue;
    scores.insert(scores.end(), p.logits.begin() + i * kNumLabels, p.logits.begin() + (i + 1) * kNumLabels);
    targets.insert(targets.end(), p.targets.begin() + i * kNumLabels, p.targets.begin() + (i + 1) * kNumLabels);
  }
  m->val_images = static_cast<int64_t>(scores.size() / kNumLabels);
  if (m->val_images == 0) return;
  m->val_loss = bce_of(p);
  // AUC depends only on the order of the scores: logits order like probabilities.
  auto report = ddp::data::ranzcr::column_aucs(scores, targets, kNumLabels);
  m->column_auc = report.per_column;
  for (int c : report.single_class) m->single_class_columns.push_back(ddp::data::ranzcr::label_columns()[c]);
  if (report.columns_used > 0) m->auc = report.mean;
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

}  // namespace

int train(const Options& o, Session& session) {
  ddp::ProcessGroup& pg = *session.pg;
  const bool rank0 = pg.rank() == 0;

  // ---- data
  auto dataset = std::make_shared<ddp::data::ranzcr::Dataset>(ddp::data::ranzcr::read_train_csv(o.csv), o.image_dir);
  const int64_t missing = ddp::data::ranzcr::check_images_exist(*dataset, o.skip_bad_images);
  const ddp::data::ranzcr::Split split = o.folds > 0
                                       ? ddp::data::ranzcr::kfold_by_patient(dataset->records, o.folds, o.fold, o.split_seed)
                                       : ddp::data::ranzcr::split_by_patient(dataset->records, o.val_fraction, o.split_seed);
  if (split.train.empty()) throw ddp::ConfigError("the split leaves no training image");
  if (rank0) {
    DDP_LOG(INFO) << o.csv << ": " << describe_split(dataset->records, split)
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
  ddp::data::ranzcr::BatchLoader train_loader(dataset, ddp::data::ranzcr::LoaderOptions(loader_options).augment(o.augment));
  ddp::data::ranzcr::BatchLoader val_loader(dataset, loader_options);

  // ---- model and optimiser
  torch::manual_seed(o.seed);
  using namespace ddp::models;
  ResNet net(ResNetOptions(parse_resnet_arch(o.arch)).in_channels(1).num_classes(kNumLabels));
  if (!o.pretrained.empty()) {
    auto report = load_state_dict(*net, o.pretrained);
    if (rank0) {
      DDP_LOG(INFO) << "--pretrained " << o.pretrained << ": " << report.summary();
    }
  }
  if (o.freeze_backbone) net->set_backbone_trainable(false);
  net->to(session.device);
  std::vector<at::Tensor> trainable;
  for (auto& p : net->parameters()) {
    if (p.requires_grad()) trainable.push_back(p);
  }
  torch::optim::Adam optimizer(trainable, torch::optim::AdamOptions(o.lr).weight_decay(o.weight_decay));

  ddp::Checkpointer checkpointer(o.checkpoint.options(), session.pg);
  ddp::TrainingProgress progress;
  // The Checkpointer logs which file it resumed from (or why it starts fresh).
  if (auto resumed = checkpointer.resume(o.checkpoint.resume, *net, &optimizer)) progress = resumed->progress;
  const std::map<std::string, std::string> metadata = {
      {"trainer", "train_ranzcr"}, {"arch", o.arch}, {"image_size", std::to_string(o.image_size)}};
  ddp::DistributedDataParallel<ResNet> model(net, session.pg);

  ddp::DistributedSampler sampler(static_cast<int64_t>(split.train.size()), pg.size(), pg.rank(),
                                  /*shuffle=*/true, static_cast<int64_t>(o.seed));
  const int64_t steps_per_epoch = (sampler.num_samples() + o.batch_size - 1) / o.batch_size;
  const LrSchedule schedule(o, steps_per_epoch);
  Reporter reporter(rank0, o.progress, o.metrics_file);
  ddp::StopVote stop_vote(pg);

  EpochMetrics last;
  bool step_limit_hit = false;
  while (progress.epoch < o.epochs && !step_limit_hit) {
    const int64_t epoch = progress.epoch;
    sampler.set_epoch(epoch);
    sampler.set_start_index(progress.samples_in_epoch);
    std::vector<int64_t> indices;
    for (int64_t pos : sampler.indices()) indices.push_back(split.train[static_cast<size_t>(pos)]);
    train_loader.start_epoch(std::move(indices), static_cast<uint64_t>(epoch));
    net->train();
    const auto t0 = Clock::now();
    const double wait0 = train_loader.wait_seconds();
    at::Tensor loss_sum = at::zeros({2}, at::TensorOptions(session.device).dtype(at::kDouble));  // sum, rows
    int64_t images = 0;
    // Progress points: rank 0's mean loss and all ranks' images/s since the last point.
    at::Tensor point_loss = at::zeros({}, at::TensorOptions(session.device).dtype(at::kDouble));
    int64_t point_steps = 0, point_images = 0;
    auto point_start = Clock::now();
    ddp::data::ranzcr::Batch batch;
    while (train_loader.next(&batch)) {
      const double lr = schedule.at(progress);
      for (auto& group : optimizer.param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
      const bool pinned = batch.images.is_pinned();
      at::Tensor x = batch.images.to(session.device, pinned);
      at::Tensor y = batch.targets.to(session.device, pinned);
      at::Tensor valid = at::tensor(std::vector<float>(batch.valid.begin(), batch.valid.end()))
                             .unsqueeze(1)
                             .to(session.device);
      optimizer.zero_grad();
      at::Tensor logits;
      {
        AutocastScope autocast(session.amp);
        logits = model(x);
      }
      at::Tensor loss = masked_bce(logits, y, valid, batch.num_valid);
      loss.backward();
      optimizer.step();
      {
        torch::NoGradGuard no_grad;
        loss_sum[0] += loss.detach().to(at::kDouble) * static_cast<double>(batch.num_valid);
        loss_sum[1] += static_cast<double>(batch.num_valid);
        point_loss += loss.detach().to(at::kDouble);
      }
      images += batch.images.size(0);
      point_images += batch.images.size(0);
      ++point_steps;
      progress.step_done(batch.images.size(0));
      const bool epoch_done = progress.step_in_epoch == steps_per_epoch;
      step_limit_hit = o.max_steps > 0 && progress.global_step >= o.max_steps;
      if (rank0 && (progress.global_step % o.log_interval == 0 || epoch_done || step_limit_hit)) {
        const double dt = std::chrono::duration<double>(Clock::now() - point_start).count();
        StepPoint p;
        p.epoch = epoch + 1;
        p.epochs = o.epochs;
        p.global_step = progress.global_step;
        p.step_in_epoch = progress.step_in_epoch;
        p.steps_in_epoch = steps_per_epoch;
        p.loss = point_loss.item<double>() / static_cast<double>(std::max<int64_t>(1, point_steps));  // one sync per point
        p.images_per_sec = dt > 0 ? static_cast<double>(point_images * pg.size()) / dt : 0;
        reporter.train_point(p);
        point_loss.zero_();
        point_steps = point_images = 0;
        point_start = Clock::now();
      }
      const bool stop = stop_vote.poll();
      if (stop || checkpointer.due(progress)) checkpointer.save(*net, &optimizer, progress, metadata);
      if (stop) {
        if (rank0) {
          DDP_LOG(WARN) << "stop requested: checkpointed at " << progress.describe() << ", exiting";
        }
        return ddp::stop_exit_code();
      }
      if (step_limit_hit) break;
    }
    EpochMetrics m;
    m.epoch = epoch + 1;
    m.lr = schedule.at(progress);
    const double train_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    m.images_per_sec = train_seconds > 0 ? static_cast<double>(images * pg.size()) / train_seconds : 0;
    m.data_wait_s = train_loader.wait_seconds() - wait0;
    std::vector<at::Tensor> sums = {loss_sum};
    pg.allreduce(sums)->wait();
    at::Tensor totals = loss_sum.cpu();
    m.loss = totals[1].item<double>() > 0 ? totals[0].item<double>() / totals[1].item<double>() : 0.0;

    // Every rank evaluates the same model: rank 0's BatchNorm statistics.
    std::vector<at::Tensor> buffers = net->buffers();
    if (!buffers.empty() && pg.size() > 1) pg.broadcast(buffers, 0)->wait();
    if (!split.val.empty()) {
      fill_validation_metrics(predict_all(net, val_loader, split.val, pg, session.device, session.amp), &m);
    }
    m.bad_images = missing + train_loader.bad_images() + val_loader.bad_images();
    m.epoch_seconds = std::chrono::duration<double>(Clock::now() - t0).count();

    if (!step_limit_hit) progress.next_epoch();
    checkpointer.save(*net, &optimizer, progress, metadata);
    m.global_step = progress.global_step;
    reporter.epoch_end(m);
    last = m;
  }

  if (rank0) {
    const std::string path = o.model_dir + "/model.pt";
    ddp::models::write_state_dict(ddp::models::state_dict_of(*net), path);
    DDP_LOG(INFO) << "weights written to " << path;
    reporter.metrics_record("{\"type\":\"summary\",\"epochs\":" + std::to_string(progress.epoch) +
                            ",\"steps\":" + std::to_string(progress.global_step) +
                            ",\"auc\":" + (last.auc ? json_number(*last.auc) : "null") +
                            ",\"loss\":" + json_number(last.loss) + ",\"model\":" + json_string(path) + "}");
  }
  pg.barrier()->wait();
  return 0;
}

}  // namespace train_ranzcr
