#include "options.h"

#include <ddp/errors.h>

#include <cxxopts.hpp>

#include <limits>

#include "trainer/runtime_flags.h"
#include "trainer/sagemaker_mode.h"
#include "util/choices.h"
#include "util/cli.h"
#include "util/numbers.h"

namespace train_ranzcr {
namespace {

constexpr long long kIntMax = std::numeric_limits<int>::max();
constexpr long long kInt64Max = std::numeric_limits<long long>::max();
constexpr double kRealMax = std::numeric_limits<double>::max();

}  // namespace

std::optional<Options> parse_options(int argc, char** argv) {
  cxxopts::Options cli("train_ranzcr",
                       "Distributed ResNet training on RANZCR CLiP chest X-rays (11 catheter labels, mean ROC AUC)");
  ddp::trainer::add_runtime_flags(cli, "train.csv, train/ and test/");
  // Flags are read as strings and converted by util/numbers.h, so a bad value is our ConfigError naming the flag.
  cli.add_options("Data")
      ("csv", "labels (default DATA_DIR/train.csv)", cxxopts::value<std::string>()->default_value(""), "FILE")
      ("image-dir", "training images (default DATA_DIR/train)", cxxopts::value<std::string>()->default_value(""), "DIR")
      ("image-size", "square input side in pixels", cxxopts::value<std::string>()->default_value("224"), "N")
      ("workers", "image decoding threads per rank", cxxopts::value<std::string>()->default_value("2"), "N")
      ("prefetch", "batches decoded ahead per rank", cxxopts::value<std::string>()->default_value("4"), "N")
      ("cache-dir", "store resized images here once and read them back (lossless)",
       cxxopts::value<std::string>()->default_value(""), "DIR")
      ("skip-bad-images", "warn about and skip missing or undecodable images instead of failing")
      ("no-augment", "no training augmentation")
      ("val-fraction", "share of patients for validation", cxxopts::value<std::string>()->default_value("0.2"), "X")
      ("folds", "K-fold cross-validation by patient (0: use --val-fraction)", cxxopts::value<std::string>()->default_value("0"), "N")
      ("fold", "validation fold with --folds", cxxopts::value<std::string>()->default_value("0"), "N")
      ("split-seed", "seed of the patient split", cxxopts::value<std::string>()->default_value("1"), "N");
  cli.add_options("Model")
      ("arch", "the network, a torchvision ResNet", cxxopts::value<std::string>()->default_value("resnet18"), "{resnet18|resnet34|resnet50}")
      ("pretrained", "torchvision-converted weights (docs/RANZCR.md)", cxxopts::value<std::string>()->default_value(""), "FILE")
      ("freeze-backbone", "train the head (fc) only")
      ("sync-bn", "BatchNorm statistics over every rank's batch (ddp::SyncBatchNorm)");
  cli.add_options("Training")
      ("epochs", "epochs", cxxopts::value<std::string>()->default_value("10"), "N")
      ("batch-size", "images per rank per step", cxxopts::value<std::string>()->default_value("32"), "N")
      ("lr", "Adam learning rate", cxxopts::value<std::string>()->default_value("1e-3"), "X")
      ("weight-decay", "Adam weight decay (L2, as torch.optim.Adam)", cxxopts::value<std::string>()->default_value("0.1"), "X")
      ("schedule", "learning-rate schedule", cxxopts::value<std::string>()->default_value("none"), "{none|cosine|step}")
      ("step-epochs", "--schedule step: epochs between decays", cxxopts::value<std::string>()->default_value("3"), "N")
      ("step-gamma", "--schedule step: decay factor", cxxopts::value<std::string>()->default_value("0.1"), "X")
      ("amp", "bf16: bfloat16 autocast (CUDA only)", cxxopts::value<std::string>()->default_value("none"), "{none|bf16}")
      ("seed", "model initialisation, shuffling and augmentation", cxxopts::value<std::string>()->default_value("0"), "N");
  cli.add_options("Prediction")
      ("predict", "write a submission instead of training")
      ("test-dir", "test images (default DATA_DIR/test)", cxxopts::value<std::string>()->default_value(""), "DIR")
      ("out", "submission file", cxxopts::value<std::string>()->default_value("submission.csv"), "FILE")
      ("weights", "state_dict to predict with (default: newest checkpoint in --checkpoint-dir, else MODEL_DIR/model.pt)",
       cxxopts::value<std::string>()->default_value(""), "FILE");
  ddp::CheckpointFlags::add_to(cli);

  // `train_ranzcr train`: SageMaker's files become the command line (trainer/sagemaker_mode.h).
  const ddp::trainer::TrainerArgs cmd = ddp::trainer::sagemaker_or_command_line(cli, argc, argv);
  auto parsed = ddp::util::parse_command_line(
      cli, cmd.argc(), cmd.argv(), ddp::trainer::trainer_rules({"Data", "Model", "Training", "Runtime", "Prediction", "Checkpoints"}));
  if (!parsed) return std::nullopt;
  const cxxopts::ParseResult& r = *parsed;
  auto value = [&](const std::string& flag) { return r[flag].as<std::string>(); };
  using ddp::util::parse_int;
  using ddp::util::parse_real;
  using ddp::util::require_choice;
  Options o;
  o.runtime = ddp::trainer::read_runtime_flags(r);
  o.csv = r["csv"].as<std::string>();
  o.image_dir = r["image-dir"].as<std::string>();
  o.image_size = static_cast<int>(parse_int("--image-size", value("image-size"), 16, kIntMax));
  o.workers = static_cast<int>(parse_int("--workers", value("workers"), 0, kIntMax));
  o.prefetch = static_cast<int>(parse_int("--prefetch", value("prefetch"), 1, kIntMax));
  o.cache_dir = r["cache-dir"].as<std::string>();
  o.skip_bad_images = r.count("skip-bad-images") > 0;
  o.augment = r.count("no-augment") == 0;
  o.val_fraction = parse_real("--val-fraction", value("val-fraction"), 0, 1);
  o.folds = static_cast<int>(parse_int("--folds", value("folds"), 0, kIntMax));
  o.fold = static_cast<int>(parse_int("--fold", value("fold"), 0, kIntMax));
  o.split_seed = static_cast<uint64_t>(parse_int("--split-seed", value("split-seed"), 0, kInt64Max));
  o.arch = r["arch"].as<std::string>();
  o.pretrained = r["pretrained"].as<std::string>();
  o.freeze_backbone = r.count("freeze-backbone") > 0;
  o.sync_bn = r.count("sync-bn") > 0;
  o.epochs = static_cast<int>(parse_int("--epochs", value("epochs"), 1, kIntMax));
  o.batch_size = parse_int("--batch-size", value("batch-size"), 1, kInt64Max);
  o.lr = parse_real("--lr", value("lr"), 0, kRealMax);
  o.weight_decay = parse_real("--weight-decay", value("weight-decay"), 0, kRealMax);
  o.schedule = r["schedule"].as<std::string>();
  o.step_epochs = static_cast<int>(parse_int("--step-epochs", value("step-epochs"), 1, kIntMax));
  o.step_gamma = parse_real("--step-gamma", value("step-gamma"), 0, 1);
  o.amp = r["amp"].as<std::string>();
  o.seed = static_cast<uint64_t>(parse_int("--seed", value("seed"), 0, kInt64Max));
  o.checkpoint = ddp::CheckpointFlags::from(r);
  o.predict = r.count("predict") > 0;
  o.test_dir = r["test-dir"].as<std::string>();
  o.out = r["out"].as<std::string>();
  o.weights = r["weights"].as<std::string>();

  const std::string& data_dir = o.runtime.data_dir();
  // Validation: every bad value is an error naming the flag.
  if (data_dir.empty() && (o.csv.empty() || o.image_dir.empty()) && !(o.predict && !o.test_dir.empty())) {
    throw ddp::ConfigError(
        "--data-dir is required (or $SM_CHANNEL_TRAIN, or --csv and --image-dir; --test-dir with --predict)");
  }
  if (o.csv.empty()) o.csv = data_dir + "/train.csv";
  if (o.image_dir.empty()) o.image_dir = data_dir + "/train";
  if (o.test_dir.empty()) o.test_dir = data_dir + "/test";
  // The half-open and conditional ranges parse_int/parse_real cannot say.
  if (o.val_fraction == 1.0) throw ddp::ConfigError("--val-fraction='" + value("val-fraction") + "': must be below 1");
  if (o.folds != 0) {
    if (o.folds < 2) throw ddp::ConfigError("--folds='" + value("folds") + "': must be 0 or at least 2");
    parse_int("--fold", value("fold"), 0, o.folds - 1);  // one of these folds
  }
  require_choice("--arch", o.arch, {"resnet18", "resnet34", "resnet50"});
  if (o.lr == 0) throw ddp::ConfigError("--lr='" + value("lr") + "': must be > 0");
  require_choice("--schedule", o.schedule, {"none", "cosine", "step"});
  if (o.step_gamma == 0) throw ddp::ConfigError("--step-gamma='" + value("step-gamma") + "': must be > 0");
  require_choice("--amp", o.amp, {"none", "bf16"});
  if (o.predict && o.out.empty()) throw ddp::ConfigError("--out is empty");
  return o;
}

}  // namespace train_ranzcr
