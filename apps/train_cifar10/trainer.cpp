// The training run. One Trainer per rank; every rank runs the same steps in the same order.
//
// Where the state of the run lives (so checkpoint/resume can be added without restructuring):
//   progress_   epoch, step in epoch, global step, samples consumed this epoch (ddp::TrainingProgress)
//   sampler_    this rank's shuffled indices; set_epoch + set_start_index(progress_.samples_in_epoch)
//   the RNG     torch's default CPU generator, seeded once from --seed before the model is built;
//               augmentation uses a counter-based RNG keyed by (seed, epoch, sample), so it needs no
//               state beyond progress_
//   stop_       the stop vote (SIGTERM on any rank), polled after every optimizer step
#include "trainer.h"

#include "trainer/blas.h"
#include "trainer/thread_budget.h"

#include <ddp/checkpoint.h>
#include <ddp/distributed_data_parallel.h>
#include <ddp/distributed_sampler.h>
#include <ddp/errors.h>
#include <ddp/init.h>
#include <ddp/logging.h>
#include <ddp/signals.h>
#include <ddp/world_info.h>

#include <torch/cuda.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <sstream>

#include "data/cifar/cifar_dataset.h"
#include "data/cifar/cifar_loader.h"
#include "evaluation.h"
#include "model_export.h"
#include "models/cifar_net.h"
#include "models/resnet.h"
#include "run_log.h"

namespace train_cifar10 {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct DeviceChoice {
  c10::Device device{c10::kCPU};
  std::string why;
};

DeviceChoice choose_device(const std::string& flag) {
  if (flag == "cpu") return {c10::Device(c10::kCPU), "--device cpu"};
  if (flag == "auto") {
    c10::Device d = ddp::default_device();
    if (d.is_cuda()) return {d, "--device auto: CUDA is usable, cuda:LOCAL_RANK"};
    return {d, "--device auto: " + ddp::cpu_fallback_reason()};
  }
  // "cuda": required, so its absence is an error rather than a silent CPU run.
  if (!torch::cuda::is_available())
    throw ddp::ConfigError("--device cuda, but CUDA is not usable here (" + ddp::cpu_fallback_reason() + ")");
  const int local_rank = ddp::WorldInfo::from_env().local_rank;
  const int count = static_cast<int>(torch::cuda::device_count());
  if (local_rank >= count)
    throw ddp::ConfigError("--device cuda: LOCAL_RANK=" + std::to_string(local_rank) + " but only " + std::to_string(count) +
                           " CUDA devices are visible");
  return {c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(local_rank)), "--device cuda"};
}

template <typename Net>
class Trainer {
 public:
  Trainer(const TrainOptions& o, std::shared_ptr<ddp::ProcessGroup> pg, c10::Device device, ddp::data::Cifar10Data data, Net net)
      : o_(o),
        pg_(std::move(pg)),
        device_(device),
        data_(std::move(data)),
        model_(net, pg_),
        optimizer_(model_.module()->parameters(), torch::optim::SGDOptions(o.lr).momentum(o.momentum)),
        sampler_(data_.train.size(), pg_->size(), pg_->rank(), /*shuffle=*/true, o.seed),
        train_loader_(data_.train, ddp::data::CifarLoaderOptions()
                                       .batch_size(o.batch_size)
                                       .workers(o.workers)
                                       .prefetch(o.prefetch)
                                       .device(device)
                                       .augment(ddp::data::CifarAugment().enabled(o.augment).seed(static_cast<uint64_t>(o.seed)))),
        test_loader_(data_.test, ddp::data::CifarLoaderOptions()
                                     .batch_size(o.test_batch_size)
                                     .workers(o.workers)
                                     .prefetch(2)
                                     .device(device)),
        test_indices_(test_indices(data_.test.size(), pg_->size(), pg_->rank())),
        log_(RunLogOptions().enabled(pg_->rank() == 0).metrics_file(o.metrics_file).progress(o.progress)),
        checkpointer_(o.checkpoint.options(), pg_) {}

  int run() {
    const auto run_start = Clock::now();
    const int world = pg_->size();
    const int64_t steps_per_epoch = train_loader_.batches_for(sampler_.num_samples());
    bool stop = false;
    EvalCounts last;
    int64_t trained_images = 0;  // all ranks
    double train_seconds = 0;
    if (auto resumed = checkpointer_.resume(o_.checkpoint.resume, *model_.module(), &optimizer_))
      progress_ = resumed->progress;
    while (progress_.epoch < o_.epochs && !stop) {
      const auto epoch_start = Clock::now();
      sampler_.set_epoch(progress_.epoch);
      sampler_.set_start_index(progress_.samples_in_epoch);
      train_loader_.start_epoch(progress_.epoch, sampler_.indices(), /*first_batch=*/0);
      model_.module()->train();

      at::Tensor interval_loss = at::zeros({}, at::TensorOptions().device(device_));
      int64_t interval_steps = 0, interval_images = 0;
      auto interval_start = Clock::now();
      while (auto batch = train_loader_.next()) {
        const int64_t n = batch->images.size(0);
        optimizer_.zero_grad();
        at::Tensor loss = torch::nn::functional::cross_entropy(model_(batch->images), batch->labels);
        loss.backward();
        optimizer_.step();
        progress_.step_done(n);

        interval_loss.add_(loss.detach());
        ++interval_steps;
        interval_images += n;
        trained_images += n * world;
        const bool last_step = progress_.step_in_epoch == steps_per_epoch;
        const bool out_of_steps = o_.max_steps > 0 && progress_.global_step >= o_.max_steps;
        if (progress_.step_in_epoch % o_.log_interval == 0 || last_step || out_of_steps) {
          TrainPoint p;
          p.epoch = progress_.epoch + 1;
          p.epochs = o_.epochs;
          p.global_step = progress_.global_step;
          p.step_in_epoch = progress_.step_in_epoch;
          p.steps_in_epoch = steps_per_epoch;
          p.samples_in_epoch = progress_.samples_in_epoch;
          p.samples_per_epoch = sampler_.num_samples();
          p.loss = interval_loss.item<double>() / static_cast<double>(interval_steps);
          p.images_per_sec = static_cast<double>(interval_images * world) / std::max(1e-9, seconds_since(interval_start));
          log_.train_step(p);
          interval_loss.zero_();
          interval_steps = interval_images = 0;
          interval_start = Clock::now();
        }
        const bool stop_signal = stop_.poll();
        if (stop_signal || checkpointer_.due(progress_)) checkpointer_.save(*model_.module(), &optimizer_, progress_);
        if (stop_signal) {
          DDP_LOG(WARN) << "stopping on signal " << ddp::stop_signal() << " after global step " << progress_.global_step
                        << " (checkpoint written)";
          return ddp::stop_exit_code();
        }
        if (out_of_steps) {
          stop = true;
          break;
        }
      }
      const double epoch_train_seconds = seconds_since(epoch_start);
      train_seconds += epoch_train_seconds;
      const int64_t epoch_images = progress_.samples_in_epoch * world;

      last = evaluate();
      report(last, epoch_images / std::max(1e-9, epoch_train_seconds), seconds_since(epoch_start));
      if (!stop) {
        progress_.next_epoch();
        checkpointer_.save(*model_.module(), &optimizer_, progress_, {{"test_accuracy", std::to_string(last.accuracy())}});
      }
    }

    if (pg_->rank() == 0) {
      const std::string path = o_.model_dir + "/model.pt";
      save_state_dict(*model_.module(), path);
      DDP_LOG(INFO) << "saved the model (" << model_.module()->parameters().size() << " parameter tensors) to " << path;
    }
    pg_->barrier()->wait();  // every rank ends after the model is on disk

    const double total_seconds = seconds_since(run_start);
    std::ostringstream summary;
    summary << "{\"type\":\"summary\",\"steps\":" << progress_.global_step << ",\"world_size\":" << world
            << ",\"trained_images\":" << trained_images << ",\"train_seconds\":" << json_number(train_seconds)
            << ",\"total_seconds\":" << json_number(total_seconds)
            << ",\"images_per_sec\":" << json_number(trained_images / std::max(1e-9, total_seconds))
            << ",\"accuracy\":" << json_number(last.accuracy()) << ",\"loss\":" << json_number(last.mean_loss()) << "}";
    log_.metrics_record(summary.str());
    if (pg_->rank() == 0) {
      DDP_LOG(INFO) << "done: " << progress_.global_step << " steps, " << trained_images << " images in " << total_seconds
                    << " s (" << static_cast<int64_t>(trained_images / std::max(1e-9, total_seconds))
                    << " images/s end to end), test accuracy " << last.accuracy();
    }
    return 0;
  }

 private:
  // Graceful stop (SIGTERM -> checkpoint -> exit 143): collective, so every rank stops after the same step.

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

  void report(const EvalCounts& c, double train_images_per_sec, double epoch_seconds) {
    EvalPoint p;
    p.epoch = progress_.epoch + 1;
    p.global_step = progress_.global_step;
    p.loss = c.mean_loss();
    p.accuracy = c.accuracy();
    p.correct = c.correct;
    p.total = c.total;
    p.per_class_accuracy = c.per_class_accuracy();
    p.train_images_per_sec = train_images_per_sec;
    p.epoch_seconds = epoch_seconds;
    log_.evaluation(p);
  }

  const TrainOptions& o_;
  std::shared_ptr<ddp::ProcessGroup> pg_;
  c10::Device device_;
  ddp::data::Cifar10Data data_;
  ddp::DistributedDataParallel<Net> model_;
  torch::optim::SGD optimizer_;
  ddp::DistributedSampler sampler_;
  ddp::data::CifarLoader train_loader_;
  ddp::data::CifarLoader test_loader_;
  std::vector<int64_t> test_indices_;
  ddp::TrainingProgress progress_;
  RunLog log_;
  ddp::Checkpointer checkpointer_;
  ddp::StopVote stop_{*pg_};
};

}  // namespace

int run_training(const TrainOptions& o) {
  const auto start = Clock::now();
  DeviceChoice choice = choose_device(o.device);
  auto pg = ddp::init_process_group(ddp::InitOptions().backend(o.backend).device(choice.device));
  const ddp::WorldInfo& world = ddp::world();

  const int threads = ddp::trainer::intra_op_threads(o.threads, world);
  ddp::trainer::set_intra_op_threads(threads);
  if (pg->rank() == 0) {
    const ddp::trainer::BlasInfo blas = ddp::trainer::blas_in_use();
    DDP_LOG(INFO) << "train_cifar10: " << world.describe() << ", backend " << pg->backend_name() << ", device "
                  << choice.device.str() << " (" << choice.why << "), " << threads << " intra-op threads, BLAS "
                  << blas.describe() << ", model " << o.model << ", batch " << o.batch_size << " per rank, " << o.epochs
                  << " epochs";
    ddp::trainer::warn_if_slow(blas);
  }

  ddp::data::Cifar10Data data = ddp::data::load_cifar10(o.data_dir);
  if (pg->rank() == 0) {
    DDP_LOG(INFO) << "data ready in " << seconds_since(start) << " s; model will be saved to " << o.model_dir << "/model.pt";
  }

  torch::manual_seed(static_cast<uint64_t>(o.seed));  // same initial weights everywhere (DDP broadcasts rank 0's anyway)
  if (o.model == "net") {
    ddp::models::CifarNet net;
    net->to(choice.device);
    return Trainer<ddp::models::CifarNet>(o, pg, choice.device, std::move(data), net).run();
  }
  ddp::models::ResNet net(ddp::models::ResNetOptions(ddp::models::ResNetArch::kResNet18).num_classes(10).cifar_stem(true));
  net->to(choice.device);
  return Trainer<ddp::models::ResNet>(o, pg, choice.device, std::move(data), net).run();
}

}  // namespace train_cifar10
