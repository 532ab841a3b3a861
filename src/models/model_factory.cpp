#include "models/model_factory.h"

#include <ddp/errors.h>

#include "models/cifar_net.h"
#include "models/resnet.h"

namespace ddp::models {
namespace {

std::shared_ptr<Classifier> make_cifar_net(const ModelOptions& o) {
  if (o.in_channels() != 3 || o.num_classes() != 10)
    throw ddp::ConfigError("model 'net' takes 3-channel images and 10 classes, not " + std::to_string(o.in_channels()) +
                           " and " + std::to_string(o.num_classes()));
  if (o.freeze_backbone()) throw ddp::ConfigError("model 'net' has no backbone to freeze");
  if (o.sync_bn_group()) throw ddp::ConfigError("model 'net' has no BatchNorm to synchronise");
  return CifarNet().ptr();
}

std::shared_ptr<Classifier> make_resnet(const ModelOptions& o) {
  ResNet net(ResNetOptions(parse_resnet_arch(o.name()))
                 .in_channels(o.in_channels())
                 .num_classes(o.num_classes())
                 .cifar_stem(o.small_images())
                 .sync_bn_group(o.sync_bn_group()));
  return net.ptr();
}

}  // namespace

std::vector<std::string> model_names() { return {"net", "resnet18", "resnet34", "resnet50"}; }

BuiltModel make_model(const ModelOptions& o) {
  BuiltModel built;
  if (o.name() == "net") {
    built.module = make_cifar_net(o);
  } else if (o.name().rfind("resnet", 0) == 0) {
    built.module = make_resnet(o);  // parse_resnet_arch names an unknown depth
  } else {
    std::string names;
    for (const auto& n : model_names()) names += (names.empty() ? "" : ", ") + n;
    throw ddp::ConfigError("unknown model '" + o.name() + "' (expected one of " + names + ")");
  }
  // Pretrained weights first, then the freeze: loading copies values and leaves requires_grad alone.
  if (!o.pretrained().empty()) built.pretrained = load_state_dict(*built.module, o.pretrained());
  if (o.freeze_backbone()) std::dynamic_pointer_cast<ResNetImpl>(built.module)->set_backbone_trainable(false);
  return built;
}

}  // namespace ddp::models
