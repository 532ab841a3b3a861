#include "options.h"

#include <ddp/errors.h>

#include <cxxopts.hpp>

#include <cstdlib>
#include <set>

#include "util/help_epilogue.h"
#include "util/version_banner.h"

namespace train_ranzcr {
namespace {

void require_one_of(const std::string& flag, const std::string& value, const std::set<std::string>& allowed) {
  if (allowed.count(value)) return;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  throw ddp::ConfigError(flag + "='" + value + "': expected one of " + list);
}

template <typename T>
void require_at_least(const std::string& flag, T value, T least) {
  if (value < least) {
    throw ddp::ConfigError(flag + "=" + std::to_string(value) + ": must be >= " + std::to_string(least));
  }
}

}  // namespace

Options parse_options(int argc, char** argv, bool* help, std::string* usage) {
  cxxopts::Options cli("train_ranzcr",
                       "Distributed ResNet training on RANZCR CLiP chest X-rays (11 catheter labels, mean ROC AUC)");
  cli.add_options("Data")
      ("data-dir", "folder with train.csv, train/ and test/ (default: $SM_CHANNEL_TRAIN, $SM_CHANNEL_TRAINING)",
       cxxopts::value<std::string>()->default_value(""))
      ("csv", "labels (default DATA_DIR/train.csv)", cxxopts::value<std::string>()->default_value(""))
      ("image-dir", "training images (default DATA_DIR/train)", cxxopts::value<std::string>()->default_value(""))
      ("image-size", "square input side in pixels", cxxopts::value<int>()->default_value("224"))
      ("workers", "image decoding threads per rank", cxxopts::value<int>()->default_value("2"))
      ("prefetch", "batches decoded ahead per rank", cxxopts::value<int>()->default_value("4"))
      ("cache-dir", "store resized images here once and read them back (lossless)",
       cxxopts::value<std::string>()->default_value(""))
      ("skip-bad-images", "warn about and skip missing or undecodable images instead of failing")
      ("no-augment", "no training augmentation")
      ("val-fraction", "share of patients for validation", cxxopts::value<double>()->default_value("0.2"))
      ("folds", "K-fold cross-validation by patient (0: use --val-fraction)", cxxopts::value<int>()->default_value("0"))
      ("fold", "validation fold with --folds", cxxopts::value<int>()->default_value("0"))
      ("split-seed", "seed of the patient split", cxxopts::value<uint64_t>()->default_value("1"));
  cli.add_options("Model")
      ("arch", "resnet18 | resnet34 | resnet50", cxxopts::value<std::string>()->default_value("resnet18"))
      ("pretrained", "torchvision-converted weights (docs/RANZCR.md)", cxxopts::value<std::string>()->default_value(""))
      ("freeze-backbone", "train the head (fc) only");
  cli.add_options("Training")
      ("epochs", "epochs", cxxopts::value<int>()->default_value("10"))
      ("batch-size", "images per rank per step", cxxopts::value<int64_t>()->default_value("32"))
      ("lr", "Adam learning rate", cxxopts::value<double>()->default_value("1e-3"))
      ("weight-decay", "Adam weight decay (L2, as torch.optim.Adam)", cxxopts::value<double>()->default_value("0.1"))
      ("schedule", "learning-rate schedule: none | cosine | step", cxxopts::value<std::string>()->default_value("none"))
      ("step-epochs", "--schedule step: epochs between decays", cxxopts::value<int>()->default_value("3"))
      ("step-gamma", "--schedule step: decay factor", cxxopts::value<double>()->default_value("0.1"))
      ("amp", "none | bf16 (bfloat16 autocast, CUDA only)", cxxopts::value<std::string>()->default_value("none"))
      ("seed", "model initialisation, shuffling and augmentation", cxxopts::value<uint64_t>()->default_value("0"));
  cli.add_options("Runtime")
      ("device", "auto | cpu | cuda", cxxopts::value<std::string>()->default_value("auto"))
      ("backend", "auto | gloo | nccl", cxxopts::value<std::string>()->default_value("auto"))
      ("threads", "intra-op threads per rank (0: $OMP_NUM_THREADS if set, else usable CPUs / ranks on this node)", cxxopts::value<int>()->default_value("0"))
      ("metrics-file", "rank 0 appends JSON lines (train steps, validations) here", cxxopts::value<std::string>()->default_value(""))
      ("progress", "auto (a bar on a terminal, plain lines otherwise), bar or plain", cxxopts::value<std::string>()->default_value("auto"))
      ("log-interval", "plain progress lines and JSON train records every N steps", cxxopts::value<int64_t>()->default_value("10"))
      ("max-steps", "stop after N optimizer steps, validate and save (0: no limit)", cxxopts::value<int64_t>()->default_value("0"))
      ("model-dir", "rank 0 writes model.pt (state_dict) here (default: $SM_MODEL_DIR, else ./model)",
       cxxopts::value<std::string>()->default_value(""));
  cli.add_options("Prediction")
      ("predict", "write a submission instead of training")
      ("test-dir", "test images (default DATA_DIR/test)", cxxopts::value<std::string>()->default_value(""))
      ("out", "submission file", cxxopts::value<std::string>()->default_value("submission.csv"))
      ("weights", "state_dict to predict with (default: newest checkpoint in --checkpoint-dir, else MODEL_DIR/model.pt)",
       cxxopts::value<std::string>()->default_value(""));
  ddp::CheckpointFlags::add_to(cli);
  cli.add_options()("version", "print the version and exit")("h,help", "this help");

  cxxopts::ParseResult r;
  try {
    r = cli.parse(argc, argv);
  } catch (const std::exception& e) {
    throw ddp::ConfigError(std::string("train_ranzcr: ") + e.what() + " (see --help)");
  }
  if (!r.unmatched().empty()) throw ddp::ConfigError("train_ranzcr: unexpected argument '" + r.unmatched()[0] + "'");
  *help = r.count("help") > 0 || r.count("version") > 0;
  if (r.count("help"))
    *usage = cli.help() + "\n" + ddp::util::help_epilogue(ddp::util::HelpFor::kTrainer);
  else if (r.count("version"))
    *usage = ddp::util::version_banner("train_ranzcr") + "\n";
  Options o;
  if (*help) return o;

  o.data_dir = r["data-dir"].as<std::string>();
  o.csv = r["csv"].as<std::string>();
  o.image_dir = r["image-dir"].as<std::string>();
  o.image_size = r["image-size"].as<int>();
  o.workers = r["workers"].as<int>();
  o.prefetch = r["prefetch"].as<int>();
  o.cache_dir = r["cache-dir"].as<std::string>();
  o.skip_bad_images = r.count("skip-bad-images") > 0;
  o.augment = r.count("no-augment") == 0;
  o.val_fraction = r["val-fraction"].as<double>();
  o.folds = r["folds"].as<int>();
  o.fold = r["fold"].as<int>();
  o.split_seed = r["split-seed"].as<uint64_t>();
  o.arch = r["arch"].as<std::string>();
  o.pretrained = r["pretrained"].as<std::string>();
  o.freeze_backbone = r.count("freeze-backbone") > 0;
  o.epochs = r["epochs"].as<int>();
  o.batch_size = r["batch-size"].as<int64_t>();
  o.lr = r["lr"].as<double>();
  o.weight_decay = r["weight-decay"].as<double>();
  o.schedule = r["schedule"].as<std::string>();
  o.step_epochs = r["step-epochs"].as<int>();
  o.step_gamma = r["step-gamma"].as<double>();
  o.amp = r["amp"].as<std::string>();
  o.seed = r["seed"].as<uint64_t>();
  o.device = r["device"].as<std::string>();
  o.backend = r["backend"].as<std::string>();
  o.threads = r["threads"].as<int>();
  o.metrics_file = r["metrics-file"].as<std::string>();
  o.progress = r["progress"].as<std::string>();
  o.log_interval = r["log-interval"].as<int64_t>();
  o.max_steps = r["max-steps"].as<int64_t>();
  o.model_dir = r["model-dir"].as<std::string>();
  o.checkpoint = ddp::CheckpointFlags::from(r);
  o.predict = r.count("predict") > 0;
  o.test_dir = r["test-dir"].as<std::string>();
  o.out = r["out"].as<std::string>();
  o.weights = r["weights"].as<std::string>();

  // SageMaker's channels and model folder when the flags are not given.
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  if (o.data_dir.empty()) o.data_dir = env("SM_CHANNEL_TRAIN");
  if (o.data_dir.empty()) o.data_dir = env("SM_CHANNEL_TRAINING");
  if (o.model_dir.empty()) o.model_dir = env("SM_MODEL_DIR");
  if (o.model_dir.empty()) o.model_dir = "model";

  // Validation: every bad value is an error naming the flag.
  if (o.data_dir.empty() && (o.csv.empty() || o.image_dir.empty()) && !(o.predict && !o.test_dir.empty())) {
    throw ddp::ConfigError(
        "--data-dir is required (or $SM_CHANNEL_TRAIN, or --csv and --image-dir; --test-dir with --predict)");
  }
  if (o.csv.empty()) o.csv = o.data_dir + "/train.csv";
  if (o.image_dir.empty()) o.image_dir = o.data_dir + "/train";
  if (o.test_dir.empty()) o.test_dir = o.data_dir + "/test";
  require_at_least("--image-size", o.image_size, 16);
  require_at_least("--workers", o.workers, 0);
  require_at_least("--prefetch", o.prefetch, 1);
  if (!(o.val_fraction >= 0.0 && o.val_fraction < 1.0)) {
    throw ddp::ConfigError("--val-fraction=" + std::to_string(o.val_fraction) + ": must be in [0, 1)");
  }
  if (o.folds != 0) {
    require_at_least("--folds", o.folds, 2);
    if (o.fold < 0 || o.fold >= o.folds) {
      throw ddp::ConfigError("--fold=" + std::to_string(o.fold) + ": must be in [0, " + std::to_string(o.folds) + ")");
    }
  }
  require_one_of("--arch", o.arch, {"resnet18", "resnet34", "resnet50"});
  require_at_least("--epochs", o.epochs, 1);
  require_at_least<int64_t>("--batch-size", o.batch_size, 1);
  if (!(o.lr > 0)) throw ddp::ConfigError("--lr=" + std::to_string(o.lr) + ": must be > 0");
  if (!(o.weight_decay >= 0)) throw ddp::ConfigError("--weight-decay=" + std::to_string(o.weight_decay) + ": must be >= 0");
  require_one_of("--schedule", o.schedule, {"none", "cosine", "step"});
  require_at_least("--step-epochs", o.step_epochs, 1);
  if (!(o.step_gamma > 0 && o.step_gamma <= 1)) {
    throw ddp::ConfigError("--step-gamma=" + std::to_string(o.step_gamma) + ": must be in (0, 1]");
  }
  require_one_of("--amp", o.amp, {"none", "bf16"});
  require_one_of("--device", o.device, {"auto", "cpu", "cuda"});
  require_one_of("--backend", o.backend, {"auto", "gloo", "nccl"});
  require_at_least("--threads", o.threads, 0);
  require_one_of("--progress", o.progress, {"auto", "bar", "plain"});
  require_at_least<int64_t>("--log-interval", o.log_interval, 1);
  require_at_least<int64_t>("--max-steps", o.max_steps, 0);
  if (o.predict && o.out.empty()) throw ddp::ConfigError("--out is empty");
  return o;
}

}  // namespace train_ranzcr
