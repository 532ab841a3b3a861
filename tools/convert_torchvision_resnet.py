#!/usr/bin/python3
"""Convert torchvision ResNet weights into a state_dict file that train_ranzcr --pretrained reads.

Run it with a Python that has torch + torchvision (Debian: /usr/bin/python3 with python3-torchvision):

  # ImageNet weights (needs the torchvision download or a local .pth of the same state_dict):
  /usr/bin/python3 tools/convert_torchvision_resnet.py --arch resnet18 --weights resnet18-f37072fd.pth \
      --in-channels 1 --drop-fc --out resnet18_1ch.pt
  # A randomly initialised model (what the tests use, since nothing can be downloaded there):
  /usr/bin/python3 tools/convert_torchvision_resnet.py --arch resnet18 --random-init --seed 0 \
      --in-channels 1 --out resnet18_random_1ch.pt

The output is `torch.save(state_dict)`: a dict of name -> tensor with torchvision's names. conv1 is
averaged over the RGB channels when --in-channels 1 (a grayscale image fed to all three RGB inputs
equals this averaged filter applied to the image times 3; the mean keeps activations in the range the
BN statistics expect for normalised inputs). --drop-fc removes fc.weight/fc.bias (ImageNet's 1000
classes); the trainer then keeps its own 11-output head. Without --drop-fc they are kept and the
trainer keeps its head anyway when the shapes differ (it logs it).

--print-keys prints "name shape" per entry; --reference-out also writes {input, output} of the
converted model in eval mode for a parity check against our C++ ResNet.
"""
import argparse
import sys

import torch
import torchvision


def build(arch, num_classes, cifar_stem):
    model = getattr(torchvision.models, arch)(num_classes=num_classes)
    if cifar_stem:
        model.conv1 = torch.nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
        model.maxpool = torch.nn.Identity()
    return model


def randomize_batchnorm(model, generator):
    """Non-trivial BN statistics and affine parameters, so a parity check exercises them."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            with torch.no_grad():
                m.weight.copy_(torch.rand(m.weight.shape, generator=generator) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=generator) * 0.1)
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=generator) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=generator) + 0.5)


def features(model, x):
    """Pooled features before fc (what is left to compare when fc is dropped)."""
    x = model.maxpool(model.relu(model.bn1(model.conv1(x))))
    x = model.layer4(model.layer3(model.layer2(model.layer1(x))))
    return torch.flatten(model.avgpool(x), 1)


def convert(state_dict, in_channels, drop_fc):
    out = {}
    for name, tensor in state_dict.items():
        if drop_fc and name.startswith("fc."):
            continue
        if name == "conv1.weight" and in_channels != tensor.shape[1]:
            if in_channels != 1:
                sys.exit("only 1 input channel can be derived from RGB weights, got %d" % in_channels)
            tensor = tensor.mean(dim=1, keepdim=True)
        out[name] = tensor.detach().clone().contiguous()
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--arch", default="resnet18", choices=["resnet18", "resnet34", "resnet50"])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--weights", help="torchvision state_dict (.pth) to convert")
    src.add_argument("--imagenet", action="store_true", help="torchvision's IMAGENET1K_V1 (downloads)")
    src.add_argument("--random-init", action="store_true", help="randomly initialised torchvision model")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--num-classes", type=int, default=1000, help="fc size of the source model")
    p.add_argument("--in-channels", type=int, default=1)
    p.add_argument("--cifar-stem", action="store_true", help="3x3 stride-1 conv1, no max-pool")
    p.add_argument("--randomize-bn", action="store_true", help="random BN statistics (tests)")
    p.add_argument("--drop-fc", action="store_true")
    p.add_argument("--out", help="output file (torch.save of the converted state_dict)")
    p.add_argument("--print-keys", action="store_true")
    p.add_argument("--reference-out", help="also write {input, output} of the converted model")
    p.add_argument("--reference-size", type=int, default=64)
    args = p.parse_args()

    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    model = build(args.arch, args.num_classes, args.cifar_stem)
    if args.weights:
        model.load_state_dict(torch.load(args.weights, map_location="cpu"))
    elif args.imagenet:
        weights = getattr(torchvision.models, "ResNet%s_Weights" % args.arch[6:]).IMAGENET1K_V1
        model.load_state_dict(weights.get_state_dict(progress=True))
    if args.randomize_bn:
        randomize_batchnorm(model, generator)
    converted = convert(model.state_dict(), args.in_channels, args.drop_fc)
    if args.out:
        torch.save(converted, args.out)
    if args.print_keys:
        for name, tensor in converted.items():
            print(name, "x".join(str(d) for d in tensor.shape) or "scalar")
        # Parameter order (DDP buckets follow it): one line, prefixed.
        print("#params", " ".join(n for n, _ in model.named_parameters()
                                  if not (args.drop_fc and n.startswith("fc."))))
    if args.reference_out:
        # The converted model itself: a copy with an in_channels stem and the converted weights.
        ref = build(args.arch, args.num_classes, args.cifar_stem)
        stride, padding, kernel = ref.conv1.stride, ref.conv1.padding, ref.conv1.kernel_size
        ref.conv1 = torch.nn.Conv2d(args.in_channels, 64, kernel, stride, padding, bias=False)
        ref.load_state_dict(converted, strict=not args.drop_fc)
        ref.eval()
        x = torch.randn(2, args.in_channels, args.reference_size, args.reference_size, generator=generator)
        with torch.no_grad():
            y = ref(x) if not args.drop_fc else features(ref, x)
        torch.save({"input": x, "output": y}, args.reference_out)


if __name__ == "__main__":
    main()
