// --predict: probabilities for every test image, written as Kaggle's submission by rank 0.
#include "evaluate.h"
#include "train.h"

#include "data/ranzcr/loader.h"
#include "data/ranzcr/records.h"
#include "models/model_factory.h"
#include "models/state_dict.h"

#include <ddp/checkpoint.h>
#include <ddp/errors.h>
#include <ddp/logging.h>
#include <ddp/process_group.h>

#include <cmath>
#include <numeric>

namespace train_ranzcr {

int predict(const Options& o, const ddp::trainer::Session& session, bool amp) {
  using ddp::data::ranzcr::kNumLabels;
  ddp::ProcessGroup& pg = *session.pg;
  auto dataset = std::make_shared<ddp::data::ranzcr::Dataset>(ddp::data::ranzcr::list_test_images(o.test_dir), o.test_dir);
  ddp::data::ranzcr::BatchLoader loader(dataset, ddp::data::ranzcr::LoaderOptions()
                                               .batch_size(o.batch_size)
                                               .image_size(o.image_size)
                                               .workers(o.workers)
                                               .prefetch_batches(o.prefetch)
                                               .skip_bad_images(o.skip_bad_images)
                                               .cache_dir(o.cache_dir)
                                               .pin_memory(session.device.is_cuda()));
  std::shared_ptr<ddp::models::Classifier> net =
      ddp::models::make_model(ddp::models::ModelOptions(o.arch).in_channels(1).num_classes(kNumLabels)).module;
  if (!o.weights.empty()) {
    auto report = ddp::models::load_state_dict(*net, o.weights);
    if (!report.kept.empty() || !report.adapted.empty()) {
      throw ddp::DataError("--weights " + o.weights + " is not a trained " + o.arch + " (" + report.summary() +
                           "); use the model.pt train_ranzcr wrote");
    }
  } else {
    ddp::Checkpointer checkpointer(o.checkpoint.options(), session.pg);
    const std::string policy = o.checkpoint.resume == "none" ? "auto" : o.checkpoint.resume;
    auto info = o.checkpoint.dir.empty() && policy == "auto" ? std::nullopt : checkpointer.resume(policy, *net, nullptr);
    if (!info) {
      throw ddp::ConfigError("--predict needs --weights FILE or a checkpoint (--checkpoint-dir DIR or --resume FILE)");
    }
    if (pg.rank() == 0) {
      DDP_LOG(INFO) << "predicting with " << info->path << " (" << info->progress.describe() << ")";
    }
  }
  net->to(session.device);
  std::vector<int64_t> all(dataset->records.size());
  std::iota(all.begin(), all.end(), 0);
  Predictions p = predict_all(net, loader, all, pg, session.device, amp);
  if (pg.rank() == 0) {
    // Rows arrive in rank order; put them back in file order.
    std::vector<std::string> uids(dataset->records.size());
    std::vector<float> probabilities(dataset->records.size() * kNumLabels);
    for (int64_t i = 0; i < p.rows(); ++i) {
      const size_t idx = static_cast<size_t>(p.indices[static_cast<size_t>(i)]);
      uids[idx] = dataset->records[idx].uid;
      for (int c = 0; c < kNumLabels; ++c) {
        const float x = p.logits[static_cast<size_t>(i * kNumLabels + c)];
        probabilities[idx * kNumLabels + c] = 1.f / (1.f + std::exp(-x));
      }
    }
    ddp::data::ranzcr::write_submission(o.out, uids, probabilities);
    int64_t bad = 0;
    for (auto v : p.valid) bad += v == 0;
    DDP_LOG(INFO) << "wrote " << o.out << ": " << uids.size() << " images"
                  << (bad ? " (" + std::to_string(bad) + " undecodable, predicted from a blank image)" : "");
  }
  pg.barrier()->wait();
  return 0;
}

}  // namespace train_ranzcr
